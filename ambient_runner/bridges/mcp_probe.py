"""``GET /mcp-status`` where the agent reports nothing of its MCP servers (ACP has no such report): the runner
connects to each server itself, as the agent does (the same command, arguments and environment; the same URL and
headers), says MCP's ``initialize``, lists the server's tools and lets go.

A server that answers is ``connected`` (with its tools); one that asks for a login (HTTP 401/403) ``needs-auth``;
one that does not start, exits, refuses or answers with an error ``failed``, its ``detail`` saying why (the last
lines of a stdio server's stderr among it, the values of its ``${VAR}`` references removed). The report is made in
rounds (``mcp.rounds``: a caller waits a few seconds, servers still connecting are ``pending`` until the next
call), each kept ``KEEP_SECONDS``: each round starts every stdio server once more, beside the agent's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

from ambient_runner import __version__
from ambient_runner.mcp.config import McpConfig, McpServer, resolve, secret_values
from ambient_runner.mcp.rounds import WAIT_SECONDS, Found, StatusRounds
from ambient_runner.mcp.status import McpServerStatus
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import SupervisedProcess

SOURCE = "runner probe"
PROTOCOL_VERSION = "2025-06-18"
PROBE_TIMEOUT = 60.0  # s a server gets to answer (an npx package may download first)
KEEP_SECONDS = 60.0
MAX_TOOL_PAGES = 20
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_DETAIL_CHARS = 1000
STDERR_LINES = 5
END_SESSION_TIMEOUT = 2.0

Message = dict[str, object]
Send = Callable[[Message], Awaitable[None]]


class _ProbeError(Exception):  # control flow inside probe(): it never leaves the module
    """The server did not answer as MCP asks; the message says what happened."""


class _NeedsAuthError(_ProbeError):
    """The server wants credentials it was not given (HTTP 401 or 403)."""


class _Peer:
    """A server as the probe speaks to it: ``request`` (a message sent, its answer read), ``notify``. A transport
    says how a request is exchanged (``_exchange``), how a message is sent (``_send``) and what it says of a request
    left without an answer (``_unanswered``)."""

    def __init__(self) -> None:
        self.version = PROTOCOL_VERSION  # the server's, once it has answered ``initialize``

    async def request(self, method: str, params: Message, id_: int) -> Message:
        result = await self._exchange(_message(method, params, id_), id_)
        if result is None:
            raise _ProbeError(await self._unanswered(method))
        return result

    async def notify(self, method: str) -> None:
        await self._send(_message(method))

    async def _exchange(self, message: Message, id_: int) -> Message | None:
        raise NotImplementedError

    async def _send(self, message: Message) -> None:
        raise NotImplementedError

    async def _unanswered(self, method: str) -> str:
        raise NotImplementedError


def _message(method: str, params: Message | None = None, id_: int | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id_ is not None:
        message["id"] = id_
    return message


def _reply(request: Message) -> Message:
    """The runner's answer to a request of the server's: ``ping`` is answered, anything else is not offered."""
    if request.get("method") == "ping":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
    return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "not offered by the probe"}}


async def _result_among(messages: AsyncIterator[object], id_: int, send: Send) -> Message | None:
    """The result of request ``id_`` among ``messages`` (a request of the server's answered on the way); None when
    they end without it. An error answer raises ``_ProbeError``."""
    async for message in messages:
        if not isinstance(message, dict):
            continue
        if "method" in message:
            if "id" in message:
                await send(_reply(message))
            continue
        if message.get("id") != id_:
            continue
        error = message.get("error")
        if error is not None:
            said = error.get("message") if isinstance(error, dict) else error
            raise _ProbeError(f"it answered with an error: {str(said)[:300]}")
        result = message.get("result")
        return result if isinstance(result, dict) else {}
    return None


async def _decoded(texts: AsyncIterator[str]) -> AsyncGenerator[object]:
    """Each text as JSON; texts that are no JSON (a stdio server's own logging) left out."""
    async for text in texts:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        yield message


async def _handshake(peer: _Peer) -> list[str]:
    """``initialize``, ``notifications/initialized``, then every page of ``tools/list``: the tools' names."""
    answer = await peer.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                               "clientInfo": {"name": "ambient-runner", "version": __version__}}, 1)
    if isinstance(version := answer.get("protocolVersion"), str):
        peer.version = version
    await peer.notify("notifications/initialized")
    tools: list[str] = []
    cursor: object = None
    for page in range(MAX_TOOL_PAGES):
        result = await peer.request("tools/list", {"cursor": cursor} if cursor else {}, 2 + page)
        listed = result.get("tools")
        for tool in listed if isinstance(listed, list) else []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                tools.append(tool["name"])
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return tools


# ----- stdio ---------------------------------------------------------------------------------------------------
class _StreamPeer(_Peer):
    """A server whose answers come on one stream of messages (a stdio server's lines, an SSE server's events)."""

    def __init__(self, messages: AsyncIterator[object]) -> None:
        super().__init__()
        self.messages = messages

    async def _exchange(self, message: Message, id_: int) -> Message | None:
        await self._send(message)
        return await _result_among(self.messages, id_, self._send)


