"""The process table from /proc: one reader of ``/proc/<pid>/stat`` for the runner and its tests.

* ``parse_stat(text)`` -> ``ProcStat`` (pid, comm, state, ppid, pgid); the command name may hold spaces and
  parentheses, so it is read up to the *last* ``)``; ``ValueError`` for a text that is no stat line;
* ``read_stat(pid)`` -> the ``ProcStat`` of ``pid``, ``None`` when there is no such process (any more);
* ``processes()`` -> every process now (one that exits while the table is read is left out), zombies included;
* ``group_members(pgid)`` -> the processes of one process group; ``descendants(pid)`` -> ``pid``'s descendants.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProcStat:
    pid: int
    comm: str  # the command name (at most 15 bytes, any characters but NUL)
    state: str  # R running, S sleeping, D disk wait, Z zombie, T stopped, ...
    ppid: int
    pgid: int

    @property
    def zombie(self) -> bool:
        return self.state == "Z"


def parse_stat(text: str) -> ProcStat:
    """One ``/proc/<pid>/stat`` line: ``pid (comm) state ppid pgrp ...``."""
    head, closing, tail = text.rpartition(")")
    pid, opening, comm = head.partition(" (")
    fields = tail.split()
    if not (closing and opening) or len(fields) < 3:
        raise ValueError(f"not a /proc/<pid>/stat line: {text[:80]!r}")
    return ProcStat(int(pid), comm, fields[0], int(fields[1]), int(fields[2]))


def read_stat(pid: int | str) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return parse_stat(stat.read().decode(errors="replace"))
    except (OSError, ValueError):  # gone (or never there); a stat file the kernel did not write
        return None


def processes() -> Iterator[ProcStat]:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := read_stat(entry)) is not None:
            yield stat


def group_members(pgid: int) -> list[ProcStat]:
    """The processes (zombies included) whose process group is ``pgid``."""
    return [stat for stat in processes() if stat.pgid == pgid]


def descendants(pid: int, table: Iterable[ProcStat] | None = None) -> list[ProcStat]:
    """``pid``'s descendants in ``table`` (default: every process now), parents before their children."""
    children: dict[int, list[ProcStat]] = {}
    for stat in processes() if table is None else table:
        children.setdefault(stat.ppid, []).append(stat)
    found: list[ProcStat] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found
