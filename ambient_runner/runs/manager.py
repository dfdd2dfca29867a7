"""Runs: one at a time per thread, driven in the background so a run keeps going when its client leaves.

``RunManager`` admits a run (``submit``: read against its thread, then started now, given to the live turn, or
queued behind it), starts it (``start`` writes ``RUN_STARTED`` to the thread's event log, with the answers it brings
given to the paused turn) and hands it to the ``RunDriver`` (``runs.driver``), which pulls the bridge's events
through the ``StreamGuard`` into the thread. Interrupt escalates: the bridge's polite interrupt, then after
``RUNNER_INTERRUPT_GRACE`` the bridge's stream is cancelled (its ``finally`` ends the process group).

A run's end is decided in one place, ``ThreadState.accept``: once its terminal event is in the thread's log the
thread is no longer busy. What the run still does after that (closing the bridge's stream: the CLI's exit, reaping,
the session map; then the after-run hooks: the state sync) is its *settling*; the thread's next run waits for it
(bounded by ``RUNNER_SETTLE_TIMEOUT``, else ``PreviousRunStuckError``) instead of being refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence

from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
)

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.bridges.contract import Bridge
from ambient_runner.bridges.host import BridgeHost
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.admission import Reader, ThreadAtAdmission, read_request
from ambient_runner.runs.between_runs import BetweenRunEvents
from ambient_runner.runs.busy import SHUTDOWN_QUEUED_MESSAGE, WhenBusy, accepted, steered
from ambient_runner.runs.driver import RunDriver
from ambient_runner.runs.event_log import ThreadEventLog
from ambient_runner.runs.request import Queued, QueuedMessage, RunRequest, Started, Steered, Submitted
from ambient_runner.runs.thread import ActiveRun, AfterRunHook, BeforeRunHook, RunObserver, ThreadState
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.encoding import Redactor, event_json
from ambient_runner.workspace.workflows import AgentPlace

log = logging.getLogger(__name__)





class ThreadBusyError(RunnerError, RuntimeError):
    code = ErrorCode.THREAD_BUSY


class DrainingError(RunnerError, RuntimeError):
    code = ErrorCode.DRAINING


class PreviousRunStuckError(RunnerError, RuntimeError):
    """The thread's previous run sent its terminal event but did not finish settling in time."""

    code = ErrorCode.PREVIOUS_RUN_STUCK


class QueueFullError(RunnerError, RuntimeError):
    """The thread already has ``RUNNER_MAX_QUEUED`` messages waiting."""

    code = ErrorCode.QUEUE_FULL


