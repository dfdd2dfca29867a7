"""A paused run shown the platform's way: one ``AskUserQuestion`` tool call without a result, the question card.

The platform's session page knows one "the agent waits for you" signal: an ``AskUserQuestion`` tool call without a
result as the last tool call of the newest message holding tool calls (its ``waiting_input`` badge; the card itself
is ``ask-user-question.tsx``). Its arguments are ``{"questions": [{"question", "header", "options": [{"label",
"description"}], "multiSelect"}]}``; the card answers with a user message whose ``metadata.type`` is
``"ask_user_question_response"`` and whose content is ``{"questions": [...], "answers": {"<question>": "<label(s)>"}}``.

So a run that ends waiting for a person (``RUN_FINISHED`` outcome ``interrupt``, unchanged) also streams, as its last
tool call, one card with a question per open interrupt: an approval asks "Approve" / "Deny" about what the tool will
do; an agent's question keeps its own questions and options. A CLI that streamed its own ``AskUserQuestion`` call
for the question (Claude) has its card already: none is added for it (its result comes from the CLI when answered).
The next run closes the card with a ``TOOL_CALL_RESULT`` holding the answers, however they came.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent, ToolCallArgsEvent, ToolCallEndEvent, ToolCallResultEvent, ToolCallStartEvent

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.interrupts.book import Answer, PendingInterrupt

CARD_TOOL = "AskUserQuestion"
ANSWER_TYPE = "ask_user_question_response"  # metadata.type of the platform's answer message
APPROVE, DENY = "Approve", "Deny"
APPROVAL_OPTIONS = [{"label": APPROVE, "description": "Let the agent do this"},
                    {"label": DENY, "description": "Refuse; the agent is told you said no"}]


def is_card_tool(name: str | None) -> bool:
    """The platform's test (use-agent-status.ts): the name's letters, case-insensitive."""
    return re.sub(r"[^a-z]", "", (name or "").lower()) == "askuserquestion"


@dataclass(frozen=True)
class CardQuestion:
    """One question of a card: the interrupt it answers and, for an agent's question, its own text."""

    text: str  # unique within the card (the answers are keyed by it)
    interrupt: PendingInterrupt
    asked: str | None = None  # the agent's question text (None: an approval)
    shape: Mapping[str, Any] | None = None  # the agent's question as it asked it

    def as_platform(self) -> dict[str, Any]:
        if self.shape is None:
            return {"question": self.text, "header": "Approval", "options": APPROVAL_OPTIONS, "multiSelect": False}
        options = [{"label": str(o.get("label")), "description": str(o.get("description") or "")}
                   for o in self.shape.get("options") or () if isinstance(o, Mapping) and o.get("label")]
        return {"question": self.text, "header": str(self.shape.get("header") or "Question")[:40],
                "options": options, "multiSelect": bool(self.shape.get("multiSelect"))}


@dataclass(frozen=True)
class Card:
    call_id: str
    questions: tuple[CardQuestion, ...]
    own: bool = False  # the CLI's own AskUserQuestion call (its result comes from the CLI)

    def arguments(self) -> dict[str, Any]:
        return {"questions": [q.as_platform() for q in self.questions]}

    def events(self) -> list[BaseEvent]:
        return [ToolCallStartEvent(tool_call_id=self.call_id, tool_call_name=CARD_TOOL),
                ToolCallArgsEvent(tool_call_id=self.call_id, delta=json.dumps(self.arguments(), ensure_ascii=False)),
                ToolCallEndEvent(tool_call_id=self.call_id)]

    def result(self, given: Mapping[str, Answer], unanswered: str) -> ToolCallResultEvent:
        """The card closed: the answers (by question text) as the card's result; ``unanswered`` for those without."""
        answers: dict[str, str] = {}
        for q in self.questions:
            answer = given.get(q.interrupt.id)
            answers[q.text] = _said(q, answer) or f"(not answered: {unanswered})"
        return ToolCallResultEvent(message_id=f"{self.call_id}-result", tool_call_id=self.call_id,
                                   content=json.dumps({"answers": answers}, ensure_ascii=False), role="tool")


