"""Which Anthropic credentials the runner has, and the variables Claude Code gets for them.

Accepted, in this order: Vertex AI (``CLAUDE_CODE_USE_VERTEX=1`` with ``ANTHROPIC_VERTEX_PROJECT_ID`` and
``CLOUD_ML_REGION``; ``GOOGLE_APPLICATION_CREDENTIALS`` optional for workload identity), a gateway
(``ANTHROPIC_BASE_URL`` with ``ANTHROPIC_AUTH_TOKEN`` or ``ANTHROPIC_API_KEY``), ``ANTHROPIC_API_KEY``,
``CLAUDE_CODE_OAUTH_TOKEN``. In scripted mode the CLI gets the scripted server's URL and a fake key instead.
The variables are read once, when the bridge is built (``ClaudeCredentials``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pydantic import Field, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource

from ambient_runner.model_proxy import ANTHROPIC, ModelProxy, Upstream
from ambient_runner.settings import CredentialSettings

TRUE = {"1", "true", "yes", "on"}
SECRET_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
# Credentials that are enough on their own (the agent registry's requiredSecrets, "any of"); Vertex and a gateway
# (ANTHROPIC_BASE_URL + ANTHROPIC_AUTH_TOKEN) are configured, not single secrets.
PRIMARY_CREDENTIALS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")
VERTEX_REQUIRED = ("ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION")
VERTEX_OPTIONAL = ("GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_VERTEX_BASE_URL", "GOOGLE_CLOUD_PROJECT")
OPTIONAL_PASSTHROUGH = ("ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                        "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                        "ANTHROPIC_DEFAULT_HAIKU_MODEL", "API_TIMEOUT_MS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS")
# What /ready and the start-up hint name when nothing is configured: the credentials only (Vertex AI's switch and
# region are settings, said in ``problem``).
MISSING_HINT = list(PRIMARY_CREDENTIALS)
SCRIPTED_KEY = "sk-ant-scripted-offline-key"
# The credential variables Claude Code reads, and the header it sends each in (measured with the pinned version:
# docs/runners.md#versions): ``ANTHROPIC.key_headers``.
PROXIED_SOURCES = ("scripted", "api-key", "oauth", "gateway")  # not Vertex AI: Claude Code signs those itself
VERTEX_REGION = "VERTEX_REGION_"  # VERTEX_REGION_<model>: one model's region on Vertex AI, as Claude Code names it


class ClaudeEnvironment(EnvSettingsSource):
    """The environment as the settings read it, and the ``VERTEX_REGION_<model>`` variables (any model, so not a
    field each; their names kept as Claude Code reads them) in ``vertex_regions``, which no variable sets itself."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[object, str, bool]:
        if field_name == "vertex_regions":
            return None, field_name, False
        return super().get_field_value(field, field_name)

    def __call__(self) -> dict[str, object]:
        regions = {k: v for k, v in os.environ.items() if k.startswith(VERTEX_REGION) and v}
        return {**super().__call__(), "vertex_regions": regions}


class ClaudeCredentials(CredentialSettings):
    """The Anthropic variables the claude runner reads (``resolve_auth``), read once when its bridge is built."""

    anthropic_api_key: SecretStr = SecretStr("")
    anthropic_auth_token: SecretStr = SecretStr("")
    claude_code_oauth_token: SecretStr = SecretStr("")
    anthropic_base_url: str = ""
    anthropic_custom_headers: SecretStr = SecretStr("")  # a gateway's own headers: may hold its credentials
    claude_code_use_vertex: str = ""
    anthropic_vertex_project_id: str = ""
    cloud_ml_region: str = ""
    google_application_credentials: str = ""
    anthropic_vertex_base_url: str = ""
    google_cloud_project: str = ""
    vertex_regions: dict[str, str] = Field(default_factory=dict)  # VERTEX_REGION_<model> -> its region
    anthropic_model: str = ""
    anthropic_small_fast_model: str = ""
    anthropic_default_sonnet_model: str = ""
    anthropic_default_opus_model: str = ""
    anthropic_default_haiku_model: str = ""
    api_timeout_ms: str = ""
    claude_code_max_output_tokens: str = ""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, ClaudeEnvironment(settings_cls), dotenv_settings, file_secret_settings

    def variables(self) -> dict[str, str]:
        return super().variables() | self.vertex_regions


