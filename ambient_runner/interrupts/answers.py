"""The answers a run brings to its thread's open interrupts, in any of the three forms a client may send them.

1. ``RunAgentInput.resume``: AG-UI 1.0 ``ResumeEntry`` items (``interruptId``, ``status``, ``payload``).
2. The same entries in ``forwardedProps.resume`` (a 1.0 client behind the platform, whose backend drops ``resume``).
3. A ``role: "tool"`` message whose ``toolCallId`` is the paused call: its content is the answer (JSON, or words).
4. The platform's question card answer: a new user message whose ``metadata.type`` is ``ask_user_question_response``
   (``interrupts.card``); it answers and is no prompt for the model.

An approval's payload is ``{approved: boolean, message?: string}``; a question's is ``{answers: {question: answer}}``
(a bare string answers a single question). ``status: "cancelled"`` refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput, UserMessage

from ag_ui_cli_common.errors import ErrorCode, RunnerError
from ambient_runner.interrupts.book import Answer, PendingInterrupt
from ambient_runner.interrupts.card import ANSWER_TYPE, CardAnswerError, answers_from_card, card_questions

YES = re.compile(r"^\s*(y|yes|approve|approved|allow|allowed|ok|okay|true|accept|go ahead)\s*[.!]?\s*$", re.I)


class ResumeError(RunnerError, ValueError):
    """An answer the runner cannot take: becomes a 422 with its ``code`` and ``details``."""

    code = ErrorCode.INVALID_RESUME


@dataclass(frozen=True)
class Answers:
    """The run's answers by interrupt id, and the ids it answered that a previous runner process had open."""

    given: dict[str, Answer]
    lost: list[str]
    tool_message_ids: frozenset[str] = frozenset()  # tool messages read as answers (not results of their own)
    answer_message_ids: frozenset[str] = frozenset()  # user messages answering the question card (no prompt)

    def __bool__(self) -> bool:
        return bool(self.given or self.lost)


@dataclass(frozen=True)
class Waiting:
    """What a thread's next run is read against: its open interrupts, and those a previous runner process had open."""

    pending: list[PendingInterrupt]
    lost: set[str]



NO_ANSWERS = Answers({}, [])  # a run that answers nothing (a turn the runner starts, a queued message)


def answers_to(run_input: RunAgentInput, waiting: Waiting, trailing: Sequence[UserMessage]) -> Answers:
    """The run's answers to what its thread ``waiting`` for (``read_answers``); refused when they answer nothing
    open, or some of it only. Every refusal names the thread."""
    thread_id = run_input.thread_id
    try:
        answers = read_answers(run_input, waiting.pending, waiting.lost, trailing)
    except ResumeError as exc:
        raise ResumeError(exc.message, code=exc.code, threadId=thread_id, **exc.details) from None
    unanswered = [p.id for p in waiting.pending if p.id not in answers.given]
    if answers.given and unanswered:
        raise ResumeError(f"the run answers some of the thread's open interrupts but not {', '.join(unanswered)}; "
                          "answer every open interrupt in one run", code=ErrorCode.INTERRUPTS_UNANSWERED,
                          threadId=thread_id, interruptIds=unanswered)
    return answers


def read_answers(run_input: RunAgentInput, pending: list[PendingInterrupt], lost: set[str],
                 trailing: Sequence[UserMessage]) -> Answers:
    """The answers ``run_input`` brings to ``pending`` (and to the ``lost`` ids); ``trailing``: its new user messages
    (the user messages after its last other message)."""
    by_id = {p.id: p for p in pending}
    by_call = {p.request.tool_call_id: p for p in pending}
    given: dict[str, Answer] = {}
    lost_answered: list[str] = []
    for entry in _entries(run_input):
        interrupt_id = entry.get("interruptId", entry.get("interrupt_id"))
        if not isinstance(interrupt_id, str) or not interrupt_id:
            raise ResumeError("each resume entry needs an interruptId (a string)")
        status = entry.get("status", "resolved")
        if status not in ("resolved", "cancelled"):
            raise ResumeError(f"resume entry {interrupt_id}: status must be 'resolved' or 'cancelled' (got {status!r})",
                              interruptId=interrupt_id)
        if interrupt_id in given:
            raise ResumeError(f"interrupt {interrupt_id} is answered twice in this run",
                              interruptId=interrupt_id)
        if interrupt_id in lost:
            lost_answered.append(interrupt_id)
            continue
        target = by_id.get(interrupt_id)
        if target is None:
            raise ResumeError(f"interrupt {interrupt_id} is not open on thread {run_input.thread_id!r} (unknown, or "
                              f"answered already); open: {', '.join(by_id) or 'none'}",
                              code=ErrorCode.UNKNOWN_INTERRUPT, interruptId=interrupt_id)
        given[interrupt_id] = _answer(target, status, entry.get("payload"))
    tool_messages: set[str] = set()
    for message in run_input.messages:
        call_id = getattr(message, "tool_call_id", None)
        if message.role != "tool" or call_id not in by_call:
            continue
        target = by_call[call_id]
        tool_messages.add(message.id)
        if target.id not in given:
            given[target.id] = _answer(target, "resolved", _content(message.content))
    card_answers = [m for m in trailing if _answers_card(m)]
    for message in card_answers:
        if not pending and lost:  # the card of a pause a previous runner process had open
            lost_answered += [i for i in sorted(lost) if i not in lost_answered]
            continue
        if not pending:
            raise ResumeError(f"no question waits for an answer on thread {run_input.thread_id!r} (answered already, "
                              "or the run did not pause)", code=ErrorCode.NO_OPEN_QUESTION)
        try:
            by_card = answers_from_card(message.content, card_questions(pending))
        except CardAnswerError as exc:
            raise ResumeError(exc.message, code=ErrorCode.INVALID_ANSWER) from None
        given.update({i: a for i, a in by_card.items() if i not in given})
    return Answers(given, lost_answered, frozenset(tool_messages), frozenset(m.id for m in card_answers))


