"""RUNNER_TYPE=claude (alias claude-agent-sdk): Claude Code through claude-agent-sdk's ``ClaudeSDKClient``.

One persistent client (one CLI process) per AG-UI thread, partial messages on, translated to AG-UI by
``ag_ui_claude``. The thread -> Claude session id map is persisted as soon as the CLI reports its session, so
a new runner instance with the same state dir resumes the conversation (``--resume``). The SDK (about a second to
import, with its MCP stack) and the adapter are imported in a thread once the bridge has started (``LazyModules``), so
``/ready`` does not wait for them; the first turn does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ag_ui.core import BaseEvent, Tool, ToolCallResultEvent, ToolCallStartEvent

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.claude.approvals import permission, request_for
from ambient_runner.bridges.claude.auth import (
    ClaudeAuth,
    ClaudeCredentials,
    model_upstream,
    resolve_auth,
    scripted_auth,
    through_proxy,
)
from ambient_runner.bridges.claude.config import (
    EFFORTS,
    build_options,
    carry_session,
    claude_environment,
    find_cli,
    launcher_dir,
    process_group_launcher,
)
from ambient_runner.bridges.claude.frontend_tools import FrontendCalls, is_frontend, own_name, tools_key
from ambient_runner.bridges.claude.frontend_tools import request_for as frontend_request
from ambient_runner.bridges.claude.frontend_tools import server_config as frontend_server
from ambient_runner.bridges.claude.mcp_status import ClaudeMcpStatus
from ambient_runner.bridges.contract import BridgeError, Readiness, StateFiles, Turn
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.lazy import LazyModules
from ambient_runner.bridges.options import RunnerOptions
from ambient_runner.bridges.tasks import BackgroundTask, TaskNotStoppableError
from ambient_runner.bridges.turn_loop import Step, TurnHooks
from ambient_runner.interrupts.book import Answer, PendingInterrupt
from ambient_runner.interrupts.parked import LiveTurn
from ambient_runner.mcp.render import claude_servers
from ambient_runner.model_proxy import Upstream
from ambient_runner.scripted_models.anthropic import AnthropicScriptedServer
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.workflows import AgentPlace

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from claude_agent_sdk import ClaudeAgentOptions, PermissionResultAllow, PermissionResultDeny

    from ag_ui_claude import ClaudeEventAdapter
    from ambient_runner.bridges.claude.session import ClaudeSession

    ClaudeTurn = LiveTurn[AsyncGenerator[Any, None], ClaudeEventAdapter]

OPTIONS = RunnerOptions(runner="the Claude runner", efforts=EFFORTS, approvals=True,
                        mode_note="plan = Claude Code's plan permission mode (read-only tools)",
                        effort_note="Claude Code --effort (thinking depth)")

log = logging.getLogger(__name__)


class ClaudeBridge(CliBridge[ClaudeAuth], TurnHooks["AsyncGenerator[Any, None]", "ClaudeEventAdapter"]):
    runner_type = "claude"
    framework = "claude-agent-sdk"
    attachment_types = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})
    steering = True  # a user message written while a turn runs
    options = OPTIONS
    sdk: LazyModules  # imported in a thread once started (bridges.lazy)
    scripted_model = AnthropicScriptedServer

    def __init__(self, settings: RunnerSettings, host: BridgeHost | None = None) -> None:
        super().__init__(settings, host)
        self.credentials = ClaudeCredentials()  # the Anthropic variables, read once
        self._clients: dict[str, ClaudeSession] = {}  # thread -> its Claude Code process
        self._cli_path: Path | None = None
        self._mcp_status = ClaudeMcpStatus(self.mcp)
        self._stopped: dict[str, str] = {}  # tool call -> why it was refused with its turn stopped
        self._frontend_tools: dict[str, list[Tool]] = {}  # thread -> the frontend tools of its latest run
        self._places: dict[str, AgentPlace] = {}  # thread -> where its latest run works (a workflow's folder)
        self._room = asyncio.Lock()  # RUNNER_MAX_LIVE_CLIS: one thread at a time makes room for its CLI
        self._starting: set[str] = set()  # threads whose turn is starting or running a CLI it may not have yet
        self._frontend_calls = FrontendCalls()
        self.sdk = LazyModules("claude", "ambient_runner.bridges.claude.session", "ag_ui_claude", "ag_ui_claude.tasks")

    # ----- lifecycle -------------------------------------------------------------------------------------
    def state_files(self) -> StateFiles:
        """CLAUDE_CONFIG_DIR keeps projects/<cwd>/<session>.jsonl (the sessions); leave out the login, debug logs,
        shell snapshots and caches."""
        return StateFiles(credentials=(".credentials.json",),
                          excludes=("debug", "shell-snapshots", "statsig", "cache", "*.sock", "*.lock"))

    async def prepare(self) -> None:
        os.environ.setdefault("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK", "1")  # read by the SDK in this process
        (self.settings.state_dir / "home").mkdir(parents=True, exist_ok=True)
        self.sdk.start()

    async def stop_cli(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
        launcher = launcher_dir()
        if launcher.exists():
            shutil.rmtree(launcher, ignore_errors=True)
        self._cli_path = None  # a CLI started after this (a restart) writes its launcher again

    # ----- status ----------------------------------------------------------------------------------------
    def turn_hooks(self) -> Self:
        return self  # the bridge is its CLI's turn hooks

    def resolve_auth(self) -> ClaudeAuth:
        if self.settings.runner_scripted_model:
            return scripted_auth(self.scripted_url or "http://127.0.0.1:0")
        return resolve_auth(self.credentials.variables())

    def model_upstream(self) -> Upstream | None:
        return model_upstream(self.auth)

    def readiness(self) -> Readiness:
        if find_cli(self.settings) is None:
            return Readiness(False, ["CLAUDE_CLI_PATH"],
                             "The Claude Code CLI was not found (claude-agent-sdk bundles it; or set CLAUDE_CLI_PATH).")
        auth = self.auth
        if not auth.ok:
            return Readiness(False, auth.missing, auth.problem)
        return Readiness(True, detail=f"claude credentials: {auth.source}")

    def features(self) -> dict[str, bool]:
        return {"reasoning": True, "mcp": True, "approvals": True, "client_tools": True, "subagents": True}

    async def mcp_status(self) -> list[dict[str, Any]]:
        return self._mcp_status.status()

    # ----- turns (the loop around them: bridges.turn_loop) ---------------------------------------------------
    async def start_turn(self, turn: Turn) -> ClaudeTurn:
        if not turn.prompt.strip():
            raise BridgeError("The run has no user message to send to Claude.", code=ErrorCode.EMPTY_PROMPT)
        await self.sdk.ready()
        from ag_ui_claude import ClaudeEventAdapter
        from ambient_runner.bridges.claude.session import DEFAULT_PERMISSION_MODE

        session = self._session(turn.thread_id)
        await self._make_room(turn.thread_id)
        model = turn.options.model or self.default_model
        permission_mode = "plan" if turn.options.mode == "plan" else DEFAULT_PERMISSION_MODE
        self._frontend_tools[turn.thread_id] = list(turn.input.tools or ())
        place = self._places[turn.thread_id] = self.place(turn)
        # A workflow switch (its folder replaced, maybe moved) starts the CLI again there, resuming the session
        process_key = f"{tools_key(self._frontend_tools[turn.thread_id])}|{place.cwd}|{place.generation}"
        messages = session.turn(user_content(turn), model, turn.stderr_tail, effort=turn.options.reasoning_effort,
                                permission_mode=permission_mode, interrupted=turn.interrupted,
                                process_key=process_key)
        return LiveTurn(messages, ClaudeEventAdapter(turn.thread_id, turn.run_id))

    def translate(self, turn: Turn, live: ClaudeTurn, item: Any) -> Step:
        """One message of the CLI: a background task's news first, then its events (a frontend tool under the
        application's name, a refusal that stopped the turn with the person's words)."""
        from ag_ui_claude.tasks import task_report

        self._mcp_status.note(item)
        adapter = live.adapter
        events = adapter.feed(item)  # first: it learns which tasks are foreground sub-agents
        out: list[BaseEvent] = []
        report = task_report(item)
        if report is not None and not adapter.subagents.owns(report.task_id):  # a background task
            task_event = self.host.task_event(turn.thread_id, report, stop=self._stop_task)
            if task_event is not None:
                out.append(task_event)
        for event in events:
            if isinstance(event, ToolCallStartEvent) and is_frontend(event.tool_call_name):
                event = event.model_copy(update={"tool_call_name": own_name(event.tool_call_name)})
            if isinstance(event, ToolCallResultEvent) and event.tool_call_id in self._stopped:
                # Claude Code words a refusal that stops the turn as the user's; say why it was refused
                why = self._stopped.pop(event.tool_call_id)
                event = event.model_copy(update={"content": f"{why}\n\n{event.content}"})
            out.append(event)
        return Step(out)

    async def close_turn(self, turn: Turn, live: ClaudeTurn) -> None:
        try:
            await live.stream.aclose()  # the session's turn ends (interrupted when it still runs)
        finally:
            self._starting.discard(turn.thread_id)

    async def _gate(self, thread_id: str, tool_name: str, tool_input: dict[str, Any], context: Any
                    ) -> PermissionResultAllow | PermissionResultDeny:
        """``can_use_tool``: allowed at once, or put to a person as an interrupt while the CLI waits."""
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny  # a turn's: imported by then

        tool_call_id = str(getattr(context, "tool_use_id", "") or f"{tool_name}-{id(context)}")
        if is_frontend(tool_name):  # runs at once; its MCP handler then waits for the application's result
            self._frontend_calls.note_call(thread_id, self.hitl.ask(
                thread_id, frontend_request(tool_name, tool_input, tool_call_id)))
            return PermissionResultAllow(updated_input=tool_input)
        request = request_for(tool_name, tool_input, tool_call_id, self.hitl.turns.policy(thread_id))
        if request is None:
            return PermissionResultAllow(updated_input=tool_input)
        answer = await self._answer_of(thread_id, self.hitl.ask(thread_id, request))
        if answer is None:
            return PermissionResultDeny(message="The runner stopped before anyone answered.", interrupt=True)
        if answer.stop_turn and answer.message:
            self._stopped[tool_call_id] = answer.message
        return permission(answer, request, tool_input)

    async def _frontend_result(self, thread_id: str, name: str) -> Answer:
        """A frontend tool's MCP handler: the application's result for the call the gate noted."""
        pending = self._frontend_calls.take(thread_id, name)
        if pending is None:
            return Answer(approved=False, message=f"The call of {name} was not expected (no permission request).")
        answer = await self._answer_of(thread_id, pending)
        if answer is None:
            return Answer(approved=False, message="The runner stopped before the application answered.")
        return answer

    async def _answer_of(self, thread_id: str, pending: PendingInterrupt) -> Answer | None:
        """Tell the thread's running turn that the CLI waits, then wait for the answer (None: the runner stopped
        first)."""
        session = self._clients.get(thread_id)
        if session is not None:
            await session.pause(pending.id)
        try:
            return await pending.answer
        except asyncio.CancelledError:  # the book was closed: the runner is stopping
            return None

    async def steer(self, thread_id: str, text: str) -> bool:
        session = self._clients.get(thread_id)
        return session is not None and await session.steer(text)

    async def interrupt(self, thread_id: str) -> None:
        session = self._clients.get(thread_id)
        if session is not None:
            await session.interrupt()

    async def _stop_task(self, task: BackgroundTask) -> None:
        session = self._clients.get(task.thread_id)
        if session is None or not await session.stop_task(task.task_id):
            raise TaskNotStoppableError(f"the Claude Code process of task {task.task_id} is gone")

    def _between_turns(self, thread_id: str, item: Any) -> None:
        """A message the CLI printed while no turn of the thread runs: a background task's news."""
        from ag_ui_claude.tasks import task_report

        report = task_report(item)
        event = self.host.task_event(thread_id, report, stop=self._stop_task) if report is not None else None
        if event is not None:
            self.host.publish(event)

    # ----- sessions --------------------------------------------------------------------------------------
    async def _make_room(self, thread_id: str) -> None:
        """At most ``RUNNER_MAX_LIVE_CLIS`` Claude Code processes: before a thread's CLI starts, the least recently
        used idle ones are closed (their threads resume their saved sessions on their next run, as after a pod
        restart). Never one whose thread runs, waits for a person, or has a background task still running."""
        if self._clients[thread_id].pid is not None:
            return
        async with self._room:  # one at a time: two threads starting together must not both count the same room
            self._starting.add(thread_id)  # counted as live until its turn ends (its CLI starts in between)
            live = [t for t, s in self._clients.items()
                    if (s.pid is not None or t in self._starting) and t != thread_id]
            excess = len(live) + 1 - self.settings.runner_max_live_clis
            for other in live:  # least recently used first (``_session`` moves a used thread to the end)
                if excess <= 0:
                    break
                if self._evictable(other):
                    # closed under the lock: a run of that thread arriving now starts its new CLI after this one ended
                    await self._clients.pop(other).close()
                    excess -= 1
                    log.info("closed the idle Claude Code of thread %s (RUNNER_MAX_LIVE_CLIS=%d): its next run "
                             "resumes its session", other, self.settings.runner_max_live_clis)

    def _evictable(self, thread_id: str) -> bool:
        if thread_id in self._starting:
            return False
        session = self._clients[thread_id]
        running = any(t.thread_id == thread_id and t.status == "running" for t in self.host.tasks.list())
        return session.idle and not self.hitl.turns.parked(thread_id) and not running

    def _session(self, thread_id: str) -> ClaudeSession:
        session = self._clients.pop(thread_id, None)
        if session is not None:
            self._clients[thread_id] = session  # the most recently used last
        else:
            from ambient_runner.bridges.claude.session import ClaudeSession

            session_map = self.sessions
            session = ClaudeSession(
                thread_id, self._options_factory(thread_id), session_id=session_map.get(thread_id),
                on_session_id=lambda session_id: session_map.set(thread_id, session_id),
                between_turns=lambda item: self._between_turns(thread_id, item))
            self._clients[thread_id] = session
        return session

    def _options_factory(self, thread_id: str):  # noqa: ANN202 - see worker.OptionsFactory
        def make(resume: str | None, model: str | None, stderr, effort: str | None = None  # noqa: ANN001
                 ) -> ClaudeAgentOptions:
            cli = find_cli(self.settings)
            if cli is None:
                raise BridgeError("The Claude Code CLI was not found.", code=ErrorCode.CLI_NOT_FOUND)
            if self._cli_path is None:
                self._cli_path = process_group_launcher(cli, launcher_dir())
            env = claude_environment(self.settings, through_proxy(self.auth, self.model_proxy).env,
                                     passthrough=self.mcp.references())
            place = self._places.get(thread_id)
            if resume and place is not None:
                carry_session(self.settings.state_dir, resume, place.cwd)
            return build_options(self.settings, cli_path=self._cli_path, env=env, model=model, resume=resume,
                                 place=place,
                                 stderr=stderr, effort=effort, mcp_servers={
                                     **claude_servers(self.mcp), **frontend_server(
                                         thread_id, self._frontend_tools.get(thread_id, ()), self._frontend_result)},
                                 can_use_tool=lambda name, tool_input, context: self._gate(
                                     thread_id, name, tool_input, context))

        return make


def user_content(turn: Turn) -> str | list[dict[str, Any]]:
    """The turn's message for Claude: its text, or content blocks with its images and documents before the text."""
    if not turn.attachments:
        return turn.prompt
    blocks: list[dict[str, Any]] = [
        {"type": a.kind, "source": {"type": "base64", "media_type": a.mime_type, "data": a.base64}}
        for a in turn.attachments]
    return [*blocks, {"type": "text", "text": turn.prompt}]
