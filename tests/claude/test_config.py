"""Claude bridge configuration without a CLI: credentials, readiness, CLI environment, scripted server shapes."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from credential_settings import read_by_name
from runner_kits import make_turn

from ambient_runner.bridges.claude.auth import (
    OPTIONAL_PASSTHROUGH,
    SECRET_NAMES,
    VERTEX_OPTIONAL,
    VERTEX_REQUIRED,
    ClaudeCredentials,
    resolve_auth,
)
from ambient_runner.bridges.claude.bridge import ClaudeBridge
from ambient_runner.bridges.claude.config import claude_environment, find_cli, setting_sources
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from tests.claude.helpers import make_settings

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                   "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION")


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)


def test_auth_sources() -> None:
    assert resolve_auth({"ANTHROPIC_API_KEY": "k"}).source == "api-key"
    assert resolve_auth({"CLAUDE_CODE_OAUTH_TOKEN": "t"}).env == {"CLAUDE_CODE_OAUTH_TOKEN": "t"}
    gateway = resolve_auth({"ANTHROPIC_BASE_URL": "http://gw", "ANTHROPIC_AUTH_TOKEN": "t"})
    assert gateway.source == "gateway" and gateway.secrets == ["t"]
    vertex = resolve_auth({"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p",
                           "CLOUD_ML_REGION": "us-east5", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json"})
    assert vertex.env == {"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p",
                          "CLOUD_ML_REGION": "us-east5", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json"}
    half_vertex = resolve_auth({"CLAUDE_CODE_USE_VERTEX": "true", "ANTHROPIC_VERTEX_PROJECT_ID": "p"})
    assert not half_vertex.ok and half_vertex.missing == ["CLOUD_ML_REGION"]


def test_credentials_are_settings_read_by_name_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable ``resolve_auth`` reads is a field of ``ClaudeCredentials`` (a VERTEX_REGION_<model> by its own
    name); a credential's value is in neither its repr nor its str."""
    names = (*SECRET_NAMES, "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_VERTEX", *VERTEX_REQUIRED, *VERTEX_OPTIONAL,
             *OPTIONAL_PASSTHROUGH)
    monkeypatch.setenv("VERTEX_REGION_CLAUDE_3_5_HAIKU", "europe-west1")
    monkeypatch.setenv("VERTEX_REGIONS", "not a variable of the settings")
    read_by_name(monkeypatch, ClaudeCredentials, names, secrets=4,
                 also={"VERTEX_REGION_CLAUDE_3_5_HAIKU": "europe-west1"})


def test_credentials_are_read_when_the_bridge_is_built(tmp_path: Path, no_credentials: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-at-start")
    bridge = ClaudeBridge(make_settings(tmp_path, runner_scripted_model=False))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-later")  # the environment is fixed once the runner started
    assert bridge.auth.env == {"ANTHROPIC_API_KEY": "sk-ant-at-start"}


async def test_missing_credentials(tmp_path: Path, no_credentials: None) -> None:
    bridge = ClaudeBridge(make_settings(tmp_path, runner_scripted_model=False))
    readiness = bridge.readiness()
    assert not readiness.ready and "ANTHROPIC_API_KEY" in readiness.missing
    assert readiness.missing == ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"]  # credentials only, no settings
    with pytest.raises(BridgeError) as error:
        async for _ in bridge.run_turn(make_turn("t", "hello")):
            pass
    assert error.value.code == "AUTH_MISSING" and "ANTHROPIC_API_KEY" in error.value.message
    assert "RUNNER_SCRIPTED_MODEL=true" in error.value.message  # how to run offline


def test_api_key_is_a_secret_and_ready(tmp_path: Path, no_credentials: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real-looking")
    bridge = ClaudeBridge(make_settings(tmp_path, runner_scripted_model=False))
    assert bridge.readiness().ready
    assert list(bridge.secret_values()) == ["sk-ant-real-looking"]
    capabilities = bridge.capabilities()
    assert capabilities.runner_type == "claude" and capabilities.reasoning and capabilities.mcp


def test_cli_environment_blanks_runner_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(tmp_path)
    environ = {"PATH": "/usr/bin", "AGUI_TOKEN": "secret", "CLAUDE_CODE_ENTRYPOINT": "x", "OPENAI_API_KEY": "o"}
    env = claude_environment(settings, {"ANTHROPIC_API_KEY": "k"}, environ)
    assert env["AGUI_TOKEN"] == "" and env["OPENAI_API_KEY"] == ""
    assert "CLAUDE_CODE_ENTRYPOINT" not in env  # set by the SDK itself
    assert env["ANTHROPIC_API_KEY"] == "k" and env["IS_SANDBOX"] == "1"
    assert env["CLAUDE_CONFIG_DIR"] == str(settings.state_dir) and env["HOME"] == str(settings.state_dir / "home")
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["CLAUDE_CODE_MAX_RETRIES"] == "2"


def test_claude_variables_are_read_once_into_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    monkeypatch.setenv("CLAUDE_SETTING_SOURCES", "project, user")
    monkeypatch.setenv("CLAUDE_CLI_PATH", str(tmp_path / "no-such-claude"))
    settings = make_settings(tmp_path)
    assert claude_environment(settings, {}, {})["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert setting_sources(settings) == ["user"]  # a repository's project settings never load
    assert find_cli(settings) is None  # a configured path that is no file: /ready says the CLI is missing
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "7")  # read at start only: the settings keep their value
    assert claude_environment(settings, {}, {})["CLAUDE_CODE_MAX_RETRIES"] == "0"


def sse_events(text: str) -> list[tuple[str, dict]]:
    events = []
    for frame in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_scripted_server_shapes(isolated_network: None) -> None:
    with AnthropicScriptedServer() as server:
        url = f"{server.base_url}/v1/messages?beta=true"
        body = {"model": "claude-x", "stream": True, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "MCPTOOL:files.list please"}]},
            {"role": "system", "content": "# Environment SLOW NOTOOL"}]}
        first = sse_events(httpx.post(url, json=body).text)
        second = sse_events(httpx.post(url, json=body).text)
        names = [name for name, _ in first]
        assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                         "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                         "message_stop"]
        tool = first[4][1]["content_block"]
        assert tool["name"] == "mcp__files__list"
        assert tool["id"] != second[4][1]["content_block"]["id"]
        assert first[0][1]["message"]["model"] == "claude-x"
        plain = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "NOTOOL hi"}]}).json()
        assert plain["content"] == [{"type": "text", "text": "Hello from the scripted model. No tools were needed."}]
        assert httpx.post(f"{server.base_url}/v1/messages/count_tokens?beta=true",
                          json={"messages": []}).json() == {"input_tokens": 100}
        server.mode = "error401"
        error = httpx.post(url, json=body)
        assert error.status_code == 401 and error.headers["x-should-retry"] == "false"
        assert error.json() == {"type": "error", "error": {"type": "authentication_error",
                                                           "message": "scripted error 401"}}
