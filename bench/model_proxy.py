"""The model proxy's cost: time to first byte and to the end of a streamed model response, the same request
straight to the scripted model server and through ``ModelProxy``, interleaved (order alternating) so both see the
same machine; and the throughput of a long stream both ways."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from common import summary

from ambient_runner.model_proxy import GEMINI, ModelProxy, Upstream
from ambient_runner.scripted_models.gemini import ScriptedGeminiServer

PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
KEY = "bench-real-key"


async def _one(client: httpx.AsyncClient, base: str, key: str, prompt: str) -> tuple[float, float, int]:
    body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
    started = time.perf_counter()
    first = 0.0
    size = 0
    async with client.stream("POST", f"{base}{PATH}", params={"alt": "sse"}, json=body,
                             headers={"x-goog-api-key": key}) as response:
        async for chunk in response.aiter_raw():
            if not first:
                first = time.perf_counter() - started
            size += len(chunk)
    return first, time.perf_counter() - started, size


async def _measure(requests: int, stream_runs: int) -> dict[str, Any]:
    server = ScriptedGeminiServer().start()
    server.slow_delay, server.slow_chunks = 0.0, 5000
    proxy = await ModelProxy(Upstream(GEMINI, server.base_url, {"x-goog-api-key": KEY})).start()
    sides = {"direct": (server.base_url, KEY), "proxy": (proxy.base_url, proxy.placeholder)}
    ttfb: dict[str, list[float]] = {"direct": [], "proxy": []}
    done: dict[str, list[float]] = {"direct": [], "proxy": []}
    rate: dict[str, list[float]] = {"direct": [], "proxy": []}
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            for base, key in sides.values():  # warm both paths (connections, first-call costs)
                await _one(client, base, key, "NOTOOL warm")
            for i in range(requests):
                for name in (("direct", "proxy") if i % 2 == 0 else ("proxy", "direct")):
                    first, total, _ = await _one(client, *sides[name], "NOTOOL hello")
                    ttfb[name].append(first * 1000)
                    done[name].append(total * 1000)
            for i in range(stream_runs):
                for name in (("direct", "proxy") if i % 2 == 0 else ("proxy", "direct")):
                    _, total, size = await _one(client, *sides[name], "SLOW a long answer")
                    rate[name].append(size / total / 1e6)
    finally:
        await proxy.stop()
        server.stop()
    return {"ttfb_ms": {k: summary(v) for k, v in ttfb.items()},
            "response_ms": {k: summary(v) for k, v in done.items()},
            "stream_mb_s": {k: summary(v) for k, v in rate.items()},
            "stream_chunks": server.slow_chunks}


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"requests": 5, "stream_runs": 1}


def measure(requests: int = 300, stream_runs: int = 10) -> dict[str, Any]:
    return asyncio.run(_measure(requests, stream_runs))


if __name__ == "__main__":
    import json

    from common import smoke

    print(json.dumps(measure(**SMOKE) if smoke() else measure(), indent=1))
