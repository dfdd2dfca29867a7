"""What the bridges share, written once: ``BridgeBase``, the bridge contract's defaults, and ``CliBridge``, the base
of the Claude, Codex, Gemini and ACP bridges.

It owns, so a runner's ``bridge.py`` holds only what differs about its CLI:

* the run options (``options``, a declared ``RunnerOptions``): parsing ``forwardedProps`` and listing them, with
  the models, in ``/capabilities``;
* the offline scripted model server (``scripted_model``): started at ``startup`` when ``RUNNER_SCRIPTED_MODEL``
  is on, stopped at ``shutdown`` (the object stays, so its request log is still readable);
* one auth protocol (``Credentials``: ``ok``, ``problem``, ``missing``, ``secrets``), resolved once and again
  when the scripted server starts; the model proxy in front of the upstream it names;
* the redaction list (the credential, the AG-UI token, the MCP servers' secrets);
* the thread -> CLI session map of the state dir (``sessions``);
* the core's host (``host``, ``bridges.host``), given at construction, with a person's turn (``hitl``: approvals,
  questions, the turns waiting for an answer); the waiting turns end at ``shutdown`` before the CLI is stopped.

A runner implements ``resolve_auth``, ``model_upstream``, ``features`` (what ``/capabilities`` says it can do),
``readiness`` and ``interrupt``, the ``prepare`` / ``stop_cli`` hooks, and how its CLI starts, streams and cancels
a turn (``turn_loop.TurnHooks``, usually the bridge itself): ``run_turn`` is the one turn loop
(``turn_loop.run_turn``) with those hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from ag_ui.core import BaseEvent

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges import turn_loop
from ambient_runner.bridges.contract import BridgeError, Capabilities, Readiness, StateFiles, Turn
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.lazy import LazyModules
from ambient_runner.bridges.options import RunnerOptions, RunOptions, model_only
from ambient_runner.bridges.session_map import SessionMap
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.mcp import config as mcp_config
from ambient_runner.model_proxy import ModelProxy, Upstream
from ambient_runner.scripted_models.base import ScriptedModelServer
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.workflows import AgentPlace

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 40.0  # s for the waiting turns, then the CLI, to end at shutdown


class Credentials(Protocol):
    """How a CLI authenticates, as the base needs to know it."""

    @property
    def ok(self) -> bool: ...

    @property
    def problem(self) -> str: ...  # why it cannot work, for a person ("" when ``ok``)

    @property
    def missing(self) -> Sequence[str]: ...  # the variables to set

    @property
    def secrets(self) -> Sequence[str]: ...  # the values never to show


AuthT = TypeVar("AuthT", bound=Credentials)
OFFLINE_HINT = ("To try the runner offline instead, set RUNNER_SCRIPTED_MODEL=true (the built-in scripted model on "
                "127.0.0.1; `make run` does this by itself when no credentials are set).")


class BridgeBase(ABC):
    """The defaults of the bridge contract (``contract.Bridge``): the core's host kept, the optional parts doing
    nothing, the rest abstract. ``CliBridge`` and the tests' fake bridges start from it."""

    runner_type: ClassVar[str]
    framework: str
    attachment_types: frozenset[str] = frozenset()
    steering: bool = False
    model_proxy: ModelProxy | None = None
    sdk: LazyModules | None = None

    _host: BridgeHost | None = None

    @property
    def host(self) -> BridgeHost:
        """Given at construction; a bridge built without one has its own, detached (its person's turn in memory),
        which the run manager it joins takes."""
        if self._host is None:
            self._host = BridgeHost()
        return self._host

    @property
    def hitl(self) -> HumanInTheLoop:
        """A person's turn: the host's."""
        return self.host.hitl

    async def startup(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    @abstractmethod
    def readiness(self) -> Readiness: ...

    def capabilities(self) -> Capabilities:
        """What it declares (``framework``, ``attachment_types``, ``steering``) and its ``features``: the one report
        of them, which the core also admits runs by."""
        return Capabilities(runner_type=self.runner_type, framework=self.framework,
                            input_mime_types=sorted(self.attachment_types), steering=self.steering, **self.features())

    def features(self) -> dict[str, bool]:
        """The ``Capabilities`` flags this runner sets (reasoning, mcp, approvals, ...)."""
        return {}

    @abstractmethod
    def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]: ...

    @abstractmethod
    async def interrupt(self, thread_id: str) -> None: ...

    async def mcp_status(self) -> list[dict[str, Any]]:
        return []

    def secret_values(self) -> Iterable[str]:
        return ()

    def state_files(self) -> StateFiles:
        return StateFiles()

    def parse_options(self, forwarded_props: Mapping[str, Any] | None) -> RunOptions:
        return model_only(forwarded_props)  # the model alone

    async def steer(self, thread_id: str, text: str) -> bool:
        return False


