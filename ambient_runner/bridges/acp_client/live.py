"""The pod's one live ACP agent (``gemini --acp``, ``opencode acp``, ...): started at boot, answered ``initialize``
before ``/ready``, started again when it died, and the ACP sessions it holds (created or loaded), each routed to the
turn that is using it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_gemini_cli.acp_schema import (
    PROTOCOL_VERSION,
    AcpModel,
    CancelledOutcome,
    ClientCapabilities,
    CloseSessionParams,
    CommandsUpdate,
    EmptyResult,
    FileSystemCapability,
    Implementation,
    InitializeParams,
    InitializeResult,
    JsonRpcMessage,
    LoadSessionParams,
    LoadSessionResult,
    McpServer,
    NewSessionParams,
    NewSessionResult,
    RequestId,
    RequestPermissionParams,
    RequestPermissionResponse,
    SessionNotification,
    SetConfigOptionParams,
    SetModelParams,
    SetModeParams,
    SetTitleParams,
    UpdateNotification,
    first_error,
)
from ambient_runner.bridges.acp_client.connection import AGENT, AcpClosed, AcpConnection, AcpError, AgentName
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.process.descendants import GroupTracker, group_exists, reap_in_background
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.process.supervisor import ProcessLimits, SupervisedProcess

log = logging.getLogger(__name__)
INITIALIZE_TIMEOUT = 90.0  # s (about 1.3 s measured; a loaded machine or a slow MCP server takes longer)
SESSION_TIMEOUT = 120.0  # s for session/new and session/load (MCP servers start here)
REPLAY_WAIT = 2.0  # s a load's replayed history may go on arriving after its reply
CANCELLED = RequestPermissionResponse(outcome=CancelledOutcome())
METHOD_NOT_FOUND = -32601  # JSON-RPC: the method does not exist
LOAD, RESUME = "session/load", "session/resume"  # the two ways to open a session the process does not hold
CLIENT = InitializeParams(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(
    fs=FileSystemCapability(read_text_file=False, write_text_file=False), terminal=False))

# ("update", SessionUpdate) | ("permission", request id, RequestPermissionParams)
Sink = Callable[[tuple[Any, ...]], None]


@dataclass(frozen=True)
class CliCommand:
    """How to start the CLI: what the bridge knows at the time of each (re)start."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    limits: ProcessLimits = field(default_factory=ProcessLimits)


@dataclass
class AcpSession:
    id: str
    mode: str | None = None
    model: str | None = None
    model_option: str | None = None  # the id of its config option of category ``model`` (ACP v1), if it has one


def reopens(capabilities: Mapping[str, Any], resume_first: bool = False) -> tuple[str, ...]:
    """How an agent whose ``initialize`` reported ``capabilities`` opens a session it does not hold (after a
    restart): ``session/load`` (``loadSession``), ``session/resume`` (``sessionCapabilities.resume``), in the order
    to try; empty: neither."""
    session = capabilities.get("sessionCapabilities")
    offered = [method for method, yes in ((LOAD, capabilities.get("loadSession") is True),
                                          (RESUME, isinstance(session, dict) and session.get("resume") is not None))
               if yes]
    return tuple(reversed(offered) if resume_first else offered)


def closes(capabilities: Mapping[str, Any]) -> bool:
    """Whether an agent whose ``initialize`` reported ``capabilities`` closes a session on ``session/close``."""
    session = capabilities.get("sessionCapabilities")
    return isinstance(session, dict) and session.get("close") is not None


def cannot_reopen(agent: str) -> str:
    return (f"{agent} cannot continue this conversation: the agent was restarted since its last turn, and it can "
            "neither load nor resume an earlier session (its ACP initialize offers neither session/load nor "
            "session/resume). Start a new session to go on; to keep conversations across restarts, use an agent "
            "version that supports session/load or session/resume.")


