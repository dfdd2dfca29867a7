"""Load: many followers of one run, and a long run whose memory stays flat."""

from __future__ import annotations

import asyncio
import json

import pytest
from harness import RunnerHarness, check_stream, parse_sse
from process_bridge import FakeCliBridge, script
from runners import wait_for


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.slow
async def test_100_followers_of_one_run_get_identical_sequences(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        run = asyncio.create_task(runner.run("t1", script({"sleep": 1.0}, {"flood": 2000}, {"sleep": 0.5},
                                                          {"flood": 1000})))
        await wait_for(lambda: runner.seen("t1", "RUN_STARTED"), what="the run started")

        async def follow() -> list[tuple[int | None, dict]]:
            return await runner.events("t1", after=0)

        followers = await asyncio.gather(*(follow() for _ in range(100)))
        await run
    first = followers[0]
    check_stream([event for _, event in first])
    assert len(first) == 3000 + 5  # with the MESSAGES_SNAPSHOT
    assert [seq for seq, _ in first] == list(range(1, len(first) + 1))
    assert all(f == first for f in followers)


@pytest.mark.slow
async def test_a_100000_event_run_keeps_memory_flat_and_loses_nothing(tmp_path):
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:

        async def count_events(thread_id: str, n: int) -> tuple[int, int, str]:
            count, last_seq, last_type = 0, 0, ""
            body = runner.run_body(thread_id, script({"flood": n}))
            async with runner.client.stream("POST", "/run", json=body) as response:
                async for seq, event in parse_sse(response.aiter_lines()):
                    count += 1
                    assert seq == last_seq + 1
                    last_seq, last_type = seq, event["type"]
            return count, last_seq, last_type

        await count_events("warm-up", 20_000)  # warm the allocator and caches
        before = rss_bytes()
        count, last_seq, last_type = await count_events("long", 100_000)
        after = rss_bytes()
        replay_tail = await runner.events("long", after=last_seq - 3)
    assert count == 100_000 + 5 and last_type == "RUN_FINISHED"  # with the MESSAGES_SNAPSHOT
    assert [e["type"] for _, e in replay_tail] == ["TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    growth = after - before
    print(json.dumps({"rss_before_mb": before / 2**20, "rss_after_mb": after / 2**20, "growth_mb": growth / 2**20}))
    assert growth < 10 * 2**20, f"memory grew by {growth / 2**20:.1f} MB"
