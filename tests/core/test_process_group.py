"""The process-group owner (``ambient_runner.process.group``) on real processes: a polite stop that escalates to
SIGKILL, a stop cut short, cancellation, a group whose leader is not ours, and nothing left in the process table."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from proctable import group_members

from ambient_runner.process.group import ProcessGroup
from ambient_runner.process.supervisor import become_subreaper


def stubborn(leader_too: bool = True) -> str:
    """A process with a child in its group; the child ignores SIGTERM, and so does the process with ``leader_too``.
    Says "ready" once both do."""
    return textwrap.dedent(f"""
        import signal, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
                                  "time.sleep(600)"], stdout=subprocess.PIPE)
        child.stdout.readline()
        if {leader_too}:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(600)
    """)


STUBBORN = stubborn()
OBEDIENT = "import time; print('ready', flush=True); time.sleep(600)"


@pytest.fixture(autouse=True)
def subreaper() -> None:
    become_subreaper()  # as the runner is: orphans of a killed group are re-parented to this process


async def _start(code: str) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"ready\n"
    return proc


async def test_stop_escalates_to_sigkill_when_the_group_ignores_sigterm() -> None:
    proc = await _start(STUBBORN)
    group = ProcessGroup(proc.pid, proc)
    assert len(group_members(proc.pid)) == 2
    started = time.monotonic()
    code = await group.stop(signal.SIGTERM, grace=0.5)
    assert code == -signal.SIGKILL
    assert time.monotonic() - started >= 0.5  # the grace was given first
    assert group_members(proc.pid) == []  # the child too: killed, and reaped (no zombie)
    assert await group.stop() == -signal.SIGKILL  # idempotent


async def test_a_group_that_obeys_ends_with_the_polite_signal_at_once() -> None:
    proc = await _start(OBEDIENT)
    started = time.monotonic()
    assert await ProcessGroup(proc.pid, proc).stop(signal.SIGTERM, grace=30) == -signal.SIGTERM
    assert time.monotonic() - started < 10
    assert group_members(proc.pid) == []


async def test_kill_and_reap_cuts_a_polite_stop_short() -> None:
    proc = await _start(STUBBORN)
    group = ProcessGroup(proc.pid, proc)
    stopping = asyncio.create_task(group.stop(signal.SIGTERM, grace=60))
    await asyncio.sleep(0)  # the stop has begun
    started = time.monotonic()
    assert await group.kill_and_reap() == -signal.SIGKILL
    assert await stopping == -signal.SIGKILL
    assert time.monotonic() - started < 10  # not the 60 s grace
    assert group_members(proc.pid) == []


async def test_a_cancelled_stop_still_ends_and_reaps_the_group() -> None:
    proc = await _start(STUBBORN)
    stopping = asyncio.create_task(ProcessGroup(proc.pid, proc).stop(signal.SIGTERM, grace=0.3))
    await asyncio.sleep(0)  # the stop has begun
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert proc.returncode == -signal.SIGKILL  # the cleanup ran to its end before the cancellation went on
    assert group_members(proc.pid) == []


async def test_a_group_led_by_someone_elses_child_is_ended_and_its_orphans_reaped(tmp_path: Path) -> None:
    """As the Codex command cleanup: the group's leader is the app-server's child, not ours; the leader's child
    that outlives it (it ignores SIGTERM) is re-parented to us and must be reaped, not left a zombie."""
    command = tmp_path / "command.py"
    command.write_text(stubborn(leader_too=False))
    parent = await asyncio.create_subprocess_exec(sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        command = subprocess.Popen([sys.executable, {str(command)!r}], stdout=subprocess.PIPE,
                                   start_new_session=True)
        command.stdout.readline()
        print(command.pid, flush=True)
        command.wait()
        time.sleep(600)
    """), stdout=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        assert parent.stdout is not None
        pgid = int(await asyncio.wait_for(parent.stdout.readline(), 30))
        assert len(group_members(pgid)) == 2
        started = time.monotonic()
        assert await ProcessGroup(pgid).stop(signal.SIGTERM, grace=0.5) is None  # no leader of ours
        assert time.monotonic() - started >= 0.5  # the orphan ignored SIGTERM for the whole grace
        assert group_members(pgid) == []
    finally:
        await ProcessGroup(parent.pid, parent).kill_and_reap()


async def test_the_runners_own_group_is_never_signalled() -> None:
    group = ProcessGroup(os.getpgrp())
    assert not group.signal(0) and not group.exists()
    assert ProcessGroup(0).signal(0) is False  # killpg(0) would be the caller's group