class LiveAgent:
    def __init__(self, command: Callable[[], CliCommand], agent: AgentName = AGENT,
                 mcp_servers: Callable[[], list[McpServer]] = list, session_meta: Mapping[str, Any] | None = None,
                 title: str = "", resume_first: bool = False) -> None:
        self._command = command
        self.agent = agent
        self.mcp_servers = mcp_servers  # given to session/new and session/load (Gemini: none, its settings have them)
        self.session_meta = dict(session_meta or {})  # their ``_meta`` (an agent's own options), none when empty
        self.title = title  # each new session's (``session/set_title``; codex-acp asks a model for one without)
        self._connection: AcpConnection | None = None
        self._lock = asyncio.Lock()
        self.sessions: dict[str, AcpSession] = {}  # what the live process holds
        self._sinks: dict[str, Sink] = {}
        self.stderr_tail = StderrTail()
        self.tools: GroupTracker | None = None  # the shell tools' process groups (the CLI starts them)
        self.started_at: float | None = None
        self.initialize_seconds: float | None = None
        self.agent_info: Implementation | None = None
        self.reopens: tuple[str, ...] = ()  # LOAD, RESUME: those its ``initialize`` offers, the one to use first
        self.closes = False  # its ``initialize`` offers ``session/close``
        self.resume_first = resume_first  # RESUME before LOAD when it offers both
        self._watcher: asyncio.Task[None] | None = None
        self.restarts = 0  # started again after dying by itself
        self.offered: dict[str, list[str]] = {}  # the modes and models the last session/new or load reported
        self._start_problem: str | None = None  # why the start at the runner's start failed (``start_early``)

    # ----- the process -----------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._connection is not None and self._connection.alive

    async def start_early(self) -> None:
        """Start the agent with the runner, so that ``/ready`` means "the agent answered initialize"; a failure is
        kept for ``/ready`` (``start_problem``) and the first turn starts it again."""
        try:
            await self.connection()
        except (AcpClosed, BridgeError) as exc:
            self._start_problem = f"{self.agent.name} did not start: {exc}"
            log.error("%s", self._start_problem)

    @property
    def start_problem(self) -> str | None:
        """Why the agent did not start with the runner, while it does not run."""
        return None if self.alive else self._start_problem

    @property
    def pgid(self) -> int | None:
        return self._connection.process.pgid if self.alive and self._connection is not None else None

    async def connection(self) -> AcpConnection:
        """The live process's channel, started (and initialized) when there is none or it died."""
        async with self._lock:
            if self._connection is not None and self._connection.alive:
                return self._connection
            await self._discard()
            self._connection = await self._start()
            return self._connection

    async def _start(self) -> AcpConnection:
        """Started and initialized; an ``AcpClosed`` carries what the CLI printed when it could not start."""
        mark = self.stderr_tail.count
        try:
            return await self._started()
        except AcpClosed as exc:
            exc.stderr = exc.stderr or "\n".join(self.stderr_tail.since(mark))
            raise

    async def _started(self) -> AcpConnection:
        command = self._command()
        started = time.monotonic()
        try:
            process = await SupervisedProcess.start(command.argv, cwd=command.cwd, env=command.env,
                                                    stdin_pipe=True, stderr_tail=self.stderr_tail,
                                                    limits=command.limits)
        except ProcessStartError as exc:
            raise AcpClosed(exc.message, exc.code) from exc
        process.enlarge_stdout_pipe()
        connection = AcpConnection(process, self._on_notification, self._on_request, self.agent)
        try:
            reply = await connection.request("initialize", CLIENT, InitializeResult, within=INITIALIZE_TIMEOUT)
        except TimeoutError:
            await connection.close()
            raise AcpClosed(f"{self.agent.name} did not answer ACP initialize within {INITIALIZE_TIMEOUT:.0f} s.",
                            ErrorCode.CLI_START_TIMEOUT) from None
        except BaseException:
            await connection.close()
            raise
        self.tools = GroupTracker(process.pid, tag=process.tag).start()
        self._watcher = asyncio.create_task(self._watch(connection), name=f"acp-watch-{process.pid}")
        self.started_at = started
        self.initialize_seconds = time.monotonic() - started
        self.agent_info = reply.agent_info
        self.reopens = reopens(reply.agent_capabilities, self.resume_first)
        self.closes = closes(reply.agent_capabilities)
        log.info("%s (pid %s) initialized in %.2f s", self.agent.label, process.pid, self.initialize_seconds)
        return connection

    async def _watch(self, connection: AcpConnection) -> None:
        """A CLI that dies by itself: what it left (its tools' processes) is ended at once, and a new one started
        (once: a CLI that cannot start is reported by the next run, not retried in a loop)."""
        ending = await connection.closed()
        async with self._lock:
            if self._connection is not connection:
                return  # closed by the runner, or already replaced
            log.warning("%s (pid %s) died: %s; starting it again", self.agent.label, connection.process.pid,
                        ending.message)
            await self._discard()
        self.restarts += 1
        try:
            await self.connection()
        except Exception as exc:  # noqa: BLE001 - the next run reports it with its own error
            log.error("%s could not be started again: %s", self.agent.label, exc)

    def tool_groups(self) -> set[int]:
        """The process groups of the agent's descendants now (its commands', when it starts them in their own)."""
        if self.tools is None:
            return set()
        self.tools.scan()
        return self.tools.live_groups()

    def end_tool_groups(self, groups: set[int]) -> None:
        """SIGTERM to ``groups`` (commands the agent left running after a cancel); their orphans reaped later."""
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)

    def reap_tools(self) -> None:
        """A prompt ended: reap, in the background, its tools' processes that were re-parented to the runner (the
        CLI kills a cancelled command's group; its orphans are ours to collect). Groups that are gone are
        forgotten."""
        if self.tools is not None:
            reap_in_background(set(self.tools.groups))
            self.tools.groups = {g for g in self.tools.groups if group_exists(g)}

    async def _discard(self) -> None:
        """Forget a dead process: its sessions, and the tool processes it left behind."""
        connection, self._connection = self._connection, None
        self.sessions.clear()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
        if connection is not None:
            await connection.close()
        tools, self.tools = self.tools, None
        if tools is not None:
            await asyncio.shield(tools.kill())

    async def close(self) -> None:
        async with self._lock:
            await self._discard()

    async def died(self) -> AcpClosed | None:
        """How the live process ended (None while it lives)."""
        if self._connection is None or self._connection.alive:
            return None
        return await self._connection.closed()

    # ----- sessions ----------------------------------------------------------------------------------------
    async def new_session(self, cwd: Path) -> AcpSession:
        connection = await self.connection()
        params = NewSessionParams.model_validate({"cwd": str(cwd), "mcpServers": self.mcp_servers(), **self._meta()})
        reply = await connection.request("session/new", params,
                                         NewSessionResult, within=SESSION_TIMEOUT)
        session = _session(reply.session_id, reply)
        if self.title:
            await connection.request("session/set_title", SetTitleParams(session_id=session.id, title=self.title),
                                     AcpModel)
        self.sessions[session.id] = session
        self.offered = offered(reply)
        return session

    async def load_session(self, session_id: str, cwd: Path, replay: Sink | None = None) -> AcpSession:
        """``session/load`` (or ``session/resume``: ``reopens``): a load replays the history as updates, some after
        its reply; they are not this run's, so they are dropped (or given to ``replay``) until the replay's closing
        commands list (bounded)."""
        connection = await self.connection()
        if self.reopens[:1] == (RESUME,):
            return self._opened(session_id, await connection.request(RESUME, self._reopen_params(session_id, cwd),
                                                                     LoadSessionResult, within=SESSION_TIMEOUT))
        replayed = asyncio.Event()

        def replaying(item: tuple[Any, ...]) -> None:
            if _is_commands(item):
                replayed.set()
            elif replay is not None:
                replay(item)

        self._sinks[session_id] = replaying
        try:
            reply = await connection.request(LOAD, self._reopen_params(session_id, cwd), LoadSessionResult,
                                             within=SESSION_TIMEOUT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(replayed.wait(), timeout=REPLAY_WAIT)
        finally:
            self._sinks.pop(session_id, None)
        return self._opened(session_id, reply)

    async def close_session(self, session_id: str) -> bool:
        """``session/close`` for a session the process holds; False (the session kept) when the agent refuses."""
        if session_id not in self.sessions:
            return True
        try:
            await (await self.connection()).request("session/close", CloseSessionParams(session_id=session_id),
                                                    EmptyResult, within=SESSION_TIMEOUT)
        except (AcpError, TimeoutError) as exc:
            log.warning("%s did not close session %s (%s): kept open", self.agent.label, session_id, exc)
            return False
        self.sessions.pop(session_id, None)
        return True

    def _reopen_params(self, session_id: str, cwd: Path) -> LoadSessionParams:
        """session/load's and session/resume's (the same fields)."""
        return LoadSessionParams.model_validate({"sessionId": session_id, "cwd": str(cwd),
                                                 "mcpServers": self.mcp_servers(), **self._meta()})

    def _opened(self, session_id: str, reply: LoadSessionResult) -> AcpSession:
        session = _session(session_id, reply)
        self.sessions[session_id] = session
        self.offered = offered(reply)
        return session

    def _meta(self) -> dict[str, Any]:
        return {"_meta": self.session_meta} if self.session_meta else {}

    async def set_mode(self, session: AcpSession, mode: str) -> None:
        if session.mode != mode:
            await (await self.connection()).request("session/set_mode",
                                                    SetModeParams(session_id=session.id, mode_id=mode), EmptyResult)
            session.mode = mode

    async def set_model(self, session: AcpSession, model: str) -> None:
        """The session's model: its config option of category ``model`` (``session/set_config_option``) when it
        has one, else (or when the agent answers -32601) ``session/set_model``."""
        if session.model == model:
            return
        connection = await self.connection()
        if session.model_option is not None:
            try:
                await connection.request("session/set_config_option", SetConfigOptionParams(
                    session_id=session.id, config_id=session.model_option, value=model), AcpModel)
            except AcpError as exc:
                if exc.error.code != METHOD_NOT_FOUND:
                    raise
                session.model_option = None
            else:
                session.model = model
                return
        await connection.request("session/set_model", SetModelParams(session_id=session.id, model_id=model),
                                 EmptyResult)
        session.model = model

    def route(self, session_id: str, sink: Sink) -> None:
        self._sinks[session_id] = sink

    def unroute(self, session_id: str, sink: Sink) -> None:
        if self._sinks.get(session_id) is sink:
            del self._sinks[session_id]

    # ----- what the CLI sends ------------------------------------------------------------------------------
    def _on_notification(self, message: UpdateNotification | JsonRpcMessage) -> None:
        """A ``session/update`` to the turn using its session; one that does not fit ACP (no session, an update
        that is not an object) is logged and dropped, as are other notifications."""
        if isinstance(message, UpdateNotification):
            notification = message.params
        elif message.method == "session/update":
            try:
                notification = SessionNotification.model_validate(message.params)
            except ValidationError as exc:
                log.warning("%s sent a session/update that does not fit ACP, dropped: %s", self.agent.label,
                            first_error(exc))
                return
        else:
            return
        sink = self._sinks.get(notification.session_id)
        if sink is not None:
            sink(("update", notification.update))

    def _on_request(self, request_id: RequestId | None, method: str, params: dict[str, Any]) -> None:
        """``session/request_permission`` to the turn using its session (one that does not fit ACP, or of a
        session no turn uses, is answered ``cancelled``); any other request is answered -32601 at once (the
        client offers no ``fs/*`` or ``terminal/*``, and an agent's own extensions are not known here)."""
        sink = self._sinks.get(str(params.get("sessionId")))
        if method == "session/request_permission" and sink is not None:
            try:
                sink(("permission", request_id, RequestPermissionParams.model_validate(params)))
                return
            except ValidationError as exc:
                log.warning("%s sent a permission request that does not fit ACP, refused: %s", self.agent.label,
                            first_error(exc))
        if method == "session/request_permission":
            asyncio.create_task(self.respond(request_id, CANCELLED))
        elif self._connection is not None:
            asyncio.create_task(self._connection.respond_error(request_id, METHOD_NOT_FOUND,
                                                               f"Method not found: {method}"))

    async def respond(self, request_id: RequestId | None, result: RequestPermissionResponse | EmptyResult) -> None:
        if self._connection is not None:
            await self._connection.respond(request_id, result)


def offered(reply: LoadSessionResult) -> dict[str, list[str]]:
    """The modes and models a session reports (``modes``, ``models``, the model config option's values)."""
    option = _model_option(reply)
    values = option.get("options") if option is not None else None
    models = [str(v["value"]) for v in values if isinstance(v, dict) and "value" in v] if isinstance(values, list) \
        else []
    if not models and reply.models is not None:
        models = [m.model_id for m in reply.models.available_models]
    return {"modes": [m.id for m in reply.modes.available_modes] if reply.modes else [], "models": models}


def _session(session_id: str, reply: LoadSessionResult) -> AcpSession:
    option = _model_option(reply)
    model = reply.models.current_model_id if reply.models else None
    if option is not None and isinstance(option.get("currentValue"), str):
        model = option["currentValue"]
    return AcpSession(session_id, mode=reply.modes.current_mode_id if reply.modes else None, model=model,
                      model_option=str(option["id"]) if option is not None else None)


def _model_option(reply: LoadSessionResult) -> dict[str, Any] | None:
    """The session's config option of category ``model`` (``configOptions``, ACP v1), if any."""
    options = (reply.model_extra or {}).get("configOptions")
    for option in options if isinstance(options, list) else ():
        if isinstance(option, dict) and option.get("category") == "model" and isinstance(option.get("id"), str):
            return option
    return None


def _is_commands(item: tuple[Any, ...]) -> bool:
    return item[0] == "update" and isinstance(item[1], CommandsUpdate)

