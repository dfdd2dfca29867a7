"""The process table as the tests read it (``ambient_runner.process.proc_stat``): which processes, zombies
included, are in a process group."""

from __future__ import annotations

from ambient_runner.process import proc_stat


def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process whose process group is ``pgid``; a zombie has state 'Z'."""
    return [(stat.pid, stat.state) for stat in proc_stat.group_members(pgid)]


def pid_alive(pid: int) -> bool:
    stat = proc_stat.read_stat(pid)
    return stat is not None and not stat.zombie
