"""``ACP_AGENT=claude-agent-acp``: Claude Code over ACP (npm ``@agentclientprotocol/claude-agent-acp``, the Claude
Agent SDK with its Claude Code binary), on the Anthropic Messages API.

* **The model proxy.** ``ANTHROPIC_BASE_URL`` is the proxy; the placeholder goes in the variable the deployment's
  key was found in (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or ``CLAUDE_CODE_OAUTH_TOKEN``).
* **Its config** (``CLAUDE_CONFIG_DIR``, its sessions' transcripts) lies in the agent's HOME in the state dir, so
  ``session/load`` finds a thread after a restart; the runner writes its user settings there: the deployment's
  models as its model list (``availableModels``: the model config option's values are those ids, plus Claude
  Code's own ``default``), the session's first model, the ``default`` (ask) permission mode, no "auto" mode (a
  model of its own decides there), no prompt suggestions.
* **Only those settings.** ``session/new`` and ``session/load`` carry ``_meta.claudeCode.options.settingSources``
  ``["user"]``: a repository's ``.claude/settings*.json`` (their ``env`` could move the model traffic, their
  permission rules would allow what ``ask`` must put to a person, their hooks) is never read, as in the claude
  runner. Nor, then, does it read a repository's ``CLAUDE.md``: the runner carries the workspace root's
  (``CLAUDE.md``, ``.claude/CLAUDE.md``) in the preamble, the active workflow's being there already.
* **Approvals.** The mode follows the thread's policy before each turn: ``ask`` -> ``default`` (Claude Code asks
  before a change or a command that is not read-only), anything else -> ``bypassPermissions`` (it never asks; as
  root it needs ``IS_SANDBOX=1``, which the pod's sandboxing stands for, as for the claude runner).
* **Quiet.** No telemetry, error reports, update checks or non-essential traffic. Claude Code still asks the model
  for a title of each new session (one small request, not turned off by anything it offers).
"""

from __future__ import annotations

import json

from ambient_runner.bridges.acp.model_apis import ANTHROPIC_API, ModelApiKind
from ambient_runner.bridges.acp.preset import QUIET, AcpPreset, AgentSetup
from ambient_runner.workspace.workflows import CarriedInstructions

CLAUDE_QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
                "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}
SETTINGS_ONLY_USER = {"claudeCode": {"options": {"settingSources": ["user"]}}}


def claude_mode(policy: str, plan: bool) -> str:
    return "default" if policy == "ask" else "bypassPermissions"


def claude_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """Its variables, and its user settings written into its config folder."""
    config = setup.home / ".claude"
    config.mkdir(parents=True, exist_ok=True, mode=0o700)
    settings = {"availableModels": list(dict.fromkeys((setup.model, *setup.models))), "model": setup.model,
                "permissions": {"defaultMode": "default"}, "disableAutoMode": "disable",
                "promptSuggestionEnabled": False}
    (config / "settings.json").write_text(json.dumps(settings, indent=2))
    return {**QUIET, **CLAUDE_QUIET, "CLAUDE_CONFIG_DIR": str(config), api.base_url_variable: setup.endpoint.base_url,
            setup.endpoint.key_variable: setup.endpoint.key, "ANTHROPIC_MODEL": setup.model,
            "CLAUDE_CODE_MAX_RETRIES": str(setup.max_retries)}


CLAUDE_AGENT_ACP = AcpPreset(
    "claude-agent-acp", "Claude", "claude-agent-acp", (), ANTHROPIC_API, "claude-sonnet-5-5", claude_environment,
    package="@agentclientprotocol/claude-agent-acp", mode=claude_mode, session_meta=SETTINGS_ONLY_USER,
    carried=CarriedInstructions(("CLAUDE.md", ".claude/CLAUDE.md"), always=True, from_folder=False),
    session_processes=True,  # a Claude Code process per session
    state_excludes=("home/.claude/shell-snapshots", "home/.claude/session-env", "home/.claude/backups",
                    "home/.claude/debug", "home/.claude/statsig", "home/.claude/cache", "home/.claude/plugins"))
