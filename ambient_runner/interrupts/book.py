"""What a paused run waits for: the open interrupts of each thread, their answers, their expiry.

A bridge whose CLI asks for a person (a tool approval, a question) opens an interrupt here and waits on its
``answer``; its run then ends with ``RUN_FINISHED`` outcome ``interrupt`` while the CLI stays paused on the request.
The thread's next run answers it (``ambient_runner.interrupts.answers`` reads the answers), which lets the CLI go on.
An interrupt nobody answers within ``RUNNER_INTERRUPT_TIMEOUT`` is refused (and its CLI turn stopped).

The open interrupts are also written to a small file in the state dir, so a runner that replaced a pod knows which
answers belong to a pause its predecessor lost (``INTERRUPT_LOST``) rather than to nothing (a 422).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ag_ui.core import Interrupt

log = logging.getLogger(__name__)

Reason = Literal["tool_approval", "question", "frontend_tool"]  # frontend_tool: a call the application answers
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["approved"], "additionalProperties": False,
    "properties": {"approved": {"type": "boolean"},
                   "message": {"type": "string", "description": "why, for the agent (when refusing)"}}}


@dataclass(frozen=True)
class Answer:
    """A person's answer to one interrupt. ``stop_turn``: the CLI's turn ends after it (timeout, interrupt)."""

    approved: bool
    message: str | None = None
    payload: Any = None  # a question's answers, as the resume entry carried them
    stop_turn: bool = False


REFUSAL_NOTE = "I refused that request."


def refusal_note(answer: Answer) -> str | None:
    """What the model is told after a plain refusal with the person's words (sent with the next user input), for a
    CLI whose refusal cannot carry them."""
    if answer.approved or answer.stop_turn or not answer.message:
        return None
    return f"{REFUSAL_NOTE} {answer.message}"


@dataclass(frozen=True)
class InterruptRequest:
    """What a bridge asks a person: an approval of ``tool_call_id``, or a question the agent put."""

    reason: Reason
    tool_call_id: str
    tool_name: str
    message: str
    response_schema: dict[str, Any] = field(default_factory=lambda: dict(APPROVAL_SCHEMA))
    arguments: dict[str, Any] = field(default_factory=dict)  # the tool call's input, for a stream that lacks it


def question_request(questions: Iterable[Any], tool_call_id: str, tool_name: str,
                     arguments: dict[str, Any]) -> InterruptRequest:
    """An agent's questions (each ``{question, header?, options?: [{label}], multiSelect?}``, the shape Claude and
    Codex share) as one interrupt: its answers keyed by the question's text, the agent's options as examples."""
    asked = [q for q in questions if isinstance(q, Mapping) and q.get("question")]
    properties: dict[str, Any] = {}
    lines = []
    for q in asked:
        labels = [str(o.get("label")) for o in q.get("options") or () if isinstance(o, Mapping) and o.get("label")]
        one: dict[str, Any] = {"type": "string", "title": str(q.get("header") or q["question"])}
        if labels:
            one["examples"] = labels  # the agent's options; an answer of one's own is allowed too
        if q.get("multiSelect"):
            one = {"type": "array", "items": one, "title": one["title"]}
        properties[str(q["question"])] = one
        lines.append(str(q["question"]) + (f" ({' / '.join(labels)})" if labels else ""))
    schema = {"type": "object", "required": ["answers"], "properties": {"answers": {
        "type": "object", "properties": properties, "required": list(properties)}}}
    return InterruptRequest(reason="question", tool_call_id=tool_call_id, tool_name=tool_name,
                            message="\n".join(lines) or "The agent has a question", response_schema=schema,
                            arguments={**arguments, "questions": asked})


@dataclass
class PendingInterrupt:
    id: str
    thread_id: str
    request: InterruptRequest
    expires_at: float  # epoch seconds
    answer: asyncio.Future[Answer]

    def interrupt(self) -> Interrupt:
        expires = datetime.fromtimestamp(self.expires_at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return Interrupt(id=self.id, reason=self.request.reason, message=self.request.message,
                         tool_call_id=self.request.tool_call_id, response_schema=self.request.response_schema,
                         expires_at=expires, metadata={"toolName": self.request.tool_name})

    @property
    def open(self) -> bool:
        return not self.answer.done()


class InterruptBook:
    """The open interrupts of every thread (in memory), and those a previous runner process left (``lost``)."""

    def __init__(self, path: Path | None = None, timeout: float = 3600.0,
                 later: Callable[[float, Callable[[], None]], None] | None = None) -> None:
        self._path = path
        self._timeout = timeout
        self._later = later or (lambda delay, call: asyncio.get_running_loop().call_later(delay, call))
        self._open: dict[str, dict[str, PendingInterrupt]] = {}  # thread -> id -> pending
        self._lost_ids: dict[str, set[str]] | None = None  # read on first use: the state dir is hydrated first
        self._expired: dict[str, list[PendingInterrupt]] = {}  # refused for lack of an answer, not yet reported

    # ----- a bridge's side ---------------------------------------------------------------------------------
    def open(self, thread_id: str, request: InterruptRequest) -> PendingInterrupt:
        pending = PendingInterrupt(id=f"int-{uuid.uuid4().hex[:12]}", thread_id=thread_id, request=request,
                                   expires_at=time.time() + self._timeout,
                                   answer=asyncio.get_running_loop().create_future())
        self._open.setdefault(thread_id, {})[pending.id] = pending
        self._later(self._timeout, lambda: self._expire(pending))
        self._save()
        return pending

    # ----- the core's side ---------------------------------------------------------------------------------
    def pending(self, thread_id: str) -> list[PendingInterrupt]:
        return [p for p in self._open.get(thread_id, {}).values() if p.open]

    def paused_threads(self) -> list[str]:
        return [thread for thread in self._open if self.pending(thread)]

    def lost(self, thread_id: str) -> set[str]:
        return set(self._lost.get(thread_id, ()))

    def resolve(self, thread_id: str, answers: Mapping[str, Answer]) -> None:
        """Hand each answer to the interrupt it answers (by id); the file is written once."""
        for interrupt_id, answer in answers.items():
            pending = self._open.get(thread_id, {}).pop(interrupt_id, None)
            if pending is not None and pending.open:
                pending.answer.set_result(answer)
        self._save()

    def refuse_all(self, thread_id: str, message: str, *, stop_turn: bool) -> list[PendingInterrupt]:
        refused = self.pending(thread_id)
        if refused:
            refusal = Answer(approved=False, message=message, stop_turn=stop_turn)
            self.resolve(thread_id, {pending.id: refusal for pending in refused})
        return refused

    def forget_lost(self, thread_id: str) -> None:
        if self._lost.pop(thread_id, None) is not None:
            self._save()

    def take_expired(self, thread_id: str) -> list[PendingInterrupt]:
        """The thread's interrupts refused for lack of an answer since its last run (reported once)."""
        return self._expired.pop(thread_id, [])

    def close(self) -> None:
        """Runner shutdown: the open interrupts stay in the file (the next runner reports them lost)."""
        for pending in [p for by_id in self._open.values() for p in by_id.values()]:
            if pending.open:
                pending.answer.cancel()

    # ----- helpers -----------------------------------------------------------------------------------------
    @property
    def _lost(self) -> dict[str, set[str]]:
        if self._lost_ids is None:
            self._lost_ids = self._read_lost()
        return self._lost_ids

    def _expire(self, pending: PendingInterrupt) -> None:
        if not pending.open:
            return
        message = (f"Nobody answered within {self._timeout:g} s (RUNNER_INTERRUPT_TIMEOUT), so the request was "
                   "refused and the turn stopped.")
        self._expired.setdefault(pending.thread_id, []).append(pending)
        self.resolve(pending.thread_id, {pending.id: Answer(approved=False, message=message, stop_turn=True)})

    def _read_lost(self) -> dict[str, set[str]]:
        if self._path is None or not self._path.is_file():
            return {}
        try:
            data = json.loads(self._path.read_text())
            return {str(thread): {str(i) for i in ids} for thread, ids in data.items() if ids}
        except (OSError, ValueError, AttributeError):
            log.warning("could not read the open interrupts a previous runner left in %s", self._path)
            return {}

    def _save(self) -> None:
        if self._path is None:
            return
        data: dict[str, list[str]] = {t: sorted(ids) for t, ids in self._lost.items() if ids}
        for thread, by_id in self._open.items():
            ids = [i for i, p in by_id.items() if p.open]
            if ids:
                data[thread] = sorted({*data.get(thread, []), *ids})
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._path.with_suffix(".tmp")
            temporary.write_text(json.dumps(data))
            temporary.replace(self._path)
        except OSError:
            log.warning("could not write the open interrupts to %s", self._path, exc_info=True)
