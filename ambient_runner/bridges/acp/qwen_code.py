"""``ACP_AGENT=qwen-code``: Qwen Code over ACP (npm ``@qwen-code/qwen-code``, ``qwen --acp``), on the Gemini API by
default, or on OpenAI Chat Completions (``ACP_AGENT_MODEL_API=openai-chat``).

* **The model proxy.** The API's base-URL variable (``GOOGLE_GEMINI_BASE_URL``, ``OPENAI_BASE_URL``) is the proxy,
  the placeholder goes in the variable the deployment's key was found in; its settings name the API
  (``security.auth.selectedType``) and declare the deployment's models under it (``modelProviders``: without them
  its model list is empty and ``/model`` cannot switch), each reading the key from that variable.
* **Its settings** (``~/.qwen/settings.json`` in the agent's HOME in the state dir, where its sessions lie too) are
  also its system settings (``QWEN_CODE_SYSTEM_SETTINGS_PATH``), which rank above a repository's
  ``.qwen/settings.json``: no usage statistics (each start looked up Alibaba's RUM host), telemetry or update checks,
  no managed auto-memory (a model request of its own after every turn), no follow-up suggestions (another).
* **A repository's settings** (the trust rule, docs/workflows.md). Qwen Code merges a folder's
  ``.qwen/settings.json`` below the system settings, so what the system settings do not set stands: they turn off
  every hook (``disableAllHooks``: a folder's hooks would run commands at session start and around each tool) and
  the tool discovery and call commands (``tools.discoveryCommand`` / ``callCommand``: a folder's would run at
  session start), and make every shell command, edit, web fetch and MCP call ask unless the session is in ``yolo``
  (``permissions.ask``, which ranks above a folder's ``permissions.allow`` / ``tools.allowed``). A folder's MCP
  servers wait for an approval it never gets over ACP: its sessions start in ``default`` (``--approval-mode
  default``), where it gates them (a session started in ``yolo`` would start them). Its folder-trust setting would
  keep a folder's settings out altogether, but it also drops the runner's own MCP servers and refuses ``yolo``.
* **MCP servers** (the runner's, from ``session/new``) are started before ``session/new`` answers
  (``QWEN_CODE_LEGACY_MCP_BLOCKING=1``; else they connect in the background and a session's first prompt goes out
  before their tools exist). It defers MCP tools: its startup reminder lists them by name, and the model reviews one
  with ``tool_search`` and calls it through ``tool_call`` (shown as the MCP tool's own call).
* **A workflow switch.** It refuses to load a session it holds in another folder, and has no ``session/close``: a
  thread's session moves to the new folder by its own ``qwen/control/session/cd`` (the conversation kept).
* **Approvals.** It starts in ``default`` (``--approval-mode default``: asks before a file edit or a shell
  command; without the flag it starts in ``auto``, where a model call of its own classifies each tool call); before
  each turn the thread's policy sets ``default`` (ask) or ``yolo`` (never ask). A refusal ends its turn
  (``end_turn``); its model learns of it, with the person's words, with the next prompt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ambient_runner.bridges.acp.model_apis import GEMINI_API, ModelApiKind
from ambient_runner.bridges.acp.preset import QUIET, AcpPreset, AgentSetup
from ambient_runner.bridges.acp_client.moves import ChangeDirectory

# the model API -> the name Qwen Code gives it (``--auth-type``, ``security.auth.selectedType``, ``modelProviders``)
QWEN_AUTH_TYPES = {"gemini": "gemini", "openai-chat": "openai"}
QWEN_QUIET = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
              "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
              "memory": {"enableManagedAutoMemory": False, "enableAutoSkill": False},
              "ui": {"enableFollowupSuggestions": False}}
# Above a repository's .qwen/settings.json: no hooks, no discovery commands, and whatever its permissions allow
# still asks outside yolo ("edit" covers write_file and notebook_edit too)
QWEN_LOCKED = {"disableAllHooks": True, "tools": {"discoveryCommand": "", "callCommand": ""},
               "permissions": {"ask": ["run_shell_command", "edit", "web_fetch", "mcp__*"]}}


def qwen_mode(policy: str, plan: bool) -> str:
    return "default" if policy == "ask" else "yolo"


def qwen_settings(setup: AgentSetup, api: ModelApiKind) -> dict[str, Any]:
    """Its API, the deployment's models under it (the first one the session's), and the quiet settings."""
    auth_type = QWEN_AUTH_TYPES[api.name]
    models = dict.fromkeys((setup.model, *setup.models))
    providers = [{"id": model, "name": model, "baseUrl": setup.endpoint.base_url,
                  "envKey": setup.endpoint.key_variable} for model in models]
    return {"security": {"auth": {"selectedType": auth_type}}, "model": {"name": setup.model},
            "modelProviders": {auth_type: providers}, **QWEN_QUIET, **QWEN_LOCKED}


def write_json(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(content, indent=1))
    os.replace(tmp, path)


def qwen_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """Its variables, and its settings written into its HOME (as user and as system settings)."""
    folder = setup.home / ".qwen"
    settings = qwen_settings(setup, api)
    write_json(folder / "settings.json", settings)
    write_json(folder / "system-settings.json", settings)
    return {**QUIET, api.base_url_variable: setup.endpoint.base_url, setup.endpoint.key_variable: setup.endpoint.key,
            "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(folder / "system-settings.json"), "QWEN_DISABLE_AUTO_TITLE": "1",
            "QWEN_CODE_LEGACY_MCP_BLOCKING": "1"}


QWEN_CODE = AcpPreset(
    "qwen-code", "Qwen Code", "qwen", ("--acp", "--approval-mode", "default"), GEMINI_API, "gemini-2.5-flash",
    qwen_environment, package="@qwen-code/qwen-code", mode=qwen_mode, model_apis=("gemini", "openai-chat"),
    moves=ChangeDirectory("qwen/control/session/cd"),
    state_excludes=("home/.qwen/tmp", "home/.qwen/extension-store/lock", "home/.qwen/extension-store/staging",
                    "home/.qwen/extension-store/transactions"))
