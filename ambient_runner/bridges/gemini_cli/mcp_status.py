"""``GET /mcp-status`` for the Gemini CLI: its stream-json output says nothing about MCP servers, so the status
comes from ``gemini mcp list``, run with the turn's home, environment and workspace. It connects to each server
and prints (to stderr) ``✓ name: ... - Connected`` / ``✗ name: ... - Disconnected``. Cached briefly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.status import McpServerStatus, Status, configured
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import SupervisedProcess

log = logging.getLogger(__name__)
LIST_TIMEOUT = 60.0
CACHE_SECONDS = 15.0
LINE = re.compile(r"^\W*\s*(?P<name>[A-Za-z0-9_-]+)(?: \(from [^)]*\))?: .* - (?P<state>[A-Za-z ]+)\s*$")
STATES: dict[str, Status] = {"connected": "connected", "disconnected": "failed", "connecting": "pending",
                             "disabled": "disabled"}


def parse_mcp_list(text: str) -> dict[str, Status]:
    """``{server: connected|failed|pending|disabled}`` from ``gemini mcp list`` output."""
    found: dict[str, Status] = {}
    for line in text.splitlines():
        match = LINE.match(line.strip())
        if match:
            state = match.group("state").strip().lower()
            found[match.group("name")] = STATES.get(state.split()[0] if state else "", "configured")
    return found


class GeminiMcpStatus:
    def __init__(self) -> None:
        self._cached: tuple[float, list[dict[str, Any]]] | None = None
        self._lock = asyncio.Lock()

    async def status(self, config: McpConfig, cli: str | None, cwd: Path, env: Mapping[str, str]
                     ) -> list[dict[str, Any]]:
        if not config or cli is None:
            return configured(config)
        async with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < CACHE_SECONDS:
                return self._cached[1]
            states = await self._list(cli, cwd, env)
            reported = {name: McpServerStatus(name=name, transport=server.transport, status=states[name],
                                              source="gemini mcp list")
                        for name, server in config.servers.items() if name in states}
            result = configured(config, reported)
            self._cached = (time.monotonic(), result)
            return result

    def forget(self) -> None:
        self._cached = None

    @staticmethod
    async def _list(cli: str, cwd: Path, env: Mapping[str, str]) -> dict[str, Status]:
        stderr = StderrTail(max_lines=500)
        process = await SupervisedProcess.start([cli, "mcp", "list"], cwd=cwd, env=env, stderr_tail=stderr)
        lines: list[str] = []
        try:
            async with asyncio.timeout(LIST_TIMEOUT):
                async for line in process.lines():
                    lines.append(line.text)
                await process.wait()
        except TimeoutError:
            log.warning("gemini mcp list did not answer within %.0fs", LIST_TIMEOUT)
        finally:
            with contextlib.suppress(Exception):
                await process.stop(signal.SIGTERM)
        return parse_mcp_list("\n".join([*lines, stderr.text()]))
