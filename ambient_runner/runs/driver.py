"""Driving one run: the bridge's events through the run's stream guard into its thread, within the idle and
wall-clock timeouts (they fire even when the CLI prints nothing); failures become ``RUN_ERROR`` with the CLI's
stderr tail; an interrupted run ends ``RUN_FINISHED`` outcome ``cancelled``; a message for a busy thread goes into its
live turn where the CLI takes one (``steer``). Then the run settles: the thread is free, the after-run hooks run (the
state sync).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunAgentInput,
    RunErrorEvent,
)

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.contract import Bridge, BridgeError
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.attachments import discard_written
from ambient_runner.runs.busy import STEERED_INTO
from ambient_runner.runs.thread import ActiveRun, AfterRunHook, BeforeRunHook, RunObserver, ThreadState
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.outcome import Ending

log = logging.getLogger(__name__)

SHUTDOWN_MESSAGE = ("The runner is shutting down (its pod is being replaced or stopped), so this run was stopped. "
                    "Send the message again to continue; the conversation is kept.")

# Errors the runner itself decided: an unreachable model API never renames them.
RUNNER_OWN_CODES = {ErrorCode.SHUTDOWN, ErrorCode.IDLE_TIMEOUT, ErrorCode.RUN_TIMEOUT, ErrorCode.AUTH_MISSING,
                    ErrorCode.CLI_NOT_FOUND, ErrorCode.MCP_CONFIG}


class RunDriver:
    """Drives the runs of every thread; built once by the run manager, which owns the hooks and observers it
    reads."""

    def __init__(self, settings: RunnerSettings, metrics: RunnerMetrics,
                 bridge: Callable[[], Bridge | None], before_run_hooks: list[BeforeRunHook],
                 after_run_hooks: list[AfterRunHook], observers: list[RunObserver]) -> None:
        self.settings = settings
        self.metrics = metrics
        self.bridge = bridge  # the manager's, once loaded
        self.before_run_hooks = before_run_hooks
        self.after_run_hooks = after_run_hooks
        self.observers = observers

    def accept(self, state: ThreadState, run: ActiveRun, events: Iterable[BaseEvent] = (), *,
               ending: Ending | None = None, close_messages: bool = False) -> None:
        """``events`` of ``run`` into its thread (``ThreadState.accept``), with how the runner is stopping it;
        ``ending``: the run ends so; ``close_messages``: its open messages close first."""
        state.accept(run, [self._named(run, event) for event in events], stopping=self._stopping(run),
                     ending=ending, close_messages=close_messages)

    async def steer(self, state: ThreadState, run_input: RunAgentInput, text: str) -> ActiveRun | None:
        """Give ``text`` to the thread's live turn; the run it went into, or None when no turn took it (the run
        ended meanwhile or is being stopped, or the CLI could not take it): the caller queues it then. Call under
        ``state.steering``."""
        run, bridge = state.active, self.bridge()
        if run is None or state.queue or bridge is None or self._stopping(run) is not None:
            return None
        try:
            taken = await bridge.steer(run.thread_id, text)
        except Exception:  # a bridge that fails to steer: the message is queued instead
            log.exception("steering a message into run %s failed", run.run_id)
            taken = False
        if not taken:
            return None
        # The CLI has it: never queued as well (it would reach the CLI twice), even when the run ended meanwhile
        # (then the thread's next snapshot holds it).
        state.conversation.add_input(run_input)
        if state.active is run and not run.guard.terminated:
            ids = [m.id for m in run_input.messages if m.role == "user"]
            self.accept(state, run, [CustomEvent(name=STEERED_INTO, value={
                "messageId": ids[-1] if ids else "", "runId": run_input.run_id})])
        return run

    async def drive(self, state: ThreadState, run: ActiveRun) -> None:
        settings = self.settings
        deadline = run.started_at + settings.runner_run_timeout
        ending = Ending()
        bridge = self.bridge()
        assert bridge is not None, "runs start only once the bridge is loaded"
        stream: AsyncIterator[BaseEvent] = _nothing()
        try:
            if lost := run.resumption.lost_message:  # nothing for the bridge to go on with: the run only says so
                ending = Ending(error_message=lost, error_code=ErrorCode.INTERRUPT_LOST)
            else:
                for hook in self.before_run_hooks:
                    self.accept(state, run, await hook(run))
                stream = bridge.run_turn(run.turn)
            while not run.guard.terminated:
                now = time.monotonic()
                wall_left = deadline - now
                wait = min(settings.runner_idle_timeout, wall_left)
                try:
                    async with asyncio.timeout(max(wait, 0)):
                        event = await anext(stream)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    ending = self._timeout_ending(run, wall_left <= settings.runner_idle_timeout)
                    break
                self.accept(state, run, [event])
        except asyncio.CancelledError:
            # Interrupt escalation or shutdown cancelled the bridge; the run still gets its terminal event.
            if not (run.cancel_requested or run.shutdown_requested):
                raise
        except BridgeError as exc:
            ending = Ending(error_message=_with_stderr(exc.message, exc.stderr_tail or run.turn.stderr_tail.text()),
                            error_code=exc.code)
        except Exception as exc:  # a bridge bug must still end the run cleanly
            log.exception("bridge %s failed in run %s", bridge.runner_type, run.run_id)
            ending = Ending(error_message=_with_stderr(f"The runner failed: {type(exc).__name__}: {exc}",
                                                       run.turn.stderr_tail.text()), error_code=ErrorCode.RUNNER_ERROR)
        finally:
            try:
                await _close_quietly(stream)
                if not run.guard.terminated:
                    self.accept(state, run, ending=self._stopping(run) or self._named_ending(run, ending))
            except Exception:  # writing the end failed (a full disk): the thread must still take its next run
                log.exception("ending run %s failed", run.run_id)
            finally:
                await self._settle(state, run)

    async def _settle(self, state: ThreadState, run: ActiveRun) -> None:
        """The run's last steps, whatever happened before: the thread is free, hooks run, ``settled`` is set."""
        try:
            state.release(run)  # never left busy, even when the terminal event could not be written
            discard_written(run.turn.attachments)
            self.metrics.run_finished(run.guard.outcome, time.monotonic() - run.started_at, run.guard.usage)
            run.done.set()  # interrupt() waits for this; the hooks (state sync) need not hold it up
            for hook in self.after_run_hooks:
                try:
                    await hook(run, run.guard.outcome)
                except Exception:
                    log.exception("after-run hook failed for run %s", run.run_id)
        finally:
            run.done.set()
            run.settled.set()
            for observer in self.observers:
                observer.run_settled(run)

    def _named(self, run: ActiveRun, event: BaseEvent) -> BaseEvent:
        """A bridge's ``RUN_ERROR`` with the model API the proxy could not reach named (``_unreachable``)."""
        if isinstance(event, RunErrorEvent) and (message := self._unreachable(run, event.code, event.message)):
            return event.model_copy(update={"message": message, "code": ErrorCode.UPSTREAM_UNREACHABLE})
        return event

    def _named_ending(self, run: ActiveRun, ending: Ending) -> Ending:
        """The runner's end of a run, an error's model API named as in ``_named``."""
        if ending.error_message and (message := self._unreachable(run, ending.error_code, ending.error_message)):
            return replace(ending, error_message=message, error_code=ErrorCode.UPSTREAM_UNREACHABLE)
        return ending

    def _unreachable(self, run: ActiveRun, code: str | None, message: str) -> str | None:
        """The CLI only knows the runner's model proxy on 127.0.0.1: an error's ``message`` led by which model API
        could not be reached since the run started; None for the runner's own errors and when the API answered."""
        if code in RUNNER_OWN_CODES:
            return None
        bridge = self.bridge()
        proxy = bridge.model_proxy if bridge is not None else None
        host = proxy.unreachable_since(run.started_at) if proxy is not None else None
        if host is None:
            return None
        return (f"The model API at {host} could not be reached (the runner's model proxy got no answer from it); "
                f"check the network and the configured endpoint.\n\n{message}")

    @staticmethod
    def _stopping(run: ActiveRun) -> Ending | None:
        """How the run ends when the runner is stopping it (shutdown wins over an interrupt)."""
        if run.shutdown_requested:
            return Ending(error_message=SHUTDOWN_MESSAGE, error_code=ErrorCode.SHUTDOWN)
        if run.cancel_requested:
            return Ending(cancelled=True)
        return None

    def _timeout_ending(self, run: ActiveRun, wall: bool) -> Ending:
        if wall:
            message = (f"The run exceeded its time limit of {self.settings.runner_run_timeout:g} s "
                       "(RUNNER_RUN_TIMEOUT) and was stopped.")
            code = ErrorCode.RUN_TIMEOUT
        else:
            message = (f"The agent produced no output for {self.settings.runner_idle_timeout:g} s "
                       "(RUNNER_IDLE_TIMEOUT) and was stopped.")
            code = ErrorCode.IDLE_TIMEOUT
        return Ending(error_message=_with_stderr(message, run.turn.stderr_tail.text()), error_code=code)


async def _nothing() -> AsyncIterator[BaseEvent]:
    return
    yield


def _with_stderr(message: str, stderr_tail: str) -> str:
    if not stderr_tail:
        return message
    return f"{message}\n\nLast lines of the agent's stderr:\n{stderr_tail}"


async def _close_quietly(stream: object) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    task = asyncio.ensure_future(aclose())
    try:
        async with asyncio.timeout(30):
            await asyncio.shield(task)
    except (asyncio.CancelledError, TimeoutError, Exception):  # noqa: BLE001 - cleanup must not raise
        log.debug("closing a bridge stream raised", exc_info=True)
