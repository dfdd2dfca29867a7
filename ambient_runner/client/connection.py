"""The terminal client's connection to a runner: posting a run, following a thread's events, resuming a dropped
stream from the last event id it saw (``RunnerClient``, ``StreamReader``), and the bodies it posts."""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource

from ambient_runner.client.render import TERMINAL_TYPES

RECONNECT_ATTEMPTS = 5


class ClientError(Exception):
    """A problem talking to the runner, said in one line."""


@dataclass
class StreamItem:
    seq: int | None
    data: str
    event: dict[str, Any]


@dataclass
class Side:
    """An event of another stream of the thread (a line typed meanwhile), shown beside the run on screen."""

    item: StreamItem


class RunnerClient:
    """HTTP transport: ``POST /run``, ``GET /events/{thread}``, ``POST /interrupt``, with one-line errors."""

    def __init__(self, base_url: str, token: str | None = None, connect_timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # no read timeout: a run may be quiet for long (the runner sends SSE pings meanwhile)
        self.http = httpx.Client(base_url=self.base_url, headers=headers,
                                 timeout=httpx.Timeout(connect_timeout, read=None), trust_env=False)

    def close(self) -> None:
        self.http.close()

    @contextmanager
    def _sse(self, method: str, path: str, **kwargs: Any) -> Iterator[Iterator[StreamItem]]:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store", **kwargs.pop("headers", {})}
        try:
            with self.http.stream(method, path, headers=headers, **kwargs) as response:
                if response.status_code != 200:
                    response.read()
                    raise ClientError(describe_http_error(response))
                yield _items(EventSource(response))
        except httpx.ConnectError as exc:
            raise ClientError(f"cannot connect to {self.base_url}: {_reason(exc)}. Is the runner running "
                              "(or `kubectl port-forward` to it open)?") from None
        except httpx.TimeoutException:
            raise ClientError(f"{self.base_url} did not answer in time") from None

    def start_run(self, body: dict[str, Any]) -> Any:
        return self._sse("POST", "/run", json=body)

    def follow(self, thread_id: str, after: int) -> Any:
        return self._sse("GET", f"/events/{thread_id}", params={"after": after})

    def interrupt(self, thread_id: str) -> str:
        try:
            response = self.http.post("/interrupt", json={"threadId": thread_id}, timeout=10.0)
        except httpx.HTTPError as exc:
            return f"could not send the interrupt: {_reason(exc)}"
        if response.status_code == 200:
            return "interrupt sent; waiting for the run to stop (Ctrl-C again to quit now)"
        return f"interrupt not accepted: {describe_http_error(response)}"


def _items(source: EventSource) -> Iterator[StreamItem]:
    for sse in source.iter_sse():
        if not sse.data:
            continue
        seq = int(sse.id) if sse.id and sse.id.isdigit() else None
        yield StreamItem(seq, sse.data, json.loads(sse.data))


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text


def describe_http_error(response: httpx.Response) -> str:
    """``HTTP 409 THREAD_BUSY: thread 't' already has a run in progress ...`` from the runner's JSON error."""
    code, message = "", ""
    try:
        error = response.json()
        code, message = str(error.get("code", "")), str(error.get("error", ""))
        problems = (error.get("details") or {}).get("problems") or []
        if problems:
            message += " (" + "; ".join(f"{'.'.join(p.get('loc', []))}: {p.get('msg', '')}" for p in problems[:3]) + ")"
    except (ValueError, AttributeError):
        message = response.text[:200].strip()
    hint = {401: " Pass the runner's AGUI_TOKEN with --token (or the AGUI_TOKEN variable)."}.get(
        response.status_code, "")
    return f"HTTP {response.status_code} {code}: {message or response.reason_phrase}.{hint}".replace("..", ".")


class StreamReader(threading.Thread):
    """Reads the stream in the background into a queue, so Ctrl-C in the main thread never cuts a read short.

    Queue items: ``StreamItem``, then ``None`` at the end, or a ``ClientError``.
    """

    def __init__(self, client: RunnerClient, thread_id: str, body: dict[str, Any] | None, after: int) -> None:
        super().__init__(daemon=True, name="runner-stream")
        self.client, self.thread_id, self.body, self.after = client, thread_id, body, after
        self.items: queue.Queue[StreamItem | Side | ClientError | str | None] = queue.Queue()
        self.terminal: dict[str, Any] | None = None

    def run(self) -> None:
        try:
            self._read()
            self.items.put(None)
        except ClientError as exc:
            self.items.put(exc)
        except Exception as exc:  # a bug must not hang the main thread
            self.items.put(ClientError(f"unexpected {type(exc).__name__}: {exc}"))

    def put(self, item: StreamItem) -> None:
        self.items.put(item)

    def _read(self) -> None:
        cursor, attempts, body = self.after, 0, self.body
        while True:
            stream = self.client.start_run(body) if body is not None else self.client.follow(self.thread_id, cursor)
            try:
                with stream as items:
                    body = None  # a reconnect follows the thread instead of posting again
                    for item in items:
                        cursor = item.seq if item.seq is not None else cursor
                        attempts = 0
                        self.put(item)
                        if item.event.get("type") in TERMINAL_TYPES:
                            return
                return  # the runner closed the stream
            except (httpx.TransportError, httpx.RemoteProtocolError) as exc:
                if body is not None or attempts >= RECONNECT_ATTEMPTS:
                    raise ClientError(f"lost the connection to {self.client.base_url}: {_reason(exc)}") from None
                attempts += 1
                self.items.put(f"connection lost ({_reason(exc)}); resuming after event {cursor}")
                time.sleep(min(0.5 * attempts, 3.0))


def run_body(thread_id: str, prompt: str, model: str | None, ask: bool = False) -> dict[str, Any]:
    props = {**({"model": model} if model else {}), **({"approvalPolicy": "ask"} if ask else {})}
    return {"threadId": thread_id, "runId": f"cli-{uuid.uuid4()}",
            "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user", "content": prompt}],
            "state": {}, "tools": [], "context": [], "forwardedProps": props}


def resume_body(thread_id: str, entries: list[dict[str, Any]], model: str | None, ask: bool) -> dict[str, Any]:
    return {**run_body(thread_id, "", model, ask), "messages": [], "resume": entries}
