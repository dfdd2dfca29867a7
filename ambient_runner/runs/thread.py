"""A thread as the run manager keeps it: its event log, ids, conversation, live and settling run, queued messages;
and ``ActiveRun``, one run of it. A thread begins a run (``begin``: the answers it brings to the thread's pause, its
``RUN_STARTED`` in the log), takes each run's events through that run's stream guard into its conversation and log
(``accept``: redacted, counted, seen by the observers; a run that ends waiting for a person shows its question card
first) and its next run once the live one has ended (``release``)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ag_ui.core import BaseEvent, EventType, RunFinishedEvent, RunFinishedInterruptOutcome

from ambient_runner.bridges.contract import Turn
from ambient_runner.interrupts.card import Card
from ambient_runner.interrupts.human_in_the_loop import HumanInTheLoop, Resumption
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.event_log import ThreadEventLog
from ambient_runner.runs.request import QueuedMessage, RunRequest
from ambient_runner.stream.conversation import Conversation
from ambient_runner.stream.encoding import Redactor, event_json
from ambient_runner.stream.guard import StreamGuard, ThreadIds
from ambient_runner.stream.outcome import Ending, RunOutcome
from ambient_runner.workspace.workflows import AgentPlace

TERMINAL_TYPES = (EventType.RUN_FINISHED, EventType.RUN_ERROR)


class RunObserver(Protocol):
    """Sees each run: its start (and may add events right after ``RUN_STARTED``), every event it emits, its
    settling (after the after-run hooks). Must never raise or block."""

    def run_started(self, run: ActiveRun) -> list[BaseEvent]: ...

    def run_event(self, run: ActiveRun, event: BaseEvent) -> None: ...

    def run_settled(self, run: ActiveRun) -> None: ...


@dataclass
class ActiveRun:
    thread_id: str
    run_id: str
    first_seq: int
    turn: Turn
    guard: StreamGuard  # its events pass it on their way into the thread (``ThreadState.accept``)
    resumption: Resumption = field(default_factory=Resumption)  # what its start did with the thread's pause
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    shutdown_requested: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)  # terminal event written, bridge stream closed
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # done, and the after-run hooks have run
    started_at: float = field(default_factory=time.monotonic)
    outcome: RunOutcome | None = None  # the guard's, once the terminal event is written


@dataclass
class ThreadState:
    log: ThreadEventLog
    redactor: Redactor  # every event is written redacted
    metrics: RunnerMetrics  # and counted
    hitl: HumanInTheLoop  # a person's turn: the answers a run brings go to the thread's open interrupts
    observers: Sequence[RunObserver] = ()  # the run manager's (tracing): they see each run's events
    ids: ThreadIds = field(default_factory=ThreadIds)
    active: ActiveRun | None = None  # streaming: its terminal event is not in the log yet
    settling: ActiveRun | None = None  # the last run that ended; the next run starts once it has settled
    conversation: Conversation = field(default_factory=Conversation)  # for the MESSAGES_SNAPSHOT of each run
    queue: deque[QueuedMessage] = field(default_factory=deque)  # messages waiting for the live run to end
    starting: bool = False  # a start is waiting for the previous run to settle
    pump: asyncio.Task[None] | None = None  # starts the queued messages, one after the other
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # set (and renewed) when the above change
    steering: asyncio.Lock = field(default_factory=asyncio.Lock)  # one busy message at a time, in arrival order

    @property
    def busy(self) -> bool:
        """A new message would not start now: a run streams, is about to, or messages wait before it."""
        return self.active is not None or self.starting or bool(self.queue)

    @property
    def run_ids(self) -> set[str]:
        """The runs of the thread that stream or wait."""
        return {run.run_id for run in (self.active,) if run is not None} | {m.request.run_id for m in self.queue}

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def begin(self, request: RunRequest, *, prompt: str, place: AgentPlace | None,
              head: Sequence[BaseEvent] = ()) -> ActiveRun:
        """A run of the thread begins: the answers ``request`` brings go to the thread's open interrupts
        (``HumanInTheLoop.on_start``), its input joins the conversation (its tool messages that answer read as
        answers), ``head`` (default its ``RUN_STARTED``) goes into the log, then, when it resumes a pause, the
        conversation's snapshot (a client joining it learns the paused call first). The run, with the turn the
        bridge gets (``prompt``, worked on in ``place``)."""
        run_input = request.run_input
        resumption = self.hitl.on_start(run_input.thread_id, request.answers)
        guard = StreamGuard(run_input.thread_id, run_input.run_id, self.ids)
        turn = Turn(thread_id=run_input.thread_id, run_id=run_input.run_id, prompt=prompt, input=run_input,
                    options=request.options, attachments=request.attachments, caller=request.caller, place=place)
        self.conversation.add_input(run_input, skip=request.answers.tool_message_ids)
        resumes = resumption.resumed or _paused(self.settling)
        snapshots = [self.conversation.snapshot_json(self.redactor, waiting=True)] if resumes else []
        lines = [event_json(event, self.redactor) for event in head or [guard.run_started]] + snapshots
        self.log.begin_run()
        first_seq = self.log.append(lines[0])
        for line in lines[1:]:
            self.log.append(line)
        self.metrics.events.inc(len(lines))
        return ActiveRun(run_input.thread_id, run_input.run_id, first_seq, turn, guard, resumption)

    def accept(self, run: ActiveRun, events: Iterable[BaseEvent] = (), *, stopping: Ending | None = None,
               ending: Ending | None = None, close_messages: bool = False) -> None:
        """``events`` of ``run`` through its stream guard (with what the guard adds among them) to the observers and
        into the thread: the one place a run's events enter it. ``stopping``: the runner is stopping the run (a
        terminal event of the bridge's ends it so); ``ending``: the run ends so (the guard closes what is open
        first); ``close_messages``: the run's open messages close before ``events``.

        Each event joins the conversation, then the log; a terminal event comes after the conversation's snapshot
        (what outlives the run), and the guard's last one ends the run for the thread (the one place)."""
        guard = run.guard
        if ending is not None:
            passed = guard.finish(ending)
        else:
            events = list(events)
            if stopping is None and any(map(_pauses, events)):  # a bridge's end that waits (it comes alone)
                self.hitl.on_pause(run.thread_id, run.run_id, self.ids.tool_calls.get,
                                   show=lambda card: self._show_card(run, card))
            passed = guard.close_messages() if close_messages else []
            passed += [out for event in events for out in guard.accept(event, stopping=stopping)]
        for event in passed:
            for observer in self.observers:
                observer.run_event(run, event)
            terminal = event.type in TERMINAL_TYPES
            if not terminal:
                self.conversation.add_event(event)
            waiting = guard.outcome == "interrupt"
            snapshots = [self.conversation.snapshot_json(self.redactor, waiting=waiting)] if terminal else []
            lines = [*snapshots, event_json(event, self.redactor)]
            ends = guard.terminated and terminal  # guard.finish's closing events come before it
            for line in lines[:-1]:
                self.log.append(line)
            self.log.append(lines[-1], terminal=ends)
            self.metrics.events.inc(len(lines))
            if ends:
                self.release(run, guard.outcome)

    def _show_card(self, run: ActiveRun, card: Card) -> str:
        """``run`` ends waiting for a person: its last tool call is the question card, after everything else it
        streamed has closed; the card's call id on the wire."""
        self.accept(run, card.events(), close_messages=True)
        return run.guard.wire_id(card.call_id)

    def release(self, run: ActiveRun, outcome: RunOutcome | None = None) -> None:
        """The thread takes its next run (once ``run`` has settled)."""
        run.outcome = run.outcome or outcome
        if self.active is run:
            self.active, self.settling = None, run
            self.notify()


def _pauses(event: BaseEvent) -> bool:
    """A bridge's end of a run that waits for a person."""
    return isinstance(event, RunFinishedEvent) and isinstance(event.outcome, RunFinishedInterruptOutcome)


def _paused(run: ActiveRun | None) -> bool:
    """``run`` ended waiting for a person (its turn goes on in the next run, whatever became of the answer)."""
    return run is not None and run.outcome == "interrupt"


AfterRunHook = Callable[[ActiveRun, RunOutcome | None], Awaitable[None]]
# Before the bridge gets the turn (the connected accounts' fetch): its events follow RUN_STARTED. Must not raise;
# bounded by the hook itself.
BeforeRunHook = Callable[[ActiveRun], Awaitable[Sequence[BaseEvent]]]
