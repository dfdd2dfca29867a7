"""A thread's event spool stays bounded over a long thread (every run ends with a snapshot of the whole thread, so
unbounded it would grow with the square of the runs), and replay stays in order, without gaps or repeats, from the
oldest event still kept."""

from __future__ import annotations

import json
from pathlib import Path

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
