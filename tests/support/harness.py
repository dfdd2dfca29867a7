"""Run the real service in-process (uvicorn on 127.0.0.1, random port) and talk to it over real HTTP/SSE.

``check_stream`` is applied to every stream a test reads: ag-ui-validate (no warnings allowed) plus the project's
own check of docs/contracts.md section 3.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from ag_ui_validate.pytest_plugin import assert_valid_agui
from prometheus_client.parser import text_string_to_metric_families

from ambient_runner.app import create_app
from ambient_runner.bridges.contract import Bridge
from ambient_runner.settings import RunnerSettings
from ambient_runner.state.extension import state_extensions

TERMINAL = {"RUN_FINISHED", "RUN_ERROR"}
OPENERS = {"TEXT_MESSAGE_START": "TEXT_MESSAGE_END", "TOOL_CALL_START": "TOOL_CALL_END",
           "REASONING_START": "REASONING_END", "REASONING_MESSAGE_START": "REASONING_MESSAGE_END",
           "SUBAGENT_STARTED": "SUBAGENT_FINISHED"}
CLOSERS = {v: k for k, v in OPENERS.items()} | {"SUBAGENT_ERROR": "SUBAGENT_STARTED"}
DELTAS = {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "REASONING_MESSAGE_CONTENT"}


def _block_key(event: dict[str, Any]) -> str:
    if event["type"].startswith("SUBAGENT_"):
        return event["subagentRunId"]
    return event.get("toolCallId") or event.get("messageId") or ""


def check_stream(events: list[dict[str, Any]], *, thread_ids: set[str] | None = None,
                 secrets: Iterable[str] = ()) -> None:
    """docs/contracts.md section 3 on one run's decoded events; raises AssertionError naming the problem."""
    assert events, "empty stream"
    assert_valid_agui(events, max_warnings=0, severity_overrides={"AGUI902": "off", "AGUI901": "off"})
    types = [e["type"] for e in events]
    assert types[0] == "RUN_STARTED", f"first event is {types[0]}"
    assert types[-1] in TERMINAL, f"last event is {types[-1]}"
    assert sum(t in TERMINAL for t in types) == 1, f"{sum(t in TERMINAL for t in types)} terminal events"
    open_blocks: dict[tuple[str, str], None] = {}
    started_calls: set[str] = set()  # this run's, and those of the snapshots it carries (a resumed run's)
    args: dict[str, str] = {}
    used = thread_ids if thread_ids is not None else set()
    for event in events:
        kind = event["type"]
        if kind == "MESSAGES_SNAPSHOT":
            started_calls.update(c["id"] for m in event["messages"] for c in m.get("toolCalls") or ())
        if kind in OPENERS:
            key = _block_key(event)
            open_blocks[(kind, key)] = None
            if kind in ("TEXT_MESSAGE_START", "TOOL_CALL_START"):
                assert key not in used, f"id {key!r} used twice in the thread"
                used.add(key)
            if kind == "TOOL_CALL_START":
                started_calls.add(key)
        elif kind in CLOSERS:
            key = _block_key(event)
            assert (CLOSERS[kind], key) in open_blocks, f"{kind} for {key!r} that is not open"
            del open_blocks[(CLOSERS[kind], key)]
        if kind in DELTAS:
            assert event.get("delta"), f"empty delta in {event}"
        if kind == "TOOL_CALL_ARGS":
            args[event["toolCallId"]] = args.get(event["toolCallId"], "") + event["delta"]
        if kind == "TOOL_CALL_RESULT":
            assert event["toolCallId"] in started_calls, f"result for unknown tool call {event['toolCallId']!r}"
        if kind == "RUN_ERROR":
            assert event.get("message", "").strip(), "RUN_ERROR without a message"
        if "subagentRunId" in event and not kind.startswith("SUBAGENT_"):
            assert ("SUBAGENT_STARTED", event["subagentRunId"]) in open_blocks, f"{kind} of a sub-agent not open"
    assert not open_blocks, f"not closed before the terminal event: {list(open_blocks)}"
    for text in args.values():
        json.loads(text)  # tool-call arguments are valid JSON
    wire = json.dumps(events)
    for secret in secrets:
        assert secret not in wire, "a secret value appears in the event stream"


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[int | None, dict[str, Any]]]:
    """(id, decoded data) per SSE event; comments (pings) are skipped."""
    event_id: int | None = None
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield event_id, json.loads("\n".join(data))
            event_id, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override] - signals stay with pytest
        yield


Prompt = str | list[dict[str, Any]]  # a user message's text, or its parts


HARNESS_GRACES = {"runner_interrupt_grace": 3.0, "runner_shutdown_grace": 10.0}


