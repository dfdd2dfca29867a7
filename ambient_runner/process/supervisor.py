"""Process supervision shared by the CLI bridges (docs/contracts.md section 5).

``SupervisedProcess`` starts a CLI in its own process group (its own session), with stdin closed or fed once
and then closed, reads stdout through the bounded line reader, keeps a stderr tail, and ends the *whole group*
on ``stop()`` through its ``ProcessGroup`` (a polite signal, a bounded wait, then SIGKILL to the group, the leader
and the group's orphans reaped); then its stdin feeder is cancelled and its stderr drained, a last line without
a newline kept. ``stop()`` is shielded from cancellation, so a cancelled run still cleans up. A CLI that cannot
be started raises ``ProcessStartError``. Idle and wall-clock timeouts are enforced by the core around every
bridge (``ambient_runner.runs``), so they fire even when the CLI prints nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.process.descendants import tagged
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.group import ProcessGroup, finish_shielded
from ambient_runner.process.line_reader import CHUNK_BYTES, LineSplitter, OutputLine, read_lines
from ambient_runner.process.stderr_tail import StderrTail

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ProcessLimits:
    max_line_bytes: int = 8 * 1024 * 1024
    stderr_line_bytes: int = 64 * 1024
    kill_grace: float = 3.0  # seconds between the polite signal and SIGKILL
    reap_timeout: float = 5.0
    stderr_settle: float = 0.5  # s the stderr reader gets, once the group is gone, to read what is left


class SupervisedProcess:
    """A running CLI process group. Use ``async with await SupervisedProcess.start(...) as proc``."""

    def __init__(self, proc: asyncio.subprocess.Process, argv0: str, stderr_tail: StderrTail,
                 limits: ProcessLimits, tag: str | None = None) -> None:
        self._proc = proc
        self._argv0 = argv0
        self._limits = limits
        self.stderr_tail = stderr_tail
        self.pgid = proc.pid  # start_new_session: the leader's pid is the group id
        self.group = ProcessGroup(self.pgid, proc, reap_timeout=limits.reap_timeout)
        self._stderr_task = asyncio.create_task(self._drain_stderr(), name=f"stderr-{proc.pid}")
        self._feed_stdin_task: asyncio.Task[None] | None = None
        self._ending: asyncio.Future[int | None] | None = None
        self.tag = tag  # its PROCESS_TAG (``descendants.GroupTracker`` finds its orphans by it)

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        stdin_data: bytes | None = None,
        stdin_pipe: bool = False,
        stderr_tail: StderrTail | None = None,
        limits: ProcessLimits | None = None,
    ) -> SupervisedProcess:
        """Start ``argv``; ``stdin_data`` (if given) is written to stdin, which is then closed. ``stdin_pipe``:
        stdin stays open for ``send`` (a peer that speaks a protocol on stdio)."""
        limits = limits or ProcessLimits()
        env, tag = tagged(env)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=os.fspath(cwd),
                env=env,
                stdin=asyncio.subprocess.PIPE if stdin_data is not None or stdin_pipe else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=limits.stderr_line_bytes,
            )
        except FileNotFoundError as exc:
            raise ProcessStartError(
                f"The agent CLI '{argv[0]}' was not found. Install it (make install) or set its path.",
                code=ErrorCode.CLI_NOT_FOUND,
            ) from exc
        except PermissionError as exc:
            raise ProcessStartError(f"The agent CLI '{argv[0]}' is not executable: {exc}",
                                    code=ErrorCode.CLI_NOT_FOUND) from exc
        supervised = cls(proc, str(argv[0]), stderr_tail if stderr_tail is not None else StderrTail(), limits, tag)
        if stdin_data is not None:
            supervised._feed_stdin_task = asyncio.create_task(supervised._feed_stdin(stdin_data),
                                                              name=f"stdin-{proc.pid}")
        return supervised

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    def enlarge_stdout_pipe(self, size: int = 1024 * 1024) -> int:
        """Ask the kernel for a larger stdout pipe (F_SETPIPE_SZ, capped by /proc/sys/fs/pipe-max-size).

        For CLIs that call ``process.exit()`` with output still queued (Node): the more the pipe holds, the
        less they can lose when the reader is briefly slower. Returns the pipe's size (0 if unknown)."""
        transport = getattr(self._proc, "_transport", None)
        pipe = transport.get_pipe_transport(1) if transport is not None else None
        fileobj = pipe.get_extra_info("pipe") if pipe is not None else None
        if fileobj is None:
            return 0
        setpipe, getpipe = getattr(fcntl, "F_SETPIPE_SZ", 1031), getattr(fcntl, "F_GETPIPE_SZ", 1032)
        try:
            with open("/proc/sys/fs/pipe-max-size") as limit:
                size = min(size, int(limit.read()))
        except (OSError, ValueError):
            pass
        try:
            fcntl.fcntl(fileobj.fileno(), setpipe, size)
        except (OSError, ValueError):  # ValueError: the pipe is already closed (the process died at once)
            pass
        try:
            return int(fcntl.fcntl(fileobj.fileno(), getpipe))
        except (OSError, ValueError):
            return 0

    async def send(self, data: bytes) -> None:
        """Write to the open stdin (``stdin_pipe``) and wait until the pipe took it; ``BrokenPipeError`` /
        ``ConnectionResetError`` when the process is gone."""
        self.write(data)
        await self.drain()

    def write(self, data: bytes) -> None:
        """Hand ``data`` to the open stdin now, without waiting (what the pipe does not take at once stays buffered
        until ``drain``): the process gets it before the caller's next await."""
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing():
            raise BrokenPipeError("the process's stdin is closed")
        stdin.write(data)

    async def drain(self) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            raise BrokenPipeError("the process's stdin is closed")
        await stdin.drain()

    async def _feed_stdin(self, data: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                stdin.write(data)
                await stdin.drain()
        finally:  # also when ``stop()`` cancels a feed the CLI never read
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                stdin.close()

    async def _drain_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        splitter = LineSplitter(self._limits.stderr_line_bytes)
        try:
            while chunk := await stderr.read(CHUNK_BYTES):
                for line in splitter.feed(chunk):
                    self.stderr_tail.add(line.text)
        except Exception:  # noqa: BLE001 - a broken pipe ends the tail, never the run
            pass
        finally:  # at EOF, and when cancelled: a last line without a newline is kept too
            if (last := splitter.flush()) is not None:
                self.stderr_tail.add(last.text)

    async def lines(self) -> AsyncGenerator[OutputLine]:
        """stdout, line by line, until EOF."""
        assert self._proc.stdout is not None
        async for line in read_lines(self._proc.stdout, self._limits.max_line_bytes):
            yield line

    async def wait(self) -> int:
        """Wait for the leader to exit and for its stderr to be drained; returns the exit code."""
        code = await self._proc.wait()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout=1.0)
        return code

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to every process of the group. False if the group is gone."""
        return self.group.signal(sig)

    async def stop(self, polite: int = signal.SIGTERM, grace: float | None = None) -> int | None:
        """End the whole group: ``polite`` signal, wait up to ``grace`` s, then SIGKILL; reap; then the stdin
        feeder cancelled and stderr drained. Idempotent: a second call waits for the first one's end."""
        grace = self._limits.kill_grace if grace is None else grace
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._stop(polite, grace))
        bound = grace + 2 * self._limits.reap_timeout + self._limits.stderr_settle + 1
        return await finish_shielded(self._ending, bound)

    async def _stop(self, polite: int, grace: float) -> int | None:
        await self.group.stop(polite, grace)  # a leader that exited by itself: SIGKILL at once (grandchildren)
        await _cancel(self._feed_stdin_task)
        # Once the group is gone the pipe ends (EOF) unless a process outside it holds it: a moment for the reader
        # to take what is left, then it is cancelled (and flushes a last line without a newline).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout=self._limits.stderr_settle)
        await _cancel(self._stderr_task)
        return self._proc.returncode

    async def __aenter__(self) -> SupervisedProcess:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None and not task.done():
        task.cancel()
    if task is not None:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def become_subreaper() -> bool:
    """Make orphaned descendants (a CLI's grandchildren) re-parent to this process, so they can be reaped."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False

