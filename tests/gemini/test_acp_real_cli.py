"""The Gemini runner on ACP, end to end: the real ``gemini --acp`` (one live process), the scripted Gemini API, the
real service over HTTP/SSE (every stream checked), inside a loopback-only network namespace. What both transports
do is in test_real_cli.py; this is what only ACP has: thoughts, a process that outlives its turns, a cancel that
keeps the session, a restart of the CLI or of the pod that does not lose the conversation."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness
from media import data_part, png, received_media
from runners import cmdline, descendants, wait_for

from ambient_runner.bridges.acp_client.connection import AcpError
from ambient_runner.bridges.gemini_cli.acp.session_files import SessionFiles, current_minute
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.bridges.gemini_cli.config import GeminiHome
from ambient_runner.scripted_models.gemini import THOUGHT_TEXT, ScriptedGeminiServer
from ambient_runner.settings import RunnerSettings
from tests.gemini.helpers import make_settings

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network", "one_attempt")]

PLAIN = ["Hello from the scripted model.", " No tools were needed."]


def harness_for(bridge: GeminiCliBridge, settings: RunnerSettings) -> RunnerHarness:
    return RunnerHarness(bridge, runner_type="gemini-cli", workspace_path=settings.workspace_path,
                         runner_state_root=settings.runner_state_root, runner_scripted_model=True,
                         runner_attachments_dir=settings.runner_attachments_dir)


def server(bridge: GeminiCliBridge) -> ScriptedGeminiServer:
    assert bridge.scripted is not None
    return bridge.scripted


def model_turns(bridge: GeminiCliBridge) -> list[dict[str, Any]]:
    return [r.body for r in server(bridge).requests if ":streamGenerateContent" in r.path]


def user_texts(body: dict[str, Any]) -> list[str]:
    return [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"] if "text" in p]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def live_pid(bridge: GeminiCliBridge) -> int:
    assert bridge.live.pgid is not None, "the live gemini --acp is not running"
    return bridge.live.pgid


def logged(runner: RunnerHarness, thread: str) -> list[tuple[int, dict[str, Any]]]:
    """The thread's events so far (the run manager's event log), with their ids."""
    state = runner.app.runtime.runs.thread(thread)
    if state is None:
        return []
    return [(event_id, json.loads(data)) for event_id, data in state.log.read_after(0, limit=100_000)]


def last_event_id(runner: RunnerHarness, thread: str) -> int:
    return max((event_id for event_id, _ in logged(runner, thread)), default=0)


async def started(runner: RunnerHarness, thread: str, kind: str, after: int) -> None:
    """Wait until the thread has streamed an event of ``kind`` after event ``after`` (its running run's)."""
    await wait_for(lambda: any(i > after and e["type"] == kind for i, e in logged(runner, thread)),
                   timeout=60, what=f"{kind} in {thread}")


@pytest.fixture
def settings(tmp_path: Path) -> RunnerSettings:
    return make_settings(tmp_path, runner_attachments_dir=tmp_path / "attachments")


async def test_thoughts_are_reasoning_and_later_turns_reuse_the_live_cli(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        first = await runner.run("t-think", "THINK NOTOOL hello")
        pid = live_pid(bridge)
        second = await runner.run("t-think", "NOTOOL and again")
        assert live_pid(bridge) == pid  # one process for the pod's turns
    assert [e["type"] for e in first] == [
        "RUN_STARTED",
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT", "RUN_FINISHED",
    ]
    thought = next(e for e in first if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert thought["delta"] == THOUGHT_TEXT  # the CLI's empty "****" subject removed
    assert texts(first) == texts(second) == PLAIN
    assert first[-1]["usage"] == [{"provider": "google", "model": "gemini-2.5-flash", "inputTokens": 100,
                                   "outputTokens": 15, "totalTokens": 115}]
    assert user_texts(model_turns(bridge)[-1])[-2:] == ["THINK NOTOOL hello", "NOTOOL and again"]


async def test_a_failed_tool_is_a_tool_result_saying_so(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-fail", "TOOLFAIL read a file")
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "read_file" and result["toolCallId"] == start["toolCallId"]
    assert result["content"].startswith("Error: ")
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_cancel_mid_text_keeps_the_process_and_the_session(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        await runner.run("t-cancel", "NOTOOL first")
        pid = live_pid(bridge)
        server(bridge).slow_delay = 0.5
        mark = last_event_id(runner, "t-cancel")
        run = asyncio.create_task(runner.run("t-cancel", "SLOW stream please"))
        await started(runner, "t-cancel", "TEXT_MESSAGE_CONTENT", mark)
        assert (await runner.interrupt("t-cancel")).status_code == 200
        events = await asyncio.wait_for(run, timeout=60)
        server(bridge).slow_delay = 0.0
        after = await runner.run("t-cancel", "NOTOOL continue")
        assert live_pid(bridge) == pid  # the cancel kept the process
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
    assert texts(after) == PLAIN
    # The model sees the earlier turn, and the cancelled prompt (which the CLI drops) goes with the next one.
    assert user_texts(model_turns(bridge)[-1])[-3:] == ["NOTOOL first", "SLOW stream please", "NOTOOL continue"]


async def test_cancel_mid_tool_stops_the_command_and_keeps_the_session(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    late = settings.workspace_path / "late.txt"
    async with harness_for(bridge, settings) as runner:
        server(bridge).shell_command = f"sleep 30; echo late > {late}"
        run = asyncio.create_task(runner.run("t-tool", "run the long command"))
        await started(runner, "t-tool", "TOOL_CALL_START", 0)
        await wait_for(lambda: _sleeping(bridge), timeout=30, what="the command to start")
        assert (await runner.interrupt("t-tool")).status_code == 200
        events = await asyncio.wait_for(run, timeout=60)
        await wait_for(lambda: not _sleeping(bridge), timeout=20, what="the command to end")
        after = await runner.run("t-tool", "NOTOOL what happened?")
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert not late.exists()
    assert texts(after) == PLAIN


def _sleeping(bridge: GeminiCliBridge) -> list[int]:
    """The scripted command's ``sleep`` among the live CLI's descendants."""
    return [pid for pid, (_, state) in descendants(live_pid(bridge)).items()
            if state != "Z" and cmdline(pid).startswith("sleep 30")]


async def test_the_cli_killed_mid_turn_is_an_error_and_the_next_turn_continues(settings: RunnerSettings) -> None:
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        await runner.run("t-kill", "NOTOOL remember this")
        server(bridge).slow_delay = 0.5
        mark = last_event_id(runner, "t-kill")
        run = asyncio.create_task(runner.run("t-kill", "SLOW stream please"))
        await started(runner, "t-kill", "TEXT_MESSAGE_CONTENT", mark)
        pid = live_pid(bridge)
        os.kill(pid, signal.SIGKILL)
        events = await asyncio.wait_for(run, timeout=60)
        server(bridge).slow_delay = 0.0
        after = await runner.run("t-kill", "NOTOOL still there?")
        assert bridge.live.pgid not in (None, pid)  # started again
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "CLI_KILLED"
    assert events[-1]["message"].startswith("The Gemini CLI was killed by SIGKILL")
    assert texts(after) == PLAIN, after[-1]
    assert "NOTOOL remember this" in user_texts(model_turns(bridge)[-1])  # the conversation went on
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


async def test_an_image_reaches_the_model_request(settings: RunnerSettings) -> None:
    image = png(rgb=(0, 90, 200))
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run("t-image", [{"type": "text", "text": "NOTOOL what is this?"},
                                              data_part("image", "image/png", image)])
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    received = [media for body in model_turns(bridge) for media in received_media(body)]
    assert ("image/png", image) in received


@dataclass
class Pod:
    """What one pod's run left: its events, its bridge, whether the thread's session was in the live CLI."""

    bridge: GeminiCliBridge
    events: list[dict[str, Any]]
    loaded: bool
    last_request: dict[str, Any]


async def one_pod(settings: RunnerSettings, thread: str, prompt: str) -> Pod:
    """One pod: a new runner on the same state dir and workspace, one run, then the pod stops."""
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings) as runner:
        events = await runner.run(thread, prompt)
        loaded = bridge.sessions.get(thread) in bridge.live.sessions
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return Pod(bridge, events, loaded, model_turns(bridge)[-1])


def created_minute(settings: RunnerSettings, session: str) -> str:
    home = GeminiHome.for_state_dir(settings.state_dir)
    created = SessionFiles(home.gemini_dir, home.tmp_dir).created_minute(session)
    assert created is not None, "the session has no file"
    return created


async def early_in_a_minute() -> None:
    """Wait, if need be, so that what follows shares one UTC minute (the session's creation minute)."""
    if time.gmtime().tm_sec >= 45:
        minute = current_minute()
        await wait_for(lambda: current_minute() != minute, timeout=20, what="the next minute")


@pytest.mark.slow
async def test_pod_restarts_in_the_creation_minute_and_later_keep_the_conversation(settings: RunnerSettings) -> None:
    await early_in_a_minute()
    first = await one_pod(settings, "t-pods", "NOTOOL first")
    session = first.bridge.sessions.get("t-pods")
    assert session is not None
    # A restart in the minute the session was created in: a load would wipe it, so the turn runs through
    # gemini -p --resume, and the session is not loaded into the live CLI.
    same_minute = await one_pod(settings, "t-pods", "NOTOOL second")
    assert current_minute() == created_minute(settings, session) or same_minute.loaded
    assert not same_minute.loaded
    assert user_texts(same_minute.last_request)[-2:] == ["NOTOOL first", "NOTOOL second"]
    created = created_minute(settings, session)
    await wait_for(lambda: current_minute() > created, timeout=70, what="a later minute")
    # Later: loaded into the live CLI, and again by the next pod (whose start would delete a loaded session if
    # the CLI's session clean-up were on).
    for prompt in ("NOTOOL third", "NOTOOL fourth"):
        later = await one_pod(settings, "t-pods", prompt)
        assert later.loaded and later.bridge.sessions.get("t-pods") == session
    assert user_texts(later.last_request)[-4:] == ["NOTOOL first", "NOTOOL second", "NOTOOL third", "NOTOOL fourth"]


async def test_a_session_a_load_wiped_is_put_back(settings: RunnerSettings) -> None:
    """The CLI's own bug: a load in the session's creation minute overwrites its file. The copy taken before the
    load puts it back, and the thread goes on."""
    await early_in_a_minute()
    first = await one_pod(settings, "t-back", "NOTOOL first")
    session = first.bridge.sessions.get("t-back")
    assert session is not None
    home = GeminiHome.for_state_dir(settings.state_dir)
    files = SessionFiles(home.gemini_dir, home.tmp_dir / "backups")
    before = {path: path.read_bytes() for path in files.files(session)}
    bridge = GeminiCliBridge(settings)
    async with harness_for(bridge, settings):
        backup = files.backup(session)
        try:
            await bridge.live.load_session(session, settings.workspace_path)
        except AcpError:
            pass
        wiped = {path: path.read_bytes() for path in files.files(session)} != before
        backup.restore()
    assert wiped, "the load in the creation minute left the session as it was (the CLI bug is fixed?)"
    assert {path: path.read_bytes() for path in files.files(session)} == before
    after = await one_pod(settings, "t-back", "NOTOOL second")
    assert user_texts(after.last_request)[-2:] == ["NOTOOL first", "NOTOOL second"]