class CliBridge(BridgeBase, Generic[AuthT]):
    options: RunnerOptions  # declared by each runner (Gemini's depends on its transport)
    scripted_model: type[ScriptedModelServer]  # a runner's model API's stand-in (the ACP runner's: its agent's)

    def __init__(self, settings: RunnerSettings, host: BridgeHost | None = None) -> None:
        self.settings = settings
        self.mcp = settings.mcp_servers
        self._host = host or BridgeHost.of(settings)  # the run manager's (create_bridge), else its own
        self.scripted: ScriptedModelServer | None = None
        self._scripted_running = False
        self._auth: AuthT | None = None
        self._sessions: SessionMap | None = None

    # ----- what a runner writes --------------------------------------------------------------------------
    @abstractmethod
    def resolve_auth(self) -> AuthT:
        """The credentials from the runner's credential settings, read when the bridge was built (the scripted
        server's when ``scripted_url`` is set)."""

    @abstractmethod
    def model_upstream(self) -> Upstream | None:
        """Where the model proxy forwards the CLI's model requests (None: the CLI talks to its API itself)."""

    async def prepare(self) -> None:  # noqa: B027 - optional hook
        """The runner's own start, after the scripted server and the model proxy are up."""

    async def stop_cli(self) -> None:  # noqa: B027 - optional hook
        """End the CLI processes (after the turns waiting for a person have ended)."""

    @abstractmethod
    def turn_hooks(self) -> turn_loop.TurnHooks[Any, Any]:
        """How this runner's CLI starts, streams and cancels a turn (``turn_loop.TurnHooks``)."""

    def check_turn(self, turn: Turn) -> None:  # noqa: B027 - optional hook
        """Before a turn: raise the ``BridgeError`` that says why it cannot run (a missing CLI, no message)."""

    # ----- turns -----------------------------------------------------------------------------------------
    async def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]:
        """A run: the credentials and the turn checked, then the one turn loop with this runner's hooks."""
        self.require_auth()
        self.check_turn(turn)
        async with contextlib.aclosing(turn_loop.run_turn(turn, self.turn_hooks(), self.hitl.turns)) as events:
            async for event in events:
                yield event

    # ----- lifecycle -------------------------------------------------------------------------------------
    async def start_model_proxy(self, upstream: Upstream | None, enabled: bool = True) -> ModelProxy | None:
        """Serve the CLI's model API through the runner's proxy: the CLI then gets ``model_proxy.base_url`` and
        ``model_proxy.placeholder`` instead of the upstream URL and the real credential. Idempotent."""
        if self.model_proxy is None and upstream is not None and enabled:
            self.model_proxy = await ModelProxy(upstream, extra_headers=self.settings.model_gateway_headers).start()
        return self.model_proxy

    async def stop_model_proxy(self) -> None:
        if self.model_proxy is not None:
            await self.model_proxy.stop()
            self.model_proxy = None

    def upstream_unreachable_since(self, since: float) -> str | None:
        """The model API host the proxy failed to reach after ``since`` (``time.monotonic()``), if any."""
        return self.model_proxy.unreachable_since(since) if self.model_proxy is not None else None

    async def startup(self) -> None:
        if self._sessions is not None:  # read before the state dir was restored from the store: read it again
            self._sessions.reload()
        if self.settings.runner_scripted_model and not self._scripted_running:
            self.scripted = self.scripted_model().start()
            self._scripted_running = True
            self._auth = None  # the scripted server's credentials from now on
            log.info("scripted model serving at %s", self.scripted.base_url)
        await self.start_model_proxy(self.model_upstream(), self.settings.runner_model_proxy)
        await self.prepare()

    async def shutdown(self) -> None:
        try:
            with contextlib.suppress(TimeoutError):  # the CLIs are stopped all the same
                # the waiting turns end with their CLIs
                await asyncio.wait_for(self.hitl.turns.close(), SHUTDOWN_TIMEOUT)
            await asyncio.wait_for(self.stop_cli(), SHUTDOWN_TIMEOUT)
        finally:
            if self.scripted is not None and self._scripted_running:
                self.scripted.stop()
                self._scripted_running = False
            await self.stop_model_proxy()

    @property
    def scripted_url(self) -> str | None:
        """The running scripted model server's URL (None when it is off or not started yet)."""
        return self.scripted.base_url if self.scripted is not None and self._scripted_running else None

    # ----- credentials -----------------------------------------------------------------------------------
    @property
    def auth(self) -> AuthT:
        if self._auth is None:
            self._auth = self.resolve_auth()
        return self._auth

    def require_auth(self) -> AuthT:
        """The credentials, or the run's ``AUTH_MISSING`` error saying what to set."""
        auth = self.auth
        if not auth.ok:
            raise BridgeError(f"{auth.problem} {OFFLINE_HINT}", code=ErrorCode.AUTH_MISSING)
        return auth

    def require_workspace(self) -> None:
        """The workspace made when it is missing, or the run's ``WORKSPACE_MISSING`` error saying why it cannot be."""
        workspace = self.settings.workspace_path
        try:
            workspace.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BridgeError(f"The workspace {workspace} cannot be used: {exc}",
                              code=ErrorCode.WORKSPACE_MISSING) from exc

    def readiness_of(self, missing: list[str], details: list[str], start_problem: str | None = None) -> Readiness:
        """``/ready`` from what the runner found missing (``missing``: the variables to set, ``details``: why, in
        words), then the model's credentials (or the scripted server not started yet), then why the CLI did not
        start with the runner (``start_problem``)."""
        if self.settings.runner_scripted_model and self.scripted_url is None:
            details.append("The scripted model server is not started yet.")
        elif not self.auth.ok:
            missing.extend(self.auth.missing)
            details.append(self.auth.problem)
        if start_problem:
            details.append(start_problem)
        return Readiness(not details, missing, " ".join(details))

    def place(self, turn: Turn) -> AgentPlace:
        """Where the turn's CLI works: the core's choice (the active workflow's folder), else the workspace."""
        return turn.place or AgentPlace(self.settings.workspace_path)

    def secret_values(self) -> Iterable[str]:
        return [*self.auth.secrets, *self.settings.secret_values(), *mcp_config.secret_values(self.mcp)]

    # ----- options and description -----------------------------------------------------------------------
    @property
    def default_model(self) -> str | None:
        return self.options.model_default(self.settings)

    def parse_options(self, forwarded_props: Mapping[str, Any] | None) -> RunOptions:
        return self.options.parse(forwarded_props, self.settings)

    def capabilities(self) -> Capabilities:
        """The base's report with the models and options this deployment offers."""
        return super().capabilities().model_copy(update={
            "default_model": self.default_model, "models": self.options.models(self.settings),
            "options": self.options.specs(self.settings)})

    # ----- sessions --------------------------------------------------------------------------------------
    @property
    def sessions(self) -> SessionMap:
        """AG-UI thread -> the CLI's session, in the state dir (read when first used: after the state restore)."""
        if self._sessions is None:
            self._sessions = SessionMap(self.settings.state_dir)
        return self._sessions
