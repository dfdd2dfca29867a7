"""POST /interrupt at awkward moments, for each real runner: before the CLI's first event, while a tool runs,
twice in a row, and on a thread that has no run (404). An interrupted run ends with RUN_FINISHED outcome
cancelled through the bridge's own interrupt (also when it arrives while the CLI is still starting: no escalation),
leaves no CLI process (nor the tool) behind, and the thread takes a next run."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from runners import PLAIN_PROMPT, RUNNERS, cmdline, descendants, scripted_runner, wait_for, wait_gone

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]
TOOL_MARK = "time.sleep(38)"  # Claude Code refuses a plain long ``sleep``
CANCELLED = {"type": "cancelled"}


def tool_processes() -> list[int]:
    return [pid for pid, (_, state) in descendants().items() if state != "Z" and TOOL_MARK in cmdline(pid)]


def new_groups(old: set[int]) -> set[int]:
    return {pgid for pgid, _ in descendants().values()} - old - {os.getpgid(0)}


def cases() -> list:
    out = []
    for runner_type in RUNNERS:
        for when in ("before-first-event", "during-tool-call", "twice"):
            out.append(pytest.param(runner_type, when, id=f"{runner_type}-{when}"))
    return out


@pytest.mark.parametrize(("runner_type", "when"), cases())
async def test_interrupt(runner_type: str, when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A grace long enough that only a bridge ignoring its interrupt reaches the core's escalation (checked below).
    async with scripted_runner(runner_type, tmp_path, monkeypatch, runner_interrupt_grace=30.0) as r:
        r.server.slow_delay = 0.5
        r.server.shell_command = f"python3 -c 'import time; {TOOL_MARK}'; echo done > late.txt"
        old = {pgid for pgid, _ in descendants().values()}
        prompt = {"before-first-event": "SLOW hello", "during-tool-call": "Create out.txt with hello",
                  "twice": "SLOW tell a story"}[when]
        run = asyncio.create_task(r.harness.run("t-int", prompt))
        await wait_for(lambda: r.seen("t-int", "RUN_STARTED"), what="RUN_STARTED")
        if when == "before-first-event":
            responses = [await r.harness.interrupt("t-int")]
        elif when == "during-tool-call":
            await wait_for(lambda: r.seen("t-int", "TOOL_CALL_START") and tool_processes(), what="the tool")
            responses = [await r.harness.interrupt("t-int")]
        else:
            await wait_for(lambda: r.seen("t-int", "TEXT_MESSAGE_CONTENT"), what="streamed text")
            responses = list(await asyncio.gather(r.harness.interrupt("t-int"), r.harness.interrupt("t-int")))
        groups = new_groups(old)
        events = await asyncio.wait_for(run, 120)

        assert [resp.status_code for resp in responses] == [200] * len(responses), [x.text for x in responses]
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1].get("outcome") == CANCELLED, events[-1]
        assert await r.harness.metric("ambient_interrupt_escalations_total") == 0, "the polite interrupt ended it"
        text = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert f"slow chunk {r.server.slow_chunks - 1}." not in text, "the agent was stopped, not left to finish"
        late = await r.harness.interrupt("t-int")  # the run is over: nothing to interrupt
        assert late.status_code == 404 and late.json()["code"] == "NO_ACTIVE_RUN"
        assert await wait_gone(groups, r) == [], [(p, s, cmdline(p)) for p, s in r.strays(groups)]
        assert tool_processes() == []
        assert not (r.settings.workspace_path / "late.txt").exists()

        r.server.slow_delay = 0.0
        after = await r.harness.run("t-int", PLAIN_PROMPT)
        assert after[-1]["type"] == "RUN_FINISHED" and after[-1].get("outcome", {"type": "success"}) != CANCELLED


@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_interrupt_without_a_run_is_404(runner_type: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        unknown = await r.harness.interrupt("no-such-thread")
        anything = await r.harness.interrupt()
    assert unknown.status_code == 404 and unknown.json()["code"] == "NO_ACTIVE_RUN"
    assert anything.status_code == 404 and anything.json()["code"] == "NO_ACTIVE_RUN"
