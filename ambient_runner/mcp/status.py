"""``GET /mcp-status`` entries: one per configured server, the same shape for all runners."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ambient_runner.mcp.config import McpConfig

# connected / failed: the CLI said so; pending: it is still connecting; needs-auth: it wants a login;
# disabled: turned off; configured: written to the CLI's configuration, the CLI has not reported on it yet.
Status = Literal["connected", "failed", "pending", "needs-auth", "disabled", "configured"]


class McpServerStatus(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    name: str
    transport: str
    status: Status
    detail: str | None = None
    tools: list[str] | None = None
    source: str = "configuration"  # where the status came from (e.g. "claude init message", "gemini mcp list")

    def wire(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, exclude_none=True)


def configured(config: McpConfig, reported: dict[str, McpServerStatus] | None = None) -> list[dict[str, object]]:
    """Every configured server: what the CLI reported where it did, else ``configured``."""
    reported = reported or {}
    return [(reported.get(name) or McpServerStatus(name=name, transport=server.transport, status="configured"))
            .wire() for name, server in config.servers.items()]


# The platform UI's status words (``GET /mcp/status``): connected / configured show green, error red.
PLATFORM_STATUS = {"connected": "connected", "configured": "configured", "pending": "configured",
                   "failed": "error", "needs-auth": "error", "disabled": "disconnected"}


def platform_shape(servers: list[dict[str, object]]) -> dict[str, object]:
    """``{servers: [{name, displayName, status, tools?: [{name, annotations}]}], totalCount}``, the platform
    backend's shape (its UI reads each tool's ``annotations``); our own ``transport`` and ``detail`` ride along."""
    out = []
    for server in servers:
        entry: dict[str, object] = {"name": server["name"], "displayName": server["name"],
                                    "status": PLATFORM_STATUS.get(str(server["status"]), "disconnected"),
                                    "transport": server.get("transport")}
        if server.get("detail"):
            entry["detail"] = server["detail"]
        tools = server.get("tools")
        if isinstance(tools, list):
            entry["tools"] = [{"name": name, "annotations": {}} for name in tools]
        out.append(entry)
    return {"servers": out, "totalCount": len(out)}
