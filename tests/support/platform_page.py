"""A test double of the ambient-code platform's session page, written from its source, in Python.

What it models, and where in ``github:ambient-code/platform`` the rule comes from:

- ``PlatformPage.apply``: the reducer ``components/frontend/src/hooks/agui/event-handlers.ts``
  (``processAGUIEvent``): text and reasoning committed at their end and only with content; a tool call committed
  at ``TOOL_CALL_END`` on the message named by ``parentMessageId``, else (no ``parentMessageId``) on the last
  ``role: "assistant"`` message, which may be a reasoning block; when no such message exists, in a standalone
  ``role: "tool"`` message with a random id; a tool call's name turns it into a child of another call when its
  ``parentMessageId`` is that call's id; ``TOOL_CALL_RESULT`` sets the holder's ``result``; ``MESSAGES_SNAPSHOT``
  normalized (``normalize-snapshot.ts``) and merged into what is there; ``RUN_FINISHED.outcome`` ignored; a ``RAW``
  event (``handleRawEvent``): a hidden message's metadata, a Langfuse trace id, a reasoning block, a user message's
  echo, or any other payload with a truthy ``role`` and ``content`` (JavaScript's truth: ``[]`` is one) made a
  message of its ``id`` (else a random one) with ``String(content)``.
- ``PlatformPage.send``: ``hooks/use-agui-stream.ts`` ``sendMessage`` (the user message is added at once, with its
  ``metadata``; an answer to a question card carries ``metadata.type == "ask_user_question_response"``,
  ``app/.../page.tsx`` ``sendToolAnswer``, and ``components/session/ask-user-question.tsx`` builds its content).
- ``PlatformPage.status``: the badge, ``hooks/use-agent-status.ts``: ``waiting_input`` when the last tool call of
  the newest message holding tool calls is an ``AskUserQuestion`` without a result.
- ``PlatformPage.rendered``: what a person sees, ``app/projects/[name]/sessions/[sessionName]/page.tsx`` (Phase C),
  with ``components/ui/tool-message.tsx`` ``hasActualResult`` (a blank result is a pending, spinning card).
- ``compact`` / ``reload`` / ``backend_status``: the backend's event store,
  ``components/backend/websocket/agui_store.go`` (``compactFinishedRun``: after a run only the lifecycle events,
  the snapshots, ``AskUserQuestion`` tool-call starts and RAW/CUSTOM/META events are kept; ``DeriveAgentStatus``).

Events are the runner's wire JSON (camelCase dicts). Random ids (the page's ``crypto.randomUUID``) start with
``RANDOM``; ``comparable`` leaves them and timestamps out so two pages can be compared message for message, and
``structure`` keeps what a snapshot must not change on a live page: the messages, in order, by id (a random one
counts as such: no snapshot can rebuild it), and the tool calls each holds.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

RANDOM = "page-random-"
ASK_USER_QUESTION = "AskUserQuestion"
ANSWER_TYPE = "ask_user_question_response"
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
# agui_store.go compactFinishedRun: the event types a finished run keeps.
KEPT_AFTER_COMPACTION = {"MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR",
                         "STEP_STARTED", "STEP_FINISHED", "RAW", "CUSTOM", "META", "ACTIVITY_SNAPSHOT"}

Message = dict[str, Any]


def _random_id() -> str:
    return f"{RANDOM}{uuid.uuid4().hex}"


def _millis(timestamp: Any) -> float | None:
    """A message's time in ms (the page keeps ISO strings; events carry epoch ms)."""
    if timestamp is None or timestamp == "":
        return None
    if isinstance(timestamp, int | float):
        return float(timestamp)
    return datetime.fromisoformat(str(timestamp).replace("Z", "+00:00")).timestamp() * 1000


def is_ask_user_question(name: str | None) -> bool:
    """use-agent-status.ts isAskUserQuestionTool: letters only, case-insensitive."""
    return re.sub(r"[^a-z]", "", (name or "").lower()) == "askuserquestion"


