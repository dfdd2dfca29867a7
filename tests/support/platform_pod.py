"""The runner container's environment as the platform's operator builds it (research/platform-backend-contract.md
§3.1, operator sessions.go:1085-1394), from the registry entry (deploy/agent-registry.json) of one runner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners import SERVERS, acp_model_api, provider_environment

from ambient_runner.bridges.acp.model_apis import ModelApiKind
from ambient_runner.scripted_models.base import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]
SESSION = "session-5d1c2a"
PROJECT = "team-a"


def registry_entry(runner_type: str) -> dict[str, Any]:
    """The entry of a runner type, or of an entry id (the ACP runner's are per agent: acp-opencode, ...)."""
    entry_id = "claude-agent-sdk" if runner_type == "claude" else runner_type
    entries = json.loads((ROOT / "deploy" / "agent-registry.json").read_text())
    return next(e for e in entries if e["id"] == entry_id)


@dataclass(frozen=True)
class EntryModel:
    """The scripted model server a registry entry's runner talks to offline (an ACP entry's: its agent's model API),
    and the variables that point the runner at it."""

    server: type[ScriptedModelServer]
    runner_type: str
    api: ModelApiKind | None = None

    def environment(self, server: ScriptedModelServer) -> dict[str, str]:
        return provider_environment(self.runner_type, server, self.api)


def entry_model(entry_id: str) -> EntryModel:
    env = registry_entry(entry_id)["container"]["env"]
    if env["RUNNER_TYPE"] == "acp":
        api = acp_model_api({"acp_agent": env["ACP_AGENT"]})
        return EntryModel(api.scripted, "acp", api)
    runner_type = "claude" if entry_id == "claude-agent-sdk" else entry_id
    return EntryModel(SERVERS[runner_type], runner_type)


def operator_env(runner_type: str, *, workspace: Path, agui_token: str, backend_api_url: str = "",
                 initial_prompt: str = "", llm_model: str = "claude-sonnet-4-6",
                 custom_mcp_servers: dict[str, Any] | None = None, **more: str) -> dict[str, str]:
    """The operator's base values, the session's model settings and the registry's ``container.env``."""
    env = {
        "DEBUG": "true", "AGENTIC_SESSION_NAME": SESSION, "SESSION_ID": SESSION,
        "AGENTIC_SESSION_NAMESPACE": PROJECT, "PROJECT_NAME": PROJECT,
        "WORKSPACE_PATH": str(workspace), "ARTIFACTS_DIR": "artifacts", "AGUI_PORT": "8001", "AGUI_TOKEN": agui_token,
        "USER_ID": "u-1", "USER_NAME": "Ada Lovelace", "INITIAL_PROMPT": initial_prompt,
        "LLM_MODEL": llm_model, "LLM_TEMPERATURE": "0.70", "LLM_MAX_TOKENS": "4000", "USE_AGUI": "true",
        "TIMEOUT": "300", "BACKEND_API_URL": backend_api_url, "USE_VERTEX": "0", "CLAUDE_CODE_USE_VERTEX": "0",
        "REPOS_JSON": "[]",
    }
    if custom_mcp_servers is not None:
        env["CUSTOM_MCP_SERVERS"] = json.dumps(custom_mcp_servers, sort_keys=True)
    env.update(registry_entry(runner_type)["container"]["env"])
    env.update(more)
    return {k: v for k, v in env.items() if v != ""}