class _StdioPeer(_StreamPeer):
    """A stdio server: a message a line each way (lines that are no JSON are its own logging)."""

    def __init__(self, process: SupervisedProcess, messages: AsyncIterator[object]) -> None:
        super().__init__(messages)
        self.process = process

    async def _send(self, message: Message) -> None:
        try:
            await self.process.send(json.dumps(message).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            raise _ProbeError(f"it exited (code {await self.process.wait()}) before it read the request") from None

    async def _unanswered(self, method: str) -> str:
        return f"it exited (code {await self.process.wait()}) before it answered {method}"


async def _stdio(server: McpServer, env: Mapping[str, str], cwd: Path, stderr: StderrTail) -> list[str]:
    argv = [server.command or "", *server.args]
    folder = Path(server.cwd) if server.cwd else cwd
    if not folder.is_dir():
        raise _ProbeError(f"its folder {str(folder)!r} does not exist")
    try:
        process = await SupervisedProcess.start(argv, cwd=folder, env=env, stdin_pipe=True, stderr_tail=stderr)
    except ProcessStartError:
        raise _ProbeError(f"its command {argv[0]!r} was not found or is not executable") from None

    async def texts() -> AsyncGenerator[str]:
        async for line in process.lines():
            yield line.text

    async with process, contextlib.aclosing(_decoded(texts())) as messages:
        return await _handshake(_StdioPeer(process, messages))


# ----- streamable HTTP and SSE ---------------------------------------------------------------------------------
def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code in (401, 403):
        raise _NeedsAuthError(f"it answered HTTP {response.status_code}: it wants credentials")
    if response.status_code >= 400:
        raise _ProbeError(f"it answered HTTP {response.status_code}")
    return response


async def _bounded_lines(response: httpx.Response) -> AsyncGenerator[str]:
    """The body's lines, none longer than ``MAX_MESSAGE_BYTES``."""
    pending = b""
    async for chunk in response.aiter_bytes():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r").decode(errors="replace")
        if len(pending) > MAX_MESSAGE_BYTES:
            raise _ProbeError("it sent a message larger than the runner reads")
    if pending:
        yield pending.decode(errors="replace")


async def _whole(response: httpx.Response) -> AsyncGenerator[str]:
    """The body as one text, at most ``MAX_MESSAGE_BYTES``."""
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_MESSAGE_BYTES:
            raise _ProbeError("it sent a message larger than the runner reads")
    yield body.decode(errors="replace")


async def _sse_events(response: httpx.Response) -> AsyncGenerator[tuple[str, str]]:
    """``(event, data)`` of a ``text/event-stream`` body (``message`` when unnamed)."""
    data: list[str] = []
    event, size = "message", 0
    async with contextlib.aclosing(_bounded_lines(response)) as lines:
        async for line in lines:
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data, size = "message", [], 0
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
                size += len(line)
                if size > MAX_MESSAGE_BYTES:
                    raise _ProbeError("it sent a message larger than the runner reads")


async def _data(events: AsyncIterator[tuple[str, str]]) -> AsyncGenerator[str]:
    """The data of an event stream's ``message`` events."""
    async for event, data in events:
        if event == "message":
            yield data


class _HttpPeer(_Peer):
    """Streamable HTTP: each message a POST; a response is JSON, or an event stream that holds it."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        super().__init__()
        self.client, self.url = client, url
        self.session: str | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": self.version}
        return headers | ({"Mcp-Session-Id": self.session} if self.session else {})

    async def _exchange(self, message: Message, id_: int) -> Message | None:
        async with self.client.stream("POST", self.url, json=message, headers=self._headers()) as response:
            _checked(response)
            self.session = response.headers.get("mcp-session-id", self.session)
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            texts = _data(_sse_events(response)) if streamed else _whole(response)
            async with contextlib.aclosing(_decoded(texts)) as messages:
                return await _result_among(messages, id_, self._send)

    async def _send(self, message: Message) -> None:
        _checked(await self.client.post(self.url, json=message, headers=self._headers()))

    async def _unanswered(self, method: str) -> str:
        return f"it did not answer {method}"

    async def end_session(self) -> None:
        """The probe's session ends (a server may not allow it: nothing to do then)."""
        if self.session:
            with contextlib.suppress(httpx.HTTPError):
                await self.client.delete(self.url, headers=self._headers(), timeout=END_SESSION_TIMEOUT)


class _SsePeer(_StreamPeer):
    """MCP's older HTTP+SSE transport: one event stream from the server (its first event names where to POST, on
    the same origin), the responses arriving on it."""

    def __init__(self, client: httpx.AsyncClient, endpoint: str, messages: AsyncIterator[object]) -> None:
        super().__init__(messages)
        self.client, self.endpoint = client, endpoint

    async def _send(self, message: Message) -> None:
        _checked(await self.client.post(self.endpoint, json=message))

    async def _unanswered(self, method: str) -> str:
        return f"its event stream ended before it answered {method}"


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


async def _remote(server: McpServer, headers: dict[str, str]) -> list[str]:
    url = server.url or ""
    # As the agents' own clients: no proxy from the environment, no redirect followed.
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(PROBE_TIMEOUT), trust_env=False,
                                 follow_redirects=False) as client:
        if server.transport == "http":
            peer = _HttpPeer(client, url)
            tools = await _handshake(peer)
            await peer.end_session()
            return tools
        async with (client.stream("GET", url, headers={"Accept": "text/event-stream"}) as response,
                    contextlib.aclosing(_sse_events(_checked(response))) as events):
            async for event, data in events:
                if event == "endpoint":
                    endpoint = urljoin(url, data.strip())
                    if _origin(endpoint) != _origin(url):  # its headers (a token among them) go nowhere else
                        raise _ProbeError("it named a message endpoint on another origin")
                    async with contextlib.aclosing(_decoded(_data(events))) as messages:
                        return await _handshake(_SsePeer(client, endpoint, messages))
            raise _ProbeError("its event stream ended before it named its message endpoint")


