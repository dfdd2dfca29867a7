"""Gemini credentials, CLI home layout, settings.json and readiness (no CLI process started)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from credential_settings import read_by_name
from runner_kits import collect, make_turn

from ambient_runner.bridges.gemini_cli.auth import CREDENTIAL_FILE_NAMES, GeminiCredentials, resolve_auth
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.bridges.gemini_cli.config import GeminiHome, turn_argv
from tests.gemini.helpers import make_settings

AUTH_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
             "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS", "GEMINI_OAUTH_CREDS_FILE",
             "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL")


@pytest.fixture(autouse=True)
def no_auth_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AUTH_VARS:
        monkeypatch.delenv(name, raising=False)


def test_api_key_modes() -> None:
    auth = resolve_auth({"GOOGLE_API_KEY": "k1"})
    assert (auth.mode, auth.env, auth.secrets, auth.selected_type) == (
        "api-key", {"GEMINI_API_KEY": "k1"}, ("k1",), "gemini-api-key")
    auth = resolve_auth({"GEMINI_API_KEY": "k2", "GOOGLE_GEMINI_BASE_URL": "http://gw"})
    assert (auth.mode, auth.env) == ("gateway", {"GEMINI_API_KEY": "k2", "GOOGLE_GEMINI_BASE_URL": "http://gw"})
    assert resolve_auth({"GOOGLE_GEMINI_BASE_URL": "http://gw"}).ok


def test_credentials_are_settings_read_by_name_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable ``resolve_auth`` reads is a field of ``GeminiCredentials``; a key is in neither its repr nor
    its str."""
    read_by_name(monkeypatch, GeminiCredentials, AUTH_VARS, secrets=2)


def test_credentials_are_read_when_the_bridge_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-at-start")
    bridge = GeminiCliBridge(make_settings(tmp_path, runner_scripted_model=False))
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-later")  # the environment is fixed once the runner started
    assert bridge.auth.env == {"GEMINI_API_KEY": "AIza-at-start"}


def test_vertex_mode_passes_only_vertex_variables(tmp_path: Path) -> None:
    key_file = tmp_path / "sa.json"
    key_file.write_text("{}")
    auth = resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p",
                         "GOOGLE_CLOUD_LOCATION": "us-central1", "GOOGLE_APPLICATION_CREDENTIALS": str(key_file),
                         "GEMINI_API_KEY": "not-for-vertex"})
    assert auth.ok and auth.selected_type == "vertex-ai"
    assert auth.env == {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p",
                        "GOOGLE_CLOUD_LOCATION": "us-central1", "GOOGLE_APPLICATION_CREDENTIALS": str(key_file)}
    missing = resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"})
    assert not missing.ok and missing.missing == ("GOOGLE_CLOUD_LOCATION",)
    no_file = resolve_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p",
                            "GOOGLE_CLOUD_LOCATION": "l", "GOOGLE_APPLICATION_CREDENTIALS": "/nope.json"})
    assert not no_file.ok and "/nope.json" in no_file.problem


def test_personal_login_is_copied_into_the_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted = tmp_path / "secret" / "oauth_creds.json"
    mounted.parent.mkdir()
    mounted.write_text('{"refresh_token": "1//refresh-secret", "token_type": "Bearer"}')
    monkeypatch.setenv("GEMINI_OAUTH_CREDS_FILE", str(mounted))
    settings = make_settings(tmp_path, runner_scripted_model=False)
    bridge = GeminiCliBridge(settings)
    assert bridge.auth.mode == "oauth" and bridge.readiness().ready
    bridge._prepare()
    copied = settings.state_dir / "oauth_creds.json"
    assert copied.read_text() == mounted.read_text()
    assert stat.S_IMODE(copied.stat().st_mode) == 0o600
    assert "oauth_creds.json" in CREDENTIAL_FILE_NAMES
    assert bridge.state_files().credentials == CREDENTIAL_FILE_NAMES
    assert "1//refresh-secret" in bridge.secret_values()
    written = json.loads((settings.state_dir / "settings.json").read_text())
    assert written["security"]["auth"]["selectedType"] == "oauth-personal"


