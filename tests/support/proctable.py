"""The process table, read from /proc: which processes (zombies included) are in a process group."""

from __future__ import annotations

import os


def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process whose process group is ``pgid``; a zombie has state 'Z'."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            members.append((int(entry), fields[0]))
    return members


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
