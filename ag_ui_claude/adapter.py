"""claude-agent-sdk messages -> AG-UI events: one transform loop, one handler per message kind.

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
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RawEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
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

from ag_ui_claude.errors import describe_failure, is_interrupted
from ag_ui_claude.inputs import Unparsed, coerce
from ag_ui_claude.results import result_summary, token_usage, tool_result_text
from ag_ui_claude.subagents import SubagentTracker
from ag_ui_claude.tasks import TASK_SUBTYPES

SOURCE = "claude"
TOOL_BLOCKS = {"tool_use", "server_tool_use", "mcp_tool_use"}
INTERRUPT_MARKER = "[Request interrupted by user"
# Background tasks' messages are the runner's task registry's (ag_ui_claude.tasks), not raw events.
QUIET_SYSTEM_SUBTYPES = {"init", "status", "session_state_changed", "thinking_tokens", *TASK_SUBTYPES}


@dataclass
class _Block:
    """One open content block of a streamed API message."""

    kind: str  # "text" | "thinking" | "tool"
    id: str
    started: bool = False
    args_seen: bool = False
    signature: str = ""


class ClaudeEventAdapter:
    """Translates one turn's messages into AG-UI events (``feed`` per message, ``finish`` at the end)."""

    def __init__(self, thread_id: str, run_id: str, *,
                 on_session_id: Callable[[str], None] | None = None) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.session_id: str | None = None
        self.interrupted = False  # the turn ended because of an interrupt
        self.terminal: BaseEvent | None = None
        self._on_session_id = on_session_id
        self._blocks: dict[tuple[str | None, int], _Block] = {}
        self._streamed_messages: set[str] = set()
        self._started_tools: set[str] = set()
        self._saw_interrupt_marker = False
        self._cli_error_text = ""
        self.subagents = SubagentTracker()
        self._handlers: dict[type, Callable[[Any], Iterable[BaseEvent]]] = {
            StreamEvent: self._on_stream_event,
            AssistantMessage: self._on_assistant,
            UserMessage: self._on_user,
            SystemMessage: self._on_system,
            ResultMessage: self._on_result,
            Unparsed: self._on_unparsed,
        }

    # ----- the transform loop ----------------------------------------------------------------------------
    def feed(self, item: Any) -> list[BaseEvent]:
        """Events for one SDK message or raw stream-json dict; nothing after the terminal event."""
        if self.terminal is not None:
            return []
        if (type(item) is dict and item.get("type") == "stream_event" and type(item.get("event")) is dict
                and type(item.get("uuid")) is str):
            # Most lines of a turn: read from the raw dict (the fields the SDK's StreamEvent would carry); a
            # malformed one goes through the SDK's parser below and is kept as RAW.
            return list(self._on_partial(item["event"], item.get("parent_tool_use_id"), item["uuid"]))
        message = coerce(item)
        if message is None:
            return []
        handler = self._handlers.get(type(message)) or next(
            (self._handlers[t] for t in type(message).__mro__ if t in self._handlers), self._on_other)
        return list(handler(message))

    def has_started(self, tool_call_id: str) -> bool:
        return tool_call_id in self._started_tools

    def note_started(self, tool_call_id: str) -> None:
        """A tool call streamed by someone else (the runner, for a request the CLI had not streamed)."""
        self._started_tools.add(tool_call_id)

    def finish(self) -> list[BaseEvent]:
        """Close whatever is still open (the stream ended without a result)."""
        return list(self._close_blocks(lambda key: True))

    async def stream(self, items: AsyncIterable[Any]) -> AsyncIterator[BaseEvent]:
        async for item in items:
            for event in self.feed(item):
                yield event
        for event in self.finish():
            yield event

    # ----- partial stream events -------------------------------------------------------------------------
    def _on_stream_event(self, message: StreamEvent) -> Iterable[BaseEvent]:
        event = message.event if isinstance(message.event, dict) else {}
        return self._on_partial(event, message.parent_tool_use_id, message.uuid)

    def _on_partial(self, event: dict[str, Any], parent: str | None, line_id: str) -> Iterable[BaseEvent]:
        """One partial API stream event (``include_partial_messages``) of the message ``line_id`` belongs to."""
        kind = event.get("type")
        key = (parent, int(event.get("index") or 0))
        meta = self._attribution(parent)
        if kind == "message_start":
            api_id = (event.get("message") or {}).get("id")
            if api_id:
                self._streamed_messages.add(str(api_id))
        elif kind == "content_block_start":
            yield from self._close_blocks(lambda k: k == key)
            yield from self._start_block(key, event.get("content_block") or {}, line_id, meta)
        elif kind == "content_block_delta":
            block = self._blocks.get(key)
            if block is not None:
                yield from self._delta(block, event.get("delta") or {}, meta)
        elif kind == "content_block_stop":
            yield from self._close_blocks(lambda k: k == key)
        elif kind == "message_stop":
            yield from self._close_blocks(lambda k: k[0] == parent)

    def _start_block(self, key: tuple[str | None, int], block: dict[str, Any], line_id: str,
                     meta: dict[str, Any]) -> Iterable[BaseEvent]:
        kind = block.get("type")
        if kind == "text":
            self._blocks[key] = _Block("text", f"{line_id}")
        elif kind == "thinking":
            self._blocks[key] = _Block("thinking", f"{line_id}")
        elif kind in TOOL_BLOCKS and block.get("id"):
            tool_id = str(block["id"])
            self._blocks[key] = _Block("tool", tool_id, started=True)
            self._started_tools.add(tool_id)
            yield ToolCallStartEvent(tool_call_id=tool_id, tool_call_name=str(block.get("name") or "tool"),
                                     **meta)
        else:
            yield RawEvent(event={"type": "content_block_start", "content_block": block}, source=SOURCE)

    def _delta(self, block: _Block, delta: dict[str, Any], meta: dict[str, Any]) -> Iterable[BaseEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text" and delta.get("text"):
            if not block.started:
                block.started = True
                yield TextMessageStartEvent(message_id=block.id, role="assistant", **meta)
            yield TextMessageContentEvent(message_id=block.id, delta=delta["text"], **meta)
        elif kind == "thinking_delta" and block.kind == "thinking" and delta.get("thinking"):
            if not block.started:
                block.started = True
                yield from _reasoning_start(block.id, meta)
            yield ReasoningMessageContentEvent(message_id=block.id, delta=delta["thinking"], **meta)
        elif kind == "signature_delta" and block.kind == "thinking":
            block.signature += str(delta.get("signature") or "")
        elif kind == "input_json_delta" and block.kind == "tool" and delta.get("partial_json"):
            block.args_seen = True
            yield ToolCallArgsEvent(tool_call_id=block.id, delta=delta["partial_json"], **meta)

    def _close_blocks(self, which: Callable[[tuple[str | None, int]], bool]) -> Iterable[BaseEvent]:
        for key in [k for k in self._blocks if which(k)]:
            block = self._blocks.pop(key)
            meta = self._attribution(key[0])
            if block.kind == "text" and block.started:
                yield TextMessageEndEvent(message_id=block.id, **meta)
            elif block.kind == "thinking" and block.started:
                yield from _reasoning_end(block.id, block.signature, meta)
            elif block.kind == "tool":
                if not block.args_seen:
                    yield ToolCallArgsEvent(tool_call_id=block.id, delta="{}", **meta)
                yield ToolCallEndEvent(tool_call_id=block.id, **meta)

    def _attribution(self, parent: str | None) -> dict[str, Any]:
        """What marks the events of a sub-agent's messages: the call that started it, and its sub-agent run."""
        if not parent:
            return {}
        run = self.subagents.run_for(parent)
        return {"metadata": {"parentToolCallId": parent}, **({"subagent_run_id": run} if run else {})}

    # ----- complete messages -----------------------------------------------------------------------------
    def _on_assistant(self, message: AssistantMessage) -> Iterable[BaseEvent]:
        if message.error and message.parent_tool_use_id:  # a sub-agent's API error: its own end reports it
            return
        if message.error:  # a synthetic message that only states an API error; the result reports it
            self._cli_error_text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
            return
        if message.message_id and message.message_id in self._streamed_messages:
            return  # already emitted from its stream events
        meta = self._attribution(message.parent_tool_use_id)
        base = message.uuid or message.message_id or uuid.uuid4().hex
        for index, block in enumerate(message.content):
            block_id = f"{base}-{index}"
            if isinstance(block, TextBlock) and block.text:
                yield TextMessageStartEvent(message_id=block_id, role="assistant", **meta)
                yield TextMessageContentEvent(message_id=block_id, delta=block.text, **meta)
                yield TextMessageEndEvent(message_id=block_id, **meta)
            elif isinstance(block, ThinkingBlock) and block.thinking:
                yield from _reasoning_start(block_id, meta)
                yield ReasoningMessageContentEvent(message_id=block_id, delta=block.thinking, **meta)
                yield from _reasoning_end(block_id, block.signature, meta)
            elif isinstance(block, ToolUseBlock) and block.id not in self._started_tools:
                self._started_tools.add(block.id)
                yield ToolCallStartEvent(tool_call_id=block.id, tool_call_name=block.name, **meta)
                yield ToolCallArgsEvent(tool_call_id=block.id, delta=json.dumps(block.input or {}), **meta)
                yield ToolCallEndEvent(tool_call_id=block.id, **meta)

    def _on_user(self, message: UserMessage) -> Iterable[BaseEvent]:
        if isinstance(message.content, str):
            self._note_interrupt(message.content)
            return
        meta = self._attribution(message.parent_tool_use_id)
        for block in message.content:
            if isinstance(block, TextBlock):
                self._note_interrupt(block.text)
            elif isinstance(block, ToolResultBlock):
                if block.tool_use_id not in self._started_tools:
                    yield RawEvent(event=_as_dict(block), source=SOURCE)
                    continue
                text = tool_result_text(block.content, bool(block.is_error))
                yield from self.subagents.on_tool_result(block.tool_use_id, bool(block.is_error), text)
                yield ToolCallResultEvent(message_id=f"{block.tool_use_id}-result", tool_call_id=block.tool_use_id,
                                          content=text, role="tool", **meta)

    def _note_interrupt(self, text: str) -> None:
        if text.startswith(INTERRUPT_MARKER):
            self._saw_interrupt_marker = True

    def _on_system(self, message: SystemMessage) -> Iterable[BaseEvent]:
        data = message.data if isinstance(message.data, dict) else {}
        if message.subtype == "init":
            session_id = data.get("session_id")
            if session_id and session_id != self.session_id:
                self.session_id = str(session_id)
                if self._on_session_id is not None:
                    self._on_session_id(self.session_id)
            return
        if message.subtype in TASK_SUBTYPES:  # a foreground sub-agent's, or the task registry's (quiet here)
            yield from self.subagents.on_task_message(data)
            return
        if message.subtype in QUIET_SYSTEM_SUBTYPES:
            return
        if message.subtype == "api_retry":
            yield CustomEvent(name="claude:api_retry", value={
                "attempt": data.get("attempt"), "maxRetries": data.get("max_retries"),
                "errorStatus": data.get("error_status"), "error": data.get("error"),
                "retryDelayMs": data.get("retry_delay_ms")})
            return
        yield RawEvent(event=data or _as_dict(message), source=SOURCE)

    def _on_result(self, message: ResultMessage) -> Iterable[BaseEvent]:
        yield from self._close_blocks(lambda k: True)
        if message.session_id and self.session_id is None:
            self.session_id = message.session_id
        if is_interrupted(message, self._saw_interrupt_marker):
            self.interrupted = True  # no terminal event: the core ends the run as cancelled
            return
        if message.is_error:
            failure = describe_failure(message, self._cli_error_text)
            self.terminal = RunErrorEvent(message=failure.message, code=failure.code)
        else:
            self.terminal = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                             usage=token_usage(message), result=result_summary(message))
        yield self.terminal

    def _on_unparsed(self, message: Unparsed) -> Iterable[BaseEvent]:
        data = message.data if isinstance(message.data, dict) else {"line": message.data}
        yield RawEvent(event=data, source=SOURCE)

    def _on_other(self, message: Any) -> Iterable[BaseEvent]:
        yield RawEvent(event=_as_dict(message), source=SOURCE)


def translate(items: Iterable[Any], thread_id: str = "thread", run_id: str = "run") -> list[BaseEvent]:
    """All events for a complete recorded stream (messages or raw stream-json dicts)."""
    adapter = ClaudeEventAdapter(thread_id, run_id)
    events = [event for item in items for event in adapter.feed(item)]
    return events + adapter.finish()


def _reasoning_start(message_id: str, meta: dict[str, Any]) -> Iterable[BaseEvent]:
    yield ReasoningStartEvent(message_id=message_id, **meta)
    yield ReasoningMessageStartEvent(message_id=message_id, role="reasoning", **meta)


def _reasoning_end(message_id: str, signature: str, meta: dict[str, Any]) -> Iterable[BaseEvent]:
    yield ReasoningMessageEndEvent(message_id=message_id, **meta)
    if signature:
        yield ReasoningEncryptedValueEvent(subtype="message", entity_id=message_id, encrypted_value=signature,
                                           **meta)
    yield ReasoningEndEvent(message_id=message_id, **meta)


def _as_dict(message: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        return {"kind": type(message).__name__, **dataclasses.asdict(message)}
    return {"kind": type(message).__name__, "value": repr(message)}
