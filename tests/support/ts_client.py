"""Runs through the official AG-UI TypeScript client (``@ag-ui/client`` 1.0.0 ``HttpAgent``, pinned in
``tests/ts_client/package-lock.json``, installed by ``make install``): what the client made of a stream (the events it
accepted, its messages and state after the run) or the error with which it refused the stream."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLIENT_DIR = Path(__file__).resolve().parent.parent / "ts_client"
SCRIPT = CLIENT_DIR / "run_agent.mjs"
TIMEOUT = 120.0


@dataclass
class ClientRun:
    ok: bool
    error: str | None
    events: list[str]
    messages: list[dict[str, Any]]
    state: Any


async def run_with_official_client(url: str, thread_id: str, messages: list[dict[str, Any]], *,
                                   state: Any = None, run_id: str | None = None,
                                   forwarded_props: dict[str, Any] | None = None,
                                   headers: dict[str, str] | None = None) -> ClientRun:
    config = {"url": url, "threadId": thread_id, "messages": messages, "state": state if state is not None else {},
              "runId": run_id, "forwardedProps": forwarded_props or {}, "headers": headers or {}}
    data = await _node(SCRIPT, config)
    return ClientRun(data["ok"], data["error"], data["events"], data["messages"], data["state"])


async def approve_with_official_client(url: str, thread_id: str, messages: list[dict[str, Any]], *,
                                       payload: Any, forwarded_props: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run, then (if it ended on interrupts) ``runAgent({resume})`` answering each with ``payload``:
    ``{ok, error, runs: [{events, pending}], messages}``."""
    config = {"url": url, "threadId": thread_id, "messages": messages, "forwardedProps": forwarded_props or {},
              "payload": payload}
    return await _node(CLIENT_DIR / "approve_flow.mjs", config)


async def _node(script: Path, config: dict[str, Any]) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "node is needed for the official client (the Gemini CLI needs it too)"
    assert (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir(), "run `make install` (tests/ts_client)"
    process = await asyncio.create_subprocess_exec(
        node, str(script), cwd=CLIENT_DIR, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(json.dumps(config).encode()), TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    return json.loads(stdout.decode().strip().splitlines()[-1])
