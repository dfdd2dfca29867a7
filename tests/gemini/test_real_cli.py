"""The Gemini CLI bridge end to end: the real Gemini CLI, the scripted Gemini API, the real service over
HTTP/SSE (RunnerHarness: every stream passes check_stream), inside a loopback-only network namespace. Every test
runs on both transports: ACP (one live ``gemini --acp``, the default) and stream-json (a process a turn); what is
ACP's alone is in tests/gemini/test_acp_real_cli.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness
from proctable import group_members
from runners import wait_for

from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer
from ambient_runner.settings import RunnerSettings
from tests.gemini.helpers import make_settings

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network", "one_attempt", "transport")]

FINAL = ["Done: I ran the command", " and checked the result.", " All good."]
PLAIN = ["Hello from the scripted model.", " No tools were needed."]


def harness_for(bridge: GeminiCliBridge, settings: RunnerSettings, **extra: Any) -> RunnerHarness:
    return RunnerHarness(bridge, runner_type="gemini-cli", workspace_path=settings.workspace_path,
                         runner_state_root=settings.runner_state_root, runner_scripted_model=True, **extra)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def server(bridge: GeminiCliBridge) -> ScriptedGeminiServer:
    assert bridge.scripted is not None
    return bridge.scripted


def model_turns(srv: ScriptedGeminiServer) -> list[dict[str, Any]]:
    return [r.body for r in srv.requests if ":streamGenerateContent" in r.path]


def user_texts(body: dict[str, Any]) -> list[str]:
    return [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"] if "text" in p]


async def test_tool_call_creates_the_file(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-tool", "Create out.txt with hello")
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED",
    ]
    assert texts(events) == ["I will run a shell command.", *FINAL]
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "run_shell_command"
    args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args["delta"])["command"] == "echo hello > out.txt"
    assert (settings.workspace_path / "out.txt").read_text() == "hello\n"
    cached = {"cachedInputTokens": 0} if bridge.transport == "stream-json" else {}  # ACP reports no cache use
    assert events[-1]["usage"] == [{"provider": "google", "model": "gemini-2.5-flash", "inputTokens": 200,
                                    "outputTokens": 25, "totalTokens": 225, **cached}]
    # The CLI's state is in the state dir, nothing in the workspace, and -m avoided the router call.
    assert sorted(p.name for p in settings.workspace_path.iterdir()) == ["out.txt"]
    assert list((settings.state_dir / "tmp").glob("*/chats/session-*.jsonl"))
    assert all(":streamGenerateContent" in r.path for r in server(bridge).requests)


async def test_second_turn_continues_the_session_also_from_a_new_bridge(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        await runner.run("t-resume", "Create out.txt with hello")
        session = bridge.sessions.get("t-resume")
        second = await runner.run("t-resume", "NOTOOL what did you do?")
        last = model_turns(server(bridge))[-1]
    assert texts(second) == PLAIN
    assert session and bridge.sessions.get("t-resume") == session
    assert user_texts(last)[-2:] == ["Create out.txt with hello", "NOTOOL what did you do?"]
    assert any("functionCall" in p for c in last["contents"] for p in c["parts"])

    fresh = GeminiCliBridge(settings)  # a new runner process: same state dir, nothing in memory
    async with harness_for(fresh, settings) as runner:
        third = await runner.run("t-resume", "NOTOOL and before that?")
        last = model_turns(server(fresh))[-1]
    assert third[-1]["type"] == "RUN_FINISHED"
    assert user_texts(last)[-3:] == ["Create out.txt with hello", "NOTOOL what did you do?",
                                     "NOTOOL and before that?"]
    assert fresh.sessions.get("t-resume") == session


@pytest.mark.parametrize("transport", ["stream-json"], indirect=True)  # ACP: test_acp_real_cli.py
async def test_interrupt_mid_stream_cancels_and_leaves_no_process(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        server(bridge).slow_delay = 0.5
        run = asyncio.create_task(runner.run("t-int", "SLOW stream please"))
        pgid = None
        for _ in range(600):
            active = bridge._runner.active.get("t-int") if bridge._runner else None
            if active is not None and model_turns(server(bridge)):
                pgid = active.process.pgid
                break
            await asyncio.sleep(0.05)
        assert pgid is not None
        await wait_for(lambda: runner.seen("t-int", "TEXT_MESSAGE_CONTENT"), what="a first chunk streamed")
        assert (await runner.interrupt("t-int")).status_code == 200
        events = await asyncio.wait_for(run, timeout=60)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
        assert 1 <= len(texts(events)) < 30
        assert group_members(pgid) == []
        with pytest.raises(ProcessLookupError):
            os.killpg(pgid, 0)
        server(bridge).slow_delay = 0.0
        after = await runner.run("t-int", "NOTOOL continue")
        last = model_turns(server(bridge))[-1]
    assert texts(after) == PLAIN
    assert user_texts(last)[-2:] == ["SLOW stream please", "NOTOOL continue"]


@pytest.mark.parametrize("transport", ["stream-json"], indirect=True)  # ACP: test_acp_real_cli.py
async def test_cli_killed_by_a_signal_is_a_run_error_naming_it(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        server(bridge).slow_delay = 0.5
        run = asyncio.create_task(runner.run("t-kill", "SLOW stream please"))
        for _ in range(600):
            active = bridge._runner.active.get("t-kill") if bridge._runner else None
            if active is not None and model_turns(server(bridge)):
                break
            await asyncio.sleep(0.05)
        await wait_for(lambda: runner.seen("t-kill", "TEXT_MESSAGE_CONTENT"), what="a first chunk streamed")
        os.kill(active.process.pid, signal.SIGKILL)
        events = await asyncio.wait_for(run, timeout=60)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "CLI_KILLED"
    assert events[-1]["message"].startswith("The Gemini CLI was killed by SIGKILL before finishing the turn")


@pytest.mark.parametrize(("mode", "code", "words"), [
    ("error401", "AUTH_FAILED", "The Gemini API rejected the credentials (HTTP 401"),
    ("error429", "RATE_LIMITED", "The Gemini API quota or rate limit was reached (HTTP 429"),
    ("error500", "PROVIDER_ERROR", "The Gemini API had a server error (HTTP 500"),
])
async def test_api_errors_end_with_a_specific_run_error(settings: RunnerSettings, mode: str, code: str,
                                                        words: str) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        server(bridge).mode = mode
        events = await runner.run("t-err", "NOTOOL hello")
        requests = model_turns(server(bridge))
    assert types(events) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert events[-1]["code"] == code
    assert events[-1]["message"].startswith(words)
    if bridge.transport == "stream-json":  # gemini --acp 0.61 writes nothing to stderr: the error reply says it all
        assert "Last lines of the agent's stderr" in events[-1]["message"]
    assert len(requests) == 1  # maxAttempts bounds the retries
    # Error reports go to the runner's temp dir, not the shared /tmp.
    assert list(bridge.home.tmp_dir.glob("gemini-client-error-*.json"))


async def test_unknown_session_is_an_error_and_the_mapping_is_kept(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    lost = "0b9f7c4e-1111-4222-8333-944455556666"
    bridge.sessions.set("t-lost", lost)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-lost", "NOTOOL hello")
    assert types(events) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert events[-1]["code"] == "RESUME_FAILED"
    assert events[-1]["message"].startswith(f"The conversation could not be resumed: the Gemini CLI did not find "
                                            f"its saved session {lost}")
    assert "Error resuming session: " in events[-1]["message"]  # the CLI's own words, from stderr
    assert bridge.sessions.get("t-lost") == lost
    assert not model_turns(server(bridge))


async def test_a_300_kb_prompt_with_a_leading_dash(settings: RunnerSettings) -> None:
    prompt = "--NOTOOL " + "x" * 300_000 + " 'quotes' \"and\" $dollars"
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-big", prompt)
        last = model_turns(server(bridge))[-1]
    assert texts(events) == PLAIN, events[-1]["message"]
    assert user_texts(last)[-1] == prompt


async def test_missing_cli_is_a_clear_error(settings: RunnerSettings) -> None:
    settings = settings.model_copy(update={"gemini_cli_path": "/nonexistent/bin/gemini"})  # GEMINI_CLI_PATH
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        ready = await runner.client.get("/ready")
        events = await runner.run("t-nocli", "NOTOOL hello")
    assert ready.status_code == 503 and "GEMINI_CLI_PATH" in ready.text
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "CLI_NOT_FOUND"
    assert "The Gemini CLI was not found ('/nonexistent/bin/gemini')" in events[-1]["message"]


async def test_cli_gets_only_what_it_needs(settings: RunnerSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_SECRET_KEY", "storage-secret-123")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "storage-secret-456")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "other-runner-key-789")
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        server(bridge).shell_command = "env > env.txt"
        events = await runner.run("t-env", "dump the environment")
        proxy = bridge.model_proxy
    assert events[-1]["type"] == "RUN_FINISHED"
    env = dict(line.split("=", 1) for line in (settings.workspace_path / "env.txt").read_text().splitlines()
               if "=" in line)
    assert not {"STATE_STORE_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY"} & env.keys()
    home = settings.state_dir.parent
    assert env["HOME"] == str(home) and env["GEMINI_CLI_HOME"] == str(home)
    assert Path(env["TMPDIR"]) == bridge.home.tmp_dir
    # The model API is the runner's proxy, the key a placeholder: the scripted server's URL and key stay out.
    assert proxy is not None
    assert env["GOOGLE_GEMINI_BASE_URL"] == proxy.base_url != server(bridge).base_url
    assert env["GEMINI_API_KEY"] == proxy.placeholder
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    written = json.loads((settings.state_dir / "settings.json").read_text())
    assert written["general"]["maxAttempts"] == 1 and written["telemetry"] == {"enabled": False}
    assert oct((settings.state_dir / "settings.json").stat().st_mode & 0o777) == "0o600"


async def test_scripted_default_is_ready_and_capabilities(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, runner_default_model="gemini-2.5-pro", runner_models="a,b")
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        for _ in range(1200):  # ACP: ready once the live CLI answered initialize (about 1.5 s)
            ready = await runner.client.get("/ready")
            if ready.status_code != 503 or "starting" not in ready.text:
                break
            await asyncio.sleep(0.05)
        caps = await runner.client.get("/capabilities")
        events = await runner.run("t-model", "NOTOOL hi")
        path = model_turns(server(bridge)) and server(bridge).requests[-1].path
    assert ready.status_code == 200, ready.text
    custom = caps.json()["custom"]
    assert custom["runnerType"] == "gemini-cli"
    assert caps.json()["reasoning"]["supported"] is (bridge.transport == "acp")  # stream-json drops thoughts
    assert custom["models"] == ["a", "b"] and custom["defaultModel"] == "gemini-2.5-pro"
    assert events[-1]["usage"][0]["model"] == "gemini-2.5-pro"
    assert path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


async def test_scripted_mcp_call_uses_the_name_the_cli_declared(settings: RunnerSettings) -> None:
    settings.state_dir.mkdir(parents=True)
    server_script = Path(__file__).parent / "mcp_echo_server.py"
    (settings.state_dir / "settings.json").write_text(json.dumps(
        {"mcpServers": {"echo": {"command": sys.executable, "args": [str(server_script)]}}}))
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-mcp", "MCPTOOL:echo.say please")
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert call["toolCallName"] == "mcp_echo_say"
    assert result["content"] == "echo: hello" and result["toolCallId"] == call["toolCallId"]
    assert events[-1]["type"] == "RUN_FINISHED"