async def test_no_credentials_not_ready_and_run_refused(tmp_path: Path) -> None:
    bridge = GeminiCliBridge(make_settings(tmp_path, runner_scripted_model=False))
    ready = bridge.readiness()
    assert not ready.ready
    assert ready.missing == ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_OAUTH_CREDS_FILE"]  # credentials only
    assert "No Gemini credentials are configured" in ready.detail
    events = await collect(bridge, make_turn("t", "hello"))
    assert events == [{"type": "RUN_ERROR", "code": "AUTH_MISSING", "stderr": "",
                       "message": "No Gemini credentials are configured. Set GEMINI_API_KEY or GOOGLE_API_KEY; "
                                  "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
                                  "GOOGLE_CLOUD_LOCATION; GEMINI_OAUTH_CREDS_FILE (a mounted oauth_creds.json); or "
                                  "GOOGLE_GEMINI_BASE_URL. To try the runner offline instead, set "
                                  "RUNNER_SCRIPTED_MODEL=true (the built-in scripted model on 127.0.0.1; `make run` "
                                  "does this by itself when no credentials are set)."}]


def test_api_key_is_a_secret_and_settings_keep_other_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-real-looking-key")
    monkeypatch.delenv("GEMINI_CLI_MAX_ATTEMPTS", raising=False)
    settings = make_settings(tmp_path, runner_scripted_model=False)
    settings.state_dir.mkdir(parents=True)
    (settings.state_dir / "settings.json").write_text('{"mcpServers": {"x": {"command": "y"}}, '
                                                      '"general": {"maxAttempts": 10, "vimMode": true}}')
    bridge = GeminiCliBridge(settings)
    assert "AIza-real-looking-key" in bridge.secret_values()
    bridge._prepare()
    written = json.loads((settings.state_dir / "settings.json").read_text())
    assert written["mcpServers"] == {"x": {"command": "y"}}
    assert written["general"] == {"maxAttempts": 3, "vimMode": True, "enableAutoUpdate": False,
                                  "enableAutoUpdateNotification": False,
                                  "sessionRetention": {"enabled": False}}  # the CLI deletes no session
    assert written["privacy"] == {"usageStatisticsEnabled": False} and written["ide"] == {"enabled": False}


def test_home_layout(tmp_path: Path) -> None:
    home = GeminiHome.for_state_dir(tmp_path / "root" / ".gemini")
    assert (home.cli_home, home.gemini_dir) == (tmp_path / "root", tmp_path / "root" / ".gemini")
    other = GeminiHome.for_state_dir(tmp_path / "root" / "gemini-state")
    assert other.gemini_dir == tmp_path / "root" / "gemini-state" / ".gemini"


def test_command_line() -> None:
    assert turn_argv("gemini", "gemini-2.5-pro", None) == [
        "gemini", "--prompt=", "--model", "gemini-2.5-pro", "--output-format", "stream-json",
        "--approval-mode", "yolo", "--allowed-mcp-server-names", "ambient-runner-no-mcp-server"]
    assert turn_argv("gemini", "m", "sid")[-2:] == ["--resume", "sid"]
    assert turn_argv("gemini", "m", None, mcp_names=["jira", "echo"])[-2:] == ["--allowed-mcp-server-names",
                                                                               "echo,jira"]
    assert turn_argv("gemini", "m", None, attachments_dir=Path("/a"), also=(Path("/w"),))[-2:] == [
        "--include-directories", "/a,/w"]


@pytest.mark.parametrize("content", ["", "not json", '{"access_token": "ya29.only-an-access-token"}',
                                     '{"refresh_token": ""}', "[1, 2]"])
def test_a_login_file_that_is_no_google_login_is_refused_before_the_cli_starts(
        content: str, tmp_path: Path) -> None:
    """A bad oauth_creds.json would make ``gemini --acp`` start an interactive login on its protocol channel."""
    mounted = tmp_path / "oauth_creds.json"
    mounted.write_text(content)
    auth = resolve_auth({"GEMINI_OAUTH_CREDS_FILE": str(mounted)})
    assert not auth.ok and auth.missing == ("GEMINI_OAUTH_CREDS_FILE",)
    assert "refresh_token" in auth.problem and str(mounted) in auth.problem


async def test_a_cli_printing_anything_but_acp_is_stopped_with_a_named_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the CLI prints for a login it cannot do without a person (its code flow), on the JSON-RPC channel."""
    fake = tmp_path / "gemini"
    fake.write_text("#!/bin/sh\necho 'Please visit the following URL to authorize the application:'\n"
                    "echo 'https://accounts.google.com/o/oauth2/v2/auth?...'\nexec cat\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GEMINI_CLI_PATH", str(fake))
    monkeypatch.setenv("GEMINI_TRANSPORT", "acp")
    bridge = GeminiCliBridge(make_settings(tmp_path))
    await bridge.startup()
    try:
        ready = bridge.readiness()
        assert not ready.ready
        assert "not ACP (JSON-RPC)" in ready.detail and "Please visit the following URL" in ready.detail
        assert bridge.live.pgid is None  # stopped, not left reading the login code from its stdin
    finally:
        await bridge.shutdown()
