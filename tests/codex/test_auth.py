"""Codex credentials: the variables read by name once, when the bridge is built, a key never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from credential_settings import read_by_name

from ambient_runner.bridges.codex_sdk.auth import (
    AUTH_FILE_VARIABLE,
    BASE_URL_VARIABLE,
    KEY_VARIABLES,
    CodexCredentials,
    resolve_auth,
)
from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from tests.codex.helpers import make_settings

NAMES = (*KEY_VARIABLES, AUTH_FILE_VARIABLE, BASE_URL_VARIABLE)


def test_credentials_are_settings_read_by_name_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable ``resolve_auth`` reads is a field of ``CodexCredentials``; a key is in neither its repr nor
    its str."""
    credentials = read_by_name(monkeypatch, CodexCredentials, NAMES, secrets=2)
    auth = resolve_auth(credentials.variables())
    assert (auth.kind, auth.env_key, auth.key) == ("api_key", "CODEX_API_KEY", "value-of-codex_api_key")


def test_credentials_are_read_when_the_bridge_is_built(tmp_path: Path, no_openai_env: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-at-start")
    bridge = CodexBridge(make_settings(tmp_path, runner_scripted_model=False))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-later")  # the environment is fixed once the runner started
    assert (bridge.auth.kind, bridge.auth.key, bridge.auth.base_url) == ("api_key", "sk-at-start", None)
