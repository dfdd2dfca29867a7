"""``GET /mcp-status`` as a client polls it: a report still being made shows its servers ``pending``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx


async def settled_mcp_status(client: httpx.AsyncClient, within: float = 90.0) -> list[dict[str, Any]]:
    """The servers once none is ``pending`` (or ``within`` s have passed)."""
    deadline = time.monotonic() + within
    while True:
        servers: list[dict[str, Any]] = (await client.get("/mcp-status")).json()["servers"]
        if not any(server["status"] == "pending" for server in servers) or time.monotonic() > deadline:
            return servers
        await asyncio.sleep(0.2)