@dataclass(frozen=True)
class ClaudeAuth:
    source: str  # "vertex" | "gateway" | "api-key" | "oauth" | "scripted" | "" (none)
    env: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.source)

    @property
    def secrets(self) -> list[str]:
        return [v for k, v in self.env.items() if k in SECRET_NAMES and v and v != SCRIPTED_KEY]

    @property
    def problem(self) -> str:
        """Why there are no usable credentials ("" when there are)."""
        if self.ok:
            return ""
        return ("No Anthropic credentials are configured. Set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN, or "
                "CLAUDE_CODE_USE_VERTEX=1 with ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION, or ANTHROPIC_BASE_URL "
                "with ANTHROPIC_AUTH_TOKEN" + (f" (missing: {', '.join(self.missing)})" if self.missing else "") + ".")


def scripted_auth(base_url: str) -> ClaudeAuth:
    return ClaudeAuth("scripted", {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": SCRIPTED_KEY})


def resolve_auth(variables: Mapping[str, str]) -> ClaudeAuth:
    """The credentials configured in ``variables`` (the bridge's ``ClaudeCredentials.variables()``)."""

    def value(name: str) -> str:
        return (variables.get(name) or "").strip()

    extra = {k: value(k) for k in OPTIONAL_PASSTHROUGH if value(k)}
    if value("CLAUDE_CODE_USE_VERTEX").lower() in TRUE:
        missing = [k for k in VERTEX_REQUIRED if not value(k)]
        if missing:
            return ClaudeAuth("", missing=missing)
        env = {"CLAUDE_CODE_USE_VERTEX": "1", **{k: value(k) for k in VERTEX_REQUIRED + VERTEX_OPTIONAL if value(k)}}
        env.update({k: v for k, v in variables.items() if k.startswith(VERTEX_REGION) and v})
        return ClaudeAuth("vertex", env | extra)
    base_url = value("ANTHROPIC_BASE_URL")
    if base_url and (value("ANTHROPIC_AUTH_TOKEN") or value("ANTHROPIC_API_KEY")):
        env = {k: value(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY") if value(k)}
        return ClaudeAuth("gateway", env | extra)
    if value("ANTHROPIC_API_KEY"):
        return ClaudeAuth("api-key", {"ANTHROPIC_API_KEY": value("ANTHROPIC_API_KEY")} | extra)
    if value("CLAUDE_CODE_OAUTH_TOKEN"):
        return ClaudeAuth("oauth", {"CLAUDE_CODE_OAUTH_TOKEN": value("CLAUDE_CODE_OAUTH_TOKEN")} | extra)
    return ClaudeAuth("", missing=list(MISSING_HINT))


def model_upstream(auth: ClaudeAuth) -> Upstream | None:
    """Where the model proxy forwards for ``auth`` (None for Vertex AI: Claude Code signs those requests itself)."""
    if auth.source not in PROXIED_SOURCES:
        return None
    return ANTHROPIC.upstream(auth.env.get("ANTHROPIC_BASE_URL"), auth.env)


def through_proxy(auth: ClaudeAuth, proxy: ModelProxy | None) -> ClaudeAuth:
    """``auth`` as Claude Code sees it when the proxy serves its model API: the proxy's URL, placeholders."""
    if proxy is None or auth.source not in PROXIED_SOURCES:
        return auth
    env = {k: proxy.placeholder if k in ANTHROPIC.key_variables and v else v for k, v in auth.env.items()}
    return replace(auth, env=env | {"ANTHROPIC_BASE_URL": proxy.base_url})
