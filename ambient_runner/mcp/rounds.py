"""A status report that takes a while to make (a CLI's own listing, or the runner's probe of each server): made in
rounds, one at a time, each kept ``keep`` seconds. A caller waits at most ``wait`` seconds (the platform's backend
gives ``/mcp/status`` 10 s) and gets what the round has found so far, the other servers ``pending``; the round goes
on, so the next call has them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.status import McpServerStatus, configured

log = logging.getLogger(__name__)
WAIT_SECONDS = 8.0

Found = dict[str, McpServerStatus]  # server name -> its status, filled in as a round learns it


class StatusRounds:
    def __init__(self, source: str, wait: float = WAIT_SECONDS, keep: float = 60.0) -> None:
        self.source, self.wait, self.keep = source, wait, keep
        self.found: Found = {}
        self._round: asyncio.Task[None] | None = None
        self._ended_at = 0.0
        self._closed = False

    async def report(self, config: McpConfig, make: Callable[[Found], Awaitable[None]]) -> list[dict[str, object]]:
        """Every configured server's status (``configured``'s shape); ``make(found)``, a new round when the last
        one is older than ``keep``, fills ``found``. Once closed, the servers only as configured."""
        if not config or self._closed:
            return configured(config)
        last = self._round
        if last is None or last.done() and time.monotonic() - self._ended_at > self.keep:
            last = self._round = asyncio.create_task(self._made(make), name=f"mcp-status-{self.source}")
        try:
            await asyncio.wait_for(asyncio.shield(last), self.wait)
        except TimeoutError:
            pass
        except Exception as exc:  # noqa: BLE001 - the servers it did not reach stay as they were
            log.warning("the MCP status report (%s) failed: %s", self.source, type(exc).__name__)
        pending = {name: McpServerStatus(name=name, transport=server.transport, status="pending",
                                         detail="not known yet: the report is being made", source=self.source)
                   for name, server in config.servers.items()} if not last.done() else {}
        return configured(config, {**pending, **self.found})  # a round that failed: as configured

    async def _made(self, make: Callable[[Found], Awaitable[None]]) -> None:
        try:
            await make(self.found)
        finally:
            self._ended_at = time.monotonic()

    async def close(self) -> None:
        """The runner stops: a round under way ends, and none starts again."""
        self._closed = True
        if self._round is not None and not self._round.done():
            self._round.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._round
