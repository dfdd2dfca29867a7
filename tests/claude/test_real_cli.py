"""The Claude bridge end to end: the real bundled Claude Code CLI, the scripted Anthropic server, the real
service over HTTP/SSE (RunnerHarness, every stream checked by check_stream), inside a loopback-only netns."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness
from runners import wait_for

from ambient_runner.bridges.claude.bridge import ClaudeBridge
from ambient_runner.settings import RunnerSettings
from tests.claude.helpers import claude_pids, make_settings

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


def harness_for(bridge: ClaudeBridge, settings: RunnerSettings) -> RunnerHarness:
    return RunnerHarness(bridge, runner_type="claude", workspace_path=settings.workspace_path,
                         runner_state_root=settings.runner_state_root, runner_scripted_model=True)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def request_texts(bodies: list[Any]) -> list[str]:
    """The text blocks of the user messages in these /v1/messages request bodies."""
    out = []
    for body in bodies:
        for message in (body or {}).get("messages", []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            out.extend(b.get("text", "") for b in blocks if isinstance(b, dict))
    return out


@pytest.fixture
def settings(tmp_path: Path) -> RunnerSettings:
    return make_settings(tmp_path)


async def test_tool_call_creates_the_file_and_text_streams(settings: RunnerSettings) -> None:
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-tool", "Create out.txt with hello")
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",  # the core joins args
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED",
    ]
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "Bash"
    assert texts(events) == ["I will run a shell command.", "Done: I ran the command", " and checked the result.",
                             " All good."]
    assert (settings.workspace_path / "out.txt").read_text() == "hello\n"
    finished = events[-1]
    assert finished["usage"][0]["outputTokens"] > 0 and finished["result"]["numTurns"] == 2


async def test_cli_environment_hides_runner_secrets(settings: RunnerSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "runner-secret-token-123")  # e.g. storage credentials
    monkeypatch.setenv("STATE_STORE_SECRET_KEY", "storage-secret-456")
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        assert bridge.scripted is not None
        bridge.scripted.shell_command = "env > env.txt"
        await runner.run("t-env", "Dump the environment")
    dumped = (settings.workspace_path / "env.txt").read_text()
    assert "runner-secret-token-123" not in dumped and "storage-secret-456" not in dumped
    env = dict(line.split("=", 1) for line in dumped.splitlines() if "=" in line)
    assert env["CLAUDE_CONFIG_DIR"] == str(settings.state_dir)
    assert env["HOME"].startswith(str(settings.state_dir))


async def test_second_turn_continues_the_session_also_from_a_new_bridge(settings: RunnerSettings) -> None:
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        first = await runner.run("t-resume", "NOTOOL remember the word PELICAN")
        second = await runner.run("t-resume", "NOTOOL what was the word?")
        pid = bridge._clients["t-resume"].pid  # noqa: SLF001
        last_request = bridge.scripted.bodies()[-1] if bridge.scripted else None
    assert last_request is not None
    assert "NOTOOL remember the word PELICAN" in request_texts([last_request])  # the CLI sent turn 1 again
    session_id = first[-1]["result"]["sessionId"]
    assert second[-1]["result"]["sessionId"] == session_id
    assert json.loads((settings.state_dir / "ambient-runner-sessions.json").read_text())["threads"] == {
        "t-resume": session_id}
    assert pid is not None and pid not in claude_pids()

    replacement = ClaudeBridge(settings)  # a replaced pod: new process, same state dir
    async with harness_for(replacement, settings) as runner:
        third = await runner.run("t-resume", "NOTOOL and now?")
        seen = request_texts(replacement.scripted.bodies() if replacement.scripted else [])
    assert third[-1]["type"] == "RUN_FINISHED" and third[-1]["result"]["sessionId"] == session_id
    assert "NOTOOL remember the word PELICAN" in seen and "NOTOOL what was the word?" in seen


async def test_interrupt_mid_stream_then_another_turn(settings: RunnerSettings) -> None:
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        assert bridge.scripted is not None
        bridge.scripted.slow_delay = 0.5
        run = asyncio.create_task(runner.run("t-int", "SLOW tell me a long story"))
        for _ in range(600):
            if any("SLOW" in t for t in request_texts(bridge.scripted.bodies())):
                break
            await asyncio.sleep(0.05)
        await wait_for(lambda: runner.seen("t-int", "TEXT_MESSAGE_CONTENT"), what="a first chunk streamed")
        response = await runner.interrupt("t-int")
        assert response.status_code == 200
        events = await asyncio.wait_for(run, 60)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1].get("outcome") == {"type": "cancelled"}
        assert 1 <= len(texts(events)) < 30
        again = await runner.run("t-int", "NOTOOL are you still there?")
    assert again[-1]["type"] == "RUN_FINISHED"
    assert again[-1].get("outcome", {"type": "success"}) == {"type": "success"}
    assert texts(again) == ["Hello from the scripted model.", " No tools were needed."]


@pytest.mark.parametrize(("mode", "code", "start"), [
    ("error401", "AUTH_FAILED", "Anthropic rejected the API key (HTTP 401). Check ANTHROPIC_API_KEY"),
    ("error429", "RATE_LIMITED", "The Anthropic API rate limit was reached (HTTP 429)."),
    ("error500", "PROVIDER_ERROR", "The Anthropic API had a server error (HTTP 500)."),
])
async def test_provider_errors_become_run_errors(settings: RunnerSettings, mode: str, code: str,
                                                 start: str) -> None:
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        assert bridge.scripted is not None
        bridge.scripted.mode = mode
        events = await runner.run("t-err", "NOTOOL hello")
        bridge.scripted.mode = "ok"
        after = await runner.run("t-err", "NOTOOL hello again")
    assert types(events) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert events[-1]["code"] == code and events[-1]["message"].startswith(start), events[-1]
    assert after[-1]["type"] == "RUN_FINISHED"


async def test_shutdown_leaves_no_claude_process(settings: RunnerSettings) -> None:
    bridge = ClaudeBridge(settings)
    async with harness_for(bridge, settings) as runner:
        await runner.run("t-a", "NOTOOL one")
        await runner.run("t-b", "NOTOOL two")
        pids = {bridge._clients[t].pid for t in ("t-a", "t-b")}  # noqa: SLF001
        assert None not in pids and pids <= claude_pids()
        assert all(os.getpgid(p) == p for p in pids)  # each CLI leads its own process group
    assert not pids & claude_pids()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)
