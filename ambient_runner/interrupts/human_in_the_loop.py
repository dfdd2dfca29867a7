"""A person's turn, in one place: what the runner does when an agent waits for a person, and when the person answers.

``HumanInTheLoop`` owns the open interrupts of every thread (``book``: approvals, questions, the application's
frontend tools, those a previous runner process left open), the CLI turns parked while they wait (``turns``) and
the question card each paused thread shows on the platform's page (``card``). It is built once, from the settings,
and given to the bridge at construction (its side: ``ask``, ``answer``, ``turns``) and to the run manager, which
makes three calls:

* at admission, ``answers(run_input, trailing)``: the answers a run brings, read against what its thread waits for;
* when a run starts, ``on_start(thread, answers)``: the answers go to the paused turn (or, with a new message
  instead, everything open is refused), the thread's card is closed, and answers to a lost pause are named;
* when a run pauses, ``on_pause(...)``: the thread's card, shown unless the CLI streamed its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ag_ui.core import RunAgentInput, ToolCallResultEvent, UserMessage

from ambient_runner.interrupts.answers import Answers, Waiting, answers_to
from ambient_runner.interrupts.book import Answer, InterruptBook, InterruptRequest, PendingInterrupt
from ambient_runner.interrupts.card import Card, build_card
from ambient_runner.interrupts.parked import Pauses
from ambient_runner.settings import RunnerSettings

INTERRUPTS_FILE = "ambient-runner-interrupts.json"
NEW_MESSAGE_INSTEAD = "The person sent a new message instead of answering, so this was not done."
NOT_ANSWERED = "the request was stopped or timed out before an answer came"
INTERRUPT_LOST_MESSAGE = ("The runner was restarted while the run waited for an answer ({ids}), so the paused request "
                          "was not carried out. Send your message again: the conversation continues from its saved "
                          "session.")


@dataclass(frozen=True)
class Resumption:
    """What a run's start did with the thread's pause: ``resumed`` when a paused turn goes on in it (answered, or
    refused for a new message); ``card_result``: the result that closes the card the last run showed; ``lost``: the
    answered ids of a pause a previous runner process had open (the run only says so, ``lost_message``)."""

    resumed: bool = False
    card_result: ToolCallResultEvent | None = None
    lost: tuple[str, ...] = ()

    @property
    def lost_message(self) -> str | None:
        return INTERRUPT_LOST_MESSAGE.format(ids=", ".join(self.lost)) if self.lost else None


class HumanInTheLoop:
    def __init__(self, path: Path | None = None, timeout: float = 3600.0) -> None:
        self.book = InterruptBook(path, timeout)
        self.turns = Pauses(self.book)  # the CLI turns waiting for a person, parked for the thread's next run
        self._cards: dict[str, Card] = {}  # thread -> the question card of its paused run

    @classmethod
    def of(cls, settings: RunnerSettings) -> HumanInTheLoop:
        """The runner's: its open interrupts kept in the state dir (a replaced pod knows them lost)."""
        return cls(settings.state_dir / INTERRUPTS_FILE, settings.runner_interrupt_timeout)

    # ----- a bridge's side ---------------------------------------------------------------------------------
    def ask(self, thread_id: str, request: InterruptRequest) -> PendingInterrupt:
        """Open an interrupt for what a CLI asks; the bridge waits on ``answer``."""
        return self.book.open(thread_id, request)

    async def answer(self, pending: PendingInterrupt) -> Answer:
        """The person's answer to a CLI's request (the turn stops when the runner stops before one comes)."""
        try:
            return await pending.answer
        except asyncio.CancelledError:  # the book was closed: the runner is stopping
            return Answer(approved=False, stop_turn=True)

    # ----- the run manager's side --------------------------------------------------------------------------
    def waiting(self, thread_id: str) -> Waiting:
        return Waiting(self.book.pending(thread_id), self.book.lost(thread_id))

    def answers(self, run_input: RunAgentInput, trailing: Sequence[UserMessage]) -> Answers:
        """At admission: the answers ``run_input`` brings to what its thread waits for (``answers_to``), or the
        ``ResumeError`` that refuses it; ``trailing``: its new user messages."""
        waiting = self.waiting(run_input.thread_id)
        return answers_to(run_input, waiting, trailing)

    def on_start(self, thread_id: str, answers: Answers) -> Resumption:
        """A run of the thread starts with ``answers`` (read at admission against ``waiting``)."""
        book = self.book
        card = self._cards.pop(thread_id, None)
        if answers.given:
            book.resolve(thread_id, answers.given)
            resumed, unanswered = True, NOT_ANSWERED
        elif book.refuse_all(thread_id, NEW_MESSAGE_INSTEAD, stop_turn=True):
            resumed, unanswered = True, NEW_MESSAGE_INSTEAD
        else:
            resumed, unanswered = False, NOT_ANSWERED
        if answers.lost or not resumed:
            book.forget_lost(thread_id)  # said once (the run ends INTERRUPT_LOST), or moot for a new message
        closed = card.result(answers.given, unanswered) if card is not None and not card.own else None
        return Resumption(resumed, closed, tuple(answers.lost))

    def on_pause(self, thread_id: str, run_id: str, streamed: Callable[[str], str | None],
                 show: Callable[[Card], str]) -> None:
        """The run ends waiting for a person: its question card (``interrupts.card``), kept until the thread's next
        run. ``streamed(call_id)``: the name of a tool call the thread streamed; ``show(card)`` streams a card the
        CLI did not stream itself and returns its call id on the wire."""
        card = build_card(self.book.pending(thread_id), run_id, streamed)
        if card is None:
            return
        if not card.own:
            card = replace(card, call_id=show(card))
        self._cards[thread_id] = card

    # ----- stopping ----------------------------------------------------------------------------------------
    def paused(self, thread_id: str) -> bool:
        """Whether a turn of the thread waits for a person."""
        return bool(self.book.pending(thread_id))

    def paused_threads(self) -> list[str]:
        return self.book.paused_threads()

    def refuse(self, thread_ids: list[str], message: str) -> list[str]:
        """Refuse what the threads' paused turns wait for (their turns stop); the refused interrupts' ids."""
        return [p.id for thread in thread_ids for p in self.book.refuse_all(thread, message, stop_turn=True)]

    def close(self) -> None:
        """Runner shutdown: a paused turn stops waiting; the file keeps the pause for the next runner."""
        self.book.close()
