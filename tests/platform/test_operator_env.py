"""The platform operator's env vars mean what they mean there; one the runner cannot use is a warning, never a stop
(a stop at start is a failed session on the platform)."""

from __future__ import annotations

import json
import logging
import os

import pytest
from platform_pod import operator_env

from ambient_runner.platform.env import apply_platform_env, report, translate
from ambient_runner.settings import load_settings

ECHO = {"command": "python", "args": ["-m", "echo"]}


def mcp(custom: dict | None = None, disabled: list[str] | None = None) -> str:
    spec: dict = {}
    if custom is not None:
        spec["custom"] = custom
    if disabled is not None:
        spec["disabled"] = disabled
    return json.dumps(spec)


def test_the_session_model_is_the_default_when_the_deployment_offers_it():
    offered = {"RUNNER_MODELS": "gpt-5.5,gpt-6-sol", "RUNNER_DEFAULT_MODEL": "gpt-5.5"}
    assert translate({**offered, "LLM_MODEL": "gpt-6-sol"}).values == {"RUNNER_DEFAULT_MODEL": "gpt-6-sol"}
    outside = translate({**offered, "LLM_MODEL": "claude-sonnet-4-6"})  # the backend's default, on a Codex pod
    assert outside.values == {}
    assert outside.warnings == ["LLM_MODEL='claude-sonnet-4-6' is not one of this runner's models (RUNNER_MODELS: "
                                "gpt-5.5, gpt-6-sol); runs use gpt-5.5 instead"]
    assert translate({"LLM_MODEL": "any-model"}).values == {"RUNNER_DEFAULT_MODEL": "any-model"}  # nothing listed
    assert translate({"LLM_MODEL": "  "}).values == {}


