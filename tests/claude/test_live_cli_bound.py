"""A pod that serves many threads keeps at most ``RUNNER_MAX_LIVE_CLIS`` Claude Code processes: the least recently
used idle one is closed and its thread resumes its saved session on its next run; a thread waiting for a person is
never closed. The real CLI on its scripted model, loopback only."""

from __future__ import annotations

import json

import pytest
from pausing import ASK, WRITE, interrupts_of
from runners import cli_groups, descendants, scripted_runner

from ambient_runner.process import proc_stat

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]
BOUND = 4
THREADS = 20


def tree_rss_kib() -> int:
    """The resident memory of this process's whole tree (the runner in this test process, and every CLI)."""
    total = 0
    for pid in [*descendants(), None]:
        try:
            with open(f"/proc/{pid or 'self'}/status") as status:
                total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total


async def test_at_most_the_bound_of_clis_live_and_every_thread_continues(tmp_path, monkeypatch) -> None:
    async with scripted_runner("claude", tmp_path, monkeypatch, runner_max_live_clis=BOUND) as runner:
        before = tree_rss_kib()
        baseline = cli_groups()  # what earlier tests left re-parented to this process is not this runner's
        one_cli = 0
        for index in range(THREADS):
            events = await runner.harness.run(f"t{index}", f"NOTOOL first words of thread {index}")
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            live = cli_groups() - baseline
            assert len(live) <= BOUND, (index, live)
            if index == 0:
                one_cli = tree_rss_kib() - before
        assert len(runner.persistent_leaders()) == BOUND
        assert tree_rss_kib() - before <= BOUND * one_cli * 1.5, (tree_rss_kib() - before, one_cli)

        for index in range(THREADS):  # each thread continues its own conversation, resumed from its saved session
            start = len(runner.server.bodies())
            events = await runner.harness.run(f"t{index}", f"NOTOOL second words of thread {index}")
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            sent = json.dumps(runner.server.bodies()[start:])
            said = {other for other in range(THREADS)
                    if f"first words of thread {other}\"" in sent or f"first words of thread {other}\\" in sent}
            assert said == {index}, (index, said)  # its own first words, and no other thread's
            assert len(cli_groups() - baseline) <= BOUND


async def test_a_thread_waiting_for_a_person_keeps_its_cli(tmp_path, monkeypatch) -> None:
    async with scripted_runner("claude", tmp_path, monkeypatch, runner_max_live_clis=1) as runner:
        (interrupt,) = interrupts_of(await runner.harness.run("waiting", WRITE, ASK))
        waiting = runner.bridge._clients["waiting"].pid  # noqa: SLF001 - the test checks the process table
        assert waiting is not None and proc_stat.read_stat(waiting) is not None
        events = await runner.harness.run("other", "NOTOOL meanwhile")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        assert runner.bridge._clients["waiting"].pid == waiting  # noqa: SLF001 - not closed: over the bound
        assert proc_stat.read_stat(waiting) is not None
        events = await runner.harness.post({"threadId": "waiting", "messages": [], "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": False}]})
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
