"""What the ACP runner knows of each agent (``ACP_AGENT``): how to start it, the model API it speaks, how it is
pointed at the runner's model proxy, how the approval policies map to its settings, and where its state lives.

* A **model API** (``model_apis.ModelApiKind``): the variables a deployment sets for it (the key, the base URL),
  the model proxy's API, and the scripted server that stands in for it offline.
* A **preset** (``AcpPreset``): the agent's command, its model API, its environment (``environment``: given the
  model endpoint the agent must use, its home, the model and the deployment's models), its model ids, the session
  mode each approval policy maps to (``mode``), what it is given in ``session/new`` (``session_meta``).

The key never reaches the agent when the model proxy serves its API: the agent gets the proxy's URL and its
placeholder key (``ModelEndpoint``).
"""

from __future__ import annotations

import json

from ambient_runner.bridges.acp.claude_agent import CLAUDE_AGENT_ACP
from ambient_runner.bridges.acp.codex_acp import CODEX_ACP
from ambient_runner.bridges.acp.model_apis import ANTHROPIC_API, OPENAI_CHAT_API, ModelApiKind
from ambient_runner.bridges.acp.preset import QUIET, AcpPreset, AgentSetup
from ambient_runner.bridges.acp.qwen_code import QWEN_CODE
from ambient_runner.bridges.acp_client.moves import NewSessionThere
from ambient_runner.settings import ACP_IMAGE_AGENTS
from ambient_runner.workspace.workflows import CarriedInstructions

# ----- opencode ------------------------------------------------------------------------------------------------
# the provider the runner declares in opencode's config (not "ambient": opencode's own model list has a provider of
# that name, whose models would be merged into it)
OPENCODE_PROVIDER = "ambient-proxy"
# a model of it: images in (else opencode replaces an image with an error text before the model sees it)
OPENCODE_MODEL = {"attachment": True, "modalities": {"input": ["text", "image"], "output": ["text"]}}


# the model API -> the AI SDK provider opencode speaks it with (each bundled in its binary: nothing is fetched), and
# the path its base URL takes after the proxy's (the Anthropic provider's requests go to <baseURL>/messages)
OPENCODE_PROVIDERS = {"anthropic": ("@ai-sdk/anthropic", "/v1"), "openai-chat": ("@ai-sdk/openai-compatible", "")}


def opencode_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """opencode's config as ``OPENCODE_CONFIG_CONTENT``: one provider (the model proxy, with the AI SDK provider of
    its model API), its models, nothing shared, no update. ``OPENCODE_PERMISSION`` makes its shell and its edits
    always ask: the policy is a run's (``approvalPolicy``) and the process is the pod's, so the client decides: under
    ``ask`` a request is put to a person, under ``auto`` it is allowed at once.

    ``OPENCODE_DISABLE_PROJECT_CONFIG``: the folders it works in are not read for configuration (the trust rule,
    docs/workflows.md): no ``opencode.json`` / ``opencode.jsonc`` up the tree (its MCP servers, permissions, agents'
    permissions, plugins and ``instructions`` would be merged below this config, and an agent's or a ``*``
    permission would approve a shell call), no ``.opencode/`` folder (plugins it would import, commands, agents, and
    a package install there). It then reads no ``AGENTS.md`` / ``CLAUDE.md`` there either: the runner carries
    ``AGENTS.md`` in the preamble (``carried``)."""
    npm, path = OPENCODE_PROVIDERS[api.name]
    base_url = setup.endpoint.base_url.rstrip("/") + path
    models = dict.fromkeys((setup.model, *setup.models))
    config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
              "enabled_providers": [OPENCODE_PROVIDER],  # not its own cloud models: every model is the proxy's
              "model": f"{OPENCODE_PROVIDER}/{setup.model}", "small_model": f"{OPENCODE_PROVIDER}/{setup.model}",
              "provider": {OPENCODE_PROVIDER: {"npm": npm, "name": "Ambient",
                                               "options": {"baseURL": base_url, "apiKey": setup.endpoint.key},
                                               "models": {m: OPENCODE_MODEL | {"name": m} for m in models}}}}
    env = {**QUIET, "OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_MODELS_FETCH": "1",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
           "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_PROJECT_CONFIG": "1"}
    env["OPENCODE_PERMISSION"] = json.dumps({"bash": "ask", "edit": "ask"})
    return env


# a workflow switch: the thread goes on in a new session in the new folder, told the conversation so far (opencode runs
# a session only in the folder it was created in: ``moves.NewSessionThere``)
OPENCODE = AcpPreset("opencode", "opencode", "opencode", ("acp", "--pure"), ANTHROPIC_API, "claude-sonnet-5",
                     opencode_environment, model_id=lambda model: f"{OPENCODE_PROVIDER}/{model}",
                     package="opencode-ai", state_excludes=("home/.local/share/opencode/log",),
                     model_apis=tuple(OPENCODE_PROVIDERS), carried=CarriedInstructions(("AGENTS.md",), always=True),
                     moves=NewSessionThere())


# ----- any other ACP agent ---------------------------------------------------------------------------------------
def custom_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """The model API's usual variables, pointed at the model proxy (an agent that ignores them is not supported)."""
    return {**QUIET, setup.endpoint.key_variable: setup.endpoint.key, api.base_url_variable: setup.endpoint.base_url}


CUSTOM = AcpPreset("custom", "custom ACP", "", (), OPENAI_CHAT_API, "gpt-4.1", custom_environment, own_model=True)
PRESETS = {preset.name: preset for preset in (OPENCODE, CLAUDE_AGENT_ACP, CODEX_ACP, QWEN_CODE, CUSTOM)}
# the presets with an image and a registry entry of their own (deploy/image/acp/<agent>/, acp-<agent>)
WITH_IMAGE = ACP_IMAGE_AGENTS


def preset_of(agent: str) -> AcpPreset | None:
    return PRESETS.get(agent.strip().lower())


def framework_of(agent: str) -> str:
    """The runner's id in the platform's agent registry (``/capabilities`` ``framework``): one per preset, as each
    has an image and an entry of its own (``acp-opencode``, ``acp-claude-agent-acp``)."""
    return f"acp-{agent.strip().lower()}"