class RunManager:
    def __init__(self, settings: RunnerSettings, bridge: Bridge | None, redactor: Redactor,
                 metrics: RunnerMetrics) -> None:
        self.settings = settings
        self.bridge = bridge
        self.redactor = redactor
        self.metrics = metrics
        self.threads: dict[str, ThreadState] = {}
        self.draining = False
        self.before_run_hooks: list[BeforeRunHook] = []
        self.after_run_hooks: list[AfterRunHook] = []
        self.observers: list[RunObserver] = []  # see every run's events (tracing)
        # Text put before a turn's prompt (a workflow's instructions, once per thread after each change).
        self.turn_preambles: list[Callable[[str], str]] = []
        # Where the CLI works for a turn (the active workflow's folder); None: the workspace root.
        self.agent_place: Callable[[], AgentPlace] | None = None
        self._place_lock = asyncio.Lock()
        self._place_open = asyncio.Event()  # cleared while the place changes (``place_change``)
        self._place_open.set()
        self.between_runs = BetweenRunEvents()  # events outside any run, for GET /events without a cursor
        # What the bridge is lent, given at its construction (``create_bridge(settings, runs.host)``; a bridge built on
        # its own brings a detached one): a person's turn (approvals, questions, the question card, answers), the
        # agent's background tasks (/tasks), and the between-run channel, which is this manager's.
        self.host = bridge.host if bridge is not None else BridgeHost.of(settings)
        self.host.publish = self.publish_between_runs
        self.driver = RunDriver(settings, metrics, lambda: self.bridge, self.before_run_hooks,
                                self.after_run_hooks, self.observers)

    # ----- queries ---------------------------------------------------------------------------------------
    @property
    def hitl(self) -> HumanInTheLoop:
        """A person's turn: the host's."""
        return self.host.hitl

    def thread(self, thread_id: str) -> ThreadState | None:
        return self.threads.get(thread_id)

    def active_runs(self) -> list[ActiveRun]:
        return [t.active for t in self.threads.values() if t.active is not None]

    def holds_turns(self) -> bool:
        """Whether a run streams or is about to, a message waits, or a turn is paused for a person, in any
        thread: what a change of where the agent works (a workflow switch) must not cut through."""
        return any(state.busy or self.hitl.paused(thread_id) for thread_id, state in self.threads.items())

    @contextlib.asynccontextmanager
    async def place_change(self) -> AsyncIterator[bool]:
        """Held while where the agent works changes (a workflow switch replaces its folder): no run starts meanwhile
        (one admitted then waits, and starts in the new place). Yields whether turns are held (``holds_turns``)
        as it begins: the caller then changes nothing. One change at a time."""
        async with self._place_lock:
            self._place_open.clear()
            try:
                yield self.holds_turns()
            finally:
                self._place_open.set()

    def unsettled_runs(self) -> list[ActiveRun]:
        """Runs that have sent their terminal event but are still settling."""
        return [t.settling for t in self.threads.values() if t.settling is not None and not t.settling.settled.is_set()]

    def _check_admissible(self, thread_id: str) -> None:
        if self.draining:
            raise DrainingError("the runner is shutting down and takes no new runs")
        active = self.threads[thread_id].active if thread_id in self.threads else None
        if active is not None:
            raise ThreadBusyError(f"thread {thread_id!r} already has a run in progress ({active.run_id}); interrupt "
                                  "it or wait for it to finish", threadId=thread_id)

    def _thread_state(self, thread_id: str) -> ThreadState:
        state = self.threads.get(thread_id)
        if state is None:
            state = ThreadState(ThreadEventLog(thread_id, self.settings.events_dir, self.settings.runner_event_memory,
                                               self.settings.runner_event_spool_bytes), self.redactor, self.metrics,
                                self.hitl, self.observers)
            self.threads[thread_id] = state
        return state

    # ----- admitting ------------------------------------------------------------------------------------
    async def _read(self, run_input: RunAgentInput, reader: Reader) -> RunRequest:
        """``run_input`` read against its thread's state now (``runs.admission``); raises the ``RunnerError`` that
        refuses it."""
        state = self.threads.get(run_input.thread_id)
        thread = ThreadAtAdmission(self.hitl, state.conversation.message_ids if state is not None else set)
        return await read_request(run_input, thread, reader)

    async def submit(self, run_input: RunAgentInput, reader: Reader) -> Submitted:
        """``run_input`` read against its thread (``runs.admission``), then the thread's run now, or (while its run
        streams) into that run's live turn or behind it, as its ``whenBusy`` says; an answer to a pause is never
        steered nor queued. Raises the ``RunnerError`` that refuses it, ``ThreadBusyError`` for a ``whenBusy: reject``
        or a retried POST, and what ``start`` and ``enqueue`` raise; the attachments of a request that was not taken
        are removed."""
        request = await self._read(run_input, reader)
        try:
            return await self._submit(request)
        except BaseException:
            request.discard()  # not started: nobody else removes its files
            raise

    async def _submit(self, request: RunRequest) -> Submitted:
        state = self.threads.get(request.thread_id)
        if state is not None and state.busy and not request.answers:
            return await self._behind(state, request)
        return await self._started(request)

    async def _behind(self, state: ThreadState, request: RunRequest) -> Submitted:
        """A message for a thread whose run streams: into that run's live turn, or queued behind it."""
        if request.when_busy is WhenBusy.REJECT or request.run_id in state.run_ids:  # a retry is no new message
            raise ThreadBusyError(f"thread {request.thread_id!r} already has a run in progress; interrupt it, wait "
                                  "for it to finish, or send with whenBusy steer or queue", threadId=request.thread_id)
        async with state.steering:  # one message at a time per thread, so two sent together keep their order
            if request.when_busy is WhenBusy.STEER and not request.attachments:  # a CLI's mid-turn input: text only
                into = await self.driver.steer(state, request.run_input, request.prompt)
                if into is not None:
                    return Steered(steered(request.run_input, into.run_id))
            if state.busy:
                message = QueuedMessage(request, head=accepted(request.run_input, "queued",
                                                               position=len(state.queue) + 1))
                self.enqueue(message)
                return Queued(message, state.log)
            return await self._started(request)  # the live run ended meanwhile: this message is the thread's next

    async def _started(self, request: RunRequest) -> Started:
        run = await self.start(request)
        return Started(self.threads[run.thread_id].log, run.first_seq - 1)

    # ----- starting --------------------------------------------------------------------------------------
    async def start(self, request: RunRequest, head: Sequence[BaseEvent] = ()) -> ActiveRun:
        """Start a run; ``RUN_STARTED`` is in the log when this returns.

        ``head``: a queued message's first events (its ``RUN_STARTED`` and accepted event, already sent on its own
        stream), written instead of a new ``RUN_STARTED``.

        The thread begins it (``ThreadState.begin``): the request's answers go to its open interrupts, which lets its
        paused CLI turn go on; a run with a new message and no answers refuses them all first. Answers to interrupts
        a previous runner process had open end the run with ``INTERRUPT_LOST``.

        Raises ``ThreadBusyError`` while another run of the thread is streaming, ``DrainingError`` during shutdown
        and ``PreviousRunStuckError`` when the thread's previous run does not settle within the bound.
        """
        run_input = request.run_input
        await self._place_open.wait()  # a workflow switch under way: this run starts in its new folder
        self._check_admissible(run_input.thread_id)
        known = self.threads.get(run_input.thread_id)
        previous = known.settling if known is not None else None
        if known is not None and previous is not None and not previous.settled.is_set():
            known.starting = True
            bound = self.settings.runner_settle_timeout
            try:
                async with asyncio.timeout(bound):
                    await previous.settled.wait()
            except TimeoutError:
                raise PreviousRunStuckError(
                    f"the previous run of thread {run_input.thread_id!r} ({previous.run_id}) ended but its clean-up "
                    f"(the agent's exit, the state sync) did not finish within {bound:g} s (RUNNER_SETTLE_TIMEOUT); "
                    "try again shortly", threadId=run_input.thread_id) from None
            finally:
                known.starting = False
                known.notify()
            self._check_admissible(run_input.thread_id)  # another run admitted, or shutdown begun, meanwhile
        state = self._thread_state(run_input.thread_id)
        preamble = "".join(add(run_input.thread_id) for add in self.turn_preambles)
        run = state.begin(request, prompt=f"{preamble}{request.prompt}", head=head,
                          place=self.agent_place() if self.agent_place is not None else None)
        if (card_result := run.resumption.card_result) is not None:  # the card the last run showed, now answered
            self.driver.accept(state, run, [card_result])
        started = [event for observer in self.observers for event in observer.run_started(run)]  # after RUN_STARTED
        self.driver.accept(state, run, started)
        state.active = run
        state.notify()
        self.metrics.run_started()
        run.task = asyncio.create_task(self.driver.drive(state, run), name=f"run-{run.run_id}")
        await asyncio.sleep(0)  # the run's first step (the prompt to the CLI) before its caller builds the response
        return run

    # ----- a message for a busy thread ---------------------------------------------------------------------
    def enqueue(self, message: QueuedMessage) -> int:
        """Queue ``message`` behind the thread's live run (and the messages already waiting); its position (1 =
        next). Raises ``QueueFullError`` at ``RUNNER_MAX_QUEUED``, ``DrainingError`` during shutdown."""
        if self.draining:
            raise DrainingError("the runner is shutting down and takes no new runs")
        state = self._thread_state(message.request.thread_id)
        limit = self.settings.runner_max_queued
        if len(state.queue) >= limit:
            raise QueueFullError(f"thread {state.log.thread_id!r} already has {limit} messages waiting "
                                 "(RUNNER_MAX_QUEUED); wait for its runs to end", threadId=state.log.thread_id,
                                 maxQueued=limit)
        state.queue.append(message)
        if state.pump is None or state.pump.done():
            state.pump = asyncio.create_task(self._run_queue(state), name=f"queue-{state.log.thread_id}")
        return len(state.queue)

    async def _run_queue(self, state: ThreadState) -> None:
        """Start the thread's queued messages in order, each once the run before it has ended."""
        while state.queue and not self.draining:
            if state.active is not None or state.starting:
                await state.changed.wait()
                continue
            message = state.queue.popleft()
            try:
                run = await self.start(message.request, head=message.head)
            except PreviousRunStuckError as exc:
                message.end_unstarted(message.error(exc.message, exc.code))
            except (DrainingError, ThreadBusyError):
                if self.draining:
                    message.end_unstarted(message.error(SHUTDOWN_QUEUED_MESSAGE, ErrorCode.SHUTDOWN))
                else:  # a run was started meanwhile: this message waits for it
                    state.queue.appendleft(message)
            except Exception as exc:  # noqa: BLE001 - the message's stream must still end
                log.exception("starting queued run %s failed", message.request.run_id)
                message.end_unstarted(message.error(f"The runner failed to start this run: {exc}",
                                                   ErrorCode.RUNNER_ERROR))
            else:
                message.outcome.set_result(run.first_seq)

    def drop_queued(self, thread_id: str | None = None) -> list[QueuedMessage]:
        """Take the queued messages of ``thread_id`` (of every thread when None) out unstarted; each one's stream ends
        ``RUN_FINISHED`` outcome ``cancelled``."""
        states = [self.threads[thread_id]] if thread_id in self.threads else [] if thread_id else self.threads.values()
        dropped: list[QueuedMessage] = []
        for state in list(states):
            while state.queue:
                message = state.queue.popleft()
                message.end_unstarted(message.dropped())
                dropped.append(message)
        return dropped

    def use(self, bridge: Bridge) -> None:
        """The bridge boot loaded, built with this manager's host (``create_bridge(settings, runs.host)``)."""
        if bridge.host is not self.host:
            raise ValueError("a bridge joins the run manager whose host it was built with (create_bridge)")
        self.bridge = bridge

    def publish_between_runs(self, event: BaseEvent) -> None:
        """An event that belongs to no run (a model switch): to the between-run listeners, redacted, stamped."""
        if event.timestamp is None:
            event = event.model_copy(update={"timestamp": int(time.time() * 1000)})
        self.metrics.events.inc()
        self.between_runs.publish(event_json(event, self.redactor))

    # ----- interrupt and shutdown ------------------------------------------------------------------------
    async def interrupt(self, run: ActiveRun, *, shutdown: bool = False) -> None:
        """Stop ``run``: the bridge's polite interrupt, then cancellation after the grace period."""
        if shutdown:
            run.shutdown_requested = True
        else:
            run.cancel_requested = True
        grace = self.settings.runner_interrupt_grace
        run.turn.interrupted.set()
        assert self.bridge is not None, "a run exists only once the bridge is loaded"
        if not run.done.is_set():
            try:
                async with asyncio.timeout(grace):
                    await self.bridge.interrupt(run.thread_id)
            except Exception as exc:  # the escalation below still ends the run
                log.warning("interrupt of run %s: bridge said %r; cancelling it", run.run_id, exc)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await run.done.wait()
        if not run.done.is_set() and run.task is not None:
            log.warning("run %s did not stop within %.1fs of its interrupt; cancelling it", run.run_id, grace)
            self.metrics.interrupt_escalations.inc()
            run.task.cancel()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace + 10):
                    await run.done.wait()

    async def shutdown(self) -> None:
        """Take no new runs; end active runs with a terminal event; bounded by RUNNER_SHUTDOWN_GRACE."""
        self.draining = True
        for state in self.threads.values():  # nothing queued is started: each says why
            while state.queue:
                message = state.queue.popleft()
                message.end_unstarted(message.error(SHUTDOWN_QUEUED_MESSAGE, ErrorCode.SHUTDOWN))
            state.notify()
        self.between_runs.close()
        self.host.close()  # a paused turn stops waiting (the file keeps the pause for the next runner), timers end
        runs = self.active_runs()
        if runs:
            log.info("shutting down: stopping %d active run(s)", len(runs))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.runner_shutdown_grace):
                    await asyncio.gather(*(self.interrupt(r, shutdown=True) for r in runs))
        cancelled = self.active_runs()
        for run in cancelled:
            if run.task is not None:
                run.task.cancel()
        in_flight = [*cancelled, *self.unsettled_runs()]  # their clean-up (the final state sync among it)
        if in_flight:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.runner_shutdown_grace):
                    await asyncio.gather(*(r.settled.wait() for r in in_flight))

    def close(self) -> None:
        for state in self.threads.values():
            state.log.close()
        if self.settings.runner_events_dir is None:  # the runner's own spool dir (per process): nothing left behind
            with contextlib.suppress(OSError):
                self.settings.events_dir.rmdir()

