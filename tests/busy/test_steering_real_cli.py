"""A message posted while a real CLI's run streams (issue 34), on the scripted models: Codex and Claude take it into
the live run (during a tool, and during the final text), Gemini runs it next (queued). Both POST streams are runs of
their own, each with one terminal event, no event in two streams, and the live run's snapshot holds the message
once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import check_stream
from post_stream import Stream, body, deltas
from runners import scripted_runner, wait_for
from ts_client import run_with_official_client

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

STEER = "NOTOOL steer-marker-42"  # the scripted model answers it in words ("Hello from the scripted model ...")
HELLO = "Hello from the scripted model"


def gated_command(gate: Path) -> str:
    """The scripted shell call: a tool that runs until the test creates ``gate``."""
    return f"while [ ! -e {gate} ]; do sleep 0.05; done; echo hello > out.txt"


def users_in_snapshot(events: list[dict[str, Any]]) -> list[str]:
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]["messages"]
    return [m["id"] for m in snapshot if m["role"] == "user"]


def check_both(live: list[dict[str, Any]], second: list[dict[str, Any]], thread_ids: set[str]) -> None:
    check_stream(live, thread_ids=thread_ids)
    check_stream(second, thread_ids=thread_ids)
    assert not {json.dumps(e, sort_keys=True) for e in live} & {json.dumps(e, sort_keys=True) for e in second}, \
        "an event in two streams"


async def run_held_in_a_tool(r: Any, gate: Path) -> tuple[httpx.AsyncClient, Stream]:
    """Thread ``t``'s run ``run-a``, streaming, once its shell tool call has started (the command waits for
    ``gate``); the runner's client and that run's stream."""
    r.server.shell_command = gated_command(gate)
    client = r.harness.client
    assert client is not None
    live = Stream(client, body("t", "run-a", "Create out.txt with hello"))
    await wait_for(lambda: r.seen("t", "TOOL_CALL_START"), what="the tool call")
    return client, live


def model_saw(server: Any, text: str) -> bool:
    return any(text in json.dumps(b) for b in server.bodies())


@pytest.mark.parametrize("runner_type", ["codex-sdk", "claude"])
async def test_a_message_during_a_tool_is_steered_into_the_live_run(runner_type: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        client, live = await run_held_in_a_tool(r, gate)
        steering = Stream(client, body("t", "run-s", STEER))
        second = await steering.done()
        gate.touch()
        first = await live.done()
    check_both(first, second, set())
    assert [e["type"] for e in second] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"], second
    assert second[1]["value"] == {"messageId": "msg-run-s", "mode": "steered", "intoRunId": "run-a"}
    assert first[-1]["type"] == "RUN_FINISHED" and first[-1]["runId"] == "run-a"
    assert model_saw(r.server, "steer-marker-42"), "the model never received the steered message"
    assert users_in_snapshot(first) == ["msg-run-a", "msg-run-s"]
    steered = [e for e in first if e["type"] == "CUSTOM" and e["name"] == "ambient:message_steered"]
    assert [e["value"]["messageId"] for e in steered] == ["msg-run-s"]


@pytest.mark.parametrize("runner_type", ["codex-sdk", "claude"])
async def test_a_message_during_the_final_text_is_steered_into_the_live_run(runner_type: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        r.server.slow_delay = 0.2
        client = r.harness.client
        assert client is not None
        live = Stream(client, body("t", "run-a", "NOTOOL SLOW tell a story"))
        await wait_for(lambda: "slow chunk" in deltas(r.logged("t")), what="the final text")
        second = await Stream(client, body("t", "run-s", STEER)).done()
        first = await live.done()
    check_both(first, second, set())
    assert second[1]["value"]["mode"] == "steered", second
    assert [e["type"] for e in first].count("RUN_FINISHED") == 1 and first[-1]["type"] == "RUN_FINISHED"
    assert model_saw(r.server, "steer-marker-42")
    assert HELLO in deltas(first), "the model's answer to the steered message streams in the live run"
    assert users_in_snapshot(first) == ["msg-run-a", "msg-run-s"]


async def test_gemini_queues_a_message_and_runs_it_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch) as r:
        r.server.shell_command = gated_command(gate)
        client = r.harness.client
        assert client is not None
        caps = (await client.get("/capabilities")).json()["custom"]["whenBusy"]
        live = Stream(client, body("t", "run-a", "Create out.txt with hello"))
        await wait_for(lambda: r.seen("t", "TOOL_CALL_START"), what="the tool call")
        queued = Stream(client, body("t", "run-q", STEER))
        await queued.until(lambda events: len(events) >= 2)
        gate.touch()
        first, second = await live.done(), await queued.done()
    assert caps["modes"] == ["queue", "reject"]
    check_both(first, second, set())
    assert second[1]["value"] == {"messageId": "msg-run-q", "mode": "queued", "position": 1}
    assert second[0]["runId"] == second[-1]["runId"] == "run-q"
    assert HELLO not in deltas(first) and HELLO in deltas(second)
    assert users_in_snapshot(second) == ["msg-run-a", "msg-run-q"]


@pytest.mark.parametrize("runner_type", ["codex-sdk"])
async def test_three_queued_messages_run_in_order_and_shutdown_ends_a_queue(runner_type: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        client, live = await run_held_in_a_tool(r, gate)
        queued = []
        for n in (1, 2, 3):
            queued.append(Stream(client, body("t", f"run-q{n}", f"NOTOOL number {n}", whenBusy="queue")))
            await queued[-1].until(lambda events: len(events) >= 2)
        gate.touch()
        results = [await s.done() for s in [live, *queued]]
        # Shutdown with a queue: the live run and each queued stream end SHUTDOWN; nothing queued is started.
        gate.unlink()
        live = Stream(client, body("t", "run-b", "Create out.txt with hello"))
        await wait_for(lambda: sum(e["type"] == "TOOL_CALL_START" for e in r.logged("t")) == 2, what="the tool")
        waiting = Stream(client, body("t", "run-w", "NOTOOL never", whenBusy="queue"))
        await waiting.until(lambda events: len(events) >= 2)
        requests = r.model_requests()
        await asyncio.wait_for(r.harness.app.runtime.runs.shutdown(), 60)
        ended, never = await live.done(), await waiting.done()
    for n, events in enumerate(results[1:], start=1):
        check_stream(events)
        assert events[1]["value"]["position"] == n and HELLO in deltas(events)
    assert [e["runId"] for events in results for e in events if e["type"] == "RUN_STARTED"] == [
        "run-a", "run-q1", "run-q2", "run-q3"]
    bodies = [json.dumps(b) for b in r.server.bodies()]
    firsts = [next(i for i, b in enumerate(bodies) if f"number {n}" in b) for n in (1, 2, 3)]
    assert firsts == sorted(firsts), "the model got the queued messages in their order"
    check_stream(never)
    assert never[-1]["type"] == "RUN_ERROR" and never[-1]["code"] == "SHUTDOWN"
    assert ended[-1]["code"] == "SHUTDOWN"
    assert not model_saw(r.server, "NOTOOL never") and r.model_requests() == requests


async def test_the_official_client_reads_a_steering_and_a_queued_post(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    async with scripted_runner("codex-sdk", tmp_path, monkeypatch) as r:
        client, live = await run_held_in_a_tool(r, gate)
        url = f"{r.harness.base_url}/run"
        steered = await run_with_official_client(url, "t", [{"id": "u-s", "role": "user", "content": STEER}],
                                                 run_id="run-s")
        queued = asyncio.create_task(run_with_official_client(
            url, "t", [{"id": "u-q", "role": "user", "content": "NOTOOL and then"}], run_id="run-q",
            forwarded_props={"whenBusy": "queue"}))
        state = r.harness.app.runtime.runs.thread("t")
        await wait_for(lambda: state.queue or queued.done(), what="the queued message")
        gate.touch()
        first, later = await live.done(), await queued
    assert steered.ok, steered.error
    assert steered.events == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert later.ok, later.error
    assert later.events[:2] == ["RUN_STARTED", "CUSTOM"] and later.events[-1] == "RUN_FINISHED"
    assert later.messages[-1]["content"] == "Hello from the scripted model. No tools were needed."
    check_stream(first)


async def test_reject_a_full_queue_and_interrupts_with_and_without_drop_queued(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    async with scripted_runner("gemini-cli", tmp_path, monkeypatch, runner_max_queued=2) as r:
        r.server.shell_command = gated_command(gate)
        client = r.harness.client
        assert client is not None

        def tool_calls() -> int:
            return sum(e["type"] == "TOOL_CALL_START" for e in r.logged("t"))

        live = Stream(client, body("t", "run-a", "Create out.txt with hello"))
        await wait_for(lambda: tool_calls() == 1, what="the tool call")
        rejected = await client.post("/run", json=body("t", "run-r", "NOTOOL no", whenBusy="reject"))
        queued = []
        for n in (1, 2):
            queued.append(Stream(client, body("t", f"run-q{n}", f"NOTOOL queued {n}")))
            await queued[-1].until(lambda events: len(events) >= 2)
        full = await client.post("/run", json=body("t", "run-full", "NOTOOL too many"))
        released = await client.post("/interrupt", json={"threadId": "t"})
        first, *after = [await s.done() for s in [live, *queued]]

        second = Stream(client, body("t", "run-b", "Create out.txt with hello"))
        await wait_for(lambda: tool_calls() == 2, what="the second tool call")
        doomed = Stream(client, body("t", "run-d", "NOTOOL dropped"))
        await doomed.until(lambda events: len(events) >= 2)
        dropped = await client.post("/interrupt", json={"threadId": "t", "dropQueued": True})
        interrupted, never = await second.done(), await doomed.done()
    assert rejected.status_code == 409 and rejected.json()["code"] == "THREAD_BUSY"
    assert full.status_code == 429 and full.json()["code"] == "QUEUE_FULL"
    assert released.status_code == 200 and "droppedQueued" not in released.json()
    assert first[-1]["outcome"] == {"type": "cancelled"}
    for n, events in enumerate(after, start=1):
        check_stream(events)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["runId"] == f"run-q{n}"
        assert HELLO in deltas(events)
    assert dropped.json()["droppedQueued"] == ["run-d"]
    assert interrupted[-1]["outcome"] == {"type": "cancelled"}
    check_stream(never)
    assert [e["type"] for e in never] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert never[-1]["outcome"] == {"type": "cancelled"}
    assert not model_saw(r.server, "NOTOOL dropped") and not model_saw(r.server, "too many")


@pytest.mark.parametrize("gap", [0.3, 1.5])
async def test_two_messages_steered_during_the_final_text_end_with_the_turn_that_answers_them(
        gap: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However Claude Code groups them into turns (one turn for both, or one each), the live run ends once they are
    answered, its snapshot holding both."""
    async with scripted_runner("claude", tmp_path, monkeypatch) as r:
        r.server.slow_delay = 0.2
        client = r.harness.client
        assert client is not None
        live = Stream(client, body("t", "run-a", "NOTOOL SLOW tell a story"))
        await wait_for(lambda: "slow chunk" in deltas(r.logged("t")), what="the final text")
        first_steer = await Stream(client, body("t", "run-s1", "NOTOOL first-steer-marker")).done()
        await asyncio.sleep(gap)  # the second one while the CLI has (or has not yet) taken the first in
        second_steer = await Stream(client, body("t", "run-s2", "NOTOOL second-steer-marker")).done()
        async with asyncio.timeout(60):
            first = await live.done()
    assert first_steer[1]["value"]["mode"] == second_steer[1]["value"]["mode"] == "steered"
    check_stream(first, thread_ids=set())
    assert first[-1]["type"] == "RUN_FINISHED" and first[-1]["runId"] == "run-a"
    assert model_saw(r.server, "first-steer-marker") and model_saw(r.server, "second-steer-marker")
    assert users_in_snapshot(first) == ["msg-run-a", "msg-run-s1", "msg-run-s2"]
