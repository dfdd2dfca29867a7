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
* **Untrusted folders** (the trust rule, docs/workflows.md). codex-acp marks each session's folders trusted in the
  configuration of the session's thread, which ranks above ``config.toml`` and the app-server's ``-c`` overrides:
  Codex would load the folder's ``.codex/config.toml`` (MCP servers, ``notify``, hooks, exec policies). Its Codex
  (``CODEX_PATH``) is a launcher of ``codex_untrusted.py``, which starts the Codex codex-acp would start itself and
  marks those folders untrusted on their way to it, for every session, in every folder (a workflow's after a
  switch too). Codex then reads no ``AGENTS.md`` there either: the runner carries it in the preamble.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.acp.model_apis import OPENAI_RESPONSES_API, ModelApiKind
from ambient_runner.bridges.acp.preset import QUIET, AcpPreset, AgentSetup
from ambient_runner.bridges.codex_config import DEFAULT_MODEL, CodexConfigFile
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.workspace.workflows import CarriedInstructions

TITLE = "Ambient session"
MCP_STARTUP = {"mcpStartupAwaitTimeoutMs": 10_000}  # Codex gives up on an MCP server after 10 s (startup_timeout_sec)
ASKS_FOR = ("ask = file edits and commands that need more than Codex's read-only sandbox wait for a person (an "
            "interrupt; commands that only read run without asking); auto = nothing asks")


def codex_mode(policy: str, plan: bool) -> str:
    return "read-only" if policy == "ask" else "agent-full-access"


UNTRUSTED_RELAY = Path(__file__).with_name("codex_untrusted.py")
CODEX_ENTRY = Path("node_modules") / "@openai" / "codex" / "bin" / "codex.js"


def codex_of(executable: str) -> Path | None:
    """The Codex codex-acp starts when ``CODEX_PATH`` is unset: ``@openai/codex``'s entry point as Node finds it from
    codex-acp's own file (its own ``node_modules``, then each folder above)."""
    found = shutil.which(executable) or executable
    for folder in Path(found).resolve().parents:
        if (folder / CODEX_ENTRY).is_file():
            return folder / CODEX_ENTRY
    return None


def untrusted_codex(setup: AgentSetup) -> Path:
    """A launcher of ``codex_untrusted.py`` in front of codex-acp's own Codex (for ``CODEX_PATH``), in the agent's
    temporary folder (written at every start, not state); a codex-acp without its Codex cannot start (the runner
    would not start it without the trust rule)."""
    codex = codex_of(setup.command[0]) if setup.command else None
    node = shutil.which("node")
    if codex is None or node is None:
        raise BridgeError(f"Codex (@openai/codex) or Node.js was not found next to codex-acp "
                          f"({setup.command[0] if setup.command else 'no command'}): reinstall "
                          "@agentclientprotocol/codex-acp (npm install).", code=ErrorCode.CLI_NOT_FOUND)
    launcher = setup.home / "tmp" / "codex-untrusted"
    launcher.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    command = shlex.join([sys.executable, "-I", "-S", str(UNTRUSTED_RELAY), node, str(codex)])
    launcher.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    launcher.chmod(0o700)
    return launcher


def codex_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """Its config.toml in CODEX_HOME, the placeholder in the variable its provider reads, its Codex through
    ``codex_untrusted.py``."""
    codex_home = setup.home / ".codex"
    CodexConfigFile(model=setup.model, base_url=setup.endpoint.base_url,
                    env_key=setup.endpoint.key_variable).write(codex_home)
    return {**QUIET, "CODEX_HOME": str(codex_home), setup.endpoint.key_variable: setup.endpoint.key,
            "CODEX_PATH": str(untrusted_codex(setup)), "INITIAL_AGENT_MODE": "agent-full-access",
            "RUST_LOG": "warn"}


CODEX_ACP = AcpPreset(
    "codex-acp", "Codex", "codex-acp", (), OPENAI_RESPONSES_API, DEFAULT_MODEL, codex_environment,
    package="@agentclientprotocol/codex-acp", mode=codex_mode, model_apis=("openai-responses",), title=TITLE,
    ends_commands=False, approval_note=ASKS_FOR, session_meta=MCP_STARTUP,
    resume_first=True, carried=CarriedInstructions(("AGENTS.md",), always=True),
    state_excludes=("home/.codex/tmp", "home/.codex/logs_2.sqlite*", "home/.codex/shell_snapshots",
                    "home/.codex/thread-writer-locks", "home/.codex/*.lock"))
