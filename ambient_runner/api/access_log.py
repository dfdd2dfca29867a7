"""One access log line per request, at INFO when the response has ended (an SSE stream when it closes):
client, method, path, status and time taken. The kubelet's probes (``kube-probe/*``) are logged at DEBUG only, so a
pod's log is not a list of health checks. uvicorn's own access log is off (``server.py``)."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("ambient_runner.access")


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status: int | None = None

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            level = logging.DEBUG if _is_probe(scope) else logging.INFO
            if log.isEnabledFor(level):
                client = scope.get("client")
                query = scope.get("query_string", b"").decode("latin-1")
                path = scope["path"] + (f"?{query}" if query else "")
                log.log(level, '%s "%s %s" %s %.0f ms', client[0] if client else "-", scope["method"], path,
                        status if status is not None else "-", (time.monotonic() - started) * 1000)


def _is_probe(scope: Scope) -> bool:
    return any(name == b"user-agent" and value.startswith(b"kube-probe/") for name, value in scope.get("headers", ()))
