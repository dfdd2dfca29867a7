"""A ``POST /run`` read in the background, for tests that send a second message while a run streams."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from harness import parse_sse

BOUND = 30.0  # s any condition below is waited for


def body(thread_id: str, run_id: str, prompt: str, **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"threadId": thread_id, "runId": run_id,
                           "messages": [{"id": f"msg-{run_id}", "role": "user", "content": prompt}]}
    if props:
        out["forwardedProps"] = props
    return out


class Stream:
    """One POST /run read in the background: its status, its (id, event) pairs as they come."""

    def __init__(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> None:
        self.pairs: list[tuple[int | None, dict[str, Any]]] = []
        self.status: int | None = None
        self.error: dict[str, Any] | None = None
        self._changed = asyncio.Event()
        self.task = asyncio.create_task(self._read(client, payload))

    async def _read(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> None:
        try:
            async with client.stream("POST", "/run", json=payload) as response:
                self.status = response.status_code
                if response.status_code != 200:
                    self.error = json.loads(await response.aread())
                    return
                async for pair in parse_sse(response.aiter_lines()):
                    self.pairs.append(pair)
                    self._changed.set()
        finally:
            self._changed.set()

    @property
    def events(self) -> list[dict[str, Any]]:
        return [event for _, event in self.pairs]

    async def until(self, predicate: Any) -> None:
        async with asyncio.timeout(BOUND):
            while not predicate(self.events):
                if self.task.done():
                    self.task.result()
                    assert predicate(self.events), f"the stream ended first: {[e['type'] for e in self.events]}"
                    return
                self._changed.clear()
                await self._changed.wait()

    async def done(self) -> list[dict[str, Any]]:
        async with asyncio.timeout(BOUND):
            await self.task
        return self.events


def deltas(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def saw(kind: str, **fields: Any):
    return lambda events: any(e["type"] == kind and all(e.get(k) == v for k, v in fields.items()) for e in events)


