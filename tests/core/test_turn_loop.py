"""The one turn loop (``bridges.turn_loop``) on its own: a scripted CLI turn (its items and adapter) through the real
loop and the real ``Pauses``: a pause ends the run and parks the turn, the next run streams it on and drops its end
when a message follows, a ``RUN_ERROR`` is the run's ``BridgeError``, a turn not parked is closed."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from ag_ui.core import BaseEvent, RunAgentInput, RunFinishedEvent, TextMessageEndEvent, UserMessage

from ag_ui_cli_common.adapter import CliAdapter
from ag_ui_cli_common.errors import ErrorCode, Failure
from ambient_runner.bridges.contract import BridgeError, Turn
from ambient_runner.bridges.options import RunOptions
from ambient_runner.bridges.turn_loop import Step, TurnHooks, run_turn
from ambient_runner.interrupts.book import Answer, InterruptBook, InterruptRequest
from ambient_runner.interrupts.parked import LiveTurn, Paused, Pauses

Item = tuple[str, ...]


class ScriptAdapter(CliAdapter[Item]):
    """A CLI whose items are ("text", id, delta), ("tool", id, name), ("done",) and ("fail", message)."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        super().__init__(thread_id, run_id)
        self.handlers = {"text": lambda p: self.blocks.text(p[1], p[2]),
                         "tool": lambda p: self.blocks.start_tool(p[1], p[2]),
                         "done": lambda p: self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id,
                                                                               run_id=self.run_id)),
                         "fail": lambda p: self.blocks.fail(Failure(p[1], ErrorCode.AGENT_ERROR))}

    def parse(self, native: Item) -> tuple[str, Item]:
        return native[0], native


class ScriptedCli(TurnHooks[AsyncGenerator[Any, None], ScriptAdapter]):
    """Turns that play a script; a script's ``("ask", call id)`` opens an interrupt and waits for its answer."""

    def __init__(self, book: InterruptBook, scripts: list[list[Item]]) -> None:
        self.book = book
        self.scripts = scripts
        self.started: list[str] = []  # the prompts of the turns started
        self.closed: list[str] = []  # the runs whose turn was closed (not parked)

    async def start_turn(self, turn: Turn) -> LiveTurn[AsyncGenerator[Any, None], ScriptAdapter]:
        self.started.append(turn.prompt)
        return LiveTurn(self._play(turn.thread_id, self.scripts.pop(0)), ScriptAdapter(turn.thread_id, turn.run_id))

    async def _play(self, thread_id: str, script: list[Item]) -> AsyncGenerator[Any, None]:
        for item in script:
            if item[0] == "ask":
                pending = self.book.open(thread_id, InterruptRequest("tool_approval", item[1], "shell", "run it?"))
                yield Paused(pending.id)
                await pending.answer
                continue
            yield item

    def translate(self, turn: Turn, live: LiveTurn[Any, ScriptAdapter], item: Any) -> Step:
        events = live.adapter.feed(item)
        return Step(events, done=live.adapter.terminal is not None)

    async def close_turn(self, turn: Turn, live: LiveTurn[Any, ScriptAdapter]) -> None:
        self.closed.append(turn.run_id)
        await live.stream.aclose()


def make_turn(prompt: str, run_id: str) -> Turn:
    run_input = RunAgentInput(thread_id="t", run_id=run_id, state=None, tools=[], context=[], forwarded_props=None,
                              messages=[UserMessage(id=f"u-{run_id}", content=prompt)])
    return Turn(thread_id="t", run_id=run_id, prompt=prompt, input=run_input, options=RunOptions())


async def run(cli: ScriptedCli, pauses: Pauses, prompt: str, run_id: str) -> list[BaseEvent]:
    return [event async for event in run_turn(make_turn(prompt, run_id), cli, pauses)]


def kinds(events: list[BaseEvent]) -> list[str]:
    return [str(e.type.value) for e in events]


