"""The one /proc/<pid>/stat reader (``ambient_runner.process.proc_stat``): a command name with spaces and
parentheses, a pid that is gone, a zombie, and the process table of a real process tree."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from ambient_runner.process.proc_stat import (
    ProcStat,
    descendants,
    group_members,
    parse_stat,
    read_stat,
)

# a child that renames itself (its comm) to ``NAME``, starts a grandchild in a new session, and reports both
NAME = "a) b (c) S 9 9"
TREE = f"""
import subprocess, sys, time
open("/proc/self/comm", "w").write({NAME!r})
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
print(grandchild.pid, flush=True)
time.sleep(60)
"""


def test_parse_a_comm_with_spaces_and_parentheses() -> None:
    line = "4242 (a) b (c) S 9 9) Z 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 0 0\n"
    assert parse_stat(line) == ProcStat(pid=4242, comm="a) b (c) S 9 9", state="Z", ppid=17, pgid=4242)
    assert parse_stat(line).zombie


@pytest.mark.parametrize("text", ["", "4242", "4242 (sh)", "4242 (sh) S 1", "pid (sh) S 1 2 3"])
def test_a_text_that_is_no_stat_line_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_stat(text)


def test_a_pid_that_is_gone_has_no_stat() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid is free
    assert read_stat(child.pid) is None
    assert read_stat("self-not-a-pid") is None


def test_this_process() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None and stat.state == "R" and not stat.zombie
    assert (stat.pid, stat.ppid, stat.pgid) == (os.getpid(), os.getppid(), os.getpgrp())


def test_a_real_tree_with_a_renamed_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        stat = read_stat(child.pid)
        assert stat is not None and stat.state in "RS"  # asleep, or just about to be
        assert stat == ProcStat(pid=child.pid, comm=NAME, state=stat.state, ppid=os.getpid(), pgid=os.getpgrp())
        found = {s.pid: s for s in descendants(os.getpid())}
        assert found[child.pid].comm == NAME and found[grandchild].ppid == child.pid
        assert found[grandchild].pgid == grandchild  # its own session's group
        assert [s.pid for s in group_members(grandchild)] == [grandchild]
        os.kill(grandchild, 9)
    finally:
        child.kill()
        child.wait()
    with contextlib.suppress(ChildProcessError):  # re-parented to this process when it is a subreaper
        os.waitpid(grandchild, 0)
    assert read_stat(child.pid) is None


def test_a_zombie_is_in_the_table_until_it_is_reaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    stat = read_stat(child.pid)
    assert stat is not None and stat.zombie and stat.ppid == os.getpid()
    assert child.pid in {s.pid for s in descendants(os.getpid())}
    child.wait()
    assert read_stat(child.pid) is None
