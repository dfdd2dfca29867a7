"""Back-to-back runs on one thread with each real runner: the next run is posted the moment the previous stream
has delivered its terminal event, and is never refused (the previous run's clean-up, the CLI's exit, reaping, the
session map and the state sync, is waited for, not answered with 409). A POST while a run is still streaming is a
real overlap: with ``whenBusy: "reject"`` it still gets ``409 THREAD_BUSY``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harness import parse_sse
from runners import PLAIN_PROMPT, RUNNERS, scripted_runner, wait_for

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]
RUNS = 50


@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_fifty_back_to_back_runs_are_all_accepted(runner_type: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    state_store = tmp_path / "store"
    async with scripted_runner(runner_type, tmp_path, monkeypatch, with_state_sync=True,
                               state_store_url=f"file://{state_store}") as r:
        harness = r.harness
        assert harness.client is not None
        refused: list[tuple[int, int, str]] = []
        for i in range(RUNS):
            body = harness.run_body("t-loop", f"{PLAIN_PROMPT} ({i})", run_id=f"loop-{i}")
            async with harness.client.stream("POST", "/run", json=body) as response:
                if response.status_code != 200:
                    refused.append((i, response.status_code, (await response.aread()).decode()))
                    continue
                events = [event async for _, event in parse_sse(response.aiter_lines())]
            harness.checked("t-loop", events)
            assert events[-1]["type"] == "RUN_FINISHED", (i, events[-1])
        assert refused == [], f"{len(refused)} of {RUNS} immediate follow-ups refused: {refused[:3]}"
        finished = sum(1 for e in r.logged("t-loop") if e["type"] == "RUN_FINISHED")
        assert finished == RUNS
        assert await harness.metric("ambient_state_syncs_total") >= RUNS, "every run's state sync ran"


@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_a_post_during_a_streaming_run_is_409(runner_type: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner(runner_type, tmp_path, monkeypatch) as r:
        r.server.slow_delay = 0.3
        first = asyncio.create_task(r.harness.run("t-overlap", "SLOW tell a story"))
        await wait_for(lambda: r.seen("t-overlap", "TEXT_MESSAGE_CONTENT"), what="streamed text")
        assert r.harness.client is not None
        busy = await r.harness.client.post("/run", json=r.harness.run_body("t-overlap", PLAIN_PROMPT,
                                                                           {"whenBusy": "reject"}))
        assert busy.status_code == 409, busy.text
        assert busy.json()["code"] == "THREAD_BUSY"
        events = await asyncio.wait_for(first, 120)
        assert events[-1]["type"] == "RUN_FINISHED"
        after = await r.harness.run("t-overlap", PLAIN_PROMPT)  # and at once after it: accepted
        assert after[-1]["type"] == "RUN_FINISHED"
