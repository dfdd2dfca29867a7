"""Process groups a CLI's descendants moved into, so they can be ended with the CLI.

Some CLIs start their tools in a new process group (the Gemini CLI spawns shell commands ``detached``, i.e. in a
new session), so ending the CLI's own group does not reach them, and when the CLI itself is killed (OOM killer,
SIGKILL) nobody else would. ``GroupTracker`` notes, while the CLI runs, every process group its descendants are in
(read from /proc every ``interval`` s); ``kill()`` ends those groups and reaps what was re-parented to us. A tool
younger than a scan is found at ``kill()`` all the same when the CLI was started with a tag (``PROCESS_TAG`` in its
environment, which its descendants inherit): once the CLI is gone, its orphans are the runner's children (the runner
is a subreaper, or PID 1 in a pod), and those holding the tag are its.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import Iterable, Mapping

from ambient_runner.process.proc_stat import descendants, processes, read_stat

REAP_AFTER_STOP = 30.0  # s a tool may take to exit after its turn ended and still be reaped
ORPHAN_ROUNDS = 3  # rounds of a kill(): a tagged grandchild is re-parented to us only once its parent is gone
PROCESS_TAG = "AMBIENT_RUNNER_PROCESS_TAG"  # in the environment of each process the runner supervises: its own value
_reapers: set[asyncio.Task[None]] = set()


def descendant_groups(pid: int) -> set[int]:
    """Process groups of ``pid``'s live descendants, other than ``pid``'s own group. Read from the kernel's child
    lists (``/proc/<pid>/task/<tid>/children``: the descendants only, not every process on the machine, which is
    what a poll every 0.25 s and a scan before each Codex turn cost most on a busy node); from the whole process
    table where the kernel has no child lists."""
    tree = _tree(pid)
    if tree is None:
        live = [stat for stat in processes() if not stat.zombie]
        own = next((stat.pgid for stat in live if stat.pid == pid), pid)
        return {stat.pgid for stat in descendants(pid, live)} - {own}
    leader = read_stat(pid)
    own = leader.pgid if leader is not None else pid
    return {stat.pgid for child in tree if (stat := read_stat(child)) is not None and not stat.zombie} - {own}


def _tree(pid: int) -> list[int] | None:
    """``pid``'s descendants from the kernel's child lists; None when the kernel keeps none."""
    found: list[int] = []
    pending = [pid]
    while pending:
        children = _child_list(pending.pop())
        if children is None:
            return None
        found += children
        pending += children
    return found


def _child_list(parent: int) -> list[int] | None:
    """``parent``'s children (every thread's) from the kernel's child lists (none once it is gone); None when the
    kernel keeps none."""
    children: list[int] = []
    try:
        threads = os.listdir(f"/proc/{parent}/task")
    except OSError:  # gone meanwhile
        return children
    for thread in threads:
        try:
            with open(f"/proc/{parent}/task/{thread}/children", "rb") as listed:
                children += [int(child) for child in listed.read().split()]
        except FileNotFoundError:
            if os.path.exists(f"/proc/{parent}/task/{thread}/stat"):
                return None  # the thread is there without a child list: the kernel keeps none
        except OSError:  # the thread ended
            continue
    return children


def tagged(env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """``env`` with a new ``PROCESS_TAG`` (for a process about to start), and the tag."""
    tag = secrets.token_hex(8)
    return {**env, PROCESS_TAG: tag}, tag


def tagged_orphan_groups(tag: str) -> set[int]:
    """Process groups of this process's children whose environment holds ``PROCESS_TAG=tag``: the descendants of
    the process started with that tag that were re-parented to us when it died (and it, while it lives). Never the
    runner's own group (a CLI started without a group of its own leaves its orphans in it)."""
    marker = f"\0{PROCESS_TAG}={tag}\0".encode()
    groups: set[int] = set()
    for child in _children(os.getpid()):
        try:
            with open(f"/proc/{child}/environ", "rb") as environ:
                held = marker in b"\0" + environ.read()
        except OSError:  # gone meanwhile, or a zombie (its environment is gone with it)
            continue
        if held and (stat := read_stat(child)) is not None:
            groups.add(stat.pgid)
    return {pgid for pgid in groups if _killable(pgid)}


def _killable(pgid: int) -> bool:
    """A group the runner may end: not its own, nor init's."""
    return pgid > 1 and pgid != os.getpgrp()


