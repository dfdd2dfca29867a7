"""Codex credentials: an API key (``CODEX_API_KEY`` / ``OPENAI_API_KEY``) or a mounted ChatGPT-login
``auth.json`` (``CODEX_AUTH_JSON_FILE``), or the scripted provider's fake key.

Only the variable that holds the key reaches the app-server (``env_key`` of the custom provider names it).
A mounted auth.json is copied into CODEX_HOME with mode 0600; it is a credential file that the state sync
must not upload (``CREDENTIAL_FILES``). The variables are read once, when the bridge is built
(``CodexCredentials``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import SecretStr

from ambient_runner.model_proxy import OPENAI_RESPONSES, ModelProxy, Upstream
from ambient_runner.settings import CredentialSettings

KEY_VARIABLES = ("CODEX_API_KEY", "OPENAI_API_KEY")
AUTH_FILE_VARIABLE = "CODEX_AUTH_JSON_FILE"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"
CREDENTIAL_FILES = ("auth.json",)  # relative to CODEX_HOME; never synced to the state store
SCRIPTED_KEY = "sk-scripted-offline"
KEY_KINDS = ("api_key", "scripted")  # a key in the app-server's environment: what the model proxy can hold
MISSING_MESSAGE = ("No OpenAI credentials: set OPENAI_API_KEY or CODEX_API_KEY, or mount a ChatGPT-login "
                   "auth.json and point CODEX_AUTH_JSON_FILE at it.")


class CodexCredentials(CredentialSettings):
    """The OpenAI variables the codex-sdk runner reads (``resolve_auth``), read once when its bridge is built."""

    codex_api_key: SecretStr = SecretStr("")
    openai_api_key: SecretStr = SecretStr("")
    codex_auth_json_file: str = ""
    openai_base_url: str = ""


@dataclass(frozen=True)
class CodexAuth:
    """How the app-server authenticates."""

    kind: str  # "api_key" | "auth_json" | "scripted" | "missing"
    env_key: str = "OPENAI_API_KEY"
    key: str = ""
    auth_file: Path | None = None
    base_url: str | None = None  # OPENAI_BASE_URL (or the scripted server)

    @property
    def ok(self) -> bool:
        return self.kind != "missing"

    def environment(self) -> dict[str, str]:
        """The variables the app-server needs for this auth (and nothing else)."""
        return {self.env_key: self.key} if self.key else {}

    @property
    def secrets(self) -> list[str]:
        return [self.key] if self.key and self.kind != "scripted" else []

    @property
    def problem(self) -> str:
        return "" if self.ok else MISSING_MESSAGE

    @property
    def missing(self) -> list[str]:
        return [] if self.ok else [*KEY_VARIABLES, AUTH_FILE_VARIABLE]


def scripted_auth(base_url: str) -> CodexAuth:
    """The scripted provider's fake key, its server at ``base_url`` (its ``/v1``)."""
    return CodexAuth("scripted", key=SCRIPTED_KEY, base_url=base_url)


def resolve_auth(variables: Mapping[str, str]) -> CodexAuth:
    """The credentials configured in ``variables`` (the bridge's ``CodexCredentials.variables()``)."""
    base_url = (variables.get(BASE_URL_VARIABLE) or "").strip() or None
    for name in KEY_VARIABLES:
        value = (variables.get(name) or "").strip()
        if value:
            return CodexAuth("api_key", env_key=name, key=value, base_url=base_url)
    auth_file = (variables.get(AUTH_FILE_VARIABLE) or "").strip()
    if auth_file and Path(auth_file).is_file():
        return CodexAuth("auth_json", auth_file=Path(auth_file), base_url=base_url)
    return CodexAuth("missing")


def install_auth_file(auth: CodexAuth, codex_home: Path) -> None:
    """Copy a mounted auth.json into CODEX_HOME (0600); remove a stale copy when another auth is used."""
    target = codex_home / "auth.json"
    if auth.kind != "auth_json" or auth.auth_file is None:
        target.unlink(missing_ok=True)
        return
    codex_home.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".auth.json.{os.getpid()}.tmp")
    shutil.copyfile(auth.auth_file, tmp)
    os.chmod(tmp, 0o600)
    os.replace(tmp, target)


def model_upstream(auth: CodexAuth) -> Upstream | None:
    """Where the model proxy forwards for an API key (None for a ChatGPT login: Codex refreshes it itself)."""
    if auth.kind not in KEY_KINDS or not auth.key:
        return None
    return OPENAI_RESPONSES.upstream(auth.base_url, {auth.env_key: auth.key})


def through_proxy(auth: CodexAuth, proxy: ModelProxy | None) -> CodexAuth:
    """``auth`` as the app-server sees it when the proxy serves its model API: the proxy's URL and placeholder."""
    if proxy is None or auth.kind not in KEY_KINDS:
        return auth
    return replace(auth, key=proxy.placeholder, base_url=f"{proxy.base_url}/v1")
