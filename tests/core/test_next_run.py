"""A thread takes its next run as soon as its previous run's terminal event has been delivered.

The bridge here yields its events at once and then takes its time closing (as a CLI does while it exits, is
reaped and its session map written): the core must not call the thread busy during that clean-up, the next run
waits for it, and a clean-up that never finishes gives ``503 PREVIOUS_RUN_STUCK`` instead of a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunFinishedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from harness import RunnerHarness, parse_sse

from ambient_runner.bridges.base import BridgeBase
from ambient_runner.bridges.contract import Readiness, Turn


class SlowToCloseBridge(BridgeBase):
    """Answers every turn at once, terminal event included; its stream's clean-up then waits ``close_delay`` s
    (or for ``release``), as a CLI's exit and bookkeeping do."""

    runner_type = "slow-close"
    framework = "slow-close"

    def __init__(self, close_delay: float | None) -> None:
        self.close_delay = close_delay
        self.release = asyncio.Event()
        self.running: set[str] = set()  # threads with a turn not yet closed
        self.overlaps = 0  # turns started on a thread whose previous turn had not closed
        self.closed = 0

    def readiness(self) -> Readiness:
        return Readiness(True)

    async def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]:
        if turn.thread_id in self.running:
            self.overlaps += 1
        self.running.add(turn.thread_id)
        try:
            message_id = f"m-{turn.run_id}"
            yield TextMessageStartEvent(type=EventType.TEXT_MESSAGE_START, message_id=message_id, role="assistant")
            yield TextMessageContentEvent(type=EventType.TEXT_MESSAGE_CONTENT, message_id=message_id, delta="ok")
            yield TextMessageEndEvent(type=EventType.TEXT_MESSAGE_END, message_id=message_id)
            # The terminal event comes first; the clean-up runs when the core closes the stream.
            yield RunFinishedEvent(type=EventType.RUN_FINISHED, thread_id=turn.thread_id, run_id=turn.run_id)
        finally:
            if self.close_delay is None:
                await self.release.wait()
            else:
                await asyncio.sleep(self.close_delay)
            self.closed += 1
            self.running.discard(turn.thread_id)

    async def interrupt(self, thread_id: str) -> None:
        return None


async def test_back_to_back_runs_wait_for_the_clean_up_instead_of_409():
    bridge = SlowToCloseBridge(close_delay=0.2)
    async with RunnerHarness(bridge) as runner:
        for i in range(5):
            events = await runner.run("t1", f"turn {i}")
            assert events[-1]["type"] == "RUN_FINISHED"
        runs = runner.app.runtime.runs
        assert runs.thread("t1").active is None
    assert bridge.overlaps == 0, "a run started while the previous one was still cleaning up"
    assert bridge.closed == 5


async def test_a_stuck_clean_up_gives_503_previous_run_stuck_and_then_recovers():
    bridge = SlowToCloseBridge(close_delay=None)
    async with RunnerHarness(bridge, runner_settle_timeout=0.5) as runner:
        try:
            first = await runner.run("t1", "first")
            assert first[-1]["type"] == "RUN_FINISHED"
            response = await runner.client.post("/run", json=runner.run_body("t1", "second"))
            assert response.status_code == 503
            error = response.json()
            assert error["code"] == "PREVIOUS_RUN_STUCK"
            assert "RUNNER_SETTLE_TIMEOUT" in error["error"]
            # Interrupt finds nothing to stop: the run has ended (its terminal event was sent).
            assert (await runner.interrupt("t1")).status_code == 404
            other = await runner.run("t2", "other threads are not held up")
            assert other[-1]["type"] == "RUN_FINISHED"
            bridge.release.set()
            second = await runner.run("t1", "second")
            assert second[-1]["type"] == "RUN_FINISHED"
        finally:
            bridge.release.set()  # a failed assertion must not leave the clean-up hanging
    assert bridge.overlaps == 0


async def test_a_post_while_the_run_streams_with_when_busy_reject_gets_409():
    bridge = SlowToCloseBridge(close_delay=0.1)
    gate = asyncio.Event()
    original = bridge.run_turn

    async def held_turn(turn: Turn) -> AsyncIterator[BaseEvent]:
        async for event in original(turn):
            yield event
            await gate.wait()

    bridge.run_turn = held_turn  # type: ignore[method-assign]
    async with RunnerHarness(bridge) as runner:
        async with runner.client.stream("POST", "/run", json=runner.run_body("t1", "long")) as response:
            lines = parse_sse(response.aiter_lines())
            _, started = await anext(lines)
            assert started["type"] == "RUN_STARTED"
            try:
                busy = await runner.client.post("/run", json=runner.run_body("t1", "overlap", {"whenBusy": "reject"}))
            finally:
                gate.set()
            assert busy.status_code == 409
            assert busy.json()["code"] == "THREAD_BUSY"
            rest = [event async for _, event in lines]
        runner.checked("t1", [started, *rest])  # ag-ui-validate and the project's stream checks
        assert rest[-1]["type"] == "RUN_FINISHED"