def _children(pid: int) -> list[int]:
    """``pid``'s children, from the kernel's child lists, else from the whole process table."""
    listed = _child_list(pid)
    return listed if listed is not None else [stat.pid for stat in processes() if stat.ppid == pid]


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)  # succeeds while any member, a zombie included, exists
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _collect(pgid: int, within: float) -> None:
    """Reap the members of ``pgid`` that are (or become) our children, until the group is gone or ``within``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG) is not None:  # noqa: ASYNC222 - WNOHANG
                pass
        if not group_exists(pgid) or loop.time() > deadline:
            return
        await asyncio.sleep(0.1)


def reap_in_background(groups: set[int], within: float = REAP_AFTER_STOP) -> None:
    """Reap, in the background, the members of ``groups`` that were (or will be) re-parented to us."""
    if not groups:
        return
    task = asyncio.create_task(_reap_groups(set(groups), within))
    _reapers.add(task)
    task.add_done_callback(_reapers.discard)


async def _reap_groups(groups: set[int], within: float) -> None:
    # waitid(P_PGID) collects only our own children in these groups: the tools' groups never hold a process
    # the runner started itself (those lead their own groups), so no other exit status is taken.
    await asyncio.gather(*(_collect(pgid, within) for pgid in groups), return_exceptions=True)


class GroupTracker:
    """Remembers the process groups of ``pid``'s descendants while it runs; ``kill()`` ends them. The first scan
    starts at once, or ``first_after`` s later (``first_scan()``: the groups it found); ``known``: groups seen
    before (an earlier turn's, still there), tracked from the start; ``tag``: the ``PROCESS_TAG`` ``pid`` was
    started with (``kill()`` then ends its tagged orphans too)."""

    def __init__(self, pid: int, interval: float = 0.25, *, first_after: float = 0.0,
                 known: Iterable[int] = (), tag: str | None = None) -> None:
        self.pid = pid
        self.tag = tag
        self.interval = interval
        self.first_after = first_after
        self.groups: set[int] = set(known)
        self._task: asyncio.Task[None] | None = None
        self._first: asyncio.Future[set[int] | None] | None = None

    def start(self) -> GroupTracker:
        self._first = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._poll(), name=f"groups-of-{self.pid}")
        return self

    async def first_scan(self) -> set[int] | None:
        """The groups the first scan found; None when tracking stopped before it ended (or never started)."""
        return await asyncio.shield(self._first) if self._first is not None else None

    def scan(self) -> None:
        """Note the groups now (e.g. just before an interrupt makes the CLI end its tools)."""
        self.groups |= descendant_groups(self.pid)

    async def _poll(self) -> None:
        try:
            if self.first_after > 0:
                await asyncio.sleep(self.first_after)
            while True:
                found = await asyncio.to_thread(descendant_groups, self.pid)
                self.groups |= found
                self._settle_first(found)
                await asyncio.sleep(self.interval)
        finally:
            self._settle_first(None)  # stopped, or failed, before a first scan ended

    def _settle_first(self, groups: set[int] | None) -> None:
        if self._first is not None and not self._first.done():
            self._first.set_result(groups)

    def live_groups(self) -> set[int]:
        """The groups seen that still exist."""
        return {pgid for pgid in self.groups if group_exists(pgid)}

    async def stop(self) -> None:
        """Stop watching (the groups seen are kept). Tools that exit later and were re-parented to us are reaped
        in the background, so they do not stay zombies (the runner is a subreaper, or PID 1 in a pod)."""
        await self._stop_polling()
        reap_in_background(self.groups)

    async def _stop_polling(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._settle_first(None)  # a task cancelled before its first step never ran its ``finally``

    async def kill(self) -> None:
        """SIGKILL every group seen, and those of the CLI's tagged orphans (call once the CLI itself is stopped),
        and reap our re-parented orphans. A tagged process below a killed one (in a group of its own) is re-parented
        to us once its parent is gone: found in the next round (``ORPHAN_ROUNDS`` at most)."""
        await self._stop_polling()
        ending = set(self.groups)
        for _ in range(ORPHAN_ROUNDS):
            if self.tag is not None:
                ending |= tagged_orphan_groups(self.tag) - self.groups
            if not ending:
                return
            self.groups |= ending
            for pgid in filter(_killable, ending):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            await _reap_groups(ending, 2.0)
            ending = set()
