"""``GET /mcp-status`` for Codex: the app-server's ``mcpServerStatus/list`` (tools and auth; the runtime
connection state once a thread has started the servers), else each configured server as ``configured``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from openai_codex.generated.v2_all import ListMcpServerStatusResponse

from ambient_runner.bridges.codex_sdk import sdk_private as sdk
from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.status import McpServerStatus, Status, configured

log = logging.getLogger(__name__)
LIST_TIMEOUT = 8.0  # within the platform backend's 10 s for /mcp/status (then: as configured)
RUNTIME_STATUS: dict[str, Status] = {
    "connected": "connected", "failed": "failed", "starting": "pending", "notStarted": "configured",
    "authenticationRequired": "needs-auth", "cancelled": "failed", "disabled": "disabled"}


async def list_mcp_status(config: McpConfig, codex: Any | None, thread_id: str | None = None
                          ) -> list[dict[str, Any]]:
    """``thread_id``: a thread whose MCP connections to report (the runtime state), else tools and auth only."""
    if not config or codex is None:
        return configured(config)
    params: dict[str, Any] = {"detail": "toolsAndAuthOnly"}
    if thread_id:
        params["threadId"] = thread_id
    try:
        response = await asyncio.wait_for(sdk.request(codex, "mcpServerStatus/list", params,
                                                      ListMcpServerStatusResponse), LIST_TIMEOUT)
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
        status: Status = RUNTIME_STATUS.get(runtime or "", "connected" if tools else "configured")
        if entry.tools_error and runtime is None:
            status = "failed"
        reported[entry.name] = McpServerStatus(name=entry.name, transport=server.transport, status=status,
                                               detail=entry.tools_error, tools=tools or None,
                                               source="codex mcpServerStatus/list")
    return configured(config, reported)


STARTING = (None, "starting", "notStarted")


async def wait_for_mcp_startup(config: McpConfig, codex: Any, thread_id: str, limit: float = 30.0,
                               poll: float = 0.25) -> None:
    """Wait until Codex has started (or given up on) every configured MCP server, at most ``limit`` s.

    Codex starts MCP servers in the background when a thread starts; a turn sent before that sees no MCP
    tools at all. A server that fails, or is still starting after ``limit``, does not hold the run up.
    """
    if not config or codex is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        try:
            response = await asyncio.wait_for(sdk.request(
                codex, "mcpServerStatus/list", {"detail": "toolsAndAuthOnly", "threadId": thread_id},
                ListMcpServerStatusResponse), LIST_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - no status: do not hold the run up
            log.info("codex mcpServerStatus/list failed: %s", exc)
            return
        states = {e.name: (e.runtime_status.value if e.runtime_status is not None else None) for e in response.data}
        pending = [name for name in config.servers if states.get(name, "starting") in STARTING]
        if not pending:
            return
        await asyncio.sleep(poll)
    log.warning("codex MCP servers still starting after %.0fs; the run goes on without them", limit)
