"""A person's turn in one place (``interrupts.human_in_the_loop``): the three calls the run manager makes."""

from __future__ import annotations

import json

from ambient_runner.interrupts.answers import Answers
from ambient_runner.interrupts.book import Answer, InterruptRequest, question_request
from ambient_runner.interrupts.card import Card
from ambient_runner.interrupts.human_in_the_loop import NEW_MESSAGE_INSTEAD, HumanInTheLoop

APPROVAL = InterruptRequest(reason="tool_approval", tool_call_id="call-1", tool_name="Bash", message="run ls")
QUESTION = question_request([{"question": "Which colour?", "options": [{"label": "Blue"}]}], "call-2",
                            "AskUserQuestion", {})


def shown(cards: list[Card]):
    def show(card: Card) -> str:
        cards.append(card)
        return f"{card.call_id}~wire"
    return show


async def test_a_new_message_instead_of_an_answer_refuses_the_pause_and_closes_its_card():
    hitl = HumanInTheLoop()
    pending = hitl.ask("t", APPROVAL)
    cards: list[Card] = []
    hitl.on_pause("t", "run-1", lambda call_id: None, shown(cards))
    assert [c.call_id for c in cards] == ["run-1-ask"] and hitl.paused("t")

    resumption = hitl.on_start("t", Answers({}, []))

    assert resumption.resumed and not hitl.paused("t")
    assert pending.answer.result() == Answer(approved=False, message=NEW_MESSAGE_INSTEAD, stop_turn=True)
    assert resumption.card_result is not None and resumption.card_result.tool_call_id == "run-1-ask~wire"
    said = json.loads(resumption.card_result.content)["answers"]
    assert list(said.values()) == [f"(not answered: {NEW_MESSAGE_INSTEAD})"]
    assert hitl.on_start("t", Answers({}, [])).card_result is None  # closed once


async def test_answers_resolve_the_pause_and_the_card_shows_them():
    hitl = HumanInTheLoop()
    pending = hitl.ask("t", APPROVAL)
    hitl.on_pause("t", "run-1", lambda call_id: None, shown([]))

    resumption = hitl.on_start("t", Answers({pending.id: Answer(approved=True)}, []))

    assert resumption.resumed and pending.answer.result().approved and resumption.lost_message is None
    assert json.loads(resumption.card_result.content)["answers"] == {"run ls\n(tool: Bash)": "Approve"}


async def test_a_question_the_cli_streamed_itself_is_its_own_card():
    hitl = HumanInTheLoop()
    hitl.ask("t", QUESTION)
    cards: list[Card] = []
    hitl.on_pause("t", "run-1", lambda call_id: "AskUserQuestion" if call_id == "call-2" else None, shown(cards))
    assert cards == []  # nothing streamed: the CLI's own call is the card, its result comes from the CLI
    assert hitl.on_start("t", Answers({}, [])).card_result is None


async def test_answers_to_a_pause_a_previous_runner_left_are_named_once(tmp_path):
    path = tmp_path / "interrupts.json"
    before = HumanInTheLoop(path)
    lost_id = before.ask("t", APPROVAL).id
    after = HumanInTheLoop(path)  # a replaced pod
    assert after.waiting("t").lost == {lost_id} and after.waiting("t").pending == []

    resumption = after.on_start("t", Answers({}, [lost_id]))

    assert resumption.lost == (lost_id,) and lost_id in (resumption.lost_message or "")
    assert HumanInTheLoop(path).waiting("t").lost == set()  # said once: the next pod does not say it again


async def test_a_new_message_makes_a_lost_pause_moot(tmp_path):
    path = tmp_path / "interrupts.json"
    HumanInTheLoop(path).ask("t", APPROVAL)
    after = HumanInTheLoop(path)
    resumption = after.on_start("t", Answers({}, []))
    assert not resumption.resumed and resumption.lost_message is None and after.waiting("t").lost == set()


async def test_stopping_refuses_what_waits_and_stops_the_turn():
    hitl = HumanInTheLoop()
    first, second = hitl.ask("a", APPROVAL), hitl.ask("b", QUESTION)
    assert sorted(hitl.paused_threads()) == ["a", "b"]
    assert hitl.refuse(["a", "b"], "stopped") == [first.id, second.id]
    assert first.answer.result().stop_turn and second.answer.result().stop_turn and hitl.paused_threads() == []
