"""JSON-RPC 2.0 over NDJSON stdio with an ACP agent (``gemini --acp``, ``opencode acp``, ...): requests with their
replies, notifications, and the requests the agent sends the client (``session/request_permission``).

One reader task reads the CLI's stdout in order and hands each message on at once: a reply to its waiting request,
a notification or a request to the callbacks (which must not block: they queue). When stdout ends, every waiting
request fails with ``AcpClosed`` saying how the CLI ended. Anything on stdout that is not JSON-RPC (a login prompt,
a crash dump) is fatal: the process is stopped and the error names what it printed. ``AgentName`` is how messages
and logs name the agent.

Messages are the models of ``ag_ui_gemini_cli.acp_schema``: a request's params are sent as given, its result comes
back as the model the caller names; a result that does not fit it is an ``AcpError`` naming the method.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ag_ui_cli_common.errors import ErrorCode, RunnerError, exit_failure
from ag_ui_gemini_cli.acp_schema import (
    JsonRpcError,
    JsonRpcMessage,
    RequestId,
    UpdateNotification,
    first_error,
    parse_message,
    wire,
)
from ambient_runner.process.supervisor import SupervisedProcess

log = logging.getLogger(__name__)
EXIT_WAIT = 5.0  # s for the process to exit once its stdout ended
SHOWN_CHARS = 300
ResultT = TypeVar("ResultT", bound=BaseModel)


@dataclass(frozen=True)
class AgentName:
    """How the runner names the agent: in a person's messages (``name``: "The Gemini CLI"), in logs (``label``:
    "gemini --acp"), and what a line that is not ACP on its stdout usually means (``not_acp_hint``)."""

    name: str = "The ACP agent"
    label: str = "acp agent"
    not_acp_hint: str = ""

    @property
    def lower(self) -> str:
        """``name`` inside a sentence ("the Gemini CLI")."""
        return self.name[:1].lower() + self.name[1:]


AGENT = AgentName()


MAX_DATA_CHARS = 1000  # of an error's ``data`` in the message a person reads


class AcpError(RunnerError):
    """A JSON-RPC error reply (or a result that does not fit its method's model); its message is the method, the
    error's ``message`` and, bounded, its ``data`` (where a CLI puts the cause: the file, the detail). The JSON-RPC
    error's own code is ``error.code``."""

    code = ErrorCode.AGENT_ERROR

    def __init__(self, method: str, error: JsonRpcError) -> None:
        super().__init__(f"{method}: {error.message}{_shown_data(error.data)}")
        self.method = method
        self.error = error


def _shown_data(data: Any) -> str:
    if data in (None, "", {}, []):
        return ""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return f" ({text[:MAX_DATA_CHARS]}{' …[cut]' if len(text) > MAX_DATA_CHARS else ''})"


class AcpClosed(RunnerError):
    """The CLI's JSON-RPC channel ended: ``message`` says how, ``code`` is the ``RUN_ERROR`` code, ``stderr`` what
    the CLI printed on its way out (when it ended while starting: the reason it gives, such as a broken
    settings file)."""

    code = ErrorCode.CLI_EXITED

    def __init__(self, message: str, code: ErrorCode = ErrorCode.CLI_EXITED, stderr: str = "") -> None:
        super().__init__(message, code=code)
        self.stderr = stderr

    def __str__(self) -> str:
        return f"{self.message}\n{self.stderr}" if self.stderr else self.message


@dataclass
class SentRequest:
    """A request written to the CLI, its answer to come (``AcpConnection.reply``)."""

    id: int
    method: str
    reply: asyncio.Future[dict[str, Any]]
    broken: bool = False  # the pipe was gone when it was written


def _line(message: JsonRpcMessage) -> bytes:
    # json.dumps, not pydantic's JSON: a prompt may hold a lone surrogate, which only escaping can send
    return json.dumps(message.model_dump(exclude_unset=True), separators=(",", ":")).encode() + b"\n"


Handler = Callable[[UpdateNotification | JsonRpcMessage], None]  # a notification
RequestHandler = Callable[[RequestId | None, str, dict[str, Any]], None]  # (request id, method, params)


class AcpConnection:
    def __init__(self, process: SupervisedProcess, on_notification: Handler, on_request: RequestHandler,
                 agent: AgentName = AGENT) -> None:
        self.process = process
        self.agent = agent
        self._on_notification = on_notification
        self._on_request = on_request
        self._ids = itertools.count(1)
        self._waiting: dict[int, SentRequest] = {}  # request id -> the request its reply is for
        self._closed: asyncio.Future[AcpClosed] = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(), name=f"acp-reader-{process.pid}")

    @property
    def alive(self) -> bool:
        return not self._closed.done()

    async def closed(self) -> AcpClosed:
        """How the channel ended (waits for it)."""
        return await asyncio.shield(self._closed)

    async def request(self, method: str, params: BaseModel, result: type[ResultT], within: float | None = None
                      ) -> ResultT:
        """Send a request and wait for its result, as ``result``; ``AcpError`` for an error reply (or a result
        that does not fit), ``AcpClosed`` when the CLI ends first, ``TimeoutError`` after ``within`` s."""
        return await self.reply(self.send_request(method, params), result, within)

    def send_request(self, method: str, params: BaseModel) -> SentRequest:
        """Write a request now (the CLI has it before the caller's next await: a turn's prompt is not held up
        behind the HTTP response's start); ``reply`` waits for its answer (``AcpClosed`` there when the CLI is gone)."""
        request_id = next(self._ids)
        sent = SentRequest(request_id, method, asyncio.get_running_loop().create_future(), broken=self._closed.done())
        if sent.broken:
            return sent
        self._waiting[request_id] = sent
        try:
            self.process.write(_line(JsonRpcMessage(jsonrpc="2.0", id=request_id, method=method, params=wire(params))))
        except (BrokenPipeError, ConnectionResetError):
            sent.broken = True
        return sent

    async def reply(self, sent: SentRequest, result: type[ResultT], within: float | None = None) -> ResultT:
        """The answer to ``sent``, as ``result`` (see ``request``)."""
        try:
            if sent.broken:
                raise await self.closed()
            try:
                await self.process.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise await self.closed() from exc
            async with asyncio.timeout(within):
                answer = await sent.reply
        finally:
            self._waiting.pop(sent.id, None)
        try:
            return result.model_validate(answer)
        except ValidationError as exc:
            message = f"{self.agent.lower}'s reply does not fit ACP ({first_error(exc)}): {str(answer)[:SHOWN_CHARS]}"
            raise AcpError(sent.method, JsonRpcError(message=message)) from None

    async def notify(self, method: str, params: BaseModel) -> None:
        await self._send(JsonRpcMessage(jsonrpc="2.0", method=method, params=wire(params)))

    async def respond(self, request_id: RequestId | None, result: BaseModel) -> None:
        """The client's reply to one of the agent's requests (nothing when the CLI is gone)."""
        with contextlib.suppress(AcpClosed):
            await self._send(JsonRpcMessage(jsonrpc="2.0", id=request_id, result=wire(result)))

    async def respond_error(self, request_id: RequestId | None, code: int, message: str) -> None:
        """The client's error reply to one of the agent's requests (nothing when the CLI is gone)."""
        with contextlib.suppress(AcpClosed):
            await self._send(JsonRpcMessage(jsonrpc="2.0", id=request_id, error={"code": code, "message": message}))

    async def _send(self, message: JsonRpcMessage) -> None:
        if self._closed.done():
            raise self._closed.result()
        try:
            await self.process.send(_line(message))
        except (BrokenPipeError, ConnectionResetError) as exc:
            closed = await self.closed()
            raise closed from exc

    # ----- the reader ------------------------------------------------------------------------------------
    async def _read(self) -> None:
        ending: AcpClosed | None = None
        try:
            async for line in self.process.lines():
                if line.dropped_bytes:
                    log.warning("%s printed a line of %d bytes (over the limit): skipped", self.agent.label,
                                len(line.text) + line.dropped_bytes)
                    continue
                ending = self._dispatch(line.text)
                if ending is not None:
                    break
        except Exception as exc:  # noqa: BLE001 - the channel is gone however it broke
            ending = AcpClosed(f"{self.agent.name}'s output could not be read: {exc}")
        if ending is not None:
            await self.process.stop()
        else:
            ending = await self._how_it_ended()
        self._end(ending)

    def _dispatch(self, text: str) -> AcpClosed | None:
        if not text.strip():
            return None
        try:
            message = parse_message(text)
        except ValueError:
            hint = f" {self.agent.not_acp_hint}" if self.agent.not_acp_hint else ""
            return AcpClosed(f"{self.agent.name} printed something that is not ACP (JSON-RPC) on its protocol "
                             f"channel, so it was stopped: {text.strip()[:SHOWN_CHARS]!r}.{hint}",
                             ErrorCode.CLI_PROTOCOL_ERROR)
        if isinstance(message, UpdateNotification) or (message.method is not None and not message.is_request):
            self._on_notification(message)
        elif message.method is not None:
            self._on_request(message.id, message.method, message.params_object())
        else:
            reply_id = message.id
            waiting = self._waiting.get(reply_id) if isinstance(reply_id, int) else None
            if waiting is not None and not waiting.reply.done():
                error = message.error_object()
                if error is not None:
                    waiting.reply.set_exception(AcpError(waiting.method, error))
                else:
                    waiting.reply.set_result(message.result_object())
        return None

    async def _how_it_ended(self) -> AcpClosed:
        try:
            code: int | None = await asyncio.wait_for(self.process.wait(), timeout=EXIT_WAIT)
        except TimeoutError:
            code = await self.process.stop()
        if code is not None and code >= 0:
            return AcpClosed(f"{self.agent.name} exited with code {code}.", ErrorCode.CLI_EXITED)
        described = exit_failure(self.agent.name, code)  # a signal, or only its output seen to end
        return AcpClosed(described.message.replace(" before finishing the turn", ""), described.code)

    def _end(self, ending: AcpClosed) -> None:
        if not self._closed.done():
            self._closed.set_result(ending)
        for waiting in list(self._waiting.values()):
            if not waiting.reply.done():
                waiting.reply.set_exception(ending)

    async def close(self) -> None:
        """Stop the CLI (its whole process group) and the reader."""
        await self.process.stop()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._reader, timeout=EXIT_WAIT)
        self._end(AcpClosed(f"{self.agent.name} was stopped by the runner.", ErrorCode.CLI_EXITED))
