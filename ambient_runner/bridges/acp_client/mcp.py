"""The runner's MCP servers (``MCP_SERVERS_JSON``, ``MCP_CONFIG_FILE``) as ACP's ``mcpServers`` of ``session/new``
and ``session/load``: stdio (``command``, ``args``, ``env`` as name/value pairs), http and sse (``url``, ``headers``).
``${VAR}`` references are resolved here, in memory: the values travel over the agent's stdin, never into a file."""

from __future__ import annotations

from collections.abc import Mapping

from ag_ui_gemini_cli.acp_schema import McpServer
from ambient_runner.mcp.config import McpConfig, resolve


def _pairs(values: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": resolve(value)} for name, value in values.items()]


def acp_servers(config: McpConfig) -> list[McpServer]:
    servers: list[McpServer] = []
    for name, server in config.servers.items():
        if server.transport == "stdio":
            servers.append(McpServer(name=name, command=server.command, args=[*server.args],
                                     env=_pairs(server.env)))
        else:
            servers.append(McpServer(name=name, type=server.transport, url=server.url,
                                     headers=_pairs(server.headers)))
    return servers
