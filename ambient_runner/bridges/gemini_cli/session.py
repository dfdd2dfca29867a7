"""One Gemini CLI turn: start the process, translate its output, decide how the turn ended, clean up.

A turn is one ``gemini --prompt= ... --output-format stream-json`` process (``--resume <session>`` for later
turns of a thread), the prompt on stdin. The session id from ``init`` is saved in the session map once the turn
has finished (or was interrupted after the model answered): the CLI writes no session file when a thread's first
turn fails (API error, malformed stream, crash), and mapping it at ``init`` made every later turn fail to resume.
The terminal event is held back until the process has exited, so a finished run never leaves a CLI behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ag_ui.core import BaseEvent, RawEvent, RunErrorEvent, RunFinishedEvent

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_gemini_cli import GeminiCliAdapter, describe_exit
from ambient_runner.bridges.contract import BridgeError, Turn
from ambient_runner.bridges.session_map import SessionMap
from ambient_runner.bridges.turn_loop import Step, TurnHooks, stream_turn
from ambient_runner.interrupts.parked import LiveTurn, Pauses, TurnEnd
from ambient_runner.process.descendants import GroupTracker
from ambient_runner.process.errors import ProcessStartError
from ambient_runner.process.line_reader import OutputLine
from ambient_runner.process.supervisor import ProcessLimits, SupervisedProcess

log = logging.getLogger(__name__)

EXIT_WAIT = 15.0  # s to wait for the CLI to exit after its result line
INTERRUPT_ESCALATION = 3.0  # s after SIGINT before the group is terminated


@dataclass
class TurnSpec:
    """Everything one turn's process needs."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    resume_session: str | None
    limits: ProcessLimits = field(default_factory=ProcessLimits)
    prompt: str | None = None  # what goes to the CLI's stdin, when it is not the turn's prompt as it came


@dataclass
class ActiveTurn:
    process: SupervisedProcess
    tools: GroupTracker
    interrupted: bool = False
    escalation: asyncio.Task[None] | None = None


class TurnRunner:
    """Runs turns and remembers the live one per thread (for ``interrupt``)."""

    def __init__(self, sessions: SessionMap) -> None:
        self.sessions = sessions
        self.active: dict[str, ActiveTurn] = {}

    async def interrupt(self, thread_id: str) -> bool:
        """SIGINT to the turn's process group (the CLI stops at once, exit code 0, no result line)."""
        active = self.active.get(thread_id)
        if active is None:
            return False
        active.interrupted = True
        active.tools.scan()  # a command started a moment ago: note its group before the CLI ends it
        active.process.signal_group(signal.SIGINT)
        if active.escalation is None:
            active.escalation = asyncio.create_task(self._escalate(active))
        return True

    @staticmethod
    async def _escalate(active: ActiveTurn) -> None:
        await asyncio.sleep(INTERRUPT_ESCALATION)
        if active.process.returncode is None:
            await active.process.stop(signal.SIGTERM)

    async def start(self, turn: Turn, spec: TurnSpec) -> ProcessTurn | None:
        """The turn's process started (None: the run was stopped before it could start)."""
        if turn.interrupted.is_set():  # stopped before the CLI was started: nothing to run
            return None
        try:
            process = await SupervisedProcess.start(
                spec.argv, cwd=spec.cwd, env=spec.env, stdin_data=(spec.prompt or turn.prompt).encode("utf-8"),
                stderr_tail=turn.stderr_tail, limits=spec.limits)
        except ProcessStartError as exc:
            raise BridgeError.of_start(exc) from exc
        # The CLI echoes the prompt on stdout and calls process.exit() without waiting for queued output, so a
        # reader that is briefly behind a big line loses the end of the turn: a larger pipe holds it.
        process.enlarge_stdout_pipe()
        # the CLI runs shell tools in their own process groups
        tools = GroupTracker(process.pid, tag=process.tag).start()
        active = ActiveTurn(process, tools)
        self.active[turn.thread_id] = active
        if turn.interrupted.is_set():  # asked while the process was being started
            await self.interrupt(turn.thread_id)
        return ProcessTurn(_lines_then_exit(process), GeminiCliAdapter(turn.thread_id, turn.run_id), active=active,
                           spec=spec)

    async def close(self, turn: Turn, live: ProcessTurn) -> None:
        """The turn's process and the tool processes it started end, whatever happened."""
        active = live.active
        if self.active.get(turn.thread_id) is active:
            del self.active[turn.thread_id]
        if active.escalation is not None:
            active.escalation.cancel()
        try:
            await live.stream.aclose()
            await active.process.stop(signal.SIGTERM)
        finally:
            await asyncio.shield(active.tools.kill())

    @staticmethod
    def exit_error(exit_code: int | None, spec: TurnSpec, turn: Turn,
                   resume_hint: Callable[[str], str]) -> BridgeError:
        stderr = turn.stderr_tail.text()
        if exit_code == 42 and spec.resume_session:
            return BridgeError(resume_hint(spec.resume_session), code=ErrorCode.RESUME_FAILED, stderr_tail=stderr)
        described = describe_exit(exit_code)
        return BridgeError(described.message, code=described.code, stderr_tail=stderr)


