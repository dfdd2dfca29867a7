"""CLI turns that wait for a person, written once for every bridge.

When a CLI asks for an approval or puts a question, its bridge opens an interrupt (``interrupts.book``) and a
``Paused`` marker joins the turn's stream. The turn loop (``turn_loop``) then ends the run (``ending``: the waiting
tool calls, then ``RUN_FINISHED`` with the interrupts) and parks the turn: its stream and adapter, untouched, for the
thread's next run, which takes it back (``take``) once the answer has reached the CLI and streams the rest of the
same turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from ag_ui_cli_common.adapter import CliAdapter
from ambient_runner.interrupts.book import Answer, InterruptBook, refusal_note

# A turn's end when it is not the run's end (a paused turn finishing before the run's new message): dropped.
TERMINAL_EVENTS = (EventType.RUN_FINISHED, EventType.RUN_ERROR)


class TurnStream(Protocol):
    """A turn's messages as a bridge parks them: an async iterator that can be closed (a generator, a feed)."""

    def __aiter__(self) -> AsyncIterator[Any]: ...
    def __anext__(self) -> Awaitable[Any]: ...
    async def aclose(self) -> None: ...


@dataclass
class TurnEnd:
    """How a bridge's stream of one CLI turn stopped: ``paused`` when the CLI waits for a person."""

    paused: bool = False


@dataclass(frozen=True)
class Paused:
    """Among a turn's messages: the CLI waits for the answer to ``interrupt_id``."""

    interrupt_id: str


StreamT = TypeVar("StreamT", bound=TurnStream)
AdapterT = TypeVar("AdapterT", bound=CliAdapter[Any])


@dataclass
class LiveTurn(Generic[StreamT, AdapterT]):
    """A CLI turn as the turn loop streams it, and as it is parked while the CLI waits for a person."""

    stream: StreamT  # the turn's items (suspended where the CLI began to wait, when parked)
    adapter: AdapterT  # the turn's event adapter, with what it has opened and streamed


