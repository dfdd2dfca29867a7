"""claude-agent-sdk messages -> AG-UI events: the shared transform loop (``ag_ui_cli_common.CliAdapter``), one
handler per message kind.

Text, reasoning and tool-call arguments come from the partial ``StreamEvent``s (``include_partial_messages``)
when there are any; the complete ``AssistantMessage`` that repeats them is then skipped, so nothing is emitted
twice. An ``AssistantMessage`` whose API message was not streamed (partial messages off, some sub-agent
messages) is emitted whole. Events of a sub-agent (``parent_tool_use_id``) carry
``metadata={"parentToolCallId": <Task tool call id>}``.

Usable on its own::

    adapter = ClaudeEventAdapter(thread_id, run_id)
    for item in messages_or_raw_stream_json_dicts:
        for event in adapter.feed(item):
            ...
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeGuard

from ag_ui.core import BaseEvent, CustomEvent, RawEvent, RunFinishedEvent
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from ag_ui_claude.errors import describe_failure, is_interrupted, is_refusal_only
from ag_ui_claude.inputs import Unparsed, coerce
from ag_ui_claude.results import result_summary, token_usage, tool_result_text
from ag_ui_claude.subagents import SubagentTracker
from ag_ui_claude.tasks import TASK_SUBTYPES
from ag_ui_cli_common import CliAdapter, Exit
from ag_ui_cli_common.blocks import Marks
from ag_ui_cli_common.json_types import JsonObject, JsonValue, object_or_empty

SOURCE = "claude"
TOOL_BLOCKS = {"tool_use", "server_tool_use", "mcp_tool_use"}
INTERRUPT_MARKER = "[Request interrupted by user"
# Background tasks' messages are the runner's task registry's (ag_ui_claude.tasks), not raw events.
QUIET_SYSTEM_SUBTYPES = {"init", "status", "session_state_changed", "thinking_tokens", *TASK_SUBTYPES}
PARTIAL = "stream_event"  # the kind of a raw stream-json partial message (read as a dict, see parse)
BlockKey = tuple[str | None, int]  # (parent tool call, content block index) of a streamed API message


@dataclass(slots=True)
class _Block:
    """One content block of a streamed API message (the block tracker has its AG-UI side)."""

    kind: str  # "text" | "thinking" | "tool"
    id: str
    signature: str = ""


class ClaudeEventAdapter(CliAdapter[object]):
    """Translates one turn's messages into AG-UI events (``feed`` per message, ``finish`` at the end)."""

    agent = "Claude Code"
    source = SOURCE

    def __init__(self, thread_id: str, run_id: str, *,
                 on_session_id: Callable[[str], None] | None = None) -> None:
        super().__init__(thread_id, run_id)
        self.session_id: str | None = None
        self.interrupted = False  # the turn ended because of an interrupt
        self._on_session_id = on_session_id
        self._blocks: dict[BlockKey, _Block] = {}
        self._streamed_messages: set[str] = set()
        self._saw_interrupt_marker = False
        self._cli_error_text = ""
        self.subagents = SubagentTracker()
        self.handlers = {
            PARTIAL: self._on_raw_partial,
            StreamEvent: self._on_stream_event,
            AssistantMessage: self._on_assistant,
            UserMessage: self._on_user,
            SystemMessage: self._on_system,
            ResultMessage: self._on_result,
            Unparsed: self._on_unparsed,
        }

    # ----- the transform loop's Claude parts -------------------------------------------------------------
    def parse(self, native: object) -> tuple[Hashable, object] | None:
        if (type(native) is dict and native.get("type") == "stream_event" and type(native.get("event")) is dict
                and type(native.get("uuid")) is str and _is_parent(native.get("parent_tool_use_id"))):
            # Most lines of a turn: read from the raw dict (the fields the SDK's StreamEvent would carry); a
            # malformed one goes through the SDK's parser below and is kept as RAW.
            return PARTIAL, native
        message = coerce(native)
        if message is None:
            return None
        kind: type = type(message)
        return kind, message

    def on_unknown(self, kind: Hashable, payload: object) -> list[BaseEvent]:
        """A subclass of a message kind goes to that kind's handler; anything else is kept as RAW."""
        handler = next((self.handlers[t] for t in type(payload).__mro__ if t in self.handlers), None)
        return handler(payload) if handler is not None else [self.raw(_as_dict(payload))]

    def on_malformed(self, kind: Hashable, payload: object) -> list[BaseEvent]:
        return [self.raw(payload if isinstance(payload, dict) else _as_dict(payload))]

    def finish(self, exit: Exit | None = None) -> list[BaseEvent]:
        if self.terminal is not None:
            return []
        return self._close_where(lambda key: True) + super().finish(exit)

    # ----- partial stream events -------------------------------------------------------------------------
    def _on_raw_partial(self, item: JsonObject) -> list[BaseEvent]:
        event, parent, line_id = item["event"], item.get("parent_tool_use_id"), item["uuid"]
        if not isinstance(event, dict) or not isinstance(line_id, str) or not _is_parent(parent):
            raise TypeError("a partial message parse did not let through")  # parse checked these fields
        return self._on_partial(event, parent, line_id)

    def _on_stream_event(self, message: StreamEvent) -> list[BaseEvent]:
        event = message.event if isinstance(message.event, dict) else {}
        return self._on_partial(event, message.parent_tool_use_id, message.uuid)

    def _on_partial(self, event: JsonObject, parent: str | None, line_id: str) -> list[BaseEvent]:
        """One partial API stream event (``include_partial_messages``) of the message ``line_id`` belongs to."""
        kind = event.get("type")
        key = (parent, _index(event.get("index")))
        if kind == "content_block_delta":
            block = self._blocks.get(key)
            return [] if block is None else self._delta(block, object_or_empty(event.get("delta")), parent)
        if kind == "message_start":
            api_id = object_or_empty(event.get("message")).get("id")
            if api_id:
                self._streamed_messages.add(str(api_id))
        elif kind == "content_block_start":
            return self._close_where(lambda k: k == key) + self._start_block(
                key, object_or_empty(event.get("content_block")), line_id, parent)
        elif kind == "content_block_stop":
            return self._close_where(lambda k: k == key)
        elif kind == "message_stop":
            return self._close_where(lambda k: k[0] == parent)
        return []

    def _start_block(self, key: BlockKey, block: JsonObject, line_id: str,
                     parent: str | None) -> list[BaseEvent]:
        kind = block.get("type")
        if isinstance(kind, str) and kind in ("text", "thinking"):  # opened on its first delta
            self._blocks[key] = _Block(kind, line_id)
            return []
        if kind in TOOL_BLOCKS and block.get("id"):
            tool_id = str(block["id"])
            self._blocks[key] = _Block("tool", tool_id)
            return self.blocks.start_tool(tool_id, str(block.get("name") or "tool"), marks=self._attribution(parent))
        return [RawEvent(event={"type": "content_block_start", "content_block": block}, source=SOURCE)]

    def _delta(self, block: _Block, delta: JsonObject, parent: str | None) -> list[BaseEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text" and delta.get("text"):
            return self.blocks.text(block.id, _text(delta["text"]), marks=self._attribution(parent))
        if kind == "thinking_delta" and block.kind == "thinking" and delta.get("thinking"):
            return self.blocks.reasoning(block.id, _text(delta["thinking"]), marks=self._attribution(parent))
        if kind == "signature_delta" and block.kind == "thinking":
            block.signature += str(delta.get("signature") or "")
        elif kind == "input_json_delta" and block.kind == "tool" and delta.get("partial_json"):
            return self.blocks.tool_args(block.id, _text(delta["partial_json"]), marks=self._attribution(parent))
        return []

    def _close_where(self, which: Callable[[BlockKey], bool]) -> list[BaseEvent]:
        """Close the streamed blocks whose keys ``which`` picks, in the order they started."""
        events: list[BaseEvent] = []
        for key in [k for k in self._blocks if which(k)]:
            block = self._blocks.pop(key)
            if block.kind == "thinking":
                events += self.blocks.end_reasoning(block.id, block.signature)
            else:
                events += self.blocks.close(block.id)
        return events

    def _attribution(self, parent: str | None) -> Marks:
        """What marks the events of a sub-agent's messages: the call that started it, and its sub-agent run."""
        if not parent:
            return {}
        run = self.subagents.run_for(parent)
        return {"metadata": {"parentToolCallId": parent}, **({"subagent_run_id": run} if run else {})}

    # ----- complete messages -----------------------------------------------------------------------------
    def _on_assistant(self, message: AssistantMessage) -> list[BaseEvent]:
        if message.error and message.parent_tool_use_id:  # a sub-agent's API error: its own end reports it
            return []
        if message.error:  # a synthetic message that only states an API error; the result reports it
            self._cli_error_text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
            return []
        if message.message_id and message.message_id in self._streamed_messages:
            return []  # already emitted from its stream events
        meta = self._attribution(message.parent_tool_use_id)
        base = message.uuid or message.message_id or uuid.uuid4().hex
        events: list[BaseEvent] = []
        for index, block in enumerate(message.content):
            block_id = f"{base}-{index}"
            if isinstance(block, TextBlock) and block.text:
                events += self.blocks.text(block_id, block.text, marks=meta) + self.blocks.close(block_id)
            elif isinstance(block, ThinkingBlock) and block.thinking:
                events += self.blocks.reasoning(block_id, block.thinking, marks=meta)
                events += self.blocks.end_reasoning(block_id, block.signature)
            elif isinstance(block, ToolUseBlock):
                events += self.blocks.tool_call(block.id, block.name, json.dumps(block.input or {}), marks=meta)
        return events

    def _on_user(self, message: UserMessage) -> list[BaseEvent]:
        if isinstance(message.content, str):
            self._note_interrupt(message.content)
            return []
        meta = self._attribution(message.parent_tool_use_id)
        events: list[BaseEvent] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                self._note_interrupt(block.text)
            elif isinstance(block, ToolResultBlock):
                if not self.blocks.has_started(block.tool_use_id):
                    events.append(self.raw(_as_dict(block)))
                    continue
                text = tool_result_text(block.content, bool(block.is_error))
                events += self.subagents.on_tool_result(block.tool_use_id, bool(block.is_error), text)
                events += self.blocks.tool_result(block.tool_use_id, text, marks=meta)
        return events

    def _note_interrupt(self, text: str) -> None:
        if text.startswith(INTERRUPT_MARKER):
            self._saw_interrupt_marker = True

    def _on_system(self, message: SystemMessage) -> list[BaseEvent]:
        data = message.data if isinstance(message.data, dict) else {}
        if message.subtype == "init":
            session_id = data.get("session_id")
            if session_id and session_id != self.session_id:
                self.session_id = str(session_id)
                if self._on_session_id is not None:
                    self._on_session_id(self.session_id)
            return []
        if message.subtype in TASK_SUBTYPES:  # a foreground sub-agent's, or the task registry's (quiet here)
            return self.subagents.on_task_message(data)
        if message.subtype in QUIET_SYSTEM_SUBTYPES:
            return []
        if message.subtype == "api_retry":
            return [CustomEvent(name="claude:api_retry", value={
                "attempt": data.get("attempt"), "maxRetries": data.get("max_retries"),
                "errorStatus": data.get("error_status"), "error": data.get("error"),
                "retryDelayMs": data.get("retry_delay_ms")})]
        return [self.raw(data or _as_dict(message))]

    def _on_result(self, message: ResultMessage) -> list[BaseEvent]:
        events = self._close_where(lambda key: True)
        if message.session_id and self.session_id is None:
            self.session_id = message.session_id
        if is_interrupted(message, self._saw_interrupt_marker):
            self.interrupted = True  # no terminal event: the core ends the run as cancelled
            return events + self.blocks.close_all()
        if message.is_error and not is_refusal_only(message):  # plan mode's refusals alone: the turn finished
            return events + self.blocks.fail(describe_failure(message, self._cli_error_text))
        return events + self.blocks.finish(RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, usage=token_usage(message), result=result_summary(message)))

    def _on_unparsed(self, message: Unparsed) -> list[BaseEvent]:
        return [self.raw(message.data if isinstance(message.data, dict) else {"line": message.data})]


def translate(items: Iterable[object], thread_id: str = "thread", run_id: str = "run") -> list[BaseEvent]:
    """All events for a complete recorded stream (messages or raw stream-json dicts)."""
    return ClaudeEventAdapter(thread_id, run_id).run(items)


def _as_dict(message: object) -> dict[str, object]:
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        return {"kind": type(message).__name__, **dataclasses.asdict(message)}
    return {"kind": type(message).__name__, "value": repr(message)}


def _is_parent(value: object) -> TypeGuard[str | None]:
    """A ``parent_tool_use_id`` as the CLI writes it: a string, or none."""
    return value is None or isinstance(value, str)


def _index(value: JsonValue) -> int:
    """A content block's ``index`` as ``int(value or 0)`` reads it; a list or an object raises TypeError."""
    if isinstance(value, list | dict):
        raise TypeError(f"a content block index that is a {type(value).__name__}")
    return int(value or 0)


def _text(value: JsonValue) -> str:
    """A delta's text; anything else raises TypeError (the event it would have made fails validation)."""
    if not isinstance(value, str):
        raise TypeError(f"a delta's text that is a {type(value).__name__}")
    return value