def has_actual_result(content: Any) -> bool:
    """tool-message.tsx hasActualResult: no result, "", whitespace, '""', [] and {} all mean "still running"."""
    if content is None:
        return False
    if isinstance(content, str):
        return content.strip() != "" and content not in ('""', "''")
    if isinstance(content, list | dict):
        return len(content) > 0
    return True


def _insert_by_time(messages: list[Message], message: Message) -> list[Message]:
    """event-handlers.ts insertByTimestamp: after the last message not later than it; appended without a time."""
    at = _millis(message.get("timestamp"))
    if at is None:
        return [*messages, message]
    for index in range(len(messages) - 1, -1, -1):
        other = _millis(messages[index].get("timestamp"))
        if other is not None and other <= at:
            return [*messages[:index + 1], message, *messages[index + 1:]]
    return [message, *messages]


def _js_truthy(value: Any) -> bool:
    """JavaScript's truth of a JSON value: ``[]`` and ``{}`` are true, ``""``, ``0``, ``false`` and ``null`` not."""
    return value not in (None, False, 0, "") if not isinstance(value, list | dict) else True


def _js_string(value: Any) -> str:
    """JavaScript's ``String()`` of a JSON value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return ",".join("" if item is None else _js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return json.dumps(value)


def _call(call_id: str, name: str, arguments: str, result: Any = None, parent_tool: str | None = None) -> Message:
    call: Message = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments},
                     "result": result, "status": "completed"}
    if parent_tool:
        call["parentToolUseId"] = parent_tool
    return call


class PlatformPage:
    """One browser tab on a session page: the reducer's state, fed event by event."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.pending_calls: dict[str, Message] = {}  # pendingToolCalls: started, not ended
        self.pending_children: dict[str, list[Message]] = {}
        self.current_call: Message | None = None
        self.current_message: Message | None = None
        self.current_reasoning: Message | None = None
        self.run_id: str | None = None
        self.run_active = False
        self.connection = "idle"  # state.status: connected / completed / error
        self.error: str | None = None
        self.hidden: set[str] = set()  # hiddenMessageIdsRef: messages a RAW message_metadata hid

    # ----- the person's side ---------------------------------------------------------------------------------
    def send(self, content: str, metadata: dict[str, Any] | None = None, *, timestamp: Any = None) -> Message:
        """sendMessage: the user message joins the page at once; what is POSTed is returned (without the time)."""
        message: Message = {"id": str(uuid.uuid4()), "role": "user", "content": content}
        if metadata:
            message["metadata"] = metadata
        self.messages = [*self.messages, {**message, "timestamp": timestamp or datetime.now().isoformat() + "Z"}]
        return message

    def answer_card(self, answers: dict[str, str]) -> Message:
        """The question card's submit (ask-user-question.tsx + page.tsx sendToolAnswer) for the open card."""
        card = self.open_question()
        assert card is not None, "no unanswered AskUserQuestion card on the page"
        questions = json.loads(card["function"]["arguments"] or "{}").get("questions") or []
        return self.send(json.dumps({"questions": questions, "answers": answers}), {"type": ANSWER_TYPE})

    # ----- events --------------------------------------------------------------------------------------------
    def feed(self, events: Iterable[dict[str, Any]]) -> PlatformPage:
        for event in events:
            self.apply(event)
        return self

    def apply(self, event: dict[str, Any]) -> None:
        handler = getattr(self, "_on_" + event["type"].lower(), None)
        if handler is not None:
            handler(event)

    def _on_run_started(self, event: dict[str, Any]) -> None:
        self.run_id = event.get("runId")
        self.run_active = True
        self.connection = "connected"
        self.error = None

    def _flush(self, event: dict[str, Any]) -> None:
        """What a run's end commits that no end event did: the open text, then the open reasoning."""
        if self.current_message and self.current_message["content"]:
            self.messages = _insert_by_time(self.messages, {
                "id": self.current_message["id"] or _random_id(), "role": "assistant",
                "content": self.current_message["content"],
                "timestamp": event.get("timestamp") or self.current_message["timestamp"]})
        self.current_message = None
        if self.current_reasoning and self.current_reasoning["content"]:
            self.messages = _insert_by_time(self.messages, self._reasoning_block(self.current_reasoning, event))
        self.current_reasoning = None

    def _on_run_finished(self, event: dict[str, Any]) -> None:
        self.connection = "completed"  # the outcome (interrupt, cancelled) is not looked at
        if self.run_id == event.get("runId"):
            self.run_active = False
        self._flush(event)

    def _on_run_error(self, event: dict[str, Any]) -> None:
        self.connection = "error"
        self.error = event.get("message")
        for index, message in enumerate(self.messages):
            calls = message.get("toolCalls")
            if calls and any(c.get("status") != "completed" for c in calls):
                self.messages[index] = {**message, "toolCalls": [
                    c if c.get("status") == "completed" else {**c, "status": "error", "error": event.get("message")}
                    for c in calls]}
        self.pending_calls = {}
        self.current_call = None
        self._flush(event)
        self.messages = _insert_by_time(self.messages, {
            "id": _random_id(), "role": "assistant", "content": f"**Error:** {event.get('message')}",
            "timestamp": event.get("timestamp"), "metadata": {"type": "run_error"}})
        self.run_active = False

    def _on_raw(self, event: dict[str, Any]) -> None:
        data = event.get("event") or event.get("data")
        if not isinstance(data, dict):
            return
        at = event.get("timestamp")
        if data.get("type") == "message_metadata" and data.get("hidden"):
            if data.get("messageId"):
                self.hidden.add(str(data["messageId"]))
                self.messages = [m for m in self.messages if m["id"] != data["messageId"]]
            return
        if data.get("type") == "langfuse_trace" and data.get("traceId"):
            return
        if data.get("type") == "reasoning_block":
            self.messages = _insert_by_time(self.messages, {
                "id": _random_id(), "role": "assistant", "timestamp": at, "content": {
                    "type": "reasoning_block", "thinking": _js_string(data.get("thinking") or ""),
                    "signature": _js_string(data.get("signature") or "")}})
            return
        if data.get("role") == "user" and _js_truthy(data.get("content")):
            message_id = _js_string(data.get("id") or "") or _random_id()
            if message_id not in self.hidden and not any(m["id"] == message_id for m in self.messages):
                self.messages = _insert_by_time(self.messages, {"id": message_id, "role": "user", "timestamp": at,
                                                                "content": _js_string(data["content"])})
            return
        if _js_truthy(data.get("role")) and _js_truthy(data.get("content")):
            self.messages = _insert_by_time(self.messages, {
                "id": _js_string(data.get("id") or "") or _random_id(), "role": _js_string(data["role"]),
                "content": _js_string(data["content"]), "timestamp": at})

    def _on_text_message_start(self, event: dict[str, Any]) -> None:
        self.current_message = {"id": event.get("messageId"), "role": event.get("role"), "content": "",
                                "timestamp": event.get("timestamp")}

    def _on_text_message_content(self, event: dict[str, Any]) -> None:
        if self.current_message is not None:
            self.current_message["content"] += event.get("delta") or ""

    def _on_text_message_end(self, event: dict[str, Any]) -> None:
        current, self.current_message = self.current_message, None
        if not current or not current["content"]:
            return
        message_id = current["id"] or _random_id()
        if message_id in self.hidden:
            return
        for index, message in enumerate(self.messages):
            if message["id"] == message_id:
                self.messages[index] = {**message, "content": current["content"]}
                return
        self.messages = _insert_by_time(self.messages, {
            "id": message_id, "role": current["role"] or "assistant", "content": current["content"],
            "timestamp": event.get("timestamp") or current["timestamp"]})

    def _on_reasoning_message_start(self, event: dict[str, Any]) -> None:
        self.current_reasoning = {"id": event.get("messageId"), "content": "", "timestamp": event.get("timestamp")}

    def _on_reasoning_message_content(self, event: dict[str, Any]) -> None:
        if self.current_reasoning is not None:
            self.current_reasoning["content"] += event.get("delta") or ""

    def _on_reasoning_message_end(self, event: dict[str, Any]) -> None:
        current, self.current_reasoning = self.current_reasoning, None
        if current and current["content"]:
            self.messages = _insert_by_time(self.messages, self._reasoning_block(current, event))

    @staticmethod
    def _reasoning_block(current: Message, event: dict[str, Any]) -> Message:
        """A reasoning block as the live page keeps it: an assistant message whose content is an object."""
        return {"id": current["id"] or _random_id(), "role": "assistant",
                "content": {"type": "reasoning_block", "thinking": current["content"], "signature": ""},
                "timestamp": event.get("timestamp") or current["timestamp"]}

    def _holds_call(self, call_id: str) -> bool:
        return any(c["id"] == call_id for m in self.messages for c in m.get("toolCalls") or ())

    def _on_tool_call_start(self, event: dict[str, Any]) -> None:
        parent_message = event.get("parentMessageId")
        parent_tool = event.get("parent_tool_call_id")
        if not parent_tool and parent_message and (parent_message in self.pending_calls
                                                   or self._holds_call(parent_message)):
            parent_tool = parent_message  # a parentMessageId naming a tool call makes this call its child
        call_id = event["toolCallId"]
        self.pending_calls[call_id] = {"id": call_id, "name": event.get("toolCallName") or "unknown_tool",
                                       "args": "", "parentToolUseId": parent_tool,
                                       "parentMessageId": parent_message, "timestamp": event.get("timestamp")}
        self.current_call = {"id": call_id, "name": event.get("toolCallName"), "args": "",
                             "parentToolUseId": parent_tool}

    def _on_tool_call_args(self, event: dict[str, Any]) -> None:
        call_id = event["toolCallId"]
        if call_id in self.pending_calls:
            self.pending_calls[call_id]["args"] += event.get("delta") or ""
        if self.current_call is not None and self.current_call["id"] == call_id:
            self.current_call["args"] += event.get("delta") or ""

    def _on_tool_call_end(self, event: dict[str, Any]) -> None:
        current = self.current_call or {}
        call_id = event.get("toolCallId") or current.get("id") or _random_id()
        pending = self.pending_calls.pop(call_id, None) or {}
        if self.current_call is not None and self.current_call["id"] == call_id:
            self.current_call = None
        if self._holds_call(call_id):
            return
        parent_tool = pending.get("parentToolUseId") or current.get("parentToolUseId")
        call = _call(call_id, pending.get("name") or current.get("name") or "unknown_tool",
                     pending.get("args") or current.get("args") or "", parent_tool=parent_tool)
        if parent_tool:
            if parent_tool in self.pending_calls:  # its parent is still streaming: held until the parent ends
                self.pending_children.setdefault(parent_tool, []).append(
                    {"id": _random_id(), "role": "tool", "toolCallId": call_id, "content": "", "toolCalls": [call]})
                return
            for index in range(len(self.messages) - 1, -1, -1):
                calls = self.messages[index].get("toolCalls") or []
                if any(c["id"] == parent_tool for c in calls):
                    self.messages[index] = {**self.messages[index], "toolCalls": [*calls, call]}
                    return
        parent_message = pending.get("parentMessageId")
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if (message["id"] == parent_message) if parent_message else (message["role"] == "assistant"):
                children = [c for child in self.pending_children.pop(call_id, []) for c in child["toolCalls"]]
                self.messages[index] = {**message, "toolCalls": [*(message.get("toolCalls") or []), call, *children]}
                return
        self.messages = [*self.messages, {"id": _random_id(), "role": "tool", "content": "", "toolCallId": call_id,
                                          "toolCalls": [call],
                                          "timestamp": event.get("timestamp") or pending.get("timestamp")}]
        self.current_call = None

    def _on_tool_call_result(self, event: dict[str, Any]) -> None:
        call_id = event.get("toolCallId")
        if not call_id:
            return
        content = event.get("content") or ""
        for index in range(len(self.messages) - 1, -1, -1):
            calls = self.messages[index].get("toolCalls") or []
            if any(c["id"] == call_id for c in calls):
                self.messages[index] = {**self.messages[index], "toolCalls": [
                    {**c, "result": content, "status": "completed"} if c["id"] == call_id else c for c in calls]}
                return
        for children in self.pending_children.values():
            for child in children:
                for c in child["toolCalls"]:
                    if c["id"] == call_id:
                        c.update(result=content, status="completed")
                        return

    def _on_messages_snapshot(self, event: dict[str, Any]) -> None:
        snapshot = normalize_snapshot([m for m in event.get("messages") or [] if m["id"] not in self.hidden])
        by_id = {m["id"]: m for m in snapshot}
        existing = {m["id"] for m in self.messages}
        merged: list[Message] = []
        for message in self.messages:
            fresh = by_id.get(message["id"])
            if fresh is None:
                merged.append(message)
                continue
            if message["role"] == "assistant" and message.get("toolCalls") and fresh.get("toolCalls"):
                calls = [copy.deepcopy(c) for c in fresh["toolCalls"]]
                for old in message["toolCalls"]:
                    same = next((c for c in calls if c["id"] == old["id"]), None)
                    if same is None:
                        calls.append(old)
                        continue
                    if old["function"].get("name") not in (None, "", "tool") and \
                            same["function"].get("name") in (None, "", "tool"):
                        same["function"]["name"] = old["function"]["name"]
                    if old["function"].get("arguments") and not same["function"].get("arguments"):
                        same["function"]["arguments"] = old["function"]["arguments"]
                    if old.get("parentToolUseId") and not same.get("parentToolUseId"):
                        same["parentToolUseId"] = old["parentToolUseId"]
                merged.append({**fresh, "toolCalls": calls, "timestamp": fresh.get("timestamp") or
                               message.get("timestamp")})
            else:
                merged.append({**fresh, "timestamp": fresh.get("timestamp") or message.get("timestamp")})
        for index, message in enumerate(snapshot):
            if message["id"] in existing:
                continue
            before = next((m["id"] for m in snapshot[index + 1:] if m["id"] in existing), None)
            at = next((i for i, m in enumerate(merged) if m["id"] == before), None) if before else None
            merged.insert(at, message) if at is not None else merged.append(message)
            existing.add(message["id"])
        names: dict[str, str] = {}
        for message in merged:
            if message["role"] == "tool":
                for c in message.get("toolCalls") or ():
                    if c["function"].get("name") not in (None, "", "tool", "unknown_tool"):
                        names[c["id"]] = c["function"]["name"]
        for call_id, pending in self.pending_calls.items():
            if pending["name"] not in ("tool", "unknown_tool"):
                names[call_id] = pending["name"]
        for message in merged:
            if message["role"] == "assistant":
                for c in message.get("toolCalls") or ():
                    if c["function"].get("name") in (None, "", "tool", "unknown_tool") and c["id"] in names:
                        c["function"] = {**c["function"], "name": names[c["id"]]}
        nested = {c["id"] for m in merged if m["role"] == "assistant" for c in m.get("toolCalls") or ()}
        kept = [m for m in merged if m["role"] != "tool" or not (
            m.get("toolCallId") in nested or any(c["id"] in nested for c in m.get("toolCalls") or ()))]
        order = {m["id"]: i for i, m in enumerate(kept)}

        def earlier(a: Message, b: Message) -> int:
            ta, tb = _millis(a.get("timestamp")), _millis(b.get("timestamp"))
            if ta is not None and tb is not None and ta != tb:
                return -1 if ta < tb else 1
            return order.get(a["id"], 0) - order.get(b["id"], 0)

        self.messages = sorted(kept, key=functools.cmp_to_key(earlier))
        self.pending_children = {}

    # ----- what the page shows -------------------------------------------------------------------------------
    def status(self, phase: str = "Running") -> str:
        """use-agent-status.ts useAgentStatus."""
        if phase == "Completed":
            return "completed"
        if phase == "Failed":
            return "failed"
        if phase != "Running":
            return "idle"
        for message in reversed(self.messages):
            calls = message.get("toolCalls")
            if not calls:
                continue
            last = calls[-1]
            if is_ask_user_question(last["function"].get("name")) and last.get("result") in (None, ""):
                return "waiting_input"
            break
        return "working" if self.run_active else "idle"

    def open_question(self) -> Message | None:
        """The AskUserQuestion call the badge waits on (the card a person answers), if any."""
        if self.status() != "waiting_input":
            return None
        return next(m["toolCalls"][-1] for m in reversed(self.messages) if m.get("toolCalls"))

    def tool_cards(self) -> list[dict[str, Any]]:
        return [item for item in self.rendered() if item["kind"] == "tool"]

    def rendered(self) -> list[dict[str, Any]]:
        """page.tsx: what the chat shows, in order (user messages answering a card are hidden)."""
        calls = {c["id"]: c for m in self.messages for c in m.get("toolCalls") or () if c.get("function", {}).get(
            "name")}
        top = {i for i, c in calls.items() if not c.get("parentToolUseId") or c["parentToolUseId"] not in calls}
        shown: list[dict[str, Any]] = []
        done: set[str] = set()
        for message in self.messages:
            role, content = message["role"], message.get("content")
            if role == "user":
                if (message.get("metadata") or {}).get("type") != ANSWER_TYPE:
                    shown.append({"kind": "user", "id": message["id"], "text": content if isinstance(content, str)
                                  else ""})
            elif role == "assistant":
                if isinstance(content, dict) and content.get("type") == "reasoning_block":
                    shown.append({"kind": "reasoning", "id": message["id"], "text": content.get("thinking") or ""})
                elif content and isinstance(content, str):
                    shown.append({"kind": "text", "id": message["id"], "text": content})
            elif role == "tool":
                if message.get("toolCallId") and message["toolCallId"] not in calls:
                    shown.append(_card(message["toolCallId"], message.get("name") or "tool", "{}",
                                       message.get("content") or None))
            elif role in ("reasoning", "developer"):
                if isinstance(content, str) and content:
                    shown.append({"kind": "reasoning", "id": message["id"], "text": content})
            for c in message.get("toolCalls") or ():
                if c["id"] in done or c["id"] not in top:
                    continue
                card = _card(c["id"], c["function"]["name"], c["function"].get("arguments") or "",
                             c.get("result") or None)
                card["children"] = [_card(k["id"], k["function"]["name"], k["function"].get("arguments") or "",
                                          k.get("result") or None)
                                    for k in calls.values() if k.get("parentToolUseId") == c["id"]]
                shown.append(card)
                done.add(c["id"])
        for call_id, pending in self.pending_calls.items():
            if call_id not in done and not (pending["parentToolUseId"] and pending["parentToolUseId"] in
                                            self.pending_calls):
                shown.append(_card(call_id, pending["name"], pending["args"], None))
                done.add(call_id)
        seen: set[str] = set()
        unique = []
        for item in shown:
            if item["kind"] == "reasoning":
                if item["id"] in seen:
                    continue
                seen.add(item["id"])
            unique.append(item)
        if self.current_reasoning and self.current_reasoning["content"]:
            unique.append({"kind": "reasoning", "id": None, "text": self.current_reasoning["content"]})
        if self.current_message and self.current_message["content"]:
            unique.append({"kind": "text", "id": None, "text": self.current_message["content"]})
        return unique


