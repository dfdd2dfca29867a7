"""POST /run on a thread whose run streams (issue 34), over real HTTP with the fake CLI: queued behind the live run,
steered into it (a fake bridge that takes mid-turn input), or refused; interrupt and shutdown with a queue."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness, check_stream
from post_stream import BOUND, Stream, body, deltas, saw
from process_bridge import FakeCliBridge, SteeringBridge, script


def text(delta: str, message_id: str = "m") -> dict:
    return {"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}}


def holding(gate: Path, *before: dict, after: str = "done") -> str:
    """A run that streams ``before``, then waits for ``gate`` to exist, then says ``after``."""
    return script(*before, text("working "), {"wait_file": str(gate)}, text(after))


def check_own_run(events: list[dict[str, Any]], run_id: str) -> None:
    check_stream(events)
    assert events[0]["runId"] == run_id and events[-1].get("runId", run_id) == run_id


@pytest.fixture
def bridge(tmp_path):
    return FakeCliBridge(tmp_path)


async def test_a_message_for_a_busy_thread_is_queued_and_runs_next_under_its_own_run_id(bridge, tmp_path):
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate, after="first done")))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        queued = Stream(runner.client, body("t", "run-b", script(text("second run"))))
        await queued.until(lambda events: len(events) >= 2)
        head = queued.events[:2]
        assert head[0]["type"] == "RUN_STARTED" and head[0]["runId"] == "run-b"
        assert head[1] == {"type": "CUSTOM", "name": "ambient:message_accepted",
                           "value": {"messageId": "msg-run-b", "mode": "queued", "position": 1}}
        assert len(bridge.turns) == 1, "the queued message waits for the live run"
        gate.touch()
        first, second = await live.done(), await queued.done()
        replay = [event for _, event in await runner.events("t")]
    check_own_run(first, "run-a")
    check_own_run(second, "run-b")
    assert deltas(first) == "working first done" and deltas(second) == "second run"
    assert [e["type"] for e in second].count("RUN_STARTED") == 1
    assert not {json.dumps(e) for e in first} & {json.dumps(e) for e in second}, "no event in two streams"
    assert replay == first + second  # the thread's log holds both runs, each once, in order
    snapshot = [e for e in second if e["type"] == "MESSAGES_SNAPSHOT"][-1]["messages"]
    assert [m["id"] for m in snapshot if m["role"] == "user"] == ["msg-run-a", "msg-run-b"]


async def test_three_queued_messages_keep_their_order(bridge, tmp_path):
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        queued = []
        for n in (1, 2, 3):
            props = {"whenBusy": "steer"} if n == 3 else {}  # this runner cannot steer: queued as well
            stream = Stream(runner.client, body("t", f"run-q{n}", script(text(f"queued {n}")), **props))
            await stream.until(saw("CUSTOM"))
            queued.append(stream)
        gate.touch()
        results = [await stream.done() for stream in [live, *queued]]
    assert [r[1]["value"]["position"] for r in results[1:]] == [1, 2, 3]
    assert {r[1]["value"]["mode"] for r in results[1:]} == {"queued"}
    for n, events in enumerate(results[1:], start=1):
        check_own_run(events, f"run-q{n}")
        assert deltas(events) == f"queued {n}"
    assert [t.run_id for t in bridge.turns] == ["run-a", "run-q1", "run-q2", "run-q3"]


async def test_reject_answers_409_and_a_full_queue_429(bridge, tmp_path):
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge, runner_max_queued=1) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        rejected = await runner.client.post("/run", json=body("t", "run-r", script(text("x")), whenBusy="reject"))
        bad = await runner.client.post("/run", json=body("t", "run-x", script(text("x")), whenBusy="later"))
        queued = Stream(runner.client, body("t", "run-b", script(text("b"))))
        await queued.until(saw("CUSTOM"))
        full = await runner.client.post("/run", json=body("t", "run-c", script(text("c"))))
        retried = await runner.client.post("/run", json=body("t", "run-b", script(text("b"))))
        still_running = await runner.client.post("/run", json=body("t", "run-a", script(text("a"))))
        gate.touch()
        await live.done()
        await queued.done()
    assert rejected.status_code == 409 and rejected.json()["code"] == "THREAD_BUSY"
    assert bad.status_code == 422 and bad.json()["code"] == "INVALID_OPTION"
    assert bad.json()["details"]["option"] == "whenBusy"
    assert full.status_code == 429 and full.json()["code"] == "QUEUE_FULL"
    assert retried.status_code == still_running.status_code == 409  # a retried POST is no new message
    assert [t.run_id for t in bridge.turns] == ["run-a", "run-b"]


@pytest.mark.parametrize("drop", [False, True])
async def test_interrupt_ends_the_live_run_and_releases_or_drops_the_queue(bridge, drop):
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", script(text("working "), {"sleep": 60})))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        queued = []
        for n in (1, 2):  # one after the other: their order is the order they arrive in
            queued.append(Stream(runner.client, body("t", f"run-q{n}", script(text(f"queued {n}")))))
            await queued[-1].until(saw("CUSTOM"))
        answer = await runner.client.post("/interrupt", json={"threadId": "t", "dropQueued": drop})
        first = await live.done()
        results = [await stream.done() for stream in queued]
    assert answer.status_code == 200
    assert first[-1]["outcome"] == {"type": "cancelled"}
    for n, events in enumerate(results, start=1):
        check_own_run(events, f"run-q{n}")
    if drop:
        assert answer.json()["droppedQueued"] == ["run-q1", "run-q2"]
        assert all([e["type"] for e in events] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"] for events in results)
        assert all(events[-1]["outcome"] == {"type": "cancelled"} for events in results)
        assert [t.run_id for t in bridge.turns] == ["run-a"]
    else:
        assert [deltas(events) for events in results] == ["queued 1", "queued 2"]
        assert [t.run_id for t in bridge.turns] == ["run-a", "run-q1", "run-q2"]


async def test_a_queued_message_runs_when_its_client_went_away(bridge, tmp_path):
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        leaving = Stream(runner.client, body("t", "run-b", script(text("ran anyway"))))
        await leaving.until(saw("CUSTOM"))
        leaving.task.cancel()  # the client disconnects while its message waits
        await asyncio.gather(leaving.task, return_exceptions=True)
        gate.touch()
        await live.done()
        async with asyncio.timeout(BOUND):
            while not any(e.get("runId") == "run-b" and e["type"] == "RUN_FINISHED"
                          for _, e in await runner.events("t")):
                await asyncio.sleep(0.05)
        replay = [event for _, event in await runner.events("t")]
    second = replay[[e["type"] for e in replay].index("RUN_FINISHED") + 1:]
    check_own_run(second, "run-b")
    assert deltas(second) == "ran anyway"


async def test_shutdown_ends_each_queued_stream_with_shutdown_and_starts_none(bridge, tmp_path):
    gate = tmp_path / "gate"
    runner = RunnerHarness(bridge, runner_shutdown_grace=5.0)
    async with runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        queued = []
        for n in (1, 2):  # one after the other: their order is the order they arrive in
            queued.append(Stream(runner.client, body("t", f"run-q{n}", script(text("never")))))
            await queued[-1].until(saw("CUSTOM"))
        shutdown = asyncio.create_task(runner.app.runtime.runs.shutdown())
        results = [await stream.done() for stream in queued]
        first = await live.done()
        await shutdown
    for n, events in enumerate(results, start=1):
        check_own_run(events, f"run-q{n}")
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "SHUTDOWN"
    assert first[-1]["code"] == "SHUTDOWN"
    assert [t.run_id for t in bridge.turns] == ["run-a"]


async def test_a_steered_message_goes_into_the_live_run_and_its_post_is_a_short_run(tmp_path):
    bridge = SteeringBridge(tmp_path)
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        caps = (await runner.client.get("/capabilities")).json()["custom"]["whenBusy"]
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        steering_stream = Stream(runner.client, body("t", "run-s", "also do this"))
        steering = await steering_stream.done()
        gate.touch()
        first = await live.done()
    assert caps == {"modes": ["steer", "queue", "reject"], "maxQueued": 8}
    check_own_run(steering, "run-s")
    assert [e["type"] for e in steering] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert steering[1]["value"] == {"messageId": "msg-run-s", "mode": "steered", "intoRunId": "run-a"}
    assert [seq for seq, _ in steering_stream.pairs] == [None, None, None]  # its own run: in no thread log
    assert bridge.steered == [("t", "also do this")]
    check_own_run(first, "run-a")
    marker = [e for e in first if e["type"] == "CUSTOM"]
    assert marker == [{"type": "CUSTOM", "name": "ambient:message_steered",
                       "value": {"messageId": "msg-run-s", "runId": "run-s"}}]
    snapshot = [e for e in first if e["type"] == "MESSAGES_SNAPSHOT"][-1]["messages"]
    users = [m for m in snapshot if m["role"] == "user"]
    assert [m["id"] for m in users] == ["msg-run-a", "msg-run-s"]
    assert [t.run_id for t in bridge.turns] == ["run-a"]


async def test_a_steer_the_turn_no_longer_takes_falls_back_to_the_queue(tmp_path):
    bridge = SteeringBridge(tmp_path, takes=False)
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        queued = Stream(runner.client, body("t", "run-b", script(text("next"))))
        await queued.until(saw("CUSTOM"))
        gate.touch()
        await live.done()
        second = await queued.done()
    check_own_run(second, "run-b")
    assert second[1]["value"] == {"messageId": "msg-run-b", "mode": "queued", "position": 1}
    assert deltas(second) == "next"


async def test_a_second_message_while_a_steer_is_delivered_comes_after_it(tmp_path):
    bridge = SteeringBridge(tmp_path)
    bridge.hold = asyncio.Event()
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        live = Stream(runner.client, body("t", "run-a", holding(gate)))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        one = Stream(runner.client, body("t", "run-1", "first"))
        async with asyncio.timeout(BOUND):
            while bridge.entered != ["first"]:
                await asyncio.sleep(0.01)
        two = Stream(runner.client, body("t", "run-2", "second"))
        lock = runner.app.runtime.runs.thread("t").steering
        async with asyncio.timeout(BOUND):
            while not lock._waiters:  # noqa: SLF001 - the second message waits for the first's delivery
                await asyncio.sleep(0.01)
        bridge.hold.set()
        first, second = await one.done(), await two.done()
        gate.touch()
        await live.done()
    assert bridge.entered == ["first", "second"]
    assert [m for _, m in bridge.steered] == ["first", "second"]
    assert first[1]["value"]["mode"] == second[1]["value"]["mode"] == "steered"


async def test_a_hidden_turn_of_the_runner_waits_behind_a_busy_thread(bridge, tmp_path):
    """A workflow's greeting (a turn the runner starts itself) on a thread whose run streams joins its queue: it runs
    after the live run and the messages posted before it, never beside or ahead of them."""
    from ambient_runner.platform.session_turns import SessionTurns

    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        runs = runner.app.runtime.runs
        thread = runs.settings.session_id
        live = Stream(runner.client, body(thread, "run-a", holding(gate, after="first done")))
        await live.until(saw("TEXT_MESSAGE_CONTENT"))
        posted = Stream(runner.client, body(thread, "run-b", script(text("posted first"))))
        await posted.until(saw("CUSTOM"))
        await SessionTurns(runs.settings, runs, workflows=None).start(script(text("greeting")),
                                                                       "workflow_startup_prompt")
        assert len(bridge.turns) == 1, "the hidden turn waits like any queued message"
        gate.touch()
        await live.done()
        await posted.done()
        async with asyncio.timeout(BOUND):
            while runs.thread(thread).busy or len(bridge.turns) < 3:
                await runs.thread(thread).changed.wait()
        replay = [event for _, event in await runner.events(thread)]
    hidden = bridge.turns[2]
    assert [t.run_id for t in bridge.turns[:2]] == ["run-a", "run-b"]
    assert hidden.run_id.startswith("workflow_startup_prompt-")
    started = [i for i, e in enumerate(replay) if e["type"] == "RUN_STARTED"]
    for begin, end in zip(started, [*started[1:], len(replay)], strict=True):  # three runs, one after the other
        check_stream(replay[begin:end])
    assert [replay[i]["runId"] for i in started] == ["run-a", "run-b", hidden.run_id]
