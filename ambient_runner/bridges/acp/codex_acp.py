"""``ACP_AGENT=codex-acp``: Codex over ACP (npm ``@agentclientprotocol/codex-acp`` with its own ``@openai/codex``, not
the codex-sdk runner's binary), on the OpenAI Responses API.

* **The model proxy.** Codex ignores ``OPENAI_BASE_URL``: the proxy is a custom provider in
  ``$CODEX_HOME/config.toml`` (the codex-sdk runner's file, ``bridges.codex_config``: analytics, feedback, update
  checks, plugins and remote features off; without them Codex looks up chatgpt.com and github.com at start), which
  reads the placeholder from the variable the deployment's key was found in. ``authenticate`` is never called (it
  would write the key into ``auth.json`` in the state dir).
* **Its home.** ``CODEX_HOME`` is ``.codex`` in the agent's HOME in the state dir (its sessions: ``session/load``
  after a restart); its logs, locks, shell snapshots and temporary files are left out of the state sync.
* **Approvals.** Its modes, set before each turn and again after every load (they are not kept): ``auto`` ->
  ``agent-full-access`` (it never asks), ``ask`` -> ``read-only`` (it asks before each file edit and before a command
  that needs more than its read-only sandbox; a command that only reads runs without asking). A refusal the runner
  sends ends its turn ``cancelled``: that is the refused step's end, not an interrupt.
* **Titles.** ``session/set_title`` right after ``session/new``: else it asks the model for a title with a model of
  its own choosing (``gpt-5.6-luna``), whatever the deployment's models.
* **MCP servers** (the runner's, from ``session/new``): Codex starts them in the background; ``session/new`` and
  ``session/resume`` answer once they are up (``_meta.mcpStartupAwaitTimeoutMs``, Codex's own start-up limit), else
  a session's first prompt goes out before their tools exist. Its ``session/load`` does not wait: a session it no
  longer holds is resumed (``resume_first``; the runner drops a load's replay anyway). Codex defers MCP tools
  behind ``tool_search``; a call's result is the tool's MCP result in ``rawOutput`` (the adapter shows its text).
* **Commands.** It starts each command in a session of its own and does not end it on ``session/cancel``: the runner
  ends the commands a cancelled prompt started (``ends_commands=False``).
"""

from __future__ import annotations

from ambient_runner.bridges.acp.model_apis import OPENAI_RESPONSES_API, ModelApiKind
from ambient_runner.bridges.acp.preset import QUIET, AcpPreset, AgentSetup
from ambient_runner.bridges.codex_config import DEFAULT_MODEL, CodexConfigFile

TITLE = "Ambient session"
MCP_STARTUP = {"mcpStartupAwaitTimeoutMs": 10_000}  # Codex gives up on an MCP server after 10 s (startup_timeout_sec)
ASKS_FOR = ("ask = file edits and commands that need more than Codex's read-only sandbox wait for a person (an "
            "interrupt; commands that only read run without asking); auto = nothing asks")


def codex_mode(policy: str, plan: bool) -> str:
    return "read-only" if policy == "ask" else "agent-full-access"


def codex_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """Its config.toml in CODEX_HOME, the placeholder in the variable its provider reads."""
    codex_home = setup.home / ".codex"
    CodexConfigFile(model=setup.model, base_url=setup.endpoint.base_url,
                    env_key=setup.endpoint.key_variable).write(codex_home)
    return {**QUIET, "CODEX_HOME": str(codex_home), setup.endpoint.key_variable: setup.endpoint.key,
            "INITIAL_AGENT_MODE": "agent-full-access", "RUST_LOG": "warn"}


CODEX_ACP = AcpPreset(
    "codex-acp", "Codex", "codex-acp", (), OPENAI_RESPONSES_API, DEFAULT_MODEL, codex_environment,
    package="@agentclientprotocol/codex-acp", mode=codex_mode, model_apis=("openai-responses",), title=TITLE,
    ends_commands=False, approval_note=ASKS_FOR, session_meta=MCP_STARTUP,
    resume_first=True,
    state_excludes=("home/.codex/tmp", "home/.codex/logs_2.sqlite*", "home/.codex/shell_snapshots",
                    "home/.codex/thread-writer-locks", "home/.codex/*.lock"))