def _card(call_id: str, name: str, arguments: str, result: Any) -> dict[str, Any]:
    """A tool card (tool-message.tsx); ``pending``: it spins (no actual result); an AskUserQuestion card
    (ask-user-question.tsx) is answered when its result is not blank."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = {"value": arguments}
    return {"kind": "tool", "id": call_id, "name": name, "input": parsed, "result": result,
            "pending": not has_actual_result(result)}


def normalize_snapshot(snapshot: list[Message]) -> list[Message]:
    """normalize-snapshot.ts: a tool message answering an assistant's call becomes that call's ``result``; a tool
    message of a call no assistant holds, between a parent call and the parent's result, becomes its child."""
    messages = [{**m, "toolCalls": [copy.deepcopy(c) for c in m["toolCalls"]]} if m.get("toolCalls") else dict(m)
                for m in snapshot]
    held = {c["id"] for m in messages if m["role"] == "assistant" for c in m.get("toolCalls") or ()}
    if not held:
        return messages
    result_at = {m["toolCallId"]: i for i, m in enumerate(messages)
                 if m["role"] == "tool" and m.get("toolCallId") in held}
    dropped: set[int] = set()
    for index, message in enumerate(messages):
        call_id = message.get("toolCallId")
        if message["role"] != "tool" or not call_id:
            continue
        if call_id in held:
            for owner in messages:
                call = next((c for c in owner.get("toolCalls") or () if c["id"] == call_id), None)
                if owner["role"] == "assistant" and call is not None:
                    call["result"] = message.get("content") or ""
                    call.setdefault("status", "completed")
                    dropped.add(index)
                    break
            continue
        later = [(at, parent) for parent, at in result_at.items() if at > index]
        if not later:
            continue
        parent = min(later)[1]
        if not any(m["role"] == "assistant" and any(c["id"] == parent for c in m.get("toolCalls") or ())
                   for m in messages[:index]):
            continue
        for owner in messages:
            if owner["role"] == "assistant" and any(c["id"] == parent for c in owner.get("toolCalls") or ()):
                if not any(c["id"] == call_id for c in owner["toolCalls"]):
                    owner["toolCalls"].append(_call(call_id, message.get("name") or "tool", "",
                                                    message.get("content") or "", parent_tool=parent))
                dropped.add(index)
                break
    return [m for i, m in enumerate(messages) if i not in dropped]


