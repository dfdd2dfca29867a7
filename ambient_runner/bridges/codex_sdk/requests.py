"""The app-server's requests to the runner (approvals, questions), answered without holding up its stream.

The SDK's client answers each server request on its only stdout reader thread, with the return value of a handler
called there: a handler that waited for a person would stall every notification, every other thread's turn and the
reply to an interrupt. ``AnsweringClient`` is the SDK's client with that one step changed: the reader hands the
request to the event loop (``on_request``) and reads on; the answer is written later by ``respond``, from any
thread, under the same write lock as every other message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from openai_codex.client import CodexClient, CodexConfig

log = logging.getLogger(__name__)

OnRequest = Callable[[Any, str, dict[str, Any]], None]  # (request id, method, params), called on the loop


class _Deferred:
    """What the reader gets back for a request: its answer is written later, not now."""


DEFERRED: Any = _Deferred()


class AnsweringClient(CodexClient):
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
