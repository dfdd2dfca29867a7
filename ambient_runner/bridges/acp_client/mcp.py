"""The runner's MCP servers (``MCP_SERVERS_JSON``, ``MCP_CONFIG_FILE``) as ACP's ``mcpServers`` of ``session/new``
and ``session/load``: stdio (``command``, ``args``, ``env`` as name/value pairs), http and sse (``url``, ``headers``).
``${VAR}`` references are resolved here, in memory, against what the agent's environment would hold (the person's
connected accounts among it: ``agent_values``): the values travel over the agent's stdin, never into a file."""

from __future__ import annotations

from collections.abc import Mapping

from ag_ui_gemini_cli.acp_schema import McpServer
from ambient_runner.mcp.config import McpConfig, resolve
from ambient_runner.process.environment import agent_values


def _pairs(values: Mapping[str, str], environ: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": resolve(value, environ)} for name, value in values.items()]


def acp_servers(config: McpConfig) -> list[McpServer]:
    environ = agent_values(config.references()) if config.servers else {}
    servers: list[McpServer] = []
    for name, server in config.servers.items():
        if server.transport == "stdio":
            servers.append(McpServer(name=name, command=server.command, args=[*server.args],
                                     env=_pairs(server.env, environ)))
        else:
            servers.append(McpServer(name=name, type=server.transport, url=server.url,
                                     headers=_pairs(server.headers, environ)))
    return servers