# ----- the backend's event store --------------------------------------------------------------------------------
def compact(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """agui_store.go compactFinishedRun over a session's stored events (kept as they are when no run left a
    MESSAGES_SNAPSHOT)."""
    if not any(e["type"] == "MESSAGES_SNAPSHOT" for e in stored):
        return list(stored)
    return [e for e in stored if e["type"] in KEPT_AFTER_COMPACTION or (
        e["type"] == "TOOL_CALL_START" and is_ask_user_question(e.get("toolCallName")))]


def reload(stored: list[dict[str, Any]]) -> PlatformPage:
    """A reload of the session page after its runs finished: a fresh page fed the compacted event log."""
    return PlatformPage().feed(compact(stored))


def backend_status(stored: list[dict[str, Any]]) -> str:
    """agui_store.go DeriveAgentStatus (the sessions list's badge): scanning back from the newest event."""
    ended_run: str | None = None
    for event in reversed(stored):
        kind = event["type"]
        if kind == "RUN_STARTED":
            return "idle" if ended_run is not None else "working"
        if kind in TERMINAL:
            if ended_run is None:
                ended_run = event.get("runId") or ""
        elif kind == "TOOL_CALL_START":
            if ended_run and event.get("runId") and event["runId"] != ended_run:
                return "idle"
            if is_ask_user_question(event.get("toolCallName")):
                return "waiting_input"
    return "idle" if ended_run is not None else ""


def structure(messages: list[Message]) -> list[tuple[str, list[str]]]:
    """What a page's message list is made of: each message's id (``RANDOM`` for the page's own) in order, with the
    ids of the tool calls it holds."""
    return [(RANDOM if str(m["id"]).startswith(RANDOM) else str(m["id"]), [c["id"] for c in m.get("toolCalls") or ()])
            for m in messages]


def comparable(messages: list[Message]) -> list[Message]:
    """Messages as two pages can be compared: without times, statuses and the page's random ids."""
    out = []
    for message in messages:
        kept = {k: v for k, v in message.items() if k != "timestamp" and v is not None}
        if str(kept.get("id", "")).startswith(RANDOM):
            kept["id"] = RANDOM
        if "toolCalls" in kept:
            kept["toolCalls"] = [{k: v for k, v in c.items() if k not in ("status", "error") and v is not None}
                                 for c in kept["toolCalls"]]
        out.append(kept)
    return out
