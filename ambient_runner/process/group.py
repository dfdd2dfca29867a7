"""The one owner that ends a process group (docs/contracts.md section 5), whoever spawned its leader.

``ProcessGroup(pgid, leader)`` is used by the supervisor (a CLI it started itself), by the Codex app-server and
the Claude session (whose SDKs spawn the CLI, which ``setsid`` makes lead its own group: the group id is its pid)
and by the Codex command cleanup (groups of the app-server's commands: no leader of ours).

* ``signal(sig)``: to every member; never to the runner's own group.
* ``await stop(polite, grace)``: ``polite``, then at most ``grace`` s for the leader (without one: the whole
  group) to exit, then ``kill_and_reap()``.
* ``await kill_and_reap()``: SIGKILL to the group (grandchildren may outlive a leader that exited politely), at
  most ``reap_timeout`` s for the leader to be reaped by its owner, then the members that were re-parented to us
  reaped (the runner is a child subreaper, or PID 1 in a pod), until the group is gone or ``reap_timeout``.

Every step is bounded, and both are shielded from cancellation: a cancelled caller still leaves no process and
no zombie behind, and gets its ``CancelledError`` once the cleanup is done. A second call waits for the first
ending (a ``kill_and_reap()`` during a ``stop()``'s grace sends SIGKILL at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal as signals
import subprocess
from typing import Any, Protocol, TypeVar

from ambient_runner.process.proc_stat import processes

log = logging.getLogger(__name__)
T = TypeVar("T")
POLL_FIRST, POLL_MAX = 0.005, 0.1  # s between two looks at a dying group: doubling from the first to the most


class Leader(Protocol):
    """What the group needs of its leader's owner: ``asyncio.subprocess.Process`` and anyio's ``Process`` fit;
    ``PopenLeader`` adapts a ``subprocess.Popen``."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


class PopenLeader:
    """A ``subprocess.Popen`` (the Codex SDK's app-server) as a ``Leader``, waited without blocking the loop."""

    def __init__(self, popen: subprocess.Popen[Any]) -> None:
        self._popen = popen

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        delay = POLL_FIRST
        while (code := self._popen.poll()) is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)
        return code


async def finish_shielded(task: asyncio.Future[T], bound: float) -> T:
    """Await ``task`` shielded: when the caller is cancelled, ``task`` still runs (up to ``bound`` s more) before
    the cancellation goes on."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout=bound)
        raise


class ProcessGroup:
    def __init__(self, pgid: int, leader: Leader | None = None, *, reap_timeout: float = 5.0) -> None:
        self.pgid = pgid
        self.leader = leader
        self.reap_timeout = reap_timeout
        self._ending: asyncio.Future[int | None] | None = None
        self._grace = 0.0

    @property
    def ours(self) -> bool:
        """False for the runner's own group (a CLI started without ``setsid``): never signalled nor reaped."""
        return self.pgid > 1 and self.pgid != os.getpgrp()

    def signal(self, sig: int) -> bool:
        """Send ``sig`` to every member of the group. False if the group is gone (or not a group of its own)."""
        if not self.ours:
            return False
        try:
            os.killpg(self.pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def exists(self) -> bool:
        """Whether any member (a zombie included) is left."""
        return self.signal(0)

    @property
    def returncode(self) -> int | None:
        return self.leader.returncode if self.leader is not None else None

    async def stop(self, polite: int = signals.SIGTERM, grace: float = 3.0) -> int | None:
        """End the whole group politely, then by force; the leader's exit code (``None`` without a leader)."""
        if self._ending is None:
            self._grace = grace
            self._ending = asyncio.ensure_future(self._stop(polite, grace))
        return await finish_shielded(self._ending, self._grace + 2 * self.reap_timeout + 1)

    async def kill_and_reap(self) -> int | None:
        """SIGKILL to the group, the leader waited for, the group's re-parented members reaped."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._kill_and_reap())
        else:
            self.signal(signals.SIGKILL)  # cut a polite stop's grace short
        return await finish_shielded(self._ending, self._grace + 2 * self.reap_timeout + 1)

    async def _stop(self, polite: int, grace: float) -> int | None:
        if self._running() and self._send(polite):
            try:
                await asyncio.wait_for(self._gone(), timeout=grace)
            except TimeoutError:
                log.warning("process group %s ignored signal %s for %.1fs; killing it", self.pgid, polite, grace)
        return await self._kill_and_reap()

    async def _kill_and_reap(self) -> int | None:
        self._send(signals.SIGKILL)
        if self.leader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.leader.wait(), timeout=self.reap_timeout)
            if self.leader.returncode is None:
                log.warning("process group %s: its leader was not reaped %.1fs after SIGKILL", self.pgid,
                            self.reap_timeout)
                return None  # reaping the group now could take the leader's exit status from its owner
        await self._reap()
        return self.returncode

    def _send(self, sig: int) -> bool:
        """``sig`` to the group; to a leader that leads no group (started without ``setsid``), to it alone (its pid
        is still its own while its owner has not reaped it)."""
        if self.signal(sig):
            return True
        if self.leader is None or self.leader.returncode is not None:
            return False
        try:
            os.kill(self.leader.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _running(self) -> bool:
        return self.leader.returncode is None if self.leader is not None else self.exists()

    async def _gone(self) -> None:
        """Until the leader exits (without a leader: until no member of the group is alive)."""
        if self.leader is not None:
            await self.leader.wait()
            return
        delay = POLL_FIRST
        while self.exists() and has_live_member(self.pgid):
            self._collect()
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)

    async def _reap(self) -> None:
        """Reap the members that are (or become) our children, until the group is gone (or holds only zombies of
        other parents) or ``reap_timeout``."""
        if not self.ours:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reap_timeout
        delay = POLL_FIRST
        while True:
            children_left = self._collect()
            if not self.exists() or not (children_left or has_live_member(self.pgid)):
                return
            if loop.time() > deadline:
                log.warning("process group %s still has members after SIGKILL", self.pgid)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)

    def _collect(self) -> bool:
        """Reap our exited children in the group; whether children of ours are left in it (still dying).

        waitid(P_PGID) takes only our own children in the group; the runner's other children lead groups of their
        own, and the leader was reaped by its owner first, so no exit status an owner waits for is taken."""
        try:
            while os.waitid(os.P_PGID, self.pgid, os.WEXITED | os.WNOHANG) is not None:
                pass
            return True
        except ChildProcessError:
            return False


def has_live_member(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is alive (not a zombie), from /proc."""
    return any(stat.pgid == pgid and not stat.zombie for stat in processes())
