"""Gemini credentials, CLI home layout, settings.json and readiness (no CLI process started)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from runner_kits import collect, make_turn

from ambient_runner.bridges.gemini_cli.auth import CREDENTIAL_FILE_NAMES, resolve_auth
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.bridges.gemini_cli.cli_config import GeminiHome, turn_argv
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
    assert bridge.credential_files == CREDENTIAL_FILE_NAMES
    assert "1//refresh-secret" in bridge.secret_values()
    written = json.loads((settings.state_dir / "settings.json").read_text())
    assert written["security"]["auth"]["selectedType"] == "oauth-personal"


async def test_no_credentials_not_ready_and_run_refused(tmp_path: Path) -> None:
    bridge = GeminiCliBridge(make_settings(tmp_path, runner_scripted_model=False))
    ready = bridge.readiness()
    assert not ready.ready
    assert {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GEMINI_OAUTH_CREDS_FILE"} <= set(
        ready.missing)
    assert "No Gemini credentials are configured" in ready.detail
    events = await collect(bridge, make_turn("t", "hello"))
    assert events == [{"type": "RUN_ERROR", "code": "AUTH_MISSING", "stderr": "",
                       "message": "No Gemini credentials are configured. Set GEMINI_API_KEY or GOOGLE_API_KEY; "
                                  "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
                                  "GOOGLE_CLOUD_LOCATION; GEMINI_OAUTH_CREDS_FILE (a mounted oauth_creds.json); or "
                                  "GOOGLE_GEMINI_BASE_URL."}]


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
                                  "enableAutoUpdateNotification": False}
    assert written["privacy"] == {"usageStatisticsEnabled": False} and written["ide"] == {"enabled": False}


def test_home_layout(tmp_path: Path) -> None:
    home = GeminiHome.for_state_dir(tmp_path / "root" / ".gemini")
    assert (home.cli_home, home.gemini_dir) == (tmp_path / "root", tmp_path / "root" / ".gemini")
    other = GeminiHome.for_state_dir(tmp_path / "root" / "gemini-state")
    assert other.gemini_dir == tmp_path / "root" / "gemini-state" / ".gemini"


def test_command_line() -> None:
    assert turn_argv("gemini", "gemini-2.5-pro", None) == [
        "gemini", "--prompt=", "--model", "gemini-2.5-pro", "--output-format", "stream-json",
        "--approval-mode", "yolo"]
    assert turn_argv("gemini", "m", "sid")[-2:] == ["--resume", "sid"]
