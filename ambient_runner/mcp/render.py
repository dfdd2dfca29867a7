"""The runner's MCP configuration in each CLI's own terms. No resolved secret ever goes into a file.

* Gemini ``settings.json`` ``mcpServers``: the CLI expands ``${VAR}`` in settings.json itself, so references
  stay references; the referenced variables are passed to the CLI's environment.
* Codex ``config.toml`` ``[mcp_servers.<name>]``: Codex does not expand references, but it forwards named
  variables (``env_vars``, ``bearer_token_env_var``, ``env_http_headers``). ``KEY = "${KEY}"`` is forwarded as
  is; any other value with a reference is resolved into an alias variable of the app-server's environment
  (in memory) and forwarded by that name.
* Claude ``ClaudeAgentOptions.mcp_servers``: passed to the CLI in memory (``--mcp-config``); Claude Code
  expands ``${VAR}`` itself, so references stay references and the variables go to its environment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ag_ui_cli_common.json_types import JsonObject
from ambient_runner.mcp.config import REFERENCE, McpConfig, McpConfigError, McpServer, resolve

ALIAS_PREFIX = "AMBIENT_MCP_"


# ----- Gemini --------------------------------------------------------------------------------------------
def gemini_servers(config: McpConfig) -> dict[str, JsonObject]:
    """``settings.json`` ``mcpServers`` (``trust``: the runner runs headless, nobody can confirm a call)."""
    out: dict[str, JsonObject] = {}
    for name, server in config.servers.items():
        if server.transport == "stdio":
            entry: JsonObject = {"command": server.command, "args": [*server.args]}
            if server.env:
                entry["env"] = {**server.env}
            if server.cwd:
                entry["cwd"] = server.cwd
        else:
            entry = {"httpUrl" if server.transport == "http" else "url": server.url}
            if server.transport == "sse":
                entry["type"] = "sse"
            if server.headers:
                entry["headers"] = {**server.headers}
        entry["trust"] = True
        out[name] = entry
    return out


# ----- Codex ---------------------------------------------------------------------------------------------
@dataclass
class CodexMcp:
    """``config.toml`` lines and the variables the app-server's environment must carry."""

    lines: list[str] = field(default_factory=list)
    passthrough: list[str] = field(default_factory=list)  # runner variables passed under their own name
    aliases: dict[str, str] = field(default_factory=dict)  # alias variable -> resolved value (memory only)


def _toml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


def _pure_reference(value: str) -> str | None:
    match = REFERENCE.fullmatch(value.strip())
    return match.group(1) if match else None


class _Forwarder:
    """Collects the variables Codex must find in its environment to fill env and header values."""

    def __init__(self, result: CodexMcp, environ: Mapping[str, str]) -> None:
        self.result = result
        self.environ = environ

    def _pass(self, name: str) -> str:
        if name not in self.result.passthrough:
            self.result.passthrough.append(name)
        return name

    def _set(self, server: str, name: str, value: str) -> str:
        resolved = resolve(value, self.environ)
        if self.result.aliases.get(name, resolved) != resolved or name in self.result.passthrough:
            raise McpConfigError(f"MCP server {server!r}: Codex forwards variables by name and {name} would "
                                 "need two different values; use the same reference in every server")
        self.result.aliases[name] = resolved
        return name

    def env(self, server: str, key: str, value: str) -> str:
        """``env_vars`` forwards a variable under its own name: ``key`` must carry the value."""
        if _pure_reference(value) == key and key not in self.result.aliases:
            return self._pass(key)
        return self._set(server, key, value)

    def header(self, server: str, header: str, value: str) -> str:
        """``env_http_headers`` / ``bearer_token_env_var`` name any variable."""
        source = _pure_reference(value)
        if source is not None and source not in self.result.aliases:
            return self._pass(source)
        return self._set(server, ALIAS_PREFIX + re.sub(r"[^A-Z0-9]", "_", f"{server}_{header}".upper()), value)


def codex_servers(config: McpConfig, environ: Mapping[str, str] | None = None) -> CodexMcp:
    result = CodexMcp()
    forwarder = _Forwarder(result, os.environ if environ is None else environ)
    for name, server in config.servers.items():
        result.lines += ["", f"[mcp_servers.{json.dumps(name)}]",
                         # a call of a tool not marked read-only asks the runner, whose gate answers at once unless
                         # the run asks for approvals
                         'default_tools_approval_mode = "writes"']
        if server.transport == "stdio":
            result.lines += _codex_stdio(name, server, forwarder)
        elif server.transport == "http":
            result.lines += _codex_http(name, server, forwarder)
        else:
            raise McpConfigError(f"MCP server {name!r}: Codex supports stdio and streamable HTTP servers, not "
                                 "SSE; give it an httpUrl (or type http) if the server speaks streamable HTTP")
    return result


def _codex_stdio(name: str, server: McpServer, forwarder: _Forwarder) -> list[str]:
    lines = [f"command = {_toml(server.command)}", f"args = {_toml(list(server.args))}"]
    if server.cwd:
        lines.append(f"cwd = {_toml(server.cwd)}")
    literal = {k: v for k, v in server.env.items() if not REFERENCE.search(v)}
    forwarded = [forwarder.env(name, k, v) for k, v in server.env.items() if REFERENCE.search(v)]
    if literal:
        lines.append(f"env = {_toml(literal)}")
    if forwarded:
        lines.append(f"env_vars = {_toml(forwarded)}")
    return lines


def _codex_http(name: str, server: McpServer, forwarder: _Forwarder) -> list[str]:
    lines = [f"url = {_toml(server.url)}"]
    literal: dict[str, str] = {}
    from_env: dict[str, str] = {}
    for header, value in server.headers.items():
        bearer = re.fullmatch(r"Bearer\s+(\$\{[A-Za-z_][A-Za-z0-9_]*\})", value.strip())
        if header.lower() == "authorization" and bearer:
            lines.append(f"bearer_token_env_var = {_toml(forwarder.header(name, header, bearer.group(1)))}")
        elif REFERENCE.search(value):
            from_env[header] = forwarder.header(name, header, value)
        else:
            literal[header] = value
    if literal:
        lines.append(f"http_headers = {_toml(literal)}")
    if from_env:
        lines.append(f"env_http_headers = {_toml(from_env)}")
    return lines


# ----- Claude --------------------------------------------------------------------------------------------
def claude_servers(config: McpConfig) -> dict[str, JsonObject]:
    """``ClaudeAgentOptions.mcp_servers``. Claude Code's server entries have no ``cwd``: a stdio server with
    one is started through ``sh -c 'cd "$0" && exec "$@"' <cwd> <command> <args...>``."""
    out: dict[str, JsonObject] = {}
    for name, server in config.servers.items():
        if server.transport == "stdio":
            command, args = server.command or "", list(server.args)
            if server.cwd:
                command, args = "/bin/sh", ["-c", 'cd "$0" && exec "$@"', server.cwd, command, *args]
            entry: JsonObject = {"type": "stdio", "command": command, "args": [*args]}
            if server.env:
                entry["env"] = {**server.env}
        else:
            entry = {"type": server.transport, "url": server.url}
            if server.headers:
                entry["headers"] = {**server.headers}
        out[name] = entry
    return out
