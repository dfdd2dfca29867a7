"""The question card of a paused run (``interrupts.card``) and the platform's answer message as the fourth form of
an answer (``interrupts.answers``), without a CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import RunAgentInput
from harness import RunnerHarness
from process_bridge import FakeCliBridge

from ambient_runner.interrupts.answers import ResumeError, read_answers
from ambient_runner.interrupts.book import Answer, InterruptBook, InterruptRequest, question_request
from ambient_runner.interrupts.card import build_card, card_questions
from ambient_runner.runs.prompt import trailing_user_messages


def answers_of(run_input: RunAgentInput, pending: list[Any], lost: set[str]) -> Any:
    """``read_answers`` with the run's trailing user messages, as admission finds them."""
    return read_answers(run_input, pending, lost, trailing_user_messages(run_input.messages))


SHELL = InterruptRequest(reason="tool_approval", tool_call_id="call-1", tool_name="commandExecution",
                         message="Codex wants to run a command:\ntouch out.txt")
SAME = InterruptRequest(reason="tool_approval", tool_call_id="call-3", tool_name="commandExecution",
                        message="Codex wants to run a command:\ntouch out.txt")
ASKED = question_request([{"question": "Which colour?", "header": "Colour", "multiSelect": False,
                           "options": [{"label": "Blue", "description": "calm"}, {"label": "Red"}]}],
                         "call-2", "AskUserQuestion", {})
FRONTEND = InterruptRequest(reason="frontend_tool", tool_call_id="call-4", tool_name="open_in_browser", message="")


def answer_message(answers: dict[str, Any], message_id: str = "ans") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "metadata": {"type": "ask_user_question_response"},
            "content": json.dumps({"questions": [], "answers": answers})}


def run_input(*messages: dict[str, Any], **fields: Any) -> RunAgentInput:
    return RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": list(messages), **fields})


async def test_one_question_per_open_interrupt_in_the_platforms_shape() -> None:
    book = InterruptBook()
    pending = [book.open("t", r) for r in (SHELL, SAME, ASKED, FRONTEND)]
    card = build_card(pending, "run-9", lambda call: None)
    assert card is not None and card.call_id == "run-9-ask" and not card.own
    (start, args, end) = card.events()
    assert (start.tool_call_name, end.tool_call_id) == ("AskUserQuestion", "run-9-ask")
    questions = json.loads(args.delta)["questions"]
    assert [q["question"] for q in questions] == [
        "Codex wants to run a command:\ntouch out.txt\n(tool: commandExecution)",
        "Codex wants to run a command:\ntouch out.txt\n(tool: commandExecution) (2)",  # unique: answers are keyed by it
        "Which colour?"]
    assert questions[0]["options"] == [{"label": "Approve", "description": "Let the agent do this"},
                                       {"label": "Deny", "description": "Refuse; the agent is told you said no"}]
    assert questions[2] == {"question": "Which colour?", "header": "Colour", "multiSelect": False,
                            "options": [{"label": "Blue", "description": "calm"}, {"label": "Red", "description": ""}]}
    assert build_card([pending[3]], "run-9", lambda call: None) is None  # the application answers its own tools


async def test_the_clis_own_ask_user_question_call_is_the_card() -> None:
    pending = [InterruptBook().open("t", ASKED)]
    card = build_card(pending, "run-9", {"call-2": "AskUserQuestion"}.get)
    assert card is not None and card.own and card.call_id == "call-2"
    assert build_card(pending, "run-9", lambda call: None).call_id == "run-9-ask"  # not streamed: a card is added


@pytest.mark.parametrize(("said", "answer"), [
    ("Approve", Answer(approved=True)),
    ("Deny", Answer(approved=False)),
    ("not on main, use a branch", Answer(approved=False, message="not on main, use a branch")),
])
async def test_the_platforms_answer_message_answers_approvals(said: str, answer: Answer) -> None:
    book = InterruptBook()
    pending = book.open("t", SHELL)
    (question,) = card_questions([pending])
    answers = answers_of(run_input(answer_message({question.text: said})), [pending], set())
    assert answers.given == {pending.id: answer} and answers.answer_message_ids == {"ans"}
    card = build_card([pending], "r", lambda call: None)
    result = json.loads(card.result(answers.given, "x").content)
    assert result == {"answers": {question.text: said if said != "Deny" else "Deny"}}


async def test_the_platforms_answer_message_answers_questions_and_says_the_same_as_resume() -> None:
    pending = InterruptBook().open("t", ASKED)
    by_card = answers_of(run_input(answer_message({"Which colour?": "Blue"})), [pending], set())
    by_resume = answers_of(run_input(resume=[{"interruptId": pending.id, "status": "resolved",
                                                "payload": {"answers": {"Which colour?": "Blue"}}}]), [pending], set())
    expected = Answer(approved=True, payload={"answers": {"Which colour?": "Blue"}})
    assert by_card.given == by_resume.given == {pending.id: expected}


async def test_an_answer_message_only_counts_when_new_and_for_an_open_card() -> None:
    book = InterruptBook()
    pending = book.open("t", SHELL)
    (question,) = card_questions([pending])
    old = [answer_message({question.text: "Approve"}, "old"), {"id": "a", "role": "assistant", "content": "ok"},
           {"id": "u", "role": "user", "content": "something else"}]
    assert answers_of(run_input(*old), [pending], set()).given == {}  # history a client resent: not an answer
    cases = [(answer_message({"Not asked?": "Approve"}), [pending], "INVALID_ANSWER"),
             ({**answer_message({}), "content": "Approve"}, [pending], "INVALID_ANSWER"),
             (answer_message({question.text: "Approve"}), [], "NO_OPEN_QUESTION")]
    for message, open_now, code in cases:
        with pytest.raises(ResumeError) as raised:
            answers_of(run_input(message), open_now, set())
        assert raised.value.code == code
    lost = answers_of(run_input(answer_message({question.text: "Approve"})), [], {"int-gone"})
    assert lost.lost == ["int-gone"] and lost.given == {}


async def test_a_closed_card_says_what_became_of_each_question() -> None:
    book = InterruptBook()
    pending = [book.open("t", SHELL), book.open("t", ASKED)]
    card = build_card(pending, "r", lambda call: None)
    result = card.result({pending[1].id: Answer(approved=True, payload={"answers": {"Which colour?": "Red"}})},
                         "you sent a new message")
    assert result.tool_call_id == "r-ask" and json.loads(result.content) == {"answers": {
        card.questions[0].text: "(not answered: you sent a new message)", "Which colour?": "Red"}}


async def test_an_answer_to_no_open_card_is_a_422_in_the_platforms_error_shape(tmp_path: Any) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        response = await runner.client.post("/run", json={"threadId": "t", "messages": [
            answer_message({"Run it?": "Approve"})]})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "NO_OPEN_QUESTION" and isinstance(body["error"], str) and "t" in body["details"]["threadId"]