# ----- one server, every server ----------------------------------------------------------------------------------
def _scrubbed(text: str, secrets: list[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text[:MAX_DETAIL_CHARS]


async def probe(server: McpServer, environ: Mapping[str, str], agent_env: Mapping[str, str], cwd: Path,
                bound: float = PROBE_TIMEOUT) -> McpServerStatus:
    """Connect to ``server`` as the agent would: its ``${VAR}`` references resolved against ``environ`` (what the
    agent's environment holds), a stdio server started with ``agent_env`` and its own ``env``, in ``cwd``; given
    ``bound`` seconds."""
    env = {name: resolve(value, environ) for name, value in server.env.items()}
    headers = {name: resolve(value, environ) for name, value in server.headers.items()}
    secrets = secret_values(McpConfig(servers={server.name: server}), environ, min_length=4)
    stderr = StderrTail(max_lines=STDERR_LINES)
    status = McpServerStatus(name=server.name, transport=server.transport, status="failed", source=SOURCE)
    try:
        async with asyncio.timeout(bound):
            if server.transport == "stdio":
                tools = await _stdio(server, {**agent_env, **env}, cwd, stderr)
            else:
                tools = await _remote(server, headers)
        return status.model_copy(update={"status": "connected", "tools": tools})
    except _NeedsAuthError as exc:
        return status.model_copy(update={"status": "needs-auth", "detail": str(exc)})
    except TimeoutError:
        detail = f"it did not answer within {bound:g} s"
    except _ProbeError as exc:
        detail = str(exc)
    except httpx.HTTPError as exc:
        detail = f"it could not be reached: {type(exc).__name__}: {exc}"
    except OSError as exc:  # its stdio pipe broke in an unusual way
        detail = f"its connection failed: {exc}"
    except Exception as exc:  # noqa: BLE001 - whatever a server does, the report is made
        detail = f"it answered in a way the runner could not read: {type(exc).__name__}"
    if stderr:
        detail += f"; its stderr ends: {stderr.text()}"
    return status.model_copy(update={"detail": _scrubbed(detail, secrets)})


class McpProbe:
    """The runner's MCP servers' status as ``probe`` finds it, made in rounds (``mcp.rounds``)."""

    def __init__(self, wait: float = WAIT_SECONDS, keep: float = KEEP_SECONDS, bound: float = PROBE_TIMEOUT) -> None:
        self.rounds = StatusRounds(SOURCE, wait, keep)
        self.bound = bound

    async def status(self, config: McpConfig, environ: Callable[[], Mapping[str, str]],
                     agent_env: Callable[[], Mapping[str, str]], cwd: Path) -> list[dict[str, object]]:
        """Every configured server's status; ``environ`` and ``agent_env`` are read when a round starts."""
        return await self.rounds.report(config, lambda found: self._probe_all(found, config, environ, agent_env, cwd))

    async def _probe_all(self, found: Found, config: McpConfig, environ: Callable[[], Mapping[str, str]],
                         agent_env: Callable[[], Mapping[str, str]], cwd: Path) -> None:
        """Probe every server into ``found``; never raises (but when cancelled)."""
        try:
            values, started_with = environ(), agent_env()
        except Exception as exc:  # noqa: BLE001 - the report says it, for every server
            for name, server in config.servers.items():
                found[name] = McpServerStatus(
                    name=name, transport=server.transport, status="failed", source=SOURCE,
                    detail=f"the runner could not prepare the agent's environment: {type(exc).__name__}")
            return

        async def one(server: McpServer) -> None:
            found[server.name] = await probe(server, values, started_with, cwd, self.bound)

        await asyncio.gather(*(one(server) for server in config.servers.values()))

    async def close(self) -> None:
        """The runner stops: a round under way ends (its servers' processes with it), and none starts again."""
        await self.rounds.close()
