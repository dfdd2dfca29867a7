"""The per-thread event log behind the SSE ids and ``GET /events/{threadId}``.

Every event of a thread gets the next sequence number (1, 2, ...; across runs). The newest ``memory`` events
(at most ``MEMORY_CHARS`` characters of them: a long thread's snapshots are big) are kept in memory; every event
is also appended to a spool file, so a client that reconnects after a long absence still gets everything it
missed, in order, exactly once, while memory stays bounded (the spool keeps one 8-byte offset per event).
Followers wait on a change signal and read at their own pace: a slow client never slows the run, and a run never
waits for a client.

Appended lines wait in memory and go to the spool in one ``writev`` once they add up to ``WRITE_BYTES`` or the run
ends, in the event loop's next pass, after the followers the append woke: a run's end (its snapshot, the biggest
line, then its terminal event) reaches the client before its bytes are written to disk, and a flood of small events
costs one system call per ``WRITE_BYTES``. A reader of the spool writes what is pending first.

The spool is bounded (``spool_limit`` bytes): every run ends with a snapshot of the whole thread, so a long thread's
spool would grow with the square of its runs. When a run starts and the spool holds more than the limit, the spool
starts again empty: the events before that run (all but the newest ``memory`` ones) are no longer replayed, and a
client asking for them gets the events from the oldest one kept on (in order, exactly once; the next snapshot holds
the whole conversation again). The platform's backend keeps a thread's history the same way, by its snapshots.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from array import array
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path

MEMORY_CHARS = 1024 * 1024
WRITE_BYTES = 64 * 1024  # pending bytes that get written without waiting for the run's end
IOV_MAX = 1024  # buffers one writev takes (Linux)

log = logging.getLogger(__name__)


class ThreadEventLog:
    def __init__(self, thread_id: str, spool_dir: Path, memory: int, spool_limit: int | None = None) -> None:
        self.thread_id = thread_id
        self._recent: deque[tuple[int, str]] = deque()
        self._memory = memory
        self._recent_chars = 0
        self._terminal_seqs: set[int] = set()
        self.last_seq = 0
        self.live = False  # a run is in progress and has not written its terminal event yet
        self._changed = asyncio.Event()
        name = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        spool_dir.mkdir(parents=True, exist_ok=True)
        self._spool_path = spool_dir / f"{name}.jsonl"
        self._spool = open(self._spool_path, "w+b", buffering=0)  # noqa: SIM115 - lives as long as the log
        self._offsets = array("q")
        self._spool_end = 0  # the spool's size once what is pending is written
        self._pending: list[bytes] = []  # lines (and their newlines) appended since the last write
        self._pending_bytes = 0
        self._write_scheduled = False
        self._first_spooled = 1  # the seq of the spool's first event
        self._spool_limit = spool_limit

    # ----- writing ---------------------------------------------------------------------------------------
    def begin_run(self) -> None:
        self.live = True
        if self._spool_limit is not None and self._spool_end > self._spool_limit:
            self._restart_spool()

    def _restart_spool(self) -> None:
        """Drop the spooled events (the newest ``memory`` ones stay in memory); the spool goes on from here."""
        self._spool.close()
        self._spool = open(self._spool_path, "w+b", buffering=0)  # noqa: SIM115 - lives as long as the log
        self._offsets = array("q")
        self._spool_end = self._pending_bytes = 0
        self._pending.clear()
        self._first_spooled = self.last_seq + 1
        oldest = self._recent[0][0] if self._recent else self._first_spooled
        self._terminal_seqs = {seq for seq in self._terminal_seqs if seq >= oldest}

    def append(self, data: str, *, terminal: bool = False) -> int:
        self.last_seq += 1
        seq = self.last_seq
        line = data.encode("utf-8", "surrogatepass")
        self._offsets.append(self._spool_end)
        self._spool_end += len(line) + 1
        self._pending += (line, b"\n")
        self._pending_bytes += len(line) + 1
        self._recent.append((seq, data))
        self._recent_chars += len(data)
        while len(self._recent) > self._memory or (self._recent_chars > MEMORY_CHARS and len(self._recent) > 1):
            self._recent_chars -= len(self._recent.popleft()[1])
        if terminal:
            self._terminal_seqs.add(seq)
            self.live = False
        self._notify()
        if (terminal or self._pending_bytes >= WRITE_BYTES) and not self._write_scheduled:
            self._schedule_write()  # after the followers just woken
        return seq

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _schedule_write(self) -> None:
        """Write the pending lines in the event loop's next pass, after the followers woken now (at once outside a
        loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write_pending()
            return
        self._write_scheduled = True
        loop.call_soon(self._write_pending)

    def _write_pending(self) -> None:
        self._write_scheduled = False
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        if not pending or self._spool.closed:
            return
        try:
            _write_all(self._spool.fileno(), pending)
        except OSError as exc:  # a full disk: the events so far stay only as long as memory holds them
            log.error("thread event spool: cannot write (%s); replay starts again from the newest events", exc)
            self._restart_spool()

    def close(self) -> None:
        self._pending.clear()
        self._pending_bytes = 0
        self._spool.close()
        self._spool_path.unlink(missing_ok=True)

    # ----- reading ---------------------------------------------------------------------------------------
    def read_after(self, after: int, limit: int = 512) -> list[tuple[int, str]]:
        """Up to ``limit`` events with seq > ``after``, oldest first."""
        if after >= self.last_seq:
            return []
        first_recent = self._recent[0][0] if self._recent else self.last_seq + 1
        start = max(after + 1, min(self._first_spooled, first_recent))  # the oldest event still kept
        if start >= first_recent:
            index = start - first_recent
            return [self._recent[i] for i in range(index, min(index + limit, len(self._recent)))]
        if self._pending:  # written first (a full disk starts the spool again: what is kept is worked out again)
            self._write_pending()
            return self.read_after(after, limit)
        return self._read_spool(start, min(first_recent - 1, start + limit - 1))

    def _read_spool(self, first: int, last: int) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        with open(self._spool_path, "rb") as spool:
            spool.seek(self._offsets[first - self._first_spooled])
            for seq in range(first, last + 1):
                out.append((seq, spool.readline()[:-1].decode("utf-8", "surrogatepass")))
        return out

    def is_terminal(self, seq: int) -> bool:
        return seq in self._terminal_seqs

    async def follow(self, after: int, *, one_run: bool = False) -> AsyncIterator[list[tuple[int, str]]]:
        """Batches of events after ``after``: the backlog, then the live run until its terminal event.

        Ends at once when no run is live and the backlog is delivered. ``one_run``: ends after the first terminal
        event (a run's own stream: never the events of the thread's next run, which may follow at once).
        """
        cursor = after
        while True:
            changed = self._changed
            batch = self.read_after(cursor)
            if batch:
                if one_run:
                    end = next((i for i, (seq, _) in enumerate(batch) if seq in self._terminal_seqs), None)
                    if end is not None:
                        yield batch[:end + 1]
                        return
                cursor = batch[-1][0]
                yield batch
                continue
            if not self.live:
                return
            await changed.wait()


def _write_all(fd: int, buffers: list[bytes]) -> None:
    """``buffers`` to ``fd`` in order (``writev``, ``IOV_MAX`` at a time; a short write goes on from where it
    stopped)."""
    first = 0
    while first < len(buffers):
        written = os.writev(fd, buffers[first:first + IOV_MAX])
        while first < len(buffers) and written >= len(buffers[first]):
            written -= len(buffers[first])
            first += 1
        if written:  # part of a buffer: the rest of it next
            buffers[first] = buffers[first][written:]
