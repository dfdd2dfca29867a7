"""RUNNER_TYPE=codex-sdk: OpenAI Codex through the official ``openai-codex`` SDK (``codex app-server``).

* One app-server for the pod's life (``session.AppServer``), started on the first turn, restarted if it died.
* The SDK (``openai_codex``: about a second to import) is imported in a thread once the bridge has started
  (``LazyModules``), so ``/ready`` does not wait for it; the first turn does.
* One Codex thread per AG-UI thread; the mapping is persisted in ``SessionMap(state_dir)`` so a replaced pod
  continues with ``thread_resume``.
* ``interrupt`` uses the SDK's ``turn.interrupt()``: the turn completes with status ``interrupted``, the run
  ends (the core marks it cancelled) and the thread stays usable.
* CODEX_HOME = ``settings.state_dir`` (config.toml written at start, see ``config``); HOME = a runner dir
  next to it, never the real home. Only the auth variable the provider needs reaches the app-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ag_ui_cli_common import code_for_exit, how_it_ended
from ag_ui_cli_common.errors import ErrorCode
from ag_ui_codex_sdk import CodexEventAdapter
from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.codex_sdk.approvals import (
    auto_answer,
    bind_mcp_calls,
    codex_thread_of,
    decision,
    dynamic_tools,
    request_for,
)
from ambient_runner.bridges.codex_sdk.auth import (
    CREDENTIAL_FILES,
    KEY_KINDS,
    CodexAuth,
    CodexCredentials,
    install_auth_file,
    model_upstream,
    resolve_auth,
    scripted_auth,
    through_proxy,
)
from ambient_runner.bridges.codex_sdk.config import DEFAULT_MODEL, OPENAI_API_BASE, CodexConfigFile, bundled_codex
from ambient_runner.bridges.codex_sdk.turn_control import end_commands_since, interrupt_turn
from ambient_runner.bridges.contract import BridgeError, Readiness, StateFiles, Turn
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.lazy import LazyModules
from ambient_runner.bridges.options import RunnerOptions
from ambient_runner.bridges.turn_loop import Step, TurnHooks
from ambient_runner.interrupts.parked import LiveTurn, PausableFeed
from ambient_runner.mcp import config as mcp_config
from ambient_runner.mcp.render import codex_servers
from ambient_runner.mcp.status import configured
from ambient_runner.model_proxy import Upstream
from ambient_runner.process.descendants import GroupTracker
from ambient_runner.process.environment import agent_environment, agent_values
from ambient_runner.scripted_models.openai_responses import OpenAIResponsesServer
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.workflows import AgentPlace

if TYPE_CHECKING:
    from openai_codex import ImageInput, TextInput

    from ambient_runner.bridges.codex_sdk.session import AppServer

log = logging.getLogger(__name__)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
# printed at every start when CODEX_HOME is under /tmp (it then skips its arg0 helper links; nothing breaks)
PAUSE_SETTLE = 2.0  # s a request may wait for the stream to show its tool call before the run ends anyway
HARMLESS_STDERR = ("WARNING: proceeding, even though we could not create PATH aliases",)
OPTIONS = RunnerOptions(runner="the Codex runner", default_model=DEFAULT_MODEL, efforts=REASONING_EFFORTS,
                        approvals=True,
                        mode_note="plan = read-only sandbox and Codex's plan collaboration mode for the turn",
                        effort_note="Codex reasoning effort")


CodexTurn = LiveTurn[PausableFeed, CodexEventAdapter]


@dataclass
class CodexThread:
    """What the bridge keeps of one AG-UI thread: its Codex thread, and its turn while one runs (or waits)."""

    codex_thread_id: str | None = None  # the Codex thread (requests from the app-server name it)
    app: AppServer | None = None  # the app-server the thread's turn runs in
    handle: Any = None  # the running turn's AsyncTurnHandle
    feed: PausableFeed | None = None  # the turn's stream (``Paused`` markers join it)
    # the process groups under the app-server while the turn runs; its first scan: those from before the turn
    tools: GroupTracker | None = None

    def end_turn(self) -> None:
        self.handle = self.feed = self.tools = None


class CodexBridge(CliBridge[CodexAuth], TurnHooks[PausableFeed, CodexEventAdapter]):
    runner_type: ClassVar[str] = "codex-sdk"
    framework = "codex-sdk"
    attachment_types = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
    steering = True  # turn/steer
    options = OPTIONS
    sdk: LazyModules  # imported in a thread once started (bridges.lazy)
    scripted_model = OpenAIResponsesServer

    def __init__(self, settings: RunnerSettings, host: BridgeHost | None = None) -> None:
        super().__init__(settings, host)
        self.credentials = CodexCredentials()  # the OpenAI variables, read once
        self.codex_home = Path(settings.state_dir)
        self.runner_home = Path(settings.runner_state_root) / ".codex-runner-home"
        self.codex_bin, self.path_dir = bundled_codex()
        self._app: AppServer | None = None
        self._launch: tuple[list[str], dict[str, str]] | None = None  # written at startup for the first app-server
        self._app_place: tuple[Path, int] | None = None  # the folder (and workflow switch) it was configured for
        self.sdk = LazyModules("codex-sdk", "ambient_runner.bridges.codex_sdk.session",
                               "ambient_runner.bridges.codex_sdk.mcp_status",
                               "ambient_runner.bridges.codex_sdk.turn_feed")
        self._prepare_lock = asyncio.Lock()
        self._threads: dict[str, CodexThread] = {}  # AG-UI thread id -> its Codex thread and running turn
        self._mcp_ready: set[tuple[int, str]] = set()  # (app-server, Codex thread) whose MCP startup was awaited
        self._mcp_thread: str | None = None  # latest such thread: /mcp-status reports its connections
        self._requests: set[asyncio.Task[None]] = set()

    # ----- lifecycle -------------------------------------------------------------------------------------
    def turn_hooks(self) -> Self:
        return self  # the bridge is its CLI's turn hooks

    def resolve_auth(self) -> CodexAuth:
        scripted = self.scripted_url
        return scripted_auth(f"{scripted}/v1") if scripted else resolve_auth(self.credentials.variables())

    def model_upstream(self) -> Upstream | None:
        return model_upstream(self.auth)

    def state_files(self) -> StateFiles:
        """CODEX_HOME keeps config.toml, sessions/ (rollouts) and its sqlite state; leave out logs, caches and
        the mounted ChatGPT login."""
        return StateFiles(credentials=CREDENTIAL_FILES,
                          logins=CREDENTIAL_FILES if self.auth.kind == "auth_json" else (),
                          excludes=(".env", "log", "tmp", ".tmp", "cache", "*.sock"))

    async def prepare(self) -> None:
        (self.codex_home / ".env").unlink(missing_ok=True)  # Codex loads it over its environment: never ours
        self._launch = self._configure()  # CODEX_HOME now; the app-server starts with the first turn
        self.sdk.start()

    async def stop_cli(self) -> None:
        app, self._app = self._app, None
        self._launch = None  # the next app-server is configured again (its environment may have changed)
        if app is not None:
            await app.close()

    def _installed_codex(self) -> Path:
        if self.codex_bin is None:
            raise BridgeError("The codex binary was not found: install openai-codex-cli-bin.",
                              code=ErrorCode.CLI_NOT_FOUND)
        return self.codex_bin

    def _configure(self, place: AgentPlace | None = None) -> tuple[list[str], dict[str, str]]:
        """Write CODEX_HOME (config.toml, auth.json): the app-server's ``-c`` overrides and environment, for an
        app-server whose agent works in ``place`` (its folders untrusted: the trust rule)."""
        self._installed_codex()
        auth = through_proxy(self.auth, self.model_proxy)
        mcp = self._mcp_render()
        place = place or AgentPlace(Path(self.settings.workspace_path))
        self._app_place = (place.cwd, place.generation)
        overrides = self.write_config(auth, mcp.lines, untrusted=(Path(self.settings.workspace_path), place.cwd))
        self.runner_home.mkdir(parents=True, exist_ok=True)
        env = agent_environment({"CODEX_HOME": str(self.codex_home), "HOME": str(self.runner_home),
                               **mcp.aliases, **auth.environment()}, passthrough=mcp.passthrough)
        return overrides, env

    async def _prepare(self, place: AgentPlace | None = None) -> AppServer:
        """CODEX_HOME written (at startup, or again for a new app-server) and the (not yet started) app-server; one
        that was started for an earlier workflow's folder is stopped first (no turn is held across a switch)."""
        async with self._prepare_lock:
            if self._app is not None and place is not None and self._app_place != (place.cwd, place.generation):
                await self.stop_cli()
            if self._app is not None:
                return self._app
            launch = self._launch if place is None or self._app_place == (place.cwd, place.generation) else None
            overrides, env = launch or self._configure(place)
            self._launch = None
            await self.sdk.ready()
            from ambient_runner.bridges.codex_sdk.session import AppServer

            self._app = AppServer(codex_bin=self._installed_codex(), codex_home=self.codex_home,
                                  workspace=Path(self.settings.workspace_path), env=env, path_dir=self.path_dir,
                                  overrides=overrides, on_request=self._on_request)
            return self._app

    def _mcp_render(self):  # noqa: ANN202 - ambient_runner.mcp.render.CodexMcp
        try:
            return codex_servers(self.mcp, agent_values(self.mcp.references()))
        except mcp_config.McpConfigError as exc:
            raise BridgeError(str(exc), code=ErrorCode.MCP_CONFIG) from None

    def write_config(self, auth: CodexAuth, mcp_lines: list[str] | None = None,
                     untrusted: tuple[Path, ...] = ()) -> list[str]:
        """Write config.toml and auth.json; returns the same choices as the app-server's ``-c`` overrides."""
        extra: dict[str, object] = {}
        base_url: str | None = auth.base_url
        if auth.kind in KEY_KINDS:
            base_url = base_url or OPENAI_API_BASE
        elif auth.kind == "auth_json":
            if base_url:
                extra["openai_base_url"] = base_url
            base_url = None  # ChatGPT login: Codex's built-in provider
        config = CodexConfigFile(model=self.default_model, base_url=base_url, env_key=auth.env_key,
                                 extra=extra, mcp_lines=tuple(mcp_lines or ()))
        config.write(self.codex_home)
        install_auth_file(auth, self.codex_home)
        return config.session_overrides(untrusted)

    # ----- description -----------------------------------------------------------------------------------
    @property
    def default_model(self) -> str:  # Codex always has one: the runner's own default when none is configured
        return super().default_model or DEFAULT_MODEL

    def readiness(self) -> Readiness:
        if self.codex_bin is None:
            return Readiness(False, ["openai-codex-cli-bin"], "the bundled codex binary is not installed")
        if not self.auth.ok:
            return Readiness(False, list(self.auth.missing), self.auth.problem)
        return Readiness(True)

    def features(self) -> dict[str, bool]:
        return {"reasoning": True, "state_snapshots": True, "state_deltas": True, "approvals": True,
                "client_tools": True, "mcp": True}

    async def mcp_status(self) -> list[dict[str, Any]]:
        app = self._app
        if app is None:  # no app-server yet: each configured server as configured
            return configured(self.mcp)
        from ambient_runner.bridges.codex_sdk.mcp_status import list_mcp_status

        return await list_mcp_status(self.mcp, app.codex, self._mcp_thread)

    # ----- turns (the loop around them: bridges.turn_loop) ---------------------------------------------------
    async def start_turn(self, turn: Turn) -> CodexTurn | None:
        from ambient_runner.bridges.codex_sdk.turn_feed import turn_notifications

        app = await self._prepare(self.place(turn))
        if turn.interrupted.is_set():  # asked while the app-server was starting: no turn is started
            return None
        model = turn.options.model or self.default_model
        handle = await self._start_turn(app, turn, model)
        record = self._thread(turn.thread_id)
        record.feed = PausableFeed(turn_notifications(handle))
        return LiveTurn(record.feed, CodexEventAdapter(turn.thread_id, turn.run_id, model=model,
                                                       client_state=turn.input.state))

    async def next_item(self, live: CodexTurn, waiting: bool) -> Any:
        # while a request is open, the run ends once the stream has shown its tool call, or after PAUSE_SETTLE
        return await live.stream.get(PAUSE_SETTLE if waiting else None)

    def translate(self, turn: Turn, live: CodexTurn, item: Any) -> Step:
        events = live.adapter.feed(item)
        return Step(events, done=live.adapter.terminal is not None)

    def pause_ready(self, turn: Turn, live: CodexTurn, item: Any) -> bool:
        pending = self.hitl.book.pending(turn.thread_id)
        bind_mcp_calls(pending, live.adapter)
        return item is None or all(live.adapter.has_started(p.request.tool_call_id) for p in pending)

    def stderr(self, turn: Turn, live: CodexTurn) -> str:
        app = self._thread(turn.thread_id).app
        return self._stderr(turn, app) if app is not None else turn.stderr_tail.text()

    async def failed(self, turn: Turn, live: CodexTurn, exc: Exception) -> BridgeError | None:
        from openai_codex import CodexError

        record = self._thread(turn.thread_id)
        app = record.app
        if not isinstance(exc, CodexError | OSError) or app is None:
            return None
        # the transport closed (or a broken pipe): the app-server died mid-turn
        log.warning("codex app-server failed mid-turn: %s", exc)
        died = await app.exit_code()
        stderr = self._stderr(turn, app)
        if not app.alive:  # end what it left behind (its group, a running command) now, not next turn
            await app.close()
            if record.tools is not None:
                await record.tools.kill()
        how = f" ({how_it_ended(died)})" if died is not None else ""
        return BridgeError(f"The Codex app-server stopped unexpectedly{how}; the next run starts a new one and "
                           "continues the thread.", code=code_for_exit(died), stderr_tail=stderr)

    async def close_turn(self, turn: Turn, live: CodexTurn) -> None:
        record = self._thread(turn.thread_id)
        app = record.app
        if record.tools is not None:
            await record.tools.stop()
        if live.adapter.terminal is None and app is not None and app.alive:  # closed early (timeout, escalation):
            with contextlib.suppress(Exception):  # stop the turn and its running command
                await asyncio.shield(self.interrupt(turn.thread_id))
        record.end_turn()
        await live.stream.aclose()  # the turn feed (turn_feed) closes its turn subscription

    # ----- the app-server's requests -----------------------------------------------------------------------
    def _on_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        """On the event loop, for each request the app-server sends (its reader reads on)."""
        task = asyncio.create_task(self._answer(request_id, method, params), name=f"codex-request-{request_id}")
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        app = self._app
        thread_id = self._agui_thread(codex_thread_of(params))
        request = request_for(method, params, self.hitl.turns.policy(thread_id or ""))
        if app is None:
            return
        if thread_id is None or request is None:
            app.respond(request_id, auto_answer(method, params))
            return
        pending = self.hitl.ask(thread_id, request)
        feed = self._thread(thread_id).feed
        if feed is not None:
            feed.pause(pending.id)
        answer = await self.hitl.answer(pending)
        app.respond(request_id, decision(answer, method, request.arguments.get("questions") or ()))
        self.hitl.turns.note_refusal(thread_id, answer)

    async def _start_turn(self, app: AppServer, turn: Turn, model: str) -> Any:
        from openai_codex import CodexError, Sandbox

        from ambient_runner.bridges.codex_sdk.mcp_status import wait_for_mcp_startup
        from ambient_runner.bridges.codex_sdk.session import start_turn

        codex_thread_id = self.sessions.get(turn.thread_id)
        place = self.place(turn)
        try:
            thread = await app.thread(codex_thread_id, model=model, tools=dynamic_tools(turn.input.tools or ()),
                                      cwd=place.cwd)
        except (CodexError, OSError) as exc:  # OSError: a broken pipe to a dead app-server
            what = f"resume Codex thread {codex_thread_id}" if codex_thread_id else "start a Codex thread"
            died = await app.exit_code()
            stderr = self._stderr(turn, app)
            if died is not None and not app.alive:
                await app.close()
            why = f"the Codex app-server {how_it_ended(died)}" if died is not None else str(exc)
            # the app-server died, or refused
            code = code_for_exit(died) if died is not None else ErrorCode.SESSION_ERROR
            raise BridgeError(f"Could not {what}: {why}", code=code, stderr_tail=stderr) from exc
        self.sessions.set(turn.thread_id, thread.id)
        record = self._thread(turn.thread_id)
        record.codex_thread_id, record.app = thread.id, app
        started = (id(app.codex), thread.id)
        if self.mcp and started not in self._mcp_ready:  # Codex starts MCP servers in the background
            await wait_for_mcp_startup(self.mcp, app.codex, thread.id)
            self._mcp_ready.add(started)
            self._mcp_thread = thread.id
        options: dict[str, Any] = {"model": model}
        if turn.options.reasoning_effort:
            options["effort"] = turn.options.reasoning_effort
        if turn.options.mode == "plan":
            options["sandbox"] = Sandbox.read_only
        # Codex runs commands in their own process groups: if the app-server dies, they are ended with it. The
        # tracker's first scan runs beside turn/start: what it finds (MCP servers, commands left running by earlier
        # turns) an interrupt never ends. A command of this turn comes only after Codex has the model's reply
        # through the runner's proxy, long after that scan (~1 ms) has read the app-server's children.
        record.tools = GroupTracker(app.pgid, tag=app.tag).start() if app.pgid else None
        try:
            ask = self.hitl.turns.policy(turn.thread_id) == "ask"
            handle = await start_turn(thread, turn_input(turn), ask=ask, cwd=place.cwd,
                                      plan=turn.options.mode == "plan", **options)
        except (CodexError, OSError) as exc:  # OSError: a broken pipe to a dead app-server
            if record.tools is not None:
                await record.tools.stop()
            record.tools = None
            raise BridgeError(f"Codex did not start the turn: {exc}", code=ErrorCode.AGENT_ERROR,
                              stderr_tail=self._stderr(turn, app)) from exc
        record.handle = handle
        if turn.interrupted.is_set():  # asked while the app-server or the turn was starting
            await self.interrupt(turn.thread_id)
        return handle

    async def steer(self, thread_id: str, text: str) -> bool:
        """The message into the thread's running Codex turn (``turn/steer`` with that turn's id)."""
        from ambient_runner.bridges.codex_sdk.session import steer_turn

        record = self._threads.get(thread_id)
        handle = record.handle if record is not None else None
        return handle is not None and await steer_turn(handle, text)

    async def interrupt(self, thread_id: str) -> None:
        record = self._threads.get(thread_id)
        handle = record.handle if record is not None else None
        if record is None or handle is None:  # still starting: ``_start_turn`` sees ``turn.interrupted`` once the
            return  # turn exists
        # Taken before the interrupt: the turn can end (and drop its tracker) while Codex handles it.
        tools = record.tools if self._running() == {thread_id} else None
        await interrupt_turn(thread_id, handle, lambda: record.handle is handle)
        if tools is not None:
            await self._end_turn_commands(thread_id, tools)

    async def _end_turn_commands(self, thread_id: str, tools: GroupTracker) -> None:
        """Codex's turn interrupt leaves a running command (its own process group) going. When this is the
        app-server's only active turn, every group that appeared since the turn started is this turn's: end it."""
        before = await tools.first_scan()  # None: tracking stopped before its first scan ended
        if before is None or self._running() - {thread_id}:
            return  # or another thread's turn started meanwhile: its commands cannot be told apart, leave them
        await end_commands_since(thread_id, tools.pid, before)

    # ----- per-thread records ----------------------------------------------------------------------------
    def _thread(self, thread_id: str) -> CodexThread:
        return self._threads.setdefault(thread_id, CodexThread())

    def _agui_thread(self, codex_thread_id: str) -> str | None:
        """The AG-UI thread of a Codex thread (None: not one of ours)."""
        return next((t for t, r in self._threads.items() if r.codex_thread_id == codex_thread_id), None)

    def _running(self) -> set[str]:
        """The AG-UI threads with a Codex turn running."""
        return {t for t, r in self._threads.items() if r.handle is not None}

    @staticmethod
    def _stderr(turn: Turn, app: AppServer) -> str:
        for line in app.stderr_tail(20).splitlines():
            if not line.startswith(HARMLESS_STDERR):
                turn.stderr_tail.add(line)
        return turn.stderr_tail.text()


def turn_input(turn: Turn) -> str | list[TextInput | ImageInput]:
    """The turn's input: its text, or its images (as data urls, the bytes as sent) before the text."""
    if not turn.attachments:
        return turn.prompt
    from openai_codex import ImageInput, TextInput

    images: list[TextInput | ImageInput] = [ImageInput(f"data:{a.mime_type};base64,{a.base64}")
                                            for a in turn.attachments]
    return [*images, TextInput(turn.prompt)]
