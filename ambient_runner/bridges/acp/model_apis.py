"""The model APIs an ACP agent can speak (``ACP_AGENT_MODEL_API``), as the runner configures each for it: where a
deployment puts the key and another endpoint, the model proxy's API (``model_proxy.apis``: its paths, its default
endpoint, the header each kind of key goes in upstream), the scripted server that stands in for it offline, and the
provider its usage is counted under.

The variables are those of the matching built-in runner: ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN`` /
``CLAUDE_CODE_OAUTH_TOKEN`` with ``ANTHROPIC_BASE_URL`` (claude), ``CODEX_API_KEY`` / ``OPENAI_API_KEY`` with
``OPENAI_BASE_URL`` (codex-sdk), ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY`` with ``GOOGLE_GEMINI_BASE_URL``
(gemini-cli). The agent is given the same variable its key was found in (a Claude login's token is not an API key),
holding the proxy's placeholder, and the base-URL variable pointing at the proxy. They are read once, when the
bridge is built (``AcpCredentials``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import SecretStr

from ambient_runner.model_proxy import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, ModelApi
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.base import ScriptedModelServer
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer
from ambient_runner.settings import CredentialSettings

SCRIPTED_KEY = "sk-scripted-offline"


@dataclass(frozen=True)
class ModelApiKind:
    """A model API as the runner configures it for an agent."""

    name: str  # ACP_AGENT_MODEL_API
    api: ModelApi  # what the model proxy serves
    base_url_variable: str  # where a deployment puts another endpoint (a gateway)
    scripted: type[ScriptedModelServer]
    path_suffix: str  # appended to a server's root URL to make this API's base URL ("/v1" for OpenAI's)
    provider: str  # the usage's provider
    default_model: str  # the model an agent starts on when it speaks this API not by default and none is configured
    gateway_only: tuple[str, ...] = ()  # key variables that count only with the base-URL variable (a gateway's)

    @property
    def key_variables(self) -> tuple[str, ...]:
        """Where a deployment puts the key (the first set wins)."""
        return self.api.key_variables

    @property
    def keys_alone(self) -> tuple[str, ...]:
        """The key variables that are enough on their own (the registry's required secrets, "any of")."""
        return tuple(name for name in self.key_variables if name not in self.gateway_only)

    def deployment(self, server_url: str, key: str) -> dict[str, str]:
        """What a deployment sets to give an agent of this API the endpoint served at ``server_url`` (its root:
        this API's path is added) and ``key``."""
        return {self.key_variables[0]: key, self.base_url_variable: f"{server_url}{self.path_suffix}"}


# ANTHROPIC_AUTH_TOKEN is a gateway's token: with ANTHROPIC_BASE_URL only, as for the claude runner
ANTHROPIC_API = ModelApiKind("anthropic", ANTHROPIC, "ANTHROPIC_BASE_URL", AnthropicScriptedServer, "", "anthropic",
                             "claude-sonnet-5-5", gateway_only=("ANTHROPIC_AUTH_TOKEN",))
OPENAI_RESPONSES_API = ModelApiKind("openai-responses", OPENAI_RESPONSES, "OPENAI_BASE_URL", OpenAIResponsesServer,
                                    "/v1", "openai", "gpt-5.5")
OPENAI_CHAT_API = ModelApiKind("openai-chat", OPENAI_CHAT, "OPENAI_BASE_URL", OpenAIChatServer, "/v1", "openai",
                               "gpt-4.1")
GEMINI_API = ModelApiKind("gemini", GEMINI, "GOOGLE_GEMINI_BASE_URL", ScriptedGeminiServer, "", "google",
                           "gemini-2.5-flash")
MODEL_APIS = {api.name: api for api in (ANTHROPIC_API, OPENAI_RESPONSES_API, OPENAI_CHAT_API, GEMINI_API)}


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the agent sends its model requests, with which key (the proxy's placeholder when proxied), in which
    of its API's key variables."""

    base_url: str
    key: str
    key_variable: str


class AcpCredentials(CredentialSettings):
    """The key and base-URL variables of every model API (``MODEL_APIS``: each kind's ``key_variables`` and
    ``base_url_variable``), read once when the ACP runner's bridge is built."""

    anthropic_api_key: SecretStr = SecretStr("")
    anthropic_auth_token: SecretStr = SecretStr("")
    claude_code_oauth_token: SecretStr = SecretStr("")
    anthropic_base_url: str = ""
    codex_api_key: SecretStr = SecretStr("")
    openai_api_key: SecretStr = SecretStr("")
    openai_base_url: str = ""
    gemini_api_key: SecretStr = SecretStr("")
    google_api_key: SecretStr = SecretStr("")
    google_gemini_base_url: str = ""


def configured_key(api: ModelApiKind, variables: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, key) of the first of the API's key variables set in ``variables`` (the bridge's
    ``AcpCredentials.variables()``; a gateway's key only with its URL)."""
    gateway = bool((variables.get(api.base_url_variable) or "").strip())
    for name in api.key_variables:
        value = (variables.get(name) or "").strip()
        if value and (gateway or name not in api.gateway_only):
            return name, value
    return None
