"""The loop around one CLI turn, written once for every bridge.

``run_turn(turn, hooks, pauses)`` is a run of a bridge: when the thread's last run paused on a person's answer, that
CLI turn is taken back (``Pauses.take``) and streamed on first, its end dropped when the run's new message follows
it; then the run's own turn is started (``hooks.start_turn``) and streamed. Streaming a turn (``stream_turn``) is
the same for every CLI: read its next item, translate it (``hooks.translate``), yield the events, a ``RUN_ERROR``
raised as a ``BridgeError``, a turn's end dropped when it is not the run's; a ``Paused`` marker (or a step that says
so) ends the run while the CLI waits (``Pauses.ending``), and in ``finally`` the turn is parked for the thread's
next run, or done with (``hooks.close_turn``: a turn still running is cancelled).

A bridge (or its transport) writes only what differs about its CLI, as ``TurnHooks``: how a turn starts, how its
items become AG-UI events, how a failure of its transport reads, how a turn is cancelled and closed. How an answer
reaches the CLI stays with the request that asked (``Pauses.answer``).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Generic

from ag_ui.core import BaseEvent, RunErrorEvent

from ambient_runner.bridges.contract import BridgeError, Turn
from ambient_runner.interrupts.parked import TERMINAL_EVENTS, AdapterT, LiveTurn, Paused, Pauses, StreamT, TurnEnd

__all__ = ["LiveTurn", "Step", "TurnHooks", "run_turn", "stream_turn"]


@dataclass
class Step:
    """What one item of a CLI turn comes to: its AG-UI events; ``paused``: the CLI now waits for a person (the run
    ends after these events); ``done``: the turn's last item (nothing more is read); ``error``: the turn failed, after
    these events (how its CLI ended)."""

    events: Sequence[BaseEvent] = field(default_factory=list)
    paused: bool = False
    done: bool = False
    error: BridgeError | None = None


class TurnHooks(ABC, Generic[StreamT, AdapterT]):
    """What a bridge tells the turn loop about its CLI. The abstract ones are what every CLI has; a hook with a
    default is optional, and a new thing the loop does for some CLIs (e.g. steering a running turn) comes as one
    more hook with a default."""

    @abstractmethod
    async def start_turn(self, turn: Turn) -> LiveTurn[StreamT, AdapterT] | AsyncGenerator[BaseEvent, None] | None:
        """Start the CLI's turn for ``turn``: its items and adapter; or the AG-UI events of a turn run some other
        way (a fallback transport); None when no turn is started (interrupted while the CLI was starting)."""

    @abstractmethod
    def translate(self, turn: Turn, live: LiveTurn[StreamT, AdapterT], item: Any) -> Step:
        """The AG-UI events of one item of the turn (never a ``Paused`` marker or None: the loop handles those)."""

    @abstractmethod
    async def close_turn(self, turn: Turn, live: LiveTurn[StreamT, AdapterT]) -> None:
        """The turn's stream is done with and not parked: a turn still running (the core closed the run early) is
        cancelled, its stream closed."""

    async def next_item(self, live: LiveTurn[StreamT, AdapterT], waiting: bool) -> Any:
        """The turn's next item (``StopAsyncIteration`` at its end); None when nothing came in time while
        ``waiting`` (a ``Paused`` marker came: the run ends once ``pause_ready`` says so)."""
        return await anext(live.stream)

    def pause_ready(self, turn: Turn, live: LiveTurn[StreamT, AdapterT], item: Any) -> bool:
        """After a ``Paused`` marker, after each item: whether the run ends now (else it waits for the stream to
        show what the CLI asks about); ``item`` is None when nothing came in time."""
        return True

    def on_park(self, turn: Turn, live: LiveTurn[StreamT, AdapterT]) -> None:
        """The turn is parked for the thread's next run."""

    def stderr(self, turn: Turn, live: LiveTurn[StreamT, AdapterT]) -> str:
        """The CLI's stderr tail for a ``RUN_ERROR`` of the turn."""
        return turn.stderr_tail.text()

    async def failed(self, turn: Turn, live: LiveTurn[StreamT, AdapterT], exc: Exception) -> BridgeError | None:
        """The run's error for an exception of the CLI's transport mid-turn (None: raised as it is)."""
        return None


async def run_turn(turn: Turn, hooks: TurnHooks[Any, Any], pauses: Pauses) -> AsyncGenerator[BaseEvent, None]:
    """A run: the thread's paused turn taken back and streamed on, then the run's own turn started and streamed.
    Closed early (the core stops reading), the turn it streams is closed or parked before ``aclose`` returns."""
    pauses.adopt_policy(turn.thread_id, turn.options.approval_policy, named=turn.options.approval_policy_named)
    parked = pauses.take(turn.thread_id)
    if parked is not None:
        parked.adapter.run_id = turn.run_id  # its events are this run's
        end = TurnEnd()
        last = not pauses.follows(turn.thread_id, turn.prompt)
        async with aclosing(stream_turn(turn, parked, hooks, pauses, end, last=last)) as events:
            async for event in events:
                yield event
        following = pauses.following(turn.thread_id, turn.prompt, end)
        if following is None:
            return
        turn = dataclasses.replace(turn, prompt=following)
    started = await hooks.start_turn(turn)
    if started is None:
        return
    if not isinstance(started, LiveTurn):
        async with aclosing(started) as events:
            async for event in events:
                yield event
        return
    async with aclosing(stream_turn(turn, started, hooks, pauses, TurnEnd(), last=True)) as events:
        async for event in events:
            yield event


async def stream_turn(turn: Turn, live: LiveTurn[Any, Any], hooks: TurnHooks[Any, Any], pauses: Pauses,
                      end: TurnEnd, *, last: bool) -> AsyncGenerator[BaseEvent, None]:
    """The AG-UI events of one CLI turn, up to its end or a pause (then the turn is parked for the thread's next
    run). ``last``: the turn's end is the run's; else its terminal event is dropped."""
    adapter = live.adapter
    waiting = False  # a Paused marker came: the run ends once the hooks say so
    try:
        while True:
            try:
                item = await hooks.next_item(live, waiting)
            except StopAsyncIteration:
                break
            if isinstance(item, Paused):
                waiting, step = True, Step()
            elif item is None:
                step = Step()
            else:
                step = hooks.translate(turn, live, item)
            for event in step.events:
                if event.type in TERMINAL_EVENTS and not last:
                    continue
                if isinstance(event, RunErrorEvent):
                    raise BridgeError.of_event(event, hooks.stderr(turn, live))
                yield event
            if step.error is not None:
                raise step.error
            if step.done:
                break
            if step.paused or (waiting and hooks.pause_ready(turn, live, item)):
                end.paused = True
                for event in pauses.ending(turn.thread_id, turn.run_id, started=adapter.has_started,
                                           note_started=adapter.note_started):
                    yield event
                return
        for event in adapter.finish():
            yield event
    except Exception as exc:
        error = await hooks.failed(turn, live, exc)
        if error is None:
            raise
        raise error from exc
    finally:
        if end.paused:
            pauses.park(turn.thread_id, live, close=lambda: hooks.close_turn(turn, live))
            hooks.on_park(turn, live)
        else:
            await hooks.close_turn(turn, live)
