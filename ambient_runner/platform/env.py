"""The platform operator's env vars, translated into the runner's own settings before they are read.

The operator sets ~50 variables on every runner pod (research/platform-backend-contract.md §3.1). Those that mean
something to a runner are translated here; the rest (``TIMEOUT``, which is not a run timeout, ``DEBUG``, ...) are
ignored. A stop at start is a failed session there, so a platform value the runner cannot use is a warning naming
it, and the runner goes on without it; only the runner's own settings stop it (``load_settings``).

* ``LLM_MODEL``: the session's model, the default of every run (``RUNNER_DEFAULT_MODEL``); outside
  ``RUNNER_MODELS`` when the deployment lists them: a warning, the registry's default stays.
* ``LLM_MAX_TOKENS``: Claude's ``CLAUDE_CODE_MAX_OUTPUT_TOKENS``; ``LLM_TEMPERATURE``: no CLI takes a sampling
  temperature, so it is ignored with one log line (as is ``LLM_MAX_TOKENS`` for Gemini and Codex).
* ``USE_VERTEX`` (``1``/``true``/``yes``): Claude's ``CLAUDE_CODE_USE_VERTEX=1``; Gemini's
  ``GOOGLE_GENAI_USE_VERTEXAI=true`` with ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION`` from
  ``ANTHROPIC_VERTEX_PROJECT_ID`` / ``CLOUD_ML_REGION`` when unset. ``0`` leaves Vertex off.
* ``PROJECT_MCP_SERVERS`` then ``CUSTOM_MCP_SERVERS`` (``{"custom": {name: server}, "disabled": [names]}``): their
  servers join ``MCP_SERVERS_JSON`` (later wins by name), their ``disabled`` names join ``MCP_DISABLED_SERVERS``.
  A server the runner cannot use (a literal secret, a missing variable, a bad shape) is left out with a warning.
* With ``BACKEND_API_URL``: a variable of the person's connected accounts that an MCP server refers to is declared
  (empty) when unset; its value comes before each run (``platform.run_credentials``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from ag_ui_cli_common.json_types import JsonObject, JsonValue
from ambient_runner.mcp.config import REFERENCE, McpConfigError, parse_mcp_config
from ambient_runner.platform.credential_store import account_variable

log = logging.getLogger(__name__)
TRUE = ("1", "true", "yes")
MCP_SOURCES = ("PROJECT_MCP_SERVERS", "CUSTOM_MCP_SERVERS")  # later wins


@dataclass
class PlatformEnv:
    """What the platform's variables add to the environment, and what was said about them."""

    values: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def translate(environ: Mapping[str, str]) -> PlatformEnv:
    out = PlatformEnv()
    runner = environ.get("RUNNER_TYPE", "").strip()
    _model(environ, out)
    _sampling(environ, runner, out)
    _vertex(environ, runner, out)
    _account_references(environ, out)
    _mcp({**environ, **out.values}, out)
    return out


def _account_references(environ: Mapping[str, str], out: PlatformEnv) -> None:
    """On the platform, an MCP server may refer to a variable the person's connected accounts set before each run
    (``${JIRA_API_TOKEN}``, ``${MCP_<SERVER>_<FIELD>}``): it is declared, empty, so the configuration is accepted;
    the CLI gets the delivered value when it starts (``platform.run_credentials``)."""
    if not environ.get("BACKEND_API_URL", "").strip():
        return
    texts = [environ.get(name, "") for name in ("MCP_SERVERS_JSON", *MCP_SOURCES)]
    file = environ.get("MCP_CONFIG_FILE", "").strip()
    if file:
        with contextlib.suppress(OSError):
            texts.append(Path(file).read_text())
    for text in texts:
        for name in REFERENCE.findall(text):
            if account_variable(name) and name not in environ:
                out.values[name] = ""


def apply_platform_env(environ: MutableMapping[str, str]) -> PlatformEnv:
    """Translate and write the result into ``environ`` (the process environment at start)."""
    translated = translate(environ)
    environ.update(translated.values)
    return translated


def report(translated: PlatformEnv) -> None:
    """Log what was said, once logging is configured."""
    for warning in translated.warnings:
        log.warning("%s", warning)
    for note in translated.notes:
        log.info("%s", note)


