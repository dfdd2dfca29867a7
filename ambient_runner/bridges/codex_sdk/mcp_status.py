"""``GET /mcp-status`` for Codex: the app-server's ``mcpServerStatus/list`` (tools and auth; the runtime
connection state once a thread has started the servers), else each configured server as ``configured``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from openai_codex.generated.v2_all import ListMcpServerStatusResponse

from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.status import McpServerStatus, configured

log = logging.getLogger(__name__)
LIST_TIMEOUT = 20.0
RUNTIME_STATUS = {"connected": "connected", "failed": "failed", "starting": "pending", "notStarted": "configured",
                  "authenticationRequired": "needs-auth", "cancelled": "failed", "disabled": "disabled"}


async def list_mcp_status(config: McpConfig, codex: Any | None) -> list[dict[str, Any]]:
    if not config or codex is None:
        return configured(config)
    try:
        response = await asyncio.wait_for(codex._client.request(
            "mcpServerStatus/list", {"detail": "toolsAndAuthOnly"}, response_model=ListMcpServerStatusResponse),
            LIST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - the app-server is busy or gone: say what is configured
        log.info("codex mcpServerStatus/list failed: %s", exc)
        return configured(config)
    reported: dict[str, McpServerStatus] = {}
    for entry in response.data:
        server = config.servers.get(entry.name)
        if server is None:
            continue
        runtime = entry.runtime_status.value if entry.runtime_status is not None else None
        tools = sorted(entry.tools or {})
        status = RUNTIME_STATUS.get(runtime or "", "connected" if tools else "configured")
        if entry.tools_error and runtime is None:
            status = "failed"
        reported[entry.name] = McpServerStatus(name=entry.name, transport=server.transport, status=status,
                                               detail=entry.tools_error, tools=tools or None,
                                               source="codex mcpServerStatus/list")
    return configured(config, reported)
