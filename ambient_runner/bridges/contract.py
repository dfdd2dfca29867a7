"""The bridge contract: what every runner (claude, gemini-cli, codex-sdk, acp) implements.

The core service (``ambient_runner.app``) owns HTTP, SSE, the per-thread event log, timeouts, interrupt
escalation and the AG-UI stream guarantees (docs/contracts.md section 3). A bridge only has to:

* ``run_turn(turn)``: an async generator of AG-UI events for one turn. It may yield ``RUN_STARTED``
  (ignored: the core already sent one) and at most one terminal event (``RUN_FINISHED`` with ``usage``/``result``,
  or ``RUN_ERROR``). Ending without a terminal event means success. Raising ``BridgeError`` (or any exception)
  ends the run with ``RUN_ERROR``. Open messages / tool calls / reasoning blocks are closed by the core.
  The generator must release its resources in ``finally`` (the core may ``aclose()`` it on timeout,
  interrupt escalation or shutdown).
* ``interrupt(thread_id)``: ask the CLI politely to stop the current turn (SIGINT, SDK interrupt, ...).
  The core then ends the run with ``RUN_FINISHED`` outcome ``cancelled`` whatever the bridge yields, and
  closes the generator itself if the bridge does not stop within ``RUNNER_INTERRUPT_GRACE`` seconds.
* ``steer(thread_id, text)``: a user message into the live turn, when the bridge's capabilities say it steers.
* ``capabilities()``: what it supports, which the core also admits runs by (the parts a message may bring, whether
  a busy thread's message can be steered); ``readiness()``, ``mcp_status()``, ``startup()``, ``shutdown()``,
  ``secret_values()``, ``parse_options()``, ``state_files()``.

What a bridge is lent rather than implements comes composed: the core's ``BridgeHost`` (``host``, given at
construction, ``bridges.host``: a person's turn, the background tasks and their reports, the between-run channel,
timers), the model proxy (``model_proxy``, started by ``CliBridge``), the SDK imported after
start-up (``sdk``, ``bridges.lazy``) and the run options' parsing (``bridges.options``). This module holds the
contract only (``Bridge``, a ``Protocol``, and the values it passes); the defaults a bridge may take are
``bridges.base.BridgeBase``.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from pydantic import Field

from ag_ui_cli_common.errors import ErrorCode, RunnerError, error_code
from ambient_runner.bridges.caller import Caller
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.bridges.options import CamelModel, OptionSpec, RunOptions
from ambient_runner.model_proxy import ModelProxy
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.stderr_tail import StderrTail
from ambient_runner.workspace.workflows import AgentPlace


class BridgeError(RunnerError):
    """A failure the user can act on. ``message`` is shown as the ``RUN_ERROR`` message."""

    code = ErrorCode.AGENT_ERROR

    def __init__(self, message: str, *, code: ErrorCode = ErrorCode.AGENT_ERROR, stderr_tail: str = "") -> None:
        super().__init__(message, code=code)
        self.stderr_tail = stderr_tail

    @classmethod
    def of_event(cls, event: RunErrorEvent, stderr_tail: str = "") -> BridgeError:
        """An adapter's ``RUN_ERROR`` as the run's error (the core puts the stderr tail after the message)."""
        return cls(event.message, code=error_code(event.code), stderr_tail=stderr_tail)

    @classmethod
    def of_start(cls, error: ProcessStartError) -> BridgeError:
        """The supervisor's start error (a CLI not found or not executable), as the run's error."""
        return cls(error.message, code=error.code)


@dataclass(frozen=True)
class Readiness:
    """``/ready``: ``ready`` only when the CLI/SDK is present and credentials are configured."""

    ready: bool
    missing: list[str] = field(default_factory=list)
    detail: str = ""


class Capabilities(CamelModel):
    """``GET /capabilities``: what this bridge supports; the core reads it too (the parts a run may bring, whether a
    busy thread's message can be steered)."""

    runner_type: str
    # this runner's id in the platform's agent registry (its UI matches the two); the ACP runner's follows its preset
    framework: str
    streaming_text: bool = True
    reasoning: bool = False
    tool_calls: bool = True
    resume: bool = True
    interrupt: bool = True
    mcp: bool = False
    state_snapshots: bool = False
    state_deltas: bool = False
    approvals: bool = False  # tool approvals and questions as AG-UI interrupts
    client_tools: bool = False  # the run's frontend tools (RunAgentInput.tools) are offered to the agent
    steering: bool = False  # ``steer`` puts a busy thread's message into its live turn (whenBusy: steer)
    subagents: bool = False  # the agent delegates to sub-agents, streamed as SUBAGENT_* segments
    # the image / document parts its CLI takes (anything else in a message is a 422)
    input_mime_types: list[str] = Field(default_factory=list)
    default_model: str | None = None
    models: list[str] = Field(default_factory=list)
    options: list[OptionSpec] = Field(default_factory=list)
    agent: dict[str, Any] | None = None  # what the agent reports of itself (an ACP agent: name, version, modes, models)


@dataclass(frozen=True)
class Attachment:
    """An image or document part of the run's new user messages, checked and written where the CLI reads it
    (``runs.attachments`` collects them)."""

    part: str  # where it came from, for messages and errors
    kind: str  # "image" | "document"
    mime_type: str
    data: bytes
    path: Path  # the written copy the CLI reads (outside the workspace)

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class StateFiles:
    """The CLI's state dir as the runner keeps it. ``credentials``: its files that hold a credential (never synced;
    on the platform, never there at all); ``logins``: those of them the configured login writes there (a mounted
    login file); ``excludes``: what else state sync leaves out (caches, sockets, logs, temporary files), as globs
    relative to the state dir."""

    credentials: tuple[str, ...] = ()
    logins: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    @property
    def left_out(self) -> tuple[str, ...]:
        """What state sync leaves out: the excludes and every credential file (those come from secrets, never from
        the store)."""
        return (*self.credentials, *self.excludes)


@dataclass
class Turn:
    """One turn the core asks a bridge to run."""

    thread_id: str
    run_id: str
    prompt: str  # the run's new user message(s), joined
    input: RunAgentInput
    options: RunOptions
    # The image / document parts of those messages, checked, bounded and written outside the workspace.
    attachments: Sequence[Attachment] = ()
    stderr_tail: StderrTail = field(default_factory=StderrTail)  # feed CLI stderr here; shown on errors
    # Set by the core when the run is asked to stop, before ``Bridge.interrupt`` is called: a bridge still
    # starting its CLI (nothing to interrupt yet) checks it before it sends the prompt.
    interrupted: asyncio.Event = field(default_factory=asyncio.Event)
    # Who sent the run (the platform's X-Caller-Token / X-Current-User-ID): whose connected accounts it gets.
    caller: Caller = field(default_factory=Caller)
    # Where the CLI works for this turn (the active workflow's folder, reaching the workspace root too); None: the
    # workspace root (``CliBridge.place``).
    place: AgentPlace | None = None


class LateImports(Protocol):
    """The modules a bridge's turns import after start-up, off the path to ``/ready`` (``bridges.lazy.LazyModules``),
    as the core waits on them."""

    async def settled(self) -> None:
        """Returns once their import has ended, in or not (the first turn says why)."""


class Bridge(Protocol):
    """One runner type, as the core calls it: built once per process (``bridges.registry.create_bridge``) with the
    settings and the core's host (``host``); ``bridges.base.BridgeBase`` gives the defaults."""

    runner_type: ClassVar[str]
    model_proxy: ModelProxy | None  # the CLI's model API, when its credential is one the proxy can hold

    @property
    def sdk(self) -> LateImports | None:
        """The SDK its turns import after start-up (``bridges.lazy``); None: nothing left to import."""

    @property
    def host(self) -> BridgeHost:
        """What the core lends it (shared with the run manager): a person's turn (the interrupts the bridge opens and
        waits on, the turns parked meanwhile), the task registry, the between-run channel."""

    # ----- lifecycle -------------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Called once before the first request is served."""

    async def shutdown(self) -> None:
        """Called once when the process stops, after active runs have ended."""

    # ----- what it says of itself ------------------------------------------------------------------------
    def readiness(self) -> Readiness: ...

    def capabilities(self) -> Capabilities: ...

    async def mcp_status(self) -> list[dict[str, Any]]:
        """``GET /mcp-status``: configured MCP servers and whether the CLI connected to them."""

    def secret_values(self) -> Iterable[str]:
        """Configured credential values; the core removes them from every event."""

    def state_files(self) -> StateFiles:
        """Which files of the state dir hold credentials, which of them the configured login writes, and what
        state sync leaves out."""

    # ----- turns -----------------------------------------------------------------------------------------
    def parse_options(self, forwarded_props: Mapping[str, Any] | None) -> RunOptions:
        """Validate the runner options in ``forwardedProps``; raise ``OptionError`` (422) for a bad one (props that
        are not runner options are left alone)."""

    def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]: ...

    async def interrupt(self, thread_id: str) -> None: ...

    async def steer(self, thread_id: str, text: str) -> bool:
        """Give ``text`` (a user message) to the thread's live CLI turn; False when no turn takes it now (the turn
        ended in between: the core queues the message instead)."""