def _model(environ: Mapping[str, str], out: PlatformEnv) -> None:
    model = environ.get("LLM_MODEL", "").strip()
    if not model:
        return
    offered = [m.strip() for m in environ.get("RUNNER_MODELS", "").split(",") if m.strip()]
    if offered and model not in offered:
        default = environ.get("RUNNER_DEFAULT_MODEL") or "the runner's default"
        out.warnings.append(f"LLM_MODEL={model!r} is not one of this runner's models (RUNNER_MODELS: "
                            f"{', '.join(offered)}); runs use {default} instead")
        return
    out.values["RUNNER_DEFAULT_MODEL"] = model


def _sampling(environ: Mapping[str, str], runner: str, out: PlatformEnv) -> None:
    if environ.get("LLM_TEMPERATURE", "").strip():
        out.notes.append("LLM_TEMPERATURE is ignored: none of the agent CLIs takes a sampling temperature")
    tokens = environ.get("LLM_MAX_TOKENS", "").strip()
    if not tokens:
        return
    if runner not in ("claude", "claude-agent-sdk"):
        out.notes.append(f"LLM_MAX_TOKENS is ignored: the {runner or 'selected'} CLI has no output-token limit "
                         "setting")
    elif not tokens.isdigit() or int(tokens) <= 0:
        out.warnings.append(f"LLM_MAX_TOKENS={tokens!r} is not a positive whole number; Claude's own limit stays")
    elif not environ.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS"):
        out.values["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = tokens


def _vertex(environ: Mapping[str, str], runner: str, out: PlatformEnv) -> None:
    if environ.get("USE_VERTEX", "").strip().lower() not in TRUE:
        return
    if runner in ("claude", "claude-agent-sdk"):
        out.values["CLAUDE_CODE_USE_VERTEX"] = "1"
    elif runner == "gemini-cli":
        out.values["GOOGLE_GENAI_USE_VERTEXAI"] = "true"
        for target, source in (("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"),
                               ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")):
            if not environ.get(target) and environ.get(source):
                out.values[target] = environ[source]
    else:
        out.warnings.append(f"USE_VERTEX is ignored: the {runner or 'selected'} runner has no Vertex AI mode")


def _mcp(environ: Mapping[str, str], out: PlatformEnv) -> None:
    servers: JsonObject = {}
    disabled: list[str] = []
    for source in MCP_SOURCES:
        custom, names = _mcp_spec(environ, source, out)
        for name, server in custom.items():
            if _usable_server(source, name, server, environ, out):
                servers[name] = server
        disabled += [n for n in names if n not in disabled]
    if servers:
        try:
            own = json.loads(environ.get("MCP_SERVERS_JSON", "").strip() or "{}")
        except ValueError:  # the runner's own setting: load_settings stops on it with its own message
            own = None
        if isinstance(own, dict) and isinstance(own.get("mcpServers", {}), dict):
            merged = {**own.get("mcpServers", {}), **servers}
            out.values["MCP_SERVERS_JSON"] = json.dumps({"mcpServers": merged})
    if disabled:
        present = [n.strip() for n in environ.get("MCP_DISABLED_SERVERS", "").split(",") if n.strip()]
        out.values["MCP_DISABLED_SERVERS"] = ",".join(dict.fromkeys([*present, *disabled]))


def _mcp_spec(environ: Mapping[str, str], source: str, out: PlatformEnv) -> tuple[JsonObject, list[str]]:
    """A source's ``custom`` servers (name -> server) and ``disabled`` names; none when it is unset or not that."""
    raw = environ.get(source, "").strip()
    if not raw:
        return {}, []
    try:
        spec: JsonValue = json.loads(raw)
    except ValueError as exc:
        out.warnings.append(f"{source} is not valid JSON ({exc}); its MCP servers are left out")
        return {}, []
    custom = spec.get("custom", {}) if isinstance(spec, dict) else None
    disabled = spec.get("disabled", []) if isinstance(spec, dict) else None
    if not isinstance(custom, dict) or not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        out.warnings.append(f'{source} is not {{"custom": {{name: server}}, "disabled": [names]}}; '
                            "its MCP servers are left out")
        return {}, []
    return custom, [n for n in disabled if isinstance(n, str)]


def _usable_server(source: str, name: str, server: JsonValue, environ: Mapping[str, str], out: PlatformEnv) -> bool:
    try:
        parse_mcp_config({"mcpServers": {name: server}}, source=source, environ=environ)
    except McpConfigError as exc:
        out.warnings.append(f"MCP server {name!r} from {source} is left out: {exc}")
        return False
    return True
