"""The runner container's environment as the platform's operator builds it (research/platform-backend-contract.md
§3.1, operator sessions.go:1085-1394), from the registry entry (deploy/agent-registry.json) of one runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SESSION = "session-5d1c2a"
PROJECT = "team-a"


def registry_entry(runner_type: str) -> dict[str, Any]:
    """The entry of a runner type, or of an entry id (the ACP runner's are per agent: acp-opencode, ...)."""
    entry_id = "claude-agent-sdk" if runner_type == "claude" else runner_type
    entries = json.loads((ROOT / "deploy" / "agent-registry.json").read_text())
    return next(e for e in entries if e["id"] == entry_id)


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