def test_max_tokens_where_the_cli_takes_them_and_temperature_nowhere():
    claude = translate({"RUNNER_TYPE": "claude-agent-sdk", "LLM_MAX_TOKENS": "4000", "LLM_TEMPERATURE": "0.70"})
    assert claude.values == {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4000"}
    assert claude.notes == ["LLM_TEMPERATURE is ignored: none of the agent CLIs takes a sampling temperature"]
    own = translate({"RUNNER_TYPE": "claude", "LLM_MAX_TOKENS": "4000", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "64000"})
    assert own.values == {}  # the deployment's own setting wins
    bad = translate({"RUNNER_TYPE": "claude", "LLM_MAX_TOKENS": "lots"})
    assert bad.values == {} and "LLM_MAX_TOKENS='lots'" in bad.warnings[0]
    gemini = translate({"RUNNER_TYPE": "gemini-cli", "LLM_MAX_TOKENS": "4000"})
    assert gemini.values == {} and gemini.notes == [
        "LLM_MAX_TOKENS is ignored: the gemini-cli CLI has no output-token limit setting"]


def test_vertex_is_translated_per_runner_and_0_means_off():
    vertex = {"USE_VERTEX": "1", "CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5",
              "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1", "GOOGLE_APPLICATION_CREDENTIALS": "/app/vertex/key.json"}
    assert translate({**vertex, "RUNNER_TYPE": "gemini-cli"}).values == {
        "GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "proj-1", "GOOGLE_CLOUD_LOCATION": "us-east5"}
    own_project = translate({**vertex, "RUNNER_TYPE": "gemini-cli", "GOOGLE_CLOUD_PROJECT": "gemini-proj"})
    assert "GOOGLE_CLOUD_PROJECT" not in own_project.values
    assert translate({**vertex, "RUNNER_TYPE": "claude-agent-sdk"}).values == {"CLAUDE_CODE_USE_VERTEX": "1"}
    codex = translate({**vertex, "RUNNER_TYPE": "codex-sdk"})
    assert codex.values == {}
    assert codex.warnings == ["USE_VERTEX is ignored: the codex-sdk runner has no Vertex AI mode"]
    for off in ("0", "false", ""):
        assert translate({"USE_VERTEX": off, "CLAUDE_CODE_USE_VERTEX": off, "RUNNER_TYPE": "gemini-cli"}).values == {}


def test_platform_mcp_servers_merge_later_wins_and_disabled_removes(monkeypatch):
    monkeypatch.setenv("DOCS_TOKEN", "docs-token-value")
    own = json.dumps({"mcpServers": {"ours": ECHO, "shared": {"url": "https://ours.example/mcp"}}})
    project = mcp({"shared": {"type": "http", "url": "https://project.example/mcp"}, "team": ECHO}, ["context7"])
    session = mcp({"shared": {"type": "sse", "url": "https://session.example/sse"},
                   "docs": {"type": "http", "url": "https://docs.example/mcp",
                            "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
                   "leaky": {"type": "http", "url": "https://leak.example/mcp",
                             "headers": {"Authorization": "Bearer sk-literal-secret"}},
                   "unset": {"command": "tool", "env": {"API_KEY": "${NOT_SET_ANYWHERE}"}},
                   "bad name__x": ECHO},
                  ["team", "deepwiki"])
    out = translate({"MCP_SERVERS_JSON": own, "PROJECT_MCP_SERVERS": project, "CUSTOM_MCP_SERVERS": session,
                     **os.environ})
    servers = json.loads(out.values["MCP_SERVERS_JSON"])["mcpServers"]
    assert sorted(servers) == ["docs", "ours", "shared", "team"]
    assert servers["shared"]["url"] == "https://session.example/sse"  # the session's entry wins
    assert out.values["MCP_DISABLED_SERVERS"] == "context7,team,deepwiki"
    left_out = "\n".join(out.warnings)
    for name in ("leaky", "unset", "bad name__x"):
        assert f"MCP server {name!r} from CUSTOM_MCP_SERVERS is left out" in left_out
    assert "sk-literal-secret" not in left_out
    monkeypatch.setenv("MCP_SERVERS_JSON", out.values["MCP_SERVERS_JSON"])
    monkeypatch.setenv("MCP_DISABLED_SERVERS", out.values["MCP_DISABLED_SERVERS"])
    assert sorted(load_settings().mcp_servers.servers) == ["docs", "ours", "shared"]  # team is disabled


def test_malformed_platform_mcp_is_a_warning():
    for raw in ("{not json", '["a"]', '{"custom": []}', '{"disabled": "x"}'):
        out = translate({"CUSTOM_MCP_SERVERS": raw})
        assert out.values == {} and out.warnings and "CUSTOM_MCP_SERVERS" in out.warnings[0], raw


@pytest.mark.parametrize("runner_type", ["claude", "gemini-cli", "codex-sdk", "acp-opencode", "acp-claude-agent-acp"])
def test_the_operators_whole_env_starts_the_runner(runner_type, tmp_path, monkeypatch, caplog):
    """Every variable the operator sets, with the platform's defaults (a Claude model on every pod, 0.70, 4000,
    TIMEOUT=300, a literal secret in a user's MCP server): settings load, warnings say what was left out."""
    session_mcp = {"custom": {"leaky": {"type": "http", "url": "https://x.example/mcp",
                                        "headers": {"Authorization": "Bearer abc"}}}, "disabled": ["context7"]}
    env = operator_env(runner_type, workspace=tmp_path, agui_token="t", custom_mcp_servers=session_mcp,
                       backend_api_url="http://backend-service.ambient.svc.cluster.local:8080/api",
                       IS_RESUME="true")
    for name in list(os.environ):
        if name.startswith(("RUNNER_", "LLM_", "MCP_", "CLAUDE_CODE_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RUNNER_STATE_ROOT", str(tmp_path.parent / f"{tmp_path.name}-state"))
    environ = dict(os.environ)
    translated = apply_platform_env(environ)
    for name, value in translated.values.items():  # as the runner's start writes them, undone after the test
        monkeypatch.setenv(name, value)
    settings = load_settings()
    with caplog.at_level(logging.INFO, logger="ambient_runner.platform.env"):
        report(translated)
    assert settings.session_id == "session-5d1c2a" and settings.project == "team-a" and settings.resuming
    assert settings.agui_port == 8001 and settings.workspace_path == tmp_path
    assert settings.runner_default_model == env["RUNNER_DEFAULT_MODEL"]  # claude-sonnet-4-6 is not offered here
    assert "LLM_MODEL='claude-sonnet-4-6' is not one of this runner's models" in caplog.text
    assert "MCP server 'leaky' from CUSTOM_MCP_SERVERS is left out" in caplog.text
    assert not settings.mcp_servers.servers


@pytest.mark.parametrize(("runner_type", "login", "files"), [
    ("codex-sdk", {"CODEX_AUTH_JSON_FILE": "login.json"}, ("auth.json",)),
    ("codex-sdk", {"OPENAI_API_KEY": "sk-a-key"}, ()),
    ("gemini-cli", {"GEMINI_OAUTH_CREDS_FILE": "login.json"}, ("oauth_creds.json",)),
    ("gemini-cli", {"GEMINI_API_KEY": "AIza-a-key"}, ()),
    ("claude", {"ANTHROPIC_API_KEY": "sk-ant-a-key"}, ()),
])
def test_which_logins_write_a_credential_file_into_the_state_dir(runner_type, login, files, tmp_path, monkeypatch):
    from ambient_runner.bridges.registry import create_bridge  # imports that runner's SDK

    for name in ("CODEX_AUTH_JSON_FILE", "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_OAUTH_CREDS_FILE",
                 "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "ANTHROPIC_API_KEY",
                 "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_VERTEX"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "login.json").write_text('{"tokens": {}, "refresh_token": "1//a-google-login"}')
    for name, value in login.items():
        monkeypatch.setenv(name, str(tmp_path / value) if value == "login.json" else value)
    settings = load_settings(runner_type=runner_type, workspace_path=tmp_path / "ws",
                             runner_state_root=tmp_path / "state")
    bridge = create_bridge(settings)
    state_files = bridge.state_files()
    assert state_files.logins == files
    assert set(files) <= set(state_files.credentials) <= set(state_files.left_out)
