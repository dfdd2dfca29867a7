"""Driving one run: the bridge's events through the run's stream guard into its thread, within the idle and
wall-clock timeouts (they fire even when the CLI prints nothing); failures become ``RUN_ERROR`` with the CLI's
stderr tail; an interrupted run ends ``RUN_FINISHED`` outcome ``cancelled``; a run that pauses shows its question
card. Then the run settles: the thread is free, the after-run hooks run (the state sync).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent, RunFinishedInterruptOutcome

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.contract import Bridge, BridgeError
from ambient_runner.interrupts.card import Card
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.attachments import discard_written
from ambient_runner.runs.thread import ActiveRun, AfterRunHook, BeforeRunHook, RunObserver, ThreadState
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.guard import Ending, StreamGuard

log = logging.getLogger(__name__)

SHUTDOWN_MESSAGE = ("The runner is shutting down (its pod is being replaced or stopped), so this run was stopped. "
                    "Send the message again to continue; the conversation is kept.")

# Errors the runner itself decided: an unreachable model API never renames them.
RUNNER_OWN_CODES = {ErrorCode.SHUTDOWN, ErrorCode.IDLE_TIMEOUT, ErrorCode.RUN_TIMEOUT, ErrorCode.AUTH_MISSING,
                    ErrorCode.CLI_NOT_FOUND, ErrorCode.MCP_CONFIG}


class RunDriver:
    """Drives the runs of every thread; built once by the run manager, which owns the hooks and observers it
    reads."""

    def __init__(self, settings: RunnerSettings, hitl: HumanInTheLoop, metrics: RunnerMetrics,
                 bridge: Callable[[], Bridge | None], before_run_hooks: list[BeforeRunHook],
                 after_run_hooks: list[AfterRunHook], observers: list[RunObserver]) -> None:
        self.settings = settings
        self.hitl = hitl
        self.metrics = metrics
        self.bridge = bridge  # the manager's, once loaded
        self.before_run_hooks = before_run_hooks
        self.after_run_hooks = after_run_hooks
        self.observers = observers

    def accept(self, state: ThreadState, run: ActiveRun, guard: StreamGuard, events: Iterable[BaseEvent] = (), *,
                ending: Ending | None = None, close_messages: bool = False) -> None:
        """``events`` of ``run`` through its stream guard into the thread's log (what the guard adds among them);
        ``ending``: the run ends so (the guard closes what is open first); ``close_messages``: the run's open
        messages are closed before ``events``."""
        if ending is not None:
            outs = guard.finish(ending)
        else:
            stopping = self._stopping(run)
            outs = [*guard.close_messages()] if close_messages else []
            outs += [out for event in events for out in guard.accept(event, stopping=stopping)]
        for out in outs:  # to the observers and into the thread (where a terminal event ends the run: the one place)
            if isinstance(out, RunErrorEvent):
                out = self._name_unreachable_upstream(run, out)
            for observer in self.observers:
                observer.run_event(run, out)
            state.record(run, out, guard)

    async def drive(self, state: ThreadState, run: ActiveRun, guard: StreamGuard) -> None:
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
                    self.accept(state, run, guard, await hook(run))
                stream = bridge.run_turn(run.turn)
            while not guard.terminated:
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
                if self._stopping(run) is None and _pauses(event):
                    self.hitl.on_pause(run.thread_id, run.run_id, state.ids.tool_calls.get,
                                       show=lambda card: self._show_card(state, run, guard, card))
                self.accept(state, run, guard, [event])
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
                if not guard.terminated:
                    self.accept(state, run, guard, ending=self._stopping(run) or ending)
            except Exception:  # writing the end failed (a full disk): the thread must still take its next run
                log.exception("ending run %s failed", run.run_id)
            finally:
                await self._settle(state, run, guard)

    def _show_card(self, state: ThreadState, run: ActiveRun, guard: StreamGuard, card: Card) -> str:
        """The run ends waiting for a person: its last tool call is the question card, after everything else it
        streamed has closed; the card's call id on the wire."""
        self.accept(state, run, guard, card.events(), close_messages=True)
        return guard.wire_id(card.call_id)

    async def _settle(self, state: ThreadState, run: ActiveRun, guard: StreamGuard) -> None:
        """The run's last steps, whatever happened before: the thread is free, hooks run, ``settled`` is set."""
        try:
            state.release(run)  # never left busy, even when the terminal event could not be written
            discard_written(run.turn.attachments)
            self.metrics.run_finished(guard.outcome, time.monotonic() - run.started_at, guard.usage)
            run.done.set()  # interrupt() waits for this; the hooks (state sync) need not hold it up
            for hook in self.after_run_hooks:
                try:
                    await hook(run, guard.outcome)
                except Exception:
                    log.exception("after-run hook failed for run %s", run.run_id)
        finally:
            run.done.set()
            run.settled.set()
            for observer in self.observers:
                observer.run_settled(run)

    def _name_unreachable_upstream(self, run: ActiveRun, event: RunErrorEvent) -> RunErrorEvent:
        """The CLI only knows the runner's model proxy on 127.0.0.1: say which model API could not be reached."""
        if event.code in RUNNER_OWN_CODES:
            return event
        bridge = self.bridge()
        proxy = bridge.model_proxy if bridge is not None else None
        host = proxy.unreachable_since(run.started_at) if proxy is not None else None
        if host is None:
            return event
        message = (f"The model API at {host} could not be reached (the runner's model proxy got no answer from it); "
                   f"check the network and the configured endpoint.\n\n{event.message}")
        return event.model_copy(update={"message": message, "code": ErrorCode.UPSTREAM_UNREACHABLE})

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


def _pauses(event: BaseEvent) -> bool:
    """A bridge's end of a run that waits for a person."""
    return isinstance(event, RunFinishedEvent) and isinstance(event.outcome, RunFinishedInterruptOutcome)


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