def _answers_card(message: Any) -> bool:
    metadata = getattr(message, "metadata", None)
    return isinstance(metadata, Mapping) and metadata.get("type") == ANSWER_TYPE


def _entries(run_input: RunAgentInput) -> list[Mapping[str, Any]]:
    entries: list[Mapping[str, Any]] = [e.model_dump(by_alias=True) for e in run_input.resume or ()]
    props = run_input.forwarded_props if isinstance(run_input.forwarded_props, Mapping) else {}
    extra = props.get("resume")
    if extra is not None:
        if not isinstance(extra, list) or not all(isinstance(e, Mapping) for e in extra):
            raise ResumeError("forwardedProps.resume must be a list of resume entries ({interruptId, status, payload})")
        known = {e.get("interruptId") for e in entries}
        entries += [e for e in extra if e.get("interruptId", e.get("interrupt_id")) not in known]
    return entries


def _content(content: Any) -> Any:
    """A tool message's content: JSON when it is JSON, else its words."""
    if isinstance(content, list):
        content = "".join(str(getattr(part, "text", "") or "") for part in content)
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _answer(target: PendingInterrupt, status: str, payload: Any) -> Answer:
    if status == "cancelled":
        message = payload.get("message") if isinstance(payload, Mapping) else None
        return Answer(approved=False, message=message if isinstance(message, str) else None)
    if target.request.reason == "question":
        return _question_answer(target, payload)
    if target.request.reason == "frontend_tool":  # the tool's result, as the application gave it
        return Answer(approved=True, payload=payload)
    if isinstance(payload, bool):
        return Answer(approved=payload)
    if isinstance(payload, str):
        return Answer(approved=True) if YES.match(payload) else Answer(approved=False, message=payload)
    if isinstance(payload, Mapping) and isinstance(payload.get("approved"), bool):
        message = payload.get("message")
        if message is not None and not isinstance(message, str):
            raise ResumeError(f"interrupt {target.id}: message must be a string", interruptId=target.id)
        return Answer(approved=payload["approved"], message=message)
    raise ResumeError(f"interrupt {target.id} asks for approval: answer with "
                      '{"approved": true|false, "message"?: "..."}', interruptId=target.id)


def _question_answer(target: PendingInterrupt, payload: Any) -> Answer:
    questions = list(target.request.arguments.get("questions") or ())
    texts = [str(q.get("question", "")) for q in questions if isinstance(q, Mapping)]
    if isinstance(payload, str) and len(texts) == 1:
        payload = {"answers": {texts[0]: payload}}
    answers = payload.get("answers") if isinstance(payload, Mapping) else None
    if not isinstance(answers, Mapping) or not answers:
        raise ResumeError(f"interrupt {target.id} is a question: answer with "
                          '{"answers": {"<question>": "<answer>"}}', interruptId=target.id)
    unknown = [q for q in answers if q not in texts]
    if unknown:
        raise ResumeError(f"interrupt {target.id} did not ask {unknown[0]!r}; it asked: {'; '.join(texts)}",
                          interruptId=target.id)
    flat = {str(q): ", ".join(map(str, a)) if isinstance(a, list) else str(a) for q, a in answers.items()}
    return Answer(approved=True, payload={"answers": flat})
