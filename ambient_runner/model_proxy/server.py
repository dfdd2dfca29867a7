"""The runner's model proxy: the CLI's model API on 127.0.0.1, so the real credential never leaves the runner.

One per pod, started with the bridge. The CLI gets ``base_url`` and ``placeholder`` as its endpoint and key.
Each request must be aimed at this proxy (``Host``), at a path of the provider's API (``ModelApi.paths``) and carry
the placeholder; the proxy then replaces the CLI's auth headers with the real ones and forwards to the one
configured upstream, streaming the response back unbuffered with its status, headers and body unchanged.
The hop to the upstream is aiohttp (one session per proxy, its connections kept alive; it parses HTTP in C):
httpx's pure-Python HTTP/1.1 stack and anyio's cancel scopes were most of what the proxy added to each model
request's first byte (docs/benchmarks.md). The CLI's side is uvicorn on httptools (C) too, with the request target
kept whole when it is not a path (``POST http://other.host/...``), which httptools alone would cut to its path:
the proxy refuses it.
Anything else gets a 403 (a JSON error); an upstream that cannot be reached gives the CLI a 502 and is remembered,
so the run's ``RUN_ERROR`` can name it (``unreachable_since``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import uvicorn
from starlette.types import Receive, Scope, Send

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.model_proxy.apis import Upstream
from ambient_runner.stream.encoding import redact_url

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger(__name__)

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "host", "content-length"}
MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
Observer = Callable[[str, float], None]  # (status class "2xx".."5xx" or "unreachable", seconds)


@dataclass(frozen=True)
class ModelExchange:
    """One model request through the proxy, for traces (``time.time_ns()`` stamps)."""

    method: str
    path: str
    status: int | None  # None: the upstream could not be reached
    started_ns: int
    first_byte_ns: int | None
    ended_ns: int
    host: str
    sample: bytes = b""  # the response's first and last SAMPLE_BYTES (where the APIs put their token usage)


Listener = Callable[[ModelExchange], None]
SAMPLE_BYTES = 16 * 1024


@dataclass(frozen=True)
class UpstreamFailure:
    at: float  # time.monotonic()
    host: str
    reason: str


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # signals belong to the runner's own server
        yield


class ModelProxy:
    def __init__(self, upstream: Upstream, *, extra_headers: dict[str, str] | None = None,
                 observer: Observer | None = None, max_request_bytes: int = MAX_REQUEST_BYTES,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.upstream = upstream
        self.placeholder = f"ambient-proxy-{secrets.token_hex(16)}"
        self.observer = observer
        self.listeners: list[Listener] = []  # every exchange, when it has ended (traces)
        self.max_request_bytes = max_request_bytes
        self.max_response_bytes = max_response_bytes
        self._credentials = {**upstream.headers, **(extra_headers or {})}
        self._accepted = {self.placeholder, f"Bearer {self.placeholder}"}
        self._client: aiohttp.ClientSession | None = None
        self._env_proxy: str | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._port = 0
        self.last_failure: UpstreamFailure | None = None
        self.requests = 0  # forwarded upstream

    # ----- lifecycle ---------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def secrets(self) -> list[str]:
        return [value.removeprefix("Bearer ") for value in self._credentials.values() if value]

    async def start(self) -> ModelProxy:
        import aiohttp  # noqa: PLC0415 - only where a proxy runs (~8 MiB)

        # HTTP(S)_PROXY / NO_PROXY apply to the upstream hop, as they did with httpx, read once here: aiohttp's
        # trust_env reads them (and ~/.netrc) again on every request, which cost ~0.5 ms each
        self._env_proxy = _env_proxy(self.upstream.base_url)
        # No cookie jar: a model API's cookies (a CDN's bot cookie) go to the CLI as they came, and the proxy never
        # adds one to a later request the CLI did not send it with (nor spends a jar lookup on every request).
        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=20, keepalive_timeout=60), auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None, connect=15.0, sock_read=900.0))
        # log_config and log_level None: a uvicorn.Config would otherwise reconfigure the process's uvicorn loggers.
        config = uvicorn.Config(self, host="127.0.0.1", port=0, lifespan="off", log_config=None, log_level=None,
                                access_log=False, timeout_keep_alive=75, http=_target_kept_protocol(), ws="none")
        self._server = _Server(config)
        self._task = asyncio.create_task(self._server.serve(), name="model-proxy")
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the model proxy stopped while starting")
            await asyncio.sleep(0.005)
        self._port = self._server.servers[0].sockets[0].getsockname()[1]
        log.info("model proxy on %s forwards the %s API to %s", self.base_url, self.upstream.api.name,
                 self.upstream.host)
        return self

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await self._task
            if not self._task.done():
                self._task.cancel()
        if self._client is not None:
            await self._client.close()
        self._server = self._task = self._client = None

    def unreachable_since(self, since: float) -> str | None:
        """The upstream host the proxy could not reach after ``since`` (monotonic), if any."""
        failure = self.last_failure
        return failure.host if failure is not None and failure.at >= since else None

    # ----- ASGI --------------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        problem = self._refusal(scope)
        if problem is not None:
            await _json(send, 403, "PROXY_FORBIDDEN", problem)
            return
        try:
            body = await _read_body(receive, self.max_request_bytes)
        except _ClientGone:
            return  # a request the CLI abandoned is not sent upstream
        if body is None:
            await _json(send, 413, "REQUEST_TOO_LARGE", f"request body over {self.max_request_bytes} bytes")
            return
        await self._forward(scope, body, receive, send)

    def _refusal(self, scope: Scope) -> str | None:
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        path = scope["path"]
        if not raw_path.startswith(b"/") or b"%" in raw_path or "/." in path or "//" in path:
            return "the path is not one of the model API's"
        if not self.upstream.api.paths.fullmatch(path):
            return f"{scope['method']} {path} is not a path of the {self.upstream.api.name} API"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if host not in (f"127.0.0.1:{self._port}", f"localhost:{self._port}"):
            return "requests must be aimed at this proxy"
        if not any(headers.get(name) in self._accepted for name in self.upstream.api.client_auth_headers):
            return "missing or wrong credential"
        return None

    def _upstream_request(self, scope: Scope) -> tuple[str, list[tuple[str, str]]]:
        """The upstream URL (as the CLI wrote its path and query: ``encoded``, never re-quoted) and headers."""
        api = self.upstream.api
        path = scope["path"].removeprefix(api.local_prefix) if api.local_prefix else scope["path"]
        url = self.upstream.base_url.rstrip("/") + path
        query = scope.get("query_string") or b""
        if query:
            url += "?" + query.decode("latin-1")
        drop = HOP_BY_HOP | set(api.client_auth_headers) | set(self._credentials)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = [(k, v) for k, v in headers if k.lower() not in drop]
        if not any(k.lower() == "accept-encoding" for k, _ in headers):
            headers.append(("accept-encoding", "identity"))  # not a client's default gzip: the body passes raw
        headers += self._credentials.items()
        return url, headers

    async def _forward(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        import aiohttp  # noqa: PLC0415 - imported by start()
        from yarl import URL  # noqa: PLC0415 - aiohttp's own URL type

        assert self._client is not None
        started = time.perf_counter()
        started_ns, first_byte_ns = time.time_ns(), None
        url, headers = self._upstream_request(scope)
        try:
            response = await self._client.request(scope["method"], URL(url, encoded=True), headers=headers,
                                                  data=body, allow_redirects=False, proxy=self._env_proxy)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            reason = type(exc).__name__
            self.last_failure = UpstreamFailure(time.monotonic(), self.upstream.host, reason)
            log.warning("model proxy: upstream %s unreachable (%s)", self.upstream.host, reason)
            self._observe("unreachable", started)
            self._tell(scope, None, started_ns, None)
            await _json(send, 502, ErrorCode.UPSTREAM_UNREACHABLE,
                        f"the model API at {self.upstream.host} could not be reached ({reason})")
            return
        self.requests += 1
        self.last_failure = None  # it answers again: an earlier failure no longer explains a run's error
        gone = asyncio.create_task(_disconnected(receive))  # the CLI went away (an interrupt): stop reading upstream
        head, tail = bytearray(), bytearray()  # what traces read the token usage from
        complete = False
        try:
            headers_out = [(k, v) for k, v in response.raw_headers if k.decode("latin-1").lower() not in HOP_BY_HOP]
            await send({"type": "http.response.start", "status": response.status, "headers": headers_out})
            sent = 0
            async for chunk in response.content.iter_any():
                if gone.done():
                    return
                first_byte_ns = first_byte_ns or time.time_ns()
                if self.listeners:
                    if len(head) < SAMPLE_BYTES:
                        head += chunk[:SAMPLE_BYTES - len(head)]
                    tail += chunk
                    if len(tail) > 2 * SAMPLE_BYTES:
                        del tail[:-SAMPLE_BYTES]
                sent += len(chunk)
                if sent > self.max_response_bytes:  # cut: an error for the CLI, never a complete-looking answer
                    raise RuntimeError(f"model response over {self.max_response_bytes} bytes")
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            complete = True
        except (aiohttp.ClientError, TimeoutError) as exc:  # the upstream dropped the stream: end ours the same way
            log.warning("model proxy: upstream stream from %s broke (%s)", self.upstream.host, type(exc).__name__)
            raise
        finally:
            gone.cancel()
            if complete:
                response.release()  # the connection goes back to the pool
            else:
                response.close()  # never reused half-read
            self._observe(f"{response.status // 100}xx", started)
            sample = bytes(head + b"\n" + tail[-SAMPLE_BYTES:])
            self._tell(scope, response.status, started_ns, first_byte_ns, sample)

    def _tell(self, scope: Scope, status: int | None, started_ns: int, first_byte_ns: int | None,
              sample: bytes = b"") -> None:
        if not self.listeners:
            return
        exchange = ModelExchange(scope["method"], scope["path"], status, started_ns, first_byte_ns, time.time_ns(),
                                 self.upstream.host, sample)
        for listener in self.listeners:
            try:
                listener(exchange)
            except Exception:  # a listener (tracing) never breaks the model traffic
                log.exception("model proxy listener failed")

    def _observe(self, status_class: str, started: float) -> None:
        if self.observer is not None:
            self.observer(status_class, time.perf_counter() - started)


def _target_kept_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol, with a request target that is not a path (absolute-form ``http://host/p``,
    ``*``) kept whole in ``raw_path``, where httptools leaves only its path: the proxy's ``_refusal`` sees it and
    refuses it. A request its parser cannot read (authority-form ``host:443`` among them) gets a JSON 400."""
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol  # noqa: PLC0415 - proxy only

    class TargetKept(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            target = self.url
            super().on_headers_complete()  # the request's scope (its task starts after this callback)
            if not target.startswith(b"/") and getattr(self, "scope", None) is not None:
                self.scope["raw_path"] = target

        def send_400_response(self, msg: str) -> None:
            body = json.dumps({"error": {"code": "PROXY_BAD_REQUEST", "message": msg}}).encode()
            self.transport.write(b"".join([STATUS_LINE[400], b"content-type: application/json\r\n",
                                           b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body), body]))
            self.transport.close()

    return TargetKept


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``; ``NO_PROXY`` respected)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if urllib.request.proxy_bypass(host.rsplit(":", 1)[0] if not host.endswith("]") else host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(scheme.lower()) or proxies.get("all")


class _ClientGone(Exception):
    pass


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


async def _json(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": redact_url(message)}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
