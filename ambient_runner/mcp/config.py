"""The runner's MCP servers: one configuration for all three runners, in the common ``mcpServers`` shape.

Read from ``MCP_SERVERS_JSON`` (the JSON text) and/or ``MCP_CONFIG_FILE`` (a mounted file with the same JSON;
servers in ``MCP_SERVERS_JSON`` override the file's servers of the same name)::

    {"mcpServers": {
        "github": {"command": "github-mcp", "args": ["stdio"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
                   "cwd": "/opt/github"},
        "docs":   {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "legacy": {"type": "sse", "url": "https://old.example/sse"}}}

* stdio: ``command`` (required), ``args``, ``env``, ``cwd``; remote: ``url`` (streamable HTTP, or SSE with
  ``"type": "sse"``) or ``httpUrl`` (streamable HTTP, Gemini's spelling), ``headers``.
* Secrets are environment references, ``${VAR}``, allowed in ``env`` and ``headers`` values only. An env or
  header whose name looks like a credential (token, key, secret, password, authorization, cookie) must hold a
  reference, never a value in clear. Each referenced variable must be set in the runner's environment.
* Server names: letters, digits, ``-`` and ``_`` (no ``__``: AG-UI tool names are ``mcp__<server>__<tool>``).

A bad configuration stops the runner at start with one line (``RunnerSettings`` validates it, like every
other setting). Bridges write it into their CLI's own configuration (``ambient_runner.mcp.render``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ag_ui_cli_common.errors import ErrorCode, RunnerError

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
SECRET_NAME = re.compile(r"token|secret|passw|api[_-]?key|apikey|authorization|credential|private[_-]?key|cookie"
                         r"|session", re.IGNORECASE)
Transport = Literal["stdio", "http", "sse"]


class McpConfigError(RunnerError, ValueError):
    """A configuration the runner cannot use; the message names the server and the field."""

    code = ErrorCode.MCP_CONFIG


class McpServer(BaseModel):
    """One server, normalised: ``transport`` tells which fields apply."""

    model_config = ConfigDict(frozen=True)

    name: str
    transport: Transport
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    def references(self) -> list[str]:
        """Environment variables this server's ``env`` and ``headers`` refer to, in order."""
        names: list[str] = []
        for value in [*self.env.values(), *self.headers.values()]:
            names += [n for n in REFERENCE.findall(value) if n not in names]
        return names


class McpConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    servers: dict[str, McpServer] = Field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.servers)

    def references(self) -> list[str]:
        names: list[str] = []
        for server in self.servers.values():
            names += [n for n in server.references() if n not in names]
        return names


