"""An ACP agent that runs a process per session (Claude Code over ACP: claude-agent-acp starts one Claude Code per
session) keeps at most RUNNER_MAX_LIVE_CLIS sessions open: before another opens, the least recently used idle one is
closed (``session/close``), and its thread's next turn reopens it and continues. A session whose turn waits for a
person is never closed. The real agent on the scripted Anthropic server, inside the loopback-only namespace."""

from __future__ import annotations

from pathlib import Path

import acp_agent_tests as shared
import pytest
from acp_agent_tests import PLAIN, bridge_of, texts
from pausing import ASK, WRITE, answer, interrupts_of
from runners import ScriptedRunner, cmdline, descendants, scripted_runner, wait_for

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

CLAUDE = {**shared.preset_settings("claude-agent-acp", "claude-sonnet-5-5"), "runner_max_live_clis": 1}


def claude_codes(runner: ScriptedRunner) -> list[int]:
    """The Claude Code processes the live agent runs (one per open session)."""
    agent = bridge_of(runner).live.pgid
    return [] if agent is None else [pid for pid, (_, state) in descendants(agent).items()
                                     if state != "Z" and "claude-agent-sdk-linux" in cmdline(pid)]


def holding(runner: ScriptedRunner, *words: str) -> list[object]:
    """The agent's model requests (those offering tools) that hold every one of ``words``."""
    return [r for r in runner.server.requests if r.body.get("tools") and all(w in str(r.body) for w in words)]


async def test_the_least_recently_used_idle_session_is_closed_and_reopened(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, **CLAUDE) as runner:
        bridge = bridge_of(runner)
        await runner.harness.run("t-a", "NOTOOL remember the word quince")
        first = bridge.sessions.get("t-a")
        await wait_for(lambda: len(claude_codes(runner)) == 1, timeout=30, what="thread A's Claude Code")
        await runner.harness.run("t-b", "NOTOOL hello from thread B")
        assert first not in bridge.live.sessions and len(bridge.live.sessions) == 1  # A's closed before B's opened
        await wait_for(lambda: len(claude_codes(runner)) == 1, timeout=30, what="A's Claude Code to end")
        again = await runner.harness.run("t-a", "NOTOOL which word was it?")
        assert texts(again) == PLAIN and bridge.sessions.get("t-a") == first  # reopened, not a new session
        assert holding(runner, "remember the word quince", "which word was it?")  # the model saw A's first turn
        assert bridge.live.restarts == 0 and list(bridge.live.sessions) == [first]


async def test_a_session_waiting_for_a_person_stays_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, **CLAUDE) as runner:
        bridge = bridge_of(runner)
        await runner.harness.run("t-wait", "NOTOOL hello")
        paused = await runner.harness.run("t-wait", WRITE, ASK)
        (interrupt,) = interrupts_of(paused)
        waiting = bridge.sessions.get("t-wait")
        other = await runner.harness.run("t-other", "NOTOOL meanwhile")
        assert texts(other) == PLAIN
        assert waiting in bridge.live.sessions and len(bridge.live.sessions) == 2  # over the bound, not closed
        resumed = await runner.harness.post(answer("t-wait", interrupt, {"approved": True}))
    assert resumed[-1]["type"] == "RUN_FINISHED" and not resumed[-1].get("outcome"), resumed[-1]
    assert (runner.settings.workspace_path / "out.txt").read_text() == "hello\n"
