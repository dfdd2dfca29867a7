"""A workflow switch replaces the folder the agent works in: while it is under way no run starts (one posted then
waits, and starts once the switch is done), and a switch refuses to begin while a turn is held (``place_change``
yields that)."""

from __future__ import annotations

import asyncio

from harness import RunnerHarness
from process_bridge import FakeCliBridge, script


def text(delta: str) -> dict:
    return {"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": delta}}


async def test_a_run_posted_during_a_switch_starts_after_it(tmp_path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        runs = runner.app.runtime.runs
        async with runs.place_change() as held:
            assert held is False
            posted = asyncio.create_task(runner.run("t1", script(text("hello"))))
            for _ in range(20):  # the request is admitted as far as it can go
                await asyncio.sleep(0.01)
            state = runs.thread("t1")
            assert state is None or state.log.last_seq == 0  # nothing started: not even RUN_STARTED
            assert not posted.done()
        events = await asyncio.wait_for(posted, 30)
        assert [e["type"] for e in events][0] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"


async def test_a_switch_sees_a_held_turn(tmp_path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        runs = runner.app.runtime.runs
        slow = asyncio.create_task(runner.run("t1", script({"sleep": 0.5}, text("late"))))
        async with asyncio.timeout(10):
            while runs.thread("t1") is None or runs.thread("t1").active is None:
                await asyncio.sleep(0.01)
        async with runs.place_change() as held:
            assert held is True
        await slow
        async with runs.place_change() as held:
            assert held is False