async def test_a_pause_ends_the_run_and_the_next_run_streams_the_same_turn_on_then_its_message() -> None:
    book = InterruptBook()
    pauses = Pauses(book)
    cli = ScriptedCli(book, [[("text", "m1", "let me"), ("tool", "c1", "shell"), ("ask", "c1"),
                              ("text", "m2", "done"), ("done",)],
                             [("text", "m3", "and then"), ("done",)]])
    first = await run(cli, pauses, "do it", "run-1")
    assert kinds(first) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "RUN_FINISHED"]
    paused = first[-1]
    assert isinstance(paused, RunFinishedEvent) and paused.outcome is not None and paused.outcome.type == "interrupt"
    assert pauses.parked("t") and cli.closed == []

    (waiting,) = book.pending("t")
    book.resolve("t", {waiting.id: Answer(approved=True)})
    second = await run(cli, pauses, "also this", "run-2")
    # the paused turn goes on, its end closing what it opened (text first) without its RUN_FINISHED (a message
    # follows), then the message's own turn
    assert kinds(second) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",  # m2
                             "TEXT_MESSAGE_END", "TEXT_MESSAGE_END", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                             "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert [e.message_id for e in second if isinstance(e, TextMessageEndEvent)] == ["m1", "m2", "m3"]
    finished = second[-1]
    assert isinstance(finished, RunFinishedEvent) and finished.run_id == "run-2"
    assert cli.started == ["do it", "also this"]
    assert cli.closed == ["run-2", "run-2"] and not pauses.parked("t")


async def test_a_resume_without_a_message_ends_with_the_paused_turn() -> None:
    book = InterruptBook()
    pauses = Pauses(book)
    cli = ScriptedCli(book, [[("ask", "c1"), ("text", "m1", "ran it"), ("done",)]])
    assert kinds(await run(cli, pauses, "go", "run-1")) == [
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]  # the waiting call, from the request
    (waiting,) = book.pending("t")
    book.resolve("t", {waiting.id: Answer(approved=True)})
    resumed = await run(cli, pauses, "", "run-2")
    assert kinds(resumed) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert cli.started == ["go"]


async def test_a_run_error_is_the_runs_bridge_error_and_the_turn_is_closed() -> None:
    book = InterruptBook()
    pauses = Pauses(book)
    cli = ScriptedCli(book, [[("text", "m1", "hm"), ("fail", "The model refused.")]])
    turn = make_turn("go", "run-1")
    seen: list[str] = []
    with pytest.raises(BridgeError) as raised:
        async for event in run_turn(turn, cli, pauses):
            seen.append(str(event.type.value))
    assert raised.value.code == "AGENT_ERROR" and "The model refused." in str(raised.value)
    assert seen == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    assert cli.closed == ["run-1"]


async def test_a_run_closed_early_closes_its_turn() -> None:
    book = InterruptBook()
    pauses = Pauses(book)
    cli = ScriptedCli(book, [[("text", "m1", "a"), ("text", "m1", "b"), ("done",)]])
    events = run_turn(make_turn("go", "run-1"), cli, pauses)
    assert isinstance(events, AsyncIterator)
    await anext(events)
    await events.aclose()  # the core stops reading (a timeout, an escalation)
    assert cli.closed == ["run-1"] and not pauses.parked("t")  # closed before aclose returned


async def test_a_runner_stopping_closes_a_parked_turn_the_way_its_bridge_closes_a_turn() -> None:
    book = InterruptBook()
    pauses = Pauses(book)
    cli = ScriptedCli(book, [[("text", "m1", "let me"), ("ask", "c1"), ("text", "m1", "ran it"), ("done",)]])
    first = await run(cli, pauses, "do it", "run-1")
    assert kinds(first)[-1] == "RUN_FINISHED" and pauses.parked("t") and cli.closed == []
    book.close()  # as the runner stops: the interrupt is not answered
    await pauses.close()  # the bridge's close_turn (for Gemini: cancel, then wait for the CLI to end the prompt)
    assert cli.closed == ["run-1"] and not pauses.parked("t")
    await pauses.close()  # nothing left to close
    assert cli.closed == ["run-1"]
