"""Every use of the Codex SDK's private names (``openai-codex``, pinned exactly in pyproject.toml), in one place.

The SDK's public API has no way to: answer the app-server's requests off its only reader thread (``AnsweringClient``
replaces the sync client's ``_handle_server_request`` and ``_write_message``), start a turn with fields its
high-level ``turn`` does not take (approval policy, plan mode: ``_start_turn``), start a thread with dynamic tools,
send a request it has no method for (``mcpServerStatus/list``), or see the app-server's process and stderr. Nothing
else in the runner touches an underscore name of the SDK; ``tests/codex/test_sdk_private.py`` checks that each name
used here exists with the parameters used, and fails naming it and the pinned version when an SDK update changes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openai_codex.api import AsyncTurnHandle, _sandbox_policy, _to_wire_turn_input
from openai_codex.client import CodexClient, CodexConfig

if TYPE_CHECKING:
    from openai_codex import AsyncCodex, AsyncThread
    from openai_codex.generated.v2_all import ThreadStartResponse, TurnStartResponse
    from openai_codex.models import Notification

log = logging.getLogger(__name__)

OnRequest = Callable[[Any, str, dict[str, Any]], None]  # (request id, method, params), called on the loop

to_wire_turn_input = _to_wire_turn_input  # a run's input as the wire's ``input`` items (and a tool's output)
sandbox_policy = _sandbox_policy  # the SDK's ``Sandbox`` as the wire's sandbox policy


# ----- the client and its process ----------------------------------------------------------------------------
def sync_client(codex: AsyncCodex | None) -> CodexClient | None:
    """The sync client under the async one: it owns the app-server process (``None`` if there is none)."""
    client = getattr(codex, "_client", None)
    return getattr(client, "_sync", None)


def use_sync_client(codex: AsyncCodex, client: CodexClient) -> None:
    """Put ``client`` (an ``AnsweringClient``) under ``codex`` before it starts."""
    codex._client._sync = client


def process_of(codex: AsyncCodex | None) -> Any:
    """The app-server's ``subprocess.Popen`` (``None`` if not running)."""
    return getattr(sync_client(codex), "_proc", None)


def stderr_tail(codex: AsyncCodex | None, lines: int = 20) -> str:
    """The app-server's recent stderr as the SDK keeps it (empty if unavailable)."""
    tail = getattr(sync_client(codex), "_stderr_tail", None)
    return tail(lines) if callable(tail) else ""


def notification_reader(codex: AsyncCodex) -> Callable[[], Notification] | None:
    """The sync client's blocking read of the next notification that belongs to no turn."""
    read = getattr(sync_client(codex), "next_notification", None)
    return read if callable(read) else None


async def start_process(codex: AsyncCodex) -> None:
    """Spawn the app-server without the handshake (the SDK drops its process when the handshake fails)."""
    await codex._client.start()


async def ensure_initialized(codex: AsyncCodex) -> None:
    """The ``initialize`` handshake, once per app-server."""
    await codex._ensure_initialized()


async def request(codex: AsyncCodex, method: str, params: dict[str, Any] | None, response_model: type[Any]) -> Any:
    """A JSON-RPC request the SDK has no method for, its result as ``response_model``."""
    return await codex._client.request(method, params, response_model=response_model)


# ----- threads and turns -------------------------------------------------------------------------------------
def codex_of(thread: AsyncThread) -> AsyncCodex:
    return thread._codex


async def thread_start(codex: AsyncCodex, params: dict[str, Any]) -> ThreadStartResponse:
    """``thread/start`` with the wire params as given (e.g. ``dynamicTools``, which the SDK's call does not take)."""
    return await codex._client.thread_start(params)


async def start_turn(codex: AsyncCodex, thread_id: str, wire_input: list[Any], params: dict[str, Any]
                     ) -> AsyncTurnHandle:
    """``turn/start`` with the wire params as given; the SDK's handle on the turn (its notifications)."""
    started: TurnStartResponse
    started, subscription = await codex._client._start_turn(thread_id, wire_input, params=params, for_handle=True)
    return AsyncTurnHandle(codex, thread_id, started.turn.id, _subscription=subscription)


def turn_subscription(handle: AsyncTurnHandle) -> Any:
    """The SDK's subscription to a turn's notifications: ``next()`` blocks for the next one, ``close()`` ends it (a
    waiting ``next()`` then raises)."""
    return handle._subscription


# ----- the app-server's requests, answered off the reader thread -------------------------------------------------
class _Deferred:
    """What the reader gets back for a request: its answer is written later, not now."""


DEFERRED: Any = _Deferred()


class AnsweringClient(CodexClient):
    """The SDK's sync client with one step changed. It answers each server request on its only stdout reader
    thread, with the return value of a handler called there: a handler that waited for a person would stall every
    notification, every other thread's turn and the reply to an interrupt. Here the reader hands the request to the
    event loop (``on_request``) and reads on; the answer is written later by ``respond``, from any thread, under the
    same write lock as every other message."""

    def __init__(self, config: CodexConfig, loop: asyncio.AbstractEventLoop, on_request: OnRequest) -> None:
        super().__init__(config=config)
        self._loop = loop
        self._on_request = on_request

    def _handle_server_request(self, msg: dict[str, Any]) -> Any:  # on the reader thread
        method, params = msg.get("method"), msg.get("params")
        self._loop.call_soon_threadsafe(self._on_request, msg.get("id"), str(method),
                                        params if isinstance(params, dict) else {})
        return DEFERRED

    def _write_message(self, payload: dict[str, Any]) -> None:
        if payload.get("result") is DEFERRED:
            return  # the reader's own reply to a request: the runner answers it by ``respond``
        super()._write_message(payload)

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        try:
            self._write_message({"id": request_id, "result": result})
        except Exception:  # noqa: BLE001 - the app-server is gone; its turn ends with the transport
            log.info("codex request %s could not be answered: the app-server is gone", request_id)
