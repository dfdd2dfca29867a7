"""Events that happen outside any run: what ``GET /events/{threadId}`` without a cursor carries.

The platform's backend keeps one such listener per session and stores every ``data:`` line it gets; it already
stored each run's events from the run's own ``POST``. So this stream never replays and never forwards a run's
events: only what happens between runs (a model switch, say), to every listener, in order. A listener whose
queue is full (a client that stopped reading) loses its oldest events, never the runner's time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

QUEUE_SIZE = 256


class BetweenRunEvents:
    def __init__(self, queue_size: int = QUEUE_SIZE) -> None:
        self._queue_size = queue_size
        self._listeners: set[asyncio.Queue[str | None]] = set()
        self.closed = False

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def publish(self, data: str) -> None:
        """Send one encoded event (its wire JSON) to every listener."""
        for queue in self._listeners:
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(data)

    async def follow(self) -> AsyncIterator[str]:
        """The events published from now on, until ``close()`` (the runner stops)."""
        if self.closed:
            return
        queue: asyncio.Queue[str | None] = asyncio.Queue(self._queue_size)
        self._listeners.add(queue)
        try:
            while (data := await queue.get()) is not None:
                yield data
        finally:
            self._listeners.discard(queue)

    def close(self) -> None:
        """End every listener's stream (shutdown): an open stream would hold the server's graceful stop."""
        self.closed = True
        for queue in self._listeners:
            while queue.full():
                queue.get_nowait()
            queue.put_nowait(None)
