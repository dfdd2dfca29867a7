"""What the ACP runner knows of each agent (``ACP_AGENT``): how to start it, the model API it speaks, how it is
pointed at the runner's model proxy, how the approval policies map to its settings, and where its state lives.

* A **model API** (``ModelApiKind``): the variables a deployment sets for it (the key, the base URL), the default
  endpoint, the model proxy's API, and the scripted server that stands in for it offline.
* A **preset** (``AcpPreset``): the agent's command, its model API, its environment (``environment``: given the
  model endpoint the agent must use, its home, the policy and the model) and its model ids.

The key never reaches the agent when the model proxy serves its API: the agent gets the proxy's URL and its
placeholder key (``ModelEndpoint``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ambient_runner.model_proxy import OPENAI_CHAT, ModelApi
from ambient_runner.scripted_models.base import ScriptedModelServer
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer

REPO_ROOT = Path(__file__).resolve().parents[3]
SCRIPTED_KEY = "sk-scripted-offline"
# Every agent: no telemetry, no update check, no error reporting, nothing fetched at start.
QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
         "NO_UPDATE_NOTIFIER": "1", "NO_BROWSER": "1", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}


@dataclass(frozen=True)
class ModelApiKind:
    """A model API as the runner configures it for an agent."""

    name: str  # ACP_AGENT_MODEL_API
    api: ModelApi  # what the model proxy serves
    key_variables: tuple[str, ...]  # where a deployment puts the key (the first set wins)
    base_url_variable: str  # where it puts another endpoint (a gateway)
    default_base_url: str
    scripted: type[ScriptedModelServer]
    path_suffix: str  # appended to a server's root URL to make this API's base URL ("/v1" for OpenAI's)

    def upstream_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}


OPENAI_CHAT_API = ModelApiKind("openai-chat", OPENAI_CHAT, ("OPENAI_API_KEY",), "OPENAI_BASE_URL",
                               "https://api.openai.com/v1", OpenAIChatServer, "/v1")
MODEL_APIS = {api.name: api for api in (OPENAI_CHAT_API,)}  # Anthropic, Responses, Gemini: with their presets


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the agent sends its model requests, with which key (the proxy's placeholder when proxied)."""

    base_url: str
    key: str


@dataclass(frozen=True)
class AgentSetup:
    """What a preset's environment is made from."""

    endpoint: ModelEndpoint
    home: Path  # the agent's HOME (under the runner's state dir)
    model: str  # the model the session starts on
    models: tuple[str, ...]  # the models the deployment offers


@dataclass(frozen=True)
class AcpPreset:
    name: str  # ACP_AGENT
    display: str  # in messages ("The opencode agent") and the question card ("opencode wants to ...")
    executable: str  # looked up in the repo's node_modules/.bin, then on PATH
    arguments: tuple[str, ...]
    model_api: ModelApiKind
    default_model: str
    environment: Callable[[AgentSetup, ModelApiKind], dict[str, str]]
    model_id: Callable[[str], str] = lambda model: model  # the runner's model name -> the agent's model id
    package: str = ""  # the npm package that brings it (for a missing agent's message)
    own_model: bool = False  # the agent picks its model itself: the runner switches it only when a run names one

    def argv(self, command: str = "") -> list[str] | None:
        """The command line (``ACP_AGENT_COMMAND`` wins), None when the executable is not found."""
        if command.strip():
            return shlex.split(command)
        if not self.executable:
            return None
        bundled = REPO_ROOT / "node_modules" / ".bin" / self.executable
        found = str(bundled) if os.access(bundled, os.X_OK) else shutil.which(self.executable)
        return [found, *self.arguments] if found else None


# ----- opencode ------------------------------------------------------------------------------------------------
# the provider the runner declares in opencode's config (not "ambient": opencode's own model list has a provider of
# that name, whose models would be merged into it)
OPENCODE_PROVIDER = "ambient-proxy"
# a model of it: images in (else opencode replaces an image with an error text before the model sees it)
OPENCODE_MODEL = {"attachment": True, "modalities": {"input": ["text", "image"], "output": ["text"]}}


def opencode_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """opencode's config as ``OPENCODE_CONFIG_CONTENT``: one provider (the model proxy), its models, nothing
    shared, no update. ``OPENCODE_PERMISSION`` makes its shell and its edits always ask: the policy is a run's
    (``approvalPolicy``) and the process is the pod's, so the client decides: under ``ask`` a request is put to a
    person, under ``auto`` it is allowed at once."""
    npm, base_url = "@ai-sdk/openai-compatible", setup.endpoint.base_url
    models = dict.fromkeys((setup.model, *setup.models))
    config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
              "enabled_providers": [OPENCODE_PROVIDER],  # not its own cloud models: every model is the proxy's
              "model": f"{OPENCODE_PROVIDER}/{setup.model}", "small_model": f"{OPENCODE_PROVIDER}/{setup.model}",
              "provider": {OPENCODE_PROVIDER: {"npm": npm, "name": "Ambient",
                                               "options": {"baseURL": base_url, "apiKey": setup.endpoint.key},
                                               "models": {m: OPENCODE_MODEL | {"name": m} for m in models}}}}
    env = {**QUIET, "OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_MODELS_FETCH": "1",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
           "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}
    env["OPENCODE_PERMISSION"] = json.dumps({"bash": "ask", "edit": "ask"})
    return env


OPENCODE = AcpPreset("opencode", "opencode", "opencode", ("acp", "--pure"), OPENAI_CHAT_API, "gpt-4.1",
                     opencode_environment, model_id=lambda model: f"{OPENCODE_PROVIDER}/{model}",
                     package="opencode-ai")


# ----- any other ACP agent ---------------------------------------------------------------------------------------
def custom_environment(setup: AgentSetup, api: ModelApiKind) -> dict[str, str]:
    """The model API's usual variables, pointed at the model proxy (an agent that ignores them is not supported)."""
    return {**QUIET, api.key_variables[0]: setup.endpoint.key, api.base_url_variable: setup.endpoint.base_url}


CUSTOM = AcpPreset("custom", "custom ACP", "", (), OPENAI_CHAT_API, "gpt-4.1", custom_environment, own_model=True)
PRESETS = {preset.name: preset for preset in (OPENCODE, CUSTOM)}


def preset_of(agent: str) -> AcpPreset | None:
    return PRESETS.get(agent.strip().lower())


def configured_key(api: ModelApiKind, environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(variable, key) of the first of the API's key variables that is set."""
    env = os.environ if environ is None else environ
    for name in api.key_variables:
        value = (env.get(name) or "").strip()
        if value:
            return name, value
    return None
