"""The model APIs of RUNNER_TYPE=acp (``ACP_AGENT_MODEL_API``): each takes the key variables of the matching
built-in runner, its upstream gets the real key in that API's header (the shared ``ModelApi.upstream``), its
offline stand-in is that API's scripted server, and a custom agent gets the API's usual variables."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from credential_settings import read_by_name

from ambient_runner.bridges.acp.bridge import AcpBridge
from ambient_runner.bridges.acp.model_apis import MODEL_APIS, AcpCredentials, ModelEndpoint
from ambient_runner.bridges.acp.preset import AgentSetup
from ambient_runner.bridges.acp.presets import custom_environment
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.scripted_models.openai_chat import OpenAIChatServer
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer
from ambient_runner.settings import RunnerSettings, SettingsError, load_settings

KEY = "sk-model-api-test-4f1c"
# API -> (the variable set, the base URL variable, the upstream header and its value, the scripted server)
CASES = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "x-api-key", KEY, AnthropicScriptedServer),
    "openai-responses": ("CODEX_API_KEY", "OPENAI_BASE_URL", "authorization", f"Bearer {KEY}",
                         OpenAIResponsesServer),
    "openai-chat": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "authorization", f"Bearer {KEY}", OpenAIChatServer),
    "gemini": ("GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "x-goog-api-key", KEY, ScriptedGeminiServer),
}
ALL_KEYS = {variable for api in MODEL_APIS.values() for variable in api.key_variables}


def custom_bridge(tmp_path: Path, api: str) -> AcpBridge:
    return AcpBridge(RunnerSettings(runner_type="acp", acp_agent="custom", acp_agent_command="agent --acp",
                                    acp_agent_model_api=api, workspace_path=tmp_path / "workspace",
                                    runner_state_root=tmp_path / "state"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_model_api_takes_its_runners_key_and_its_header(name: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    variable, base_variable, header, value, server = CASES[name]
    for other in ALL_KEYS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(variable, KEY)
    monkeypatch.setenv(base_variable, "https://gateway.example/")
    bridge = custom_bridge(tmp_path, name)
    upstream = bridge.model_upstream()
    assert bridge.auth.ok and bridge.auth.secrets == [KEY]
    assert upstream is not None and upstream.api is MODEL_APIS[name].api
    assert upstream.base_url == "https://gateway.example" and upstream.headers == {header: value}
    assert bridge.scripted_model is server  # offline, the stand-in of the agent's API
    endpoint = bridge._endpoint()  # noqa: SLF001 - no proxy started here: the agent would get the upstream itself
    assert endpoint.key_variable == variable


def test_credentials_are_settings_of_every_apis_variables_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each model API's key and base-URL variables are fields of ``AcpCredentials``, read by their names; a key is
    in neither its repr nor its str."""
    names = {name for api in MODEL_APIS.values() for name in (*api.key_variables, api.base_url_variable)}
    read_by_name(monkeypatch, AcpCredentials, names, secrets=len(ALL_KEYS))


def test_the_key_is_read_when_the_bridge_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for other in (*ALL_KEYS, "OPENAI_BASE_URL"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    bridge = custom_bridge(tmp_path, "openai-chat")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-later")  # the environment is fixed once the runner started
    monkeypatch.setenv("OPENAI_BASE_URL", "https://later.example/v1")
    assert (bridge.auth.key, bridge.auth.base_url) == (KEY, "https://api.openai.com/v1")


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_custom_agent_gets_the_apis_usual_variables(name: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for other in ALL_KEYS:
        monkeypatch.delenv(other, raising=False)
    bridge = custom_bridge(tmp_path, name)
    assert not bridge.auth.ok and bridge.readiness().missing == list(MODEL_APIS[name].keys_alone)
    api = MODEL_APIS[name]
    setup = AgentSetup(ModelEndpoint("http://127.0.0.1:9/x", "placeholder", api.key_variables[0]), tmp_path, "m", ())
    env = custom_environment(setup, api)
    assert env[api.key_variables[0]] == "placeholder" and env[api.base_url_variable] == "http://127.0.0.1:9/x"


def test_a_gateways_token_counts_only_with_its_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for other in (*ALL_KEYS, "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", KEY)
    assert not custom_bridge(tmp_path, "anthropic").auth.ok  # as for the claude runner: a gateway's token
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example")
    upstream = custom_bridge(tmp_path, "anthropic").model_upstream()
    assert upstream is not None and upstream.headers == {"authorization": f"Bearer {KEY}"}


async def test_the_gateways_headers_reach_the_upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``RUNNER_MODEL_GATEWAY_HEADERS`` (read with the settings): the model proxy puts them on every upstream
    request, beside the real key."""
    for other in ALL_KEYS:
        monkeypatch.delenv(other, raising=False)
    server = OpenAIChatServer().start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}/v1")
    monkeypatch.setenv("RUNNER_MODEL_GATEWAY_HEADERS", json.dumps({"X-Tenant": "tenant-7", " ": "dropped"}))
    bridge = custom_bridge(tmp_path, "openai-chat")
    try:
        proxy = await bridge.start_model_proxy(bridge.model_upstream())
        assert proxy is not None
        async with httpx.AsyncClient() as client:
            reply = await client.post(f"{proxy.base_url}/v1/chat/completions", headers={
                "authorization": f"Bearer {proxy.placeholder}"}, json={
                "model": "gpt-4.1", "messages": [{"role": "user", "content": "NOTOOL hi"}]})
        assert reply.status_code == 200, reply.text
    finally:
        await bridge.stop_model_proxy()
        server.stop()
    headers = {k.lower(): v for k, v in server.requests[-1].headers.items()}
    assert headers["x-tenant"] == "tenant-7" and headers["authorization"] == f"Bearer {KEY}"


def test_bad_gateway_headers_stop_the_start_without_their_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_MODEL_GATEWAY_HEADERS", '{"x-secret-header": 7}')
    with pytest.raises(SettingsError) as stopped:
        load_settings()
    assert "RUNNER_MODEL_GATEWAY_HEADERS" in str(stopped.value) and "x-secret-header" not in str(stopped.value)
    assert "string values" in str(stopped.value)
