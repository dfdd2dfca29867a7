"""A run as the runner takes it: ``RunRequest``, one ``POST /run`` (or a turn the runner starts itself) read once, at
admission (``runs.admission``), and what became of it (``Started``, ``Steered``, ``Queued``).

A queued message is a ``RunRequest`` that waits for its thread's earlier runs (``QueuedMessage``); it belongs to the
runner, not to the connection that posted it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent, RunFinishedCancelledOutcome, RunFinishedEvent

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.bridges.caller import Caller
from ambient_runner.bridges.contract import Attachment
from ambient_runner.bridges.options import RunOptions
from ambient_runner.interrupts.answers import NO_ANSWERS, Answers
from ambient_runner.runs.attachments import discard_written
from ambient_runner.runs.busy import DROPPED_MESSAGE, WhenBusy
from ambient_runner.runs.event_log import ThreadEventLog


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to do: its input, the prompt the agent gets, its options and attachments, the answers it
    brings to its thread's open interrupts, who sent it, and what it does when the thread is busy."""

    run_input: RunAgentInput
    prompt: str
    options: RunOptions
    attachments: Sequence[Attachment] = ()
    answers: Answers = NO_ANSWERS
    caller: Caller = field(default_factory=Caller)
    when_busy: WhenBusy = WhenBusy.QUEUE

    @property
    def thread_id(self) -> str:
        return self.run_input.thread_id

    @property
    def run_id(self) -> str:
        return self.run_input.run_id

    def discard(self) -> None:
        """The request was not taken (refused, dropped, never started): the files written for it are removed."""
        discard_written(self.attachments)


@dataclass
class QueuedMessage:
    """A run that waits for its thread's earlier runs. ``outcome`` resolves to the started run's first sequence
    number in the thread's log, or to the terminal event that ends it unstarted (dropped, shutdown)."""

    request: RunRequest
    head: list[BaseEvent]  # RUN_STARTED and the accepted event, sent at once and again as the run's first events
    outcome: asyncio.Future[int | BaseEvent] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())

    def end_unstarted(self, event: BaseEvent) -> None:
        """The message ends without its run (dropped, shutdown, its start failed): ``event`` ends its stream, and
        the files written for it are removed."""
        self.request.discard()
        if not self.outcome.done():
            self.outcome.set_result(event)

    def dropped(self) -> BaseEvent:
        return RunFinishedEvent(thread_id=self.request.thread_id, run_id=self.request.run_id,
                                outcome=RunFinishedCancelledOutcome(), result={"message": DROPPED_MESSAGE})

    def error(self, message: str, code: ErrorCode) -> BaseEvent:
        return RunErrorEvent(message=message, code=code)


@dataclass(frozen=True)
class Started:
    """The request is the thread's run now: its events are in ``log`` after ``after``."""

    log: ThreadEventLog
    after: int


@dataclass(frozen=True)
class Steered:
    """The request went into the thread's live turn: ``events`` are its POST's whole stream."""

    events: list[BaseEvent]


@dataclass(frozen=True)
class Queued:
    """The request waits behind the thread's live run (``message.head`` at once, its run's events later in ``log``)."""

    message: QueuedMessage
    log: ThreadEventLog


Submitted = Started | Steered | Queued
