"""``GET /mcp-status`` for the Gemini CLI: its stream-json output says nothing about MCP servers, so the status
comes from ``gemini mcp list``, run with the turn's home, environment and workspace. It connects to each server
and prints (to stderr) ``✓ name: ... - Connected`` / ``✗ name: ... - Disconnected``. Made in rounds, kept briefly:
a call waits at most ``WAIT_SECONDS`` (the listing connects to every server, an npx one may download first)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ambient_runner.mcp.config import McpConfig
from ambient_runner.mcp.rounds import WAIT_SECONDS, Found, StatusRounds
from ambient_runner.mcp.status import McpServerStatus, Status, configured
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import SupervisedProcess

log = logging.getLogger(__name__)
LIST_TIMEOUT = 60.0
CACHE_SECONDS = 15.0
SOURCE = "gemini mcp list"
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
    """``gemini mcp list``'s report, made in rounds (``mcp.rounds``): a call waits at most a few seconds, the
    servers ``pending`` until the listing has answered."""

    def __init__(self, wait: float = WAIT_SECONDS, keep: float = CACHE_SECONDS) -> None:
        self.rounds = StatusRounds(SOURCE, wait, keep)

    async def status(self, config: McpConfig, cli: str | None, cwd: Path, env: Mapping[str, str]
                     ) -> list[dict[str, Any]]:
        if cli is None:
            return configured(config)
        return await self.rounds.report(config, lambda found: self._listed(found, config, cli, cwd, env))

    async def _listed(self, found: Found, config: McpConfig, cli: str, cwd: Path, env: Mapping[str, str]) -> None:
        states = await self._list(cli, cwd, env)
        found.clear()  # a server the listing no longer names is as configured
        found.update({name: McpServerStatus(name=name, transport=server.transport, status=states[name],
                                            source=SOURCE)
                      for name, server in config.servers.items() if name in states})
        for name, server in config.servers.items():
            found.setdefault(name, McpServerStatus(name=name, transport=server.transport, status="configured"))

    async def close(self) -> None:
        await self.rounds.close()

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