def _said(q: CardQuestion, answer: Answer | None) -> str | None:
    """What a person answered to one question of the card, as the card shows it (None: no answer)."""
    if answer is None or answer.stop_turn:
        return None
    if q.asked is None:
        return APPROVE if answer.approved else (answer.message or DENY)
    if not answer.approved:
        return answer.message
    said = ((answer.payload or {}).get("answers") or {}).get(q.asked)
    return str(said) if said else None


def card_questions(pending: Sequence[PendingInterrupt]) -> list[CardQuestion]:
    """The questions of the card for the open interrupts (frontend tools aside), texts made unique, in order."""
    questions: list[CardQuestion] = []
    used: set[str] = set()

    def unique(text: str) -> str:
        final, n = text, 1
        while final in used:
            n += 1
            final = f"{text} ({n})"
        used.add(final)
        return final

    for waiting in pending:
        request = waiting.request
        if request.reason == "frontend_tool":
            continue
        if request.reason == "question":
            for asked in request.arguments.get("questions") or ():
                if isinstance(asked, Mapping) and asked.get("question"):
                    questions.append(CardQuestion(unique(str(asked["question"])), waiting, str(asked["question"]),
                                                  asked))
            continue
        questions.append(CardQuestion(unique(approval_question(request.tool_name, request.message)), waiting))
    return questions


def approval_question(tool_name: str, message: str) -> str:
    """What an approval asks: the bridge's description of what the tool will do, naming the tool."""
    text = message.strip() or f"The agent wants to use {tool_name}."
    return text if tool_name in text else f"{text}\n(tool: {tool_name})"


def build_card(pending: Sequence[PendingInterrupt], run_id: str, streamed: Callable[[str], str | None]) -> Card | None:
    """The card a paused run shows, or None when nothing waits for a person. ``streamed(call_id)``: the name of a
    tool call the thread has streamed (None if not): a question asked by the CLI's own streamed ``AskUserQuestion``
    call is shown by that call."""
    questions = card_questions(pending)
    if not questions:
        return None
    own = [q for q in questions if q.asked is not None and is_card_tool(streamed(q.interrupt.request.tool_call_id))]
    if own and len(own) == len(questions) and len({q.interrupt.id for q in own}) == 1:
        return Card(own[0].interrupt.request.tool_call_id, tuple(questions), own=True)
    return Card(f"{run_id}-ask", tuple(questions))


class CardAnswerError(RunnerError, ValueError):
    code = ErrorCode.INVALID_ANSWER


def answers_from_card(content: Any, questions: Sequence[CardQuestion]) -> dict[str, Answer]:
    """The platform's answer message (``{"questions", "answers": {text: label(s)}}``) as answers by interrupt id:
    ``Approve`` approves, ``Deny`` refuses, other words refuse with those words; an agent's question gets the
    answer given. Questions without an answer are left out (the caller says which are missing)."""
    if isinstance(content, list):
        content = "".join(str(getattr(part, "text", "") or "") for part in content)
    try:
        data = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        data = None
    answers = data.get("answers") if isinstance(data, Mapping) else None
    if not isinstance(answers, Mapping):
        raise CardAnswerError('an ask_user_question_response message holds {"questions": [...], "answers": '
                              '{"<question>": "<answer>"}} as JSON')
    unknown = [text for text in answers if text not in {q.text for q in questions}]
    if unknown:
        raise CardAnswerError(f"the open question card does not ask {unknown[0]!r}; it asks: "
                              f"{'; '.join(q.text for q in questions)}")
    given: dict[str, Answer] = {}
    asked: dict[str, dict[str, str]] = {}
    for q in questions:
        if q.text not in answers:
            continue
        value = answers[q.text]
        said = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        if q.asked is not None:
            asked.setdefault(q.interrupt.id, {})[q.asked] = said
        elif said.strip().lower() == APPROVE.lower():
            given[q.interrupt.id] = Answer(approved=True)
        elif said.strip().lower() == DENY.lower():
            given[q.interrupt.id] = Answer(approved=False)
        else:
            given[q.interrupt.id] = Answer(approved=False, message=said)
    for interrupt_id, flat in asked.items():
        given[interrupt_id] = Answer(approved=True, payload={"answers": flat})
    return given
