"""A thread's event spool stays bounded over a long thread (every run ends with a snapshot of the whole thread, so
unbounded it would grow with the square of the runs), and replay stays in order, without gaps or repeats, from the
oldest event still kept."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest

from ambient_runner.runs.event_log import ThreadEventLog

MEMORY = 16
LIMIT = 20_000


def run(log: ThreadEventLog, number: int) -> None:
    """One run: RUN_STARTED, 10 deltas, a snapshot as big as the thread so far, RUN_FINISHED."""
    log.begin_run()
    log.append(json.dumps({"type": "RUN_STARTED", "run": number}))
    for i in range(10):
        log.append(json.dumps({"type": "TEXT_MESSAGE_CONTENT", "run": number, "delta": f"part {i} " * 4}))
    log.append(json.dumps({"type": "MESSAGES_SNAPSHOT", "run": number, "messages": ["m" * 40] * number}))
    log.append(json.dumps({"type": "RUN_FINISHED", "run": number}), terminal=True)


def replay(log: ThreadEventLog, after: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    while batch := log.read_after(after, limit=7):
        out += batch
        after = batch[-1][0]
    return out


def test_the_spool_is_bounded_and_replay_goes_on_from_the_oldest_event_kept(tmp_path: Path) -> None:
    log = ThreadEventLog("t", tmp_path, MEMORY, spool_limit=LIMIT)
    spool = next(tmp_path.iterdir())
    sizes = []
    for number in range(1, 201):
        run(log, number)
        log.read_after(0)  # a reader flushes what is buffered
        sizes.append(spool.stat().st_size)
    biggest_run = sum(len(line) + 1 for _, line in replay(log, log.last_seq - 13))
    assert max(sizes) <= LIMIT + 2 * biggest_run  # unbounded: ~2 MB after 200 runs
    events = replay(log, 0)
    seqs = [seq for seq, _ in events]
    assert seqs == list(range(seqs[0], log.last_seq + 1))  # in order, no gap, no repeat, up to the newest
    assert seqs[0] > 1  # the oldest were dropped
    kept_runs = {json.loads(line)["run"] for _, line in events}
    assert 200 in kept_runs and json.loads(events[-1][1])["type"] == "RUN_FINISHED"
    assert log.is_terminal(log.last_seq)
    # A reader that asks from inside what was dropped, or from any kept point, gets what follows, once.
    assert replay(log, 5) == events
    middle = seqs[len(seqs) // 2]
    assert replay(log, middle) == [e for e in events if e[0] > middle]
    log.close()


def test_under_the_limit_nothing_is_dropped(tmp_path: Path) -> None:
    log = ThreadEventLog("t", tmp_path, MEMORY, spool_limit=10 * 1024 * 1024)
    for number in range(1, 31):
        run(log, number)
    events = replay(log, 0)
    assert [seq for seq, _ in events] == list(range(1, log.last_seq + 1))
    assert [json.loads(line)["run"] for _, line in events[:13]] == [1] * 13
    log.close()


def test_memory_holds_a_bounded_number_of_characters_and_the_rest_is_read_back(tmp_path: Path) -> None:
    from ambient_runner.runs import event_log  # noqa: PLC0415

    log = ThreadEventLog("t", tmp_path, 2048)
    big = "x" * (event_log.MEMORY_CHARS // 10)
    for i in range(40):
        log.append(json.dumps({"type": "MESSAGES_SNAPSHOT", "i": i, "messages": [big]}))
    assert sum(len(line) for _, line in log._recent) <= event_log.MEMORY_CHARS
    assert [json.loads(line)["i"] for _, line in replay(log, 0)] == list(range(40))
    log.close()


def spooled_lines(tmp_path: Path) -> list[str]:
    return next(tmp_path.iterdir()).read_bytes().decode().splitlines()


async def test_a_runs_end_reaches_its_follower_before_the_spool_is_written(tmp_path: Path) -> None:
    log = ThreadEventLog("t", tmp_path, MEMORY)
    log.begin_run()
    log.append(json.dumps({"type": "RUN_STARTED"}))
    follower = log.follow(0)
    assert [seq for seq, _ in await anext(follower)] == [1]
    end = asyncio.get_running_loop().call_soon(lambda: (
        log.append(json.dumps({"type": "MESSAGES_SNAPSHOT", "messages": ["m" * 200_000]})),
        log.append(json.dumps({"type": "RUN_FINISHED"}), terminal=True)))
    batch = await anext(follower)  # woken by the appends, before the write they scheduled
    assert end is not None and [seq for seq, _ in batch] == [2, 3]
    assert spooled_lines(tmp_path) == []
    await asyncio.sleep(0)
    assert spooled_lines(tmp_path) == [line for _, line in replay(log, 0)]
    assert len(spooled_lines(tmp_path)) == 3
    log.close()


async def test_lines_waiting_to_be_written_are_read_back_in_order(tmp_path: Path) -> None:
    log = ThreadEventLog("t", tmp_path, 2)  # all but the newest two are read from the spool
    log.begin_run()
    for i in range(50):  # far under WRITE_BYTES, no terminal event: nothing written yet
        log.append(json.dumps({"type": "TEXT_MESSAGE_CONTENT", "delta": f"part {i}"}))
    assert spooled_lines(tmp_path) == []
    events = replay(log, 0)
    assert [seq for seq, _ in events] == list(range(1, 51))
    assert [json.loads(line)["delta"] for _, line in events] == [f"part {i}" for i in range(50)]
    assert len(spooled_lines(tmp_path)) == 50
    log.close()


def test_a_short_write_goes_on_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ambient_runner.runs import event_log  # noqa: PLC0415

    def seven_bytes_at_most(fd: int, buffers: list[bytes]) -> int:  # what a real file may do near a full disk
        return os.write(fd, b"".join(buffers)[:7])

    monkeypatch.setattr(event_log.os, "writev", seven_bytes_at_most)
    log = ThreadEventLog("t", tmp_path, MEMORY)
    run(log, 3)
    assert spooled_lines(tmp_path) == [line for _, line in replay(log, 0)]
    assert len(spooled_lines(tmp_path)) == 13
    log.close()


async def test_a_full_disk_keeps_the_newest_events_and_the_log_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    from ambient_runner.runs import event_log  # noqa: PLC0415

    real_writev, calls = os.writev, []

    def full_once(fd: int, buffers: list[bytes]) -> int:
        calls.append(len(buffers))
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_writev(fd, buffers)

    monkeypatch.setattr(event_log.os, "writev", full_once)
    log = ThreadEventLog("t", tmp_path, MEMORY)
    for number in (1, 2):  # 13 events each; the first run's write fails
        run(log, number)
        await asyncio.sleep(0)
    assert "cannot write" in caplog.text and len(calls) == 2
    events = replay(log, 0)
    assert [seq for seq, _ in events] == list(range(log.last_seq - MEMORY + 1, log.last_seq + 1))  # memory kept them
    assert json.loads(events[-1][1])["type"] == "RUN_FINISHED" and log.is_terminal(log.last_seq)
    run(log, 3)
    await asyncio.sleep(0)
    assert [seq for seq, _ in replay(log, 0)] == list(range(14, 40))  # the spool went on from the run after it
    log.close()


async def test_more_lines_than_one_writev_takes_are_all_written_in_order(tmp_path: Path) -> None:
    from ambient_runner.runs import event_log  # noqa: PLC0415

    log = ThreadEventLog("t", tmp_path, 2)
    count = event_log.IOV_MAX * 2  # two buffers a line: four writev calls' worth, pending in one pass of the loop
    for i in range(count):
        log.append(json.dumps({"type": "TEXT_MESSAGE_CONTENT", "delta": str(i)}))
    assert [json.loads(line)["delta"] for _, line in replay(log, 0)] == [str(i) for i in range(count)]
    await asyncio.sleep(0)  # the write the appends scheduled finds nothing left
    assert [json.loads(line)["delta"] for line in spooled_lines(tmp_path)] == [str(i) for i in range(count)]
    log.close()