class Pauses:
    def __init__(self, book: InterruptBook) -> None:
        self._book = book
        self._parked: dict[str, tuple[LiveTurn[Any, Any], Callable[[], Awaitable[None]]]] = {}  # turn, its close
        self._policies: dict[str, str] = {}  # thread -> the approval policy its turns run under
        self._notes: dict[str, list[str]] = {}  # thread -> the person's words with refusals, for the next prompt

    def adopt_policy(self, thread_id: str, policy: str, *, named: bool) -> str:
        """The approval policy of the thread's turns from this run on: the run's own ``policy`` when it ``named``
        one; a run that goes on from a pause without naming one keeps the paused run's; else the deployment's
        default (``policy``)."""
        if named or thread_id not in self._parked:
            self._policies[thread_id] = policy
        return self._policies.get(thread_id, policy)

    def policy(self, thread_id: str) -> str:
        return self._policies.get(thread_id, "auto")

    def note_refusal(self, thread_id: str, answer: Answer) -> None:
        """Keep a refusal's words for the thread's next prompt (for a CLI whose refusal cannot carry them)."""
        note = refusal_note(answer)
        if note:
            self._notes.setdefault(thread_id, []).append(note)

    def follows(self, thread_id: str, prompt: str) -> bool:
        """Whether a CLI turn follows the thread's paused one in this run (the run's message ``prompt``, or a
        refusal's words): the paused turn's end is then not the run's."""
        return bool(prompt.strip() or self._notes.get(thread_id))

    def following(self, thread_id: str, prompt: str, end: TurnEnd) -> str | None:
        """Once the paused turn has gone on: the next CLI turn's prompt, the person's words with refusals first,
        then the run's new message ``prompt``; None when nothing follows (the turn paused again, or no message)."""
        text = "\n\n".join([*self._notes.pop(thread_id, []), prompt]).strip()
        return None if end.paused or not text else text

    def park(self, thread_id: str, turn: LiveTurn[Any, Any],
             close: Callable[[], Awaitable[None]] | None = None) -> None:
        """Keep ``turn`` for the thread's next run; ``close``: how its bridge ends it if the runner stops first (the
        way it closes a turn the core closed early: a CLI mid-turn is cancelled and given time to end it, so its
        session's files are whole for the next pod). Without one, its stream is closed."""
        self._parked[thread_id] = (turn, close or turn.stream.aclose)

    def parked(self, thread_id: str) -> bool:
        """A turn of the thread waits for the next run (which then needs no new message)."""
        return thread_id in self._parked

    def take(self, thread_id: str) -> LiveTurn[Any, Any] | None:
        parked = self._parked.pop(thread_id, None)
        return parked[0] if parked is not None else None

    def ending(self, thread_id: str, run_id: str, *, started: Callable[[str], bool],
               note_started: Callable[[str], None]) -> list[BaseEvent]:
        """The run's end while the CLI waits: each waiting tool call the stream has not shown (from the request
        itself), then ``RUN_FINISHED`` with the thread's open interrupts, or, when it waits only for the
        application's frontend tools, outcome ``success`` naming them in ``pendingToolCallIds``. Nothing when they
        were answered before the run could end (the turn goes on in the next run)."""
        pending = self._book.pending(thread_id)
        events: list[BaseEvent] = []
        for waiting in pending:
            call = waiting.request
            if not started(call.tool_call_id):
                note_started(call.tool_call_id)
                events += [ToolCallStartEvent(tool_call_id=call.tool_call_id, tool_call_name=call.tool_name),
                           ToolCallArgsEvent(tool_call_id=call.tool_call_id, delta=json.dumps(call.arguments)),
                           ToolCallEndEvent(tool_call_id=call.tool_call_id)]
        if not pending:
            return events
        asks = [p for p in pending if p.request.reason != "frontend_tool"]
        outcome: RunFinishedInterruptOutcome | RunFinishedSuccessOutcome = (
            RunFinishedInterruptOutcome(interrupts=[p.interrupt() for p in asks]) if asks else
            RunFinishedSuccessOutcome(pending_tool_call_ids=[p.request.tool_call_id for p in pending]))
        return [*events, RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)]

    async def close(self) -> None:
        """Runner shutdown: each parked turn is closed the way it was parked to be (its bridge ends the CLI's turn)."""
        parked, self._parked = list(self._parked.values()), {}
        for _, close in parked:
            with contextlib.suppress(Exception):
                await close()


class PausableFeed:
    """A turn's stream with ``Paused`` markers put in from outside (a CLI's request arrives beside its stream).

    ``get(within)`` returns the next item, or None when nothing came within ``within`` seconds; it never cancels a read
    of the stream (the feed can be parked while one is pending). ``StopAsyncIteration`` at the stream's end."""

    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self._pauses: asyncio.Queue[Paused] = asyncio.Queue()
        self._next: asyncio.Future[Any] | None = None
        self._pause: asyncio.Future[Paused] | None = None

    def pause(self, interrupt_id: str) -> None:
        self._pauses.put_nowait(Paused(interrupt_id))

    def __aiter__(self) -> PausableFeed:
        return self

    async def __anext__(self) -> Any:
        item = await self.get(None)
        assert item is not None
        return item

    async def get(self, within: float | None) -> Any:
        if self._next is None:
            self._next = asyncio.ensure_future(anext(self._stream))
        if self._pause is None:
            self._pause = asyncio.ensure_future(self._pauses.get())
        await asyncio.wait({self._next, self._pause}, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        if self._next.done():  # the stream first: what the CLI printed before its request
            done, self._next = self._next, None
            return done.result()  # StopAsyncIteration at the end
        if self._pause.done():
            done, self._pause = self._pause, None
            return done.result()
        return None

    async def aclose(self) -> None:
        for task in (self._next, self._pause):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._next = self._pause = None
        with contextlib.suppress(Exception):
            await self._stream.aclose()
