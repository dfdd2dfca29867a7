"""The interrupt book (open, answer, expire, the file a successor reads) and the three answer forms (no CLI)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import RunAgentInput

from ambient_runner.bridges.options import OptionError, RunnerOptions
from ambient_runner.interrupts.answers import ResumeError, read_answers
from ambient_runner.interrupts.book import Answer, InterruptBook, InterruptRequest, refusal_note
from ambient_runner.runs.prompt import trailing_user_messages
from ambient_runner.scripted_models.base import REFUSED_ANSWER, ScriptedModelServer
from ambient_runner.settings import RunnerSettings


def answers_of(run_input: RunAgentInput, pending: list[Any], lost: set[str]) -> Any:
    """``read_answers`` with the run's trailing user messages, as admission finds them."""
    return read_answers(run_input, pending, lost, trailing_user_messages(run_input.messages))


APPROVAL = InterruptRequest(reason="tool_approval", tool_call_id="call-1", tool_name="Bash", message="run it?")
QUESTION = InterruptRequest(reason="question", tool_call_id="call-2", tool_name="AskUserQuestion",
                            message="Which?", response_schema={}, arguments={"questions": [{"question": "Which?"}]})


def run_input(**fields: Any) -> RunAgentInput:
    return RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": [], **fields})


async def test_an_answer_reaches_the_waiting_side_and_closes_the_interrupt(tmp_path: Path) -> None:
    book = InterruptBook(tmp_path / "open.json")
    pending = book.open("t", APPROVAL)
    assert [p.id for p in book.pending("t")] == [pending.id]
    assert json.loads((tmp_path / "open.json").read_text()) == {"t": [pending.id]}
    book.resolve("t", {pending.id: Answer(approved=True)})
    assert (await pending.answer) == Answer(approved=True)
    assert book.pending("t") == []
    assert json.loads((tmp_path / "open.json").read_text()) == {}
    wire = pending.interrupt().model_dump(by_alias=True, exclude_none=True)
    assert wire["toolCallId"] == "call-1" and wire["reason"] == "tool_approval" and wire["expiresAt"].endswith("Z")


async def test_an_unanswered_interrupt_is_refused_and_stops_its_turn() -> None:
    book = InterruptBook(timeout=0.05)
    pending = book.open("t", APPROVAL)
    answer = await asyncio.wait_for(pending.answer, 5)
    assert answer.approved is False and answer.stop_turn and "Nobody answered" in (answer.message or "")
    assert [p.id for p in book.take_expired("t")] == [pending.id]
    assert book.take_expired("t") == []


async def test_a_successor_knows_the_pauses_its_predecessor_lost(tmp_path: Path) -> None:
    first = InterruptBook(tmp_path / "open.json")
    pending = first.open("t", APPROVAL)
    first.close()
    second = InterruptBook(tmp_path / "open.json")
    assert second.lost("t") == {pending.id} and second.pending("t") == []
    answers = answers_of(run_input(resume=[{"interruptId": pending.id, "status": "resolved"}]),
                           second.pending("t"), second.lost("t"))
    assert answers.lost == [pending.id] and answers.given == {}
    second.forget_lost("t")
    assert InterruptBook(tmp_path / "open.json").lost("t") == set()


@pytest.mark.parametrize(("payload", "approved", "message"), [
    ({"approved": True}, True, None),
    ({"approved": False, "message": "no"}, False, "no"),
    (True, True, None),
    ("yes", True, None),
    ("not like this", False, "not like this"),
])
async def test_approval_payloads(payload: Any, approved: bool, message: str | None) -> None:
    pending = InterruptBook().open("t", APPROVAL)
    answers = answers_of(run_input(resume=[{"interruptId": pending.id, "status": "resolved", "payload": payload}]),
                           [pending], set())
    assert answers.given[pending.id] == Answer(approved=approved, message=message)


async def test_the_three_forms_say_the_same() -> None:
    pending = InterruptBook().open("t", APPROVAL)
    entry = {"interruptId": pending.id, "status": "resolved", "payload": {"approved": False, "message": "why"}}
    forms = [run_input(resume=[entry]), run_input(forwardedProps={"resume": [entry]}),
             run_input(messages=[{"id": "m", "role": "tool", "toolCallId": "call-1",
                                  "content": json.dumps(entry["payload"])}])]
    seen = [answers_of(form, [pending], set()) for form in forms]
    assert all(a.given == {pending.id: Answer(approved=False, message="why")} for a in seen)
    assert seen[2].tool_message_ids == {"m"}


async def test_a_question_takes_its_answers_or_one_string() -> None:
    pending = InterruptBook().open("t", QUESTION)
    for payload in ({"answers": {"Which?": "Blue"}}, "Blue"):
        answers = answers_of(run_input(resume=[{"interruptId": pending.id, "status": "resolved",
                                                  "payload": payload}]), [pending], set())
        assert answers.given[pending.id].payload == {"answers": {"Which?": "Blue"}}
    with pytest.raises(ResumeError, match="did not ask"):
        answers_of(run_input(resume=[{"interruptId": pending.id, "status": "resolved",
                                        "payload": {"answers": {"Other?": "x"}}}]), [pending], set())


async def test_answers_that_answer_nothing_are_refused() -> None:
    pending = InterruptBook().open("t", APPROVAL)
    cases = [
        ({"resume": [{"interruptId": "int-other", "status": "resolved"}]}, "UNKNOWN_INTERRUPT"),
        ({"resume": [{"interruptId": pending.id, "status": "resolved", "payload": 3}]}, "INVALID_RESUME"),
        ({"forwardedProps": {"resume": "yes"}}, "INVALID_RESUME"),
        ({"forwardedProps": {"resume": [{"status": "resolved"}]}}, "INVALID_RESUME"),
    ]
    for fields, code in cases:
        with pytest.raises(ResumeError) as raised:
            answers_of(run_input(**fields), [pending], set())
        assert raised.value.code == code


def test_a_runner_that_cannot_ask_refuses_the_ask_policy(tmp_path: Path) -> None:
    settings = RunnerSettings(runner_type="gemini-cli", workspace_path=tmp_path)
    cannot, can = RunnerOptions(runner="the Gemini CLI runner"), RunnerOptions(runner="x", approvals=True)
    with pytest.raises(OptionError, match="cannot ask for approvals"):
        cannot.parse({"approvalPolicy": "ask"}, settings)
    assert cannot.parse({}, settings).approval_policy == "auto"
    assert can.parse({"approvalPolicy": "ask"}, settings).approval_policy == "ask"
    with pytest.raises(OptionError, match="must be one of"):
        can.parse({"approvalPolicy": "sometimes"}, settings)
    asking = RunnerSettings(runner_type="gemini-cli", workspace_path=tmp_path, runner_approval_policy="ask")
    with pytest.raises(OptionError, match="RUNNER_APPROVAL_POLICY"):
        cannot.parse({}, asking)


def test_the_scripted_model_hears_the_runners_refusal_note() -> None:
    """The scripted model keeps its own copy of the note's words (it imports nothing of the runner): the note the
    runner writes is the one it answers in words, never with the refused call again."""
    note = refusal_note(Answer(approved=False, message="use the other branch"))
    assert note is not None
    with ScriptedModelServer() as model:
        assert model.decide(f"{note}\n\nGo on.").chunks == REFUSED_ANSWER
        assert model.decide("Go on.").kind == "tool"