class RunnerHarness:
    """``async with RunnerHarness(bridge) as runner``: the real app on a loopback port."""

    def __init__(self, bridge: Bridge, *, runner_type: str = "gemini-cli", check: bool = True,
                 secrets: Iterable[str] = (), with_state_sync: bool = False, freeze_after_boot: bool = False,
                 shared_settings: RunnerSettings | None = None, **settings: Any) -> None:
        """``shared_settings``: the bridge's own settings object, which the app then shares as in a pod (a
        ``/model`` switch reaches the bridge); else the app's are made from ``settings``."""
        self._tmp = tempfile.TemporaryDirectory(prefix="runner-harness-")
        root = Path(self._tmp.name)
        defaults: dict[str, Any] = {
            "runner_type": runner_type, "workspace_path": root / "workspace", "runner_state_root": root / "state",
            "runner_events_dir": root / "events", **HARNESS_GRACES,
        }
        defaults.update(settings)
        self.settings = shared_settings or RunnerSettings(**defaults)
        self.settings.workspace_path.mkdir(parents=True, exist_ok=True)
        self.bridge = bridge
        extensions = state_extensions(self.settings) if with_state_sync else None  # STATE_STORE_URL's sync
        self.app = create_app(self.settings, bridge, install_signal_handlers=False, extensions=extensions,
                              freeze_after_boot=freeze_after_boot)
        self.check = check
        self.secrets = tuple(secrets)
        self.thread_ids: dict[str, set[str]] = {}
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self.base_url = ""
        self.client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> RunnerHarness:
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self._server = _QuietServer(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self.client = httpx.AsyncClient(base_url=self.base_url, timeout=httpx.Timeout(120.0))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, timeout=60)
        self._tmp.cleanup()

    # ----- calls -----------------------------------------------------------------------------------------
    def run_body(self, thread_id: str, prompt: Prompt, forwarded_props: dict[str, Any] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"threadId": thread_id, "messages": [{"id": f"u-{id(prompt)}", "role": "user",
                                                                     "content": prompt}]}
        if run_id:
            body["runId"] = run_id
        if forwarded_props is not None:
            body["forwardedProps"] = forwarded_props
        return body

    async def run(self, thread_id: str, prompt: Prompt, forwarded_props: dict[str, Any] | None = None,
                  **kwargs: Any) -> list[dict[str, Any]]:
        """POST /run and read the whole stream; checked with ``check_stream``."""
        events = [event for _, event in await self.run_with_ids(thread_id, prompt, forwarded_props, **kwargs)]
        return events

    async def run_with_ids(self, thread_id: str, prompt: Prompt, forwarded_props: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[tuple[int | None, dict[str, Any]]]:
        return await self.post_with_ids(self.run_body(thread_id, prompt, forwarded_props, **kwargs))

    async def post(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """POST /run with this whole body (a resume, a tool message) and read the stream; checked."""
        return [event for _, event in await self.post_with_ids(body)]

    async def post_with_ids(self, body: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
        assert self.client is not None
        async with self.client.stream("POST", "/run", json=body) as response:
            assert response.status_code == 200, (response.status_code, await response.aread())
            pairs = [pair async for pair in parse_sse(response.aiter_lines())]
        self.checked(body["threadId"], [event for _, event in pairs])
        return pairs

    def checked(self, thread_id: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.check:
            check_stream(events, thread_ids=self.thread_ids.setdefault(thread_id, set()),
                         secrets=self.secrets)
        return events

    async def events(self, thread_id: str, after: int = 0) -> list[tuple[int | None, dict[str, Any]]]:
        """GET /events/{thread} after N, read to the end."""
        assert self.client is not None
        async with self.client.stream("GET", f"/events/{thread_id}", params={"after": after}) as response:
            assert response.status_code == 200, (response.status_code, await response.aread())
            return [pair async for pair in parse_sse(response.aiter_lines())]

    def logged(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's events written so far (the run manager's event log): what a test waits on, not a sleep."""
        state = self.app.runtime.runs.thread(thread_id)
        if state is None:
            return []
        return [json.loads(data) for _, data in state.log.read_after(0, limit=100_000)]

    def seen(self, thread_id: str, kind: str, after: int = 0) -> bool:
        """Whether the thread's log holds an event of type ``kind`` (after its first ``after`` events)."""
        return any(event["type"] == kind for event in self.logged(thread_id)[after:])

    async def interrupt(self, thread_id: str | None = None) -> httpx.Response:
        assert self.client is not None
        body = {} if thread_id is None else {"threadId": thread_id}
        return await self.client.post("/interrupt", json=body)

    async def metric(self, name: str) -> float:
        """The sum of a metric's samples on GET /metrics (0 when it has none)."""
        assert self.client is not None
        text = (await self.client.get("/metrics")).text
        return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == name)


class ThreadedRunner:
    """The real app served by uvicorn in a background thread (for sync callers such as schemathesis)."""

    def __init__(self, bridge: Bridge, **settings: Any) -> None:
        import threading

        self._harness = RunnerHarness(bridge, check=False, **settings)
        self._thread = threading.Thread(target=self._serve, name="threaded-runner", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.base_url = ""

    def _serve(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            async with self._harness as runner:
                self.base_url = runner.base_url
                self._ready.set()
                await self._stop.wait()

        asyncio.run(main())

    def __enter__(self) -> ThreadedRunner:
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the runner did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