async def _wait(process: SupervisedProcess) -> int | None:
    try:
        return await asyncio.wait_for(process.wait(), timeout=EXIT_WAIT)
    except TimeoutError:
        log.warning("gemini (pid %s) did not exit %.0fs after its output ended; stopping it",
                    process.pid, EXIT_WAIT)
        with contextlib.suppress(Exception):
            await process.stop(signal.SIGTERM)
        return process.returncode


@dataclass(frozen=True)
class Exited:
    """The last item of a turn's stream: the CLI's exit code (None: it did not exit in time and was stopped)."""

    code: int | None


async def _lines_then_exit(process: SupervisedProcess) -> AsyncGenerator[OutputLine | Exited, None]:
    async for line in process.lines():
        yield line
    yield Exited(await _wait(process))


@dataclass
class ProcessTurn(LiveTurn[AsyncGenerator[OutputLine | Exited, None], GeminiCliAdapter]):
    """A turn's process as the turn loop streams it: its lines, then its exit; the terminal event is held back
    until the process has exited, so a finished run never leaves a CLI behind."""

    active: ActiveTurn = field(kw_only=True)
    spec: TurnSpec = field(kw_only=True)
    terminal: BaseEvent | None = None
    answered: bool = False  # the model said something (a session worth keeping even when interrupted)


class StreamJsonTurns(TurnHooks[AsyncGenerator[OutputLine | Exited, None], GeminiCliAdapter]):
    """The turn hooks of ``gemini -p --output-format stream-json``: one process a turn, ``spec`` says how."""

    def __init__(self, runner: TurnRunner, spec: Callable[[Turn], TurnSpec], resume_hint: Callable[[str], str],
                 rename: Callable[[BaseEvent], BaseEvent]) -> None:
        self.runner = runner
        self.spec = spec
        self.resume_hint = resume_hint
        self.rename = rename  # the MCP tools' names as the runner's configuration spells them

    async def start_turn(self, turn: Turn) -> ProcessTurn | None:
        return await self.runner.start(turn, self.spec(turn))

    def translate(self, turn: Turn, live: LiveTurn[Any, Any], item: OutputLine | Exited) -> Step:
        assert isinstance(live, ProcessTurn)
        if isinstance(item, Exited):
            return self._exited(turn, live, item.code)
        events = []
        for event in live.adapter.feed(item.text, item.dropped_bytes):
            if isinstance(event, RunFinishedEvent | RunErrorEvent):
                live.terminal = event
            else:
                live.answered = live.answered or not isinstance(event, RawEvent)
                events.append(self.rename(event))
        return Step(events)

    def _exited(self, turn: Turn, live: ProcessTurn, exit_code: int | None) -> Step:
        adapter, terminal = live.adapter, live.terminal
        kept = isinstance(terminal, RunFinishedEvent) or (live.active.interrupted and live.answered)
        if adapter.session_id and kept:
            self.runner.sessions.set(turn.thread_id, adapter.session_id)
        if live.active.interrupted:
            return Step(done=True)  # the core ends the run as cancelled
        if isinstance(terminal, RunErrorEvent):
            raise BridgeError.of_event(terminal, turn.stderr_tail.text())
        if terminal is not None:
            return Step([terminal], done=True)
        # what is open closed first, then how the CLI ended
        return Step(adapter.finish(), error=self.runner.exit_error(exit_code, live.spec, turn, self.resume_hint))

    async def close_turn(self, turn: Turn, live: LiveTurn[Any, Any]) -> None:
        assert isinstance(live, ProcessTurn)
        await self.runner.close(turn, live)

    async def events(self, turn: Turn, pauses: Pauses) -> AsyncGenerator[BaseEvent, None]:
        """One turn through its own process, outside a run's loop (the ACP bridge's fallback): never paused."""
        live = await self.start_turn(turn)
        if live is None:
            return
        async with aclosing(stream_turn(turn, live, self, pauses, TurnEnd(), last=True)) as events:
            async for event in events:
                yield event