class _RawServer(BaseModel):
    """One entry as written in the file (the common shape; unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: Literal["stdio", "http", "sse", "streamable-http"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    http_url: str | None = Field(None, alias="httpUrl")
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> _RawServer:
        remote = [u for u in (self.url, self.http_url) if u]
        if self.command is not None and remote:
            raise ValueError("has both command (stdio) and url/httpUrl (remote): choose one")
        if self.command is None and not remote:
            raise ValueError("needs command (a stdio server) or url / httpUrl (a remote server)")
        if len(remote) > 1:
            raise ValueError("has both url and httpUrl: choose one")
        if self.command is not None and not self.command.strip():
            raise ValueError("command is empty")
        if self.command is not None and self.headers:
            raise ValueError("headers apply to remote servers only")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd apply to stdio servers only")
        if self.type == "stdio" and self.command is None or self.type in ("http", "sse") and self.command:
            raise ValueError(f"type {self.type!r} does not match its fields")
        return self

    def normalise(self, name: str) -> McpServer:
        if self.command is not None:
            return McpServer(name=name, transport="stdio", command=self.command, args=self.args, env=self.env,
                             cwd=self.cwd)
        transport: Transport = "sse" if self.type == "sse" and not self.http_url else "http"
        return McpServer(name=name, transport=transport, url=self.http_url or self.url, headers=self.headers)


def _check_values(name: str, server: McpServer, environ: Mapping[str, str]) -> None:
    plain = {"command": server.command or "", "cwd": server.cwd or "", "url": server.url or "",
             **{f"args[{i}]": a for i, a in enumerate(server.args)}}
    for field, value in plain.items():
        if "${" in value:
            raise McpConfigError(f"MCP server {name!r}: {field} holds an environment reference; references "
                                 "(${VAR}) are expanded in env and headers values only")
    for kind, values in (("env", server.env), ("headers", server.headers)):
        for key, value in values.items():
            if "${" in REFERENCE.sub("", value):
                raise McpConfigError(f"MCP server {name!r}: {kind}.{key} has a malformed reference; "
                                     "write ${VAR} (letters, digits, _)")
            if SECRET_NAME.search(key) and value.strip() and not REFERENCE.search(value):
                raise McpConfigError(f"MCP server {name!r}: {kind}.{key} looks like a credential and must be an "
                                     "environment reference such as ${VAR}, not a value in clear")
    missing = [v for v in server.references() if v not in environ]
    if missing:
        raise McpConfigError(f"MCP server {name!r} refers to {', '.join('${' + m + '}' for m in missing)}, "
                             "not set in the runner's environment")


def parse_mcp_config(data: object, *, source: str = "MCP config",
                     environ: Mapping[str, str] | None = None) -> McpConfig:
    """Validate a decoded ``{"mcpServers": {...}}`` document (``source`` names it in errors)."""
    environ = os.environ if environ is None else environ
    if not isinstance(data, dict) or set(data) - {"mcpServers"}:
        raise McpConfigError(f'{source} must be an object {{"mcpServers": {{name: {{...}}}}}}')
    entries = data.get("mcpServers") or {}
    if not isinstance(entries, dict):
        raise McpConfigError(f"{source}: mcpServers must be an object of name -> server")
    servers: dict[str, McpServer] = {}
    for name, entry in entries.items():
        if not SERVER_NAME.match(name) or "__" in name:
            raise McpConfigError(f"MCP server name {name!r}: use letters, digits, '-' and '_' (no '__')")
        try:
            server = _RawServer.model_validate(entry).normalise(name)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            reason = first["msg"].removeprefix("Value error, ")
            raise McpConfigError(f"MCP server {name!r}: {where + ': ' if where else ''}{reason}") from None
        _check_values(name, server, environ)
        servers[name] = server
    return McpConfig(servers=servers)


def parse_mcp_json(text: str, *, source: str = "MCP_SERVERS_JSON",
                   environ: Mapping[str, str] | None = None) -> McpConfig:
    if not text.strip():
        return McpConfig()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
            from None
    except ValueError as exc:  # valid syntax json still refuses, e.g. an integer of more than 4300 digits
        raise McpConfigError(f"{source} is not valid JSON ({exc})") from None
    return parse_mcp_config(data, source=source, environ=environ)


def read_mcp_file(path: Path, *, environ: Mapping[str, str] | None = None) -> McpConfig:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_mcp_json(text, source=str(path), environ=environ)


def load_mcp_config(json_text: str = "", file: Path | None = None,
                    environ: Mapping[str, str] | None = None) -> McpConfig:
    """The file's servers overlaid with ``MCP_SERVERS_JSON``'s (same name: the JSON wins)."""
    servers: dict[str, McpServer] = {}
    if file is not None:
        servers.update(read_mcp_file(file, environ=environ).servers)
    servers.update(parse_mcp_json(json_text, environ=environ).servers)
    return McpConfig(servers=servers)


def resolve(value: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with every ``${VAR}`` replaced (in memory only: never write the result to a file)."""
    env = os.environ if environ is None else environ
    return REFERENCE.sub(lambda m: env.get(m.group(1), ""), value)


def secret_values(config: McpConfig, environ: Mapping[str, str] | None = None, min_length: int = 8) -> list[str]:
    """Values of the referenced variables (long enough to be credentials): removed from every event."""
    env = os.environ if environ is None else environ
    return [env[n] for n in config.references() if len(env.get(n, "")) >= min_length]
