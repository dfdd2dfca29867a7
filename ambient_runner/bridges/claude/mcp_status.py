"""``GET /mcp-status`` for Claude: what the latest ``system/init`` message said about each configured server
(``configured`` before the first run)."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import SystemMessage

from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.status import McpServerStatus, Status, configured

MCP_STATES: dict[str, Status] = {"connected": "connected", "failed": "failed", "pending": "pending",
                                 "needs-auth": "needs-auth", "disabled": "disabled"}


def init_mcp_servers(item: Any) -> list[dict[str, Any]] | None:
    """``mcp_servers`` of a ``system/init`` message (raw dict or typed SystemMessage), else ``None``."""
    if isinstance(item, SystemMessage):
        item = {"type": "system", "subtype": item.subtype, **(item.data if isinstance(item.data, dict) else {})}
    if isinstance(item, dict) and item.get("type") == "system" and item.get("subtype") == "init":
        servers = item.get("mcp_servers")
        return [s for s in servers if isinstance(s, dict)] if isinstance(servers, list) else []
    return None


class ClaudeMcpStatus:
    """The servers' states as the CLI last reported them."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self.reported: dict[str, McpServerStatus] = {}

    def note(self, item: Any) -> None:
        """Takes any message of the CLI; an ``init`` message updates the states."""
        for entry in init_mcp_servers(item) or ():
            name = str(entry.get("name", ""))
            server = self.config.servers.get(name)
            if server is not None:
                self.reported[name] = McpServerStatus(
                    name=name, transport=server.transport,
                    status=MCP_STATES.get(str(entry.get("status")), "configured"), source="claude init message")

    def status(self) -> list[dict[str, Any]]:
        return configured(self.config, self.reported)
