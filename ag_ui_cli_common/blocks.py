"""The open AG-UI blocks of one run - text messages, reasoning, tool calls - and their results: one place that
opens them, closes them, and ends the run with everything closed.

Use from an adapter (each call returns the AG-UI events to emit, in order)::

    blocks = BlockTracker()
    blocks.text("m1", "Hel")              # TEXT_MESSAGE_START (first time) + TEXT_MESSAGE_CONTENT
    blocks.text("m1", "lo")               # TEXT_MESSAGE_CONTENT
    blocks.close("m1")                    # TEXT_MESSAGE_END (nothing when "m1" is not open)
    blocks.segment("r", "Hi")             # text of a CLI that names no messages: the open segment's, else a new
                                          # one's (TEXT_MESSAGE_START msg-r-<n>); its id stays ``last_segment_id``
    blocks.close_segment()                # TEXT_MESSAGE_END of the open segment (a tool call, a thought: a new one)
    blocks.reasoning("r1", "hm")          # REASONING_START + REASONING_MESSAGE_START (first time) + ..._CONTENT
    blocks.end_reasoning("r1", "sig")     # REASONING_MESSAGE_END, REASONING_ENCRYPTED_VALUE (with a signature),
                                          # REASONING_END
    blocks.start_tool("c1", "shell")      # TOOL_CALL_START; the call stays open for its arguments
    blocks.tool_args("c1", '{"a": 1}')    # TOOL_CALL_ARGS
    blocks.end_tool("c1")                 # TOOL_CALL_END (after TOOL_CALL_ARGS of fallback_args if none came)
    blocks.tool_call("c2", "read", "{}")  # START + ARGS + END at once
    blocks.tool_result("c1", "output")    # TOOL_CALL_RESULT, message id "c1-result" (closes the call if open)
    blocks.finish(RunFinishedEvent(...))  # close_all() + the terminal event
    blocks.fail(failure)                  # close_all() + RUN_ERROR(failure.message, failure.code)

Ids: a block is named by the CLI's own id (item id, line uuid, tool call id) when it has one, else by
``next_message_id(run_id)``: ``msg-<run id>-<n>`` (``prefix``: ``reasoning-<run id>-<n>``, one count for
all). A tool result's message id is ``<tool call id>-result``
(``result_suffix`` says otherwise for an adapter whose clients already know another suffix).

What is open is kept in ``OpenBlocks``, which the core's stream guard (``ambient_runner.stream.guard``) keeps its
open blocks in too: one place, one close order (``CLOSE_ORDER``). ``close_all()`` closes text messages first, then
reasoning, then tool calls, each in the order they opened.
After ``finish`` / ``fail`` the tracker's ``terminal`` is set; it does not stop further calls (the adapter's
``feed`` does). ``timestamp`` goes on the events of that call only; ``marks`` (e.g. ``metadata``,
``subagent_run_id``) go on the events of the call, and an opening call's marks also on the events that later
close what it opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ag_ui.core import (
    BaseEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ag_ui_cli_common.errors import Failure

Marks = dict[str, Any]
# The events made on every line, built by their pydantic validator from a dict: the same validation as
# ``Event(**fields)`` (which is ``__init__``'s one call), without ``__init__``'s Python frame (~20 % of an event).
_content = TextMessageContentEvent.__pydantic_validator__.validate_python
_start = TextMessageStartEvent.__pydantic_validator__.validate_python
_end = TextMessageEndEvent.__pydantic_validator__.validate_python
_call_start = ToolCallStartEvent.__pydantic_validator__.validate_python
_call_args = ToolCallArgsEvent.__pydantic_validator__.validate_python
_call_end = ToolCallEndEvent.__pydantic_validator__.validate_python
_call_result = ToolCallResultEvent.__pydantic_validator__.validate_python
_NO_MARKS: Marks = {}
BlockKind = Literal["text", "reasoning", "tool"]
# The one order a run's end closes what is open: what was said (text, then reasoning) is committed before the tool
# calls after it end, so a client that puts a call on the message before it finds that message.
CLOSE_ORDER: tuple[BlockKind, ...] = ("text", "reasoning", "tool")


class OpenBlocks:
    """The open blocks of one run by kind, each id with what its owner keeps of it, in the order they opened.

    Used by the adapters' ``BlockTracker`` (translation) and the core's ``StreamGuard`` (the safety net), each
    through the dict of a kind (``of``) and ``in_close_order`` when everything is closed."""

    def __init__(self) -> None:
        self._open: dict[BlockKind, dict[str, Any]] = {kind: {} for kind in CLOSE_ORDER}

    def of(self, kind: BlockKind) -> dict[str, Any]:
        """The open blocks of ``kind`` (id -> its owner's value), the dict itself: opened and closed through it."""
        return self._open[kind]

    def __bool__(self) -> bool:
        return any(self._open.values())

    def in_close_order(self) -> list[tuple[BlockKind, str]]:
        """What is open, in the order it is closed: by ``CLOSE_ORDER``, then the order each opened."""
        return [(kind, block_id) for kind in CLOSE_ORDER for block_id in list(self._open[kind])]


@dataclass(slots=True)
class _OpenTool:
    marks: Marks
    fallback_args: str  # sent when the call closes without arguments
    args_sent: bool = False


class BlockTracker:
    """What one run has open, and the tool calls it has started and answered."""

    def __init__(self, *, result_suffix: str = "-result") -> None:
        self.result_suffix = result_suffix
        self.terminal: BaseEvent | None = None
        self.open = OpenBlocks()
        self._texts: dict[str, Marks] = self.open.of("text")  # open text message -> its marks (ordered)
        self._reasoning: dict[str, Marks] = self.open.of("reasoning")
        self._tools: dict[str, _OpenTool] = self.open.of("tool")  # tool calls still taking arguments
        self._started: set[str] = set()  # every tool call started (here or, see note_started, elsewhere)
        self._names: dict[str, str] = {}  # tool call started here -> its name (ordered)
        self._answered: set[str] = set()  # tool calls with a result
        self._messages = 0
        self._segment: str | None = None  # the open text segment (``segment``)
        self.last_segment_id: str | None = None  # the last one opened: the parent of a tool call after it

    def next_message_id(self, run_id: str, prefix: str = "msg") -> str:
        """A new message id for a CLI that names none: ``<prefix>-<run id>-<n>``, one count whatever the prefix."""
        self._messages += 1
        return f"{prefix}-{run_id}-{self._messages}"

    def is_open(self, block_id: str) -> bool:
        return block_id in self._texts or block_id in self._reasoning or block_id in self._tools

    # ----- text ------------------------------------------------------------------------------------------
    def text(self, message_id: str, delta: str, *, timestamp: int | None = None,
             marks: Marks | None = None) -> list[BaseEvent]:
        marks = marks or _NO_MARKS
        content = _content({"message_id": message_id, "delta": delta, "timestamp": timestamp, **marks})
        if message_id in self._texts:
            return [content]
        self._texts[message_id] = marks
        return [_start({"message_id": message_id, "role": "assistant", "timestamp": timestamp, **marks}), content]

    def segment(self, run_id: str, delta: str, *, timestamp: int | None = None) -> list[BaseEvent]:
        """Text of a CLI that names no messages: ``delta`` of the open segment, else of a new one."""
        segment = self._segment
        if segment is not None and segment in self._texts:  # the common case: one more delta of the open one
            return [_content({"message_id": segment, "delta": delta, "timestamp": timestamp})]
        segment = self._segment = self.last_segment_id = self.next_message_id(run_id)
        return self.text(segment, delta, timestamp=timestamp)

    def close_segment(self) -> list[BaseEvent]:
        """Close the open text segment (nothing when there is none); the next ``segment`` opens a new one."""
        segment, self._segment = self._segment, None
        return self._end_text(segment) if segment is not None and segment in self._texts else []

    def _end_text(self, message_id: str) -> list[BaseEvent]:
        return [_end({"message_id": message_id, **self._texts.pop(message_id)})]

    # ----- reasoning -------------------------------------------------------------------------------------
    def reasoning(self, message_id: str, delta: str, *, marks: Marks | None = None) -> list[BaseEvent]:
        marks = marks or _NO_MARKS
        content = ReasoningMessageContentEvent(message_id=message_id, delta=delta, **marks)
        if message_id in self._reasoning:
            return [content]
        self._reasoning[message_id] = marks
        return [ReasoningStartEvent(message_id=message_id, **marks),
                ReasoningMessageStartEvent(message_id=message_id, role="reasoning", **marks), content]

    def end_reasoning(self, message_id: str, signature: str = "") -> list[BaseEvent]:
        """Close a reasoning block; ``signature``: the provider's encrypted reasoning, sent before its end."""
        marks = self._reasoning.pop(message_id, None)
        if marks is None:
            return []
        events: list[BaseEvent] = [ReasoningMessageEndEvent(message_id=message_id, **marks)]
        if signature:
            events.append(ReasoningEncryptedValueEvent(subtype="message", entity_id=message_id,
                                                       encrypted_value=signature, **marks))
        events.append(ReasoningEndEvent(message_id=message_id, **marks))
        return events

    # ----- tool calls ------------------------------------------------------------------------------------
    def has_started(self, call_id: str) -> bool:
        return call_id in self._started

    def has_result(self, call_id: str) -> bool:
        return call_id in self._answered

    def awaiting_result(self, call_id: str) -> bool:
        return call_id in self._started and call_id not in self._answered

    def note_started(self, call_id: str) -> None:
        """A tool call someone else streamed (the runner, for a request the CLI had not shown)."""
        self._started.add(call_id)
        self._tools.pop(call_id, None)

    def tool_name(self, call_id: str) -> str:
        return self._names.get(call_id, "")

    def open_calls(self) -> list[tuple[str, str]]:
        """(id, name) of the tool calls started here and not answered, in the order they started."""
        return [(call, name) for call, name in self._names.items() if call not in self._answered]

    def start_tool(self, call_id: str, name: str, *, parent_message_id: str | None = None,
                   timestamp: int | None = None, marks: Marks | None = None,
                   fallback_args: str = "{}") -> list[BaseEvent]:
        """TOOL_CALL_START; the call stays open for ``tool_args`` until ``end_tool`` (or a close)."""
        if call_id in self._started:
            return []
        marks = marks or _NO_MARKS
        self._started.add(call_id)
        self._names[call_id] = name
        self._tools[call_id] = _OpenTool(marks, fallback_args)
        return [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent_message_id,
                                   timestamp=timestamp, **marks)]

    def tool_args(self, call_id: str, delta: str, *, timestamp: int | None = None,
                  marks: Marks | None = None) -> list[BaseEvent]:
        tool = self._tools.get(call_id)
        if tool is None:
            return []
        tool.args_sent = True
        return [ToolCallArgsEvent(tool_call_id=call_id, delta=delta, timestamp=timestamp, **(marks or tool.marks))]

    def end_tool(self, call_id: str, args: str | None = None, *, timestamp: int | None = None) -> list[BaseEvent]:
        """Close an open call: ``args`` (else its fallback arguments when none were sent) and TOOL_CALL_END."""
        tool = self._tools.pop(call_id, None)
        if tool is None:
            return []
        events: list[BaseEvent] = []
        if args is not None or not tool.args_sent:
            events.append(ToolCallArgsEvent(tool_call_id=call_id, delta=tool.fallback_args if args is None else args,
                                            timestamp=timestamp, **tool.marks))
        events.append(ToolCallEndEvent(tool_call_id=call_id, timestamp=timestamp, **tool.marks))
        return events

    def tool_call(self, call_id: str, name: str, args: str, *, parent_message_id: str | None = None,
                  timestamp: int | None = None, marks: Marks | None = None) -> list[BaseEvent]:
        """A whole tool call at once: START, ARGS, END (nothing when it has started already)."""
        if call_id in self._started:
            return []
        marks = marks or _NO_MARKS
        self._started.add(call_id)
        self._names[call_id] = name
        return [_call_start({"tool_call_id": call_id, "tool_call_name": name, "parent_message_id": parent_message_id,
                             "timestamp": timestamp, **marks}),
                _call_args({"tool_call_id": call_id, "delta": args, "timestamp": timestamp, **marks}),
                _call_end({"tool_call_id": call_id, "timestamp": timestamp, **marks})]

    def tool_result(self, call_id: str, content: str, *, timestamp: int | None = None,
                    marks: Marks | None = None) -> list[BaseEvent]:
        """TOOL_CALL_RESULT for a call (closed first when it is still open)."""
        events = self.end_tool(call_id) if call_id in self._tools else []
        self._answered.add(call_id)
        events.append(_call_result({"message_id": f"{call_id}{self.result_suffix}", "tool_call_id": call_id,
                                    "content": content, "role": "tool", "timestamp": timestamp,
                                    **(marks or _NO_MARKS)}))
        return events

    # ----- ends ------------------------------------------------------------------------------------------
    def close(self, block_id: str) -> list[BaseEvent]:
        """Close one open block, whatever it is (nothing when it is not open)."""
        if block_id in self._texts:
            return self._end_text(block_id)
        if block_id in self._reasoning:
            return self.end_reasoning(block_id)
        return self.end_tool(block_id)

    def close_all(self) -> list[BaseEvent]:
        """Close everything still open: text messages, then reasoning, then tool calls."""
        events: list[BaseEvent] = []
        for kind, block_id in self.open.in_close_order():
            events += (self._end_text(block_id) if kind == "text" else self.end_reasoning(block_id)
                       if kind == "reasoning" else self.end_tool(block_id))
        return events

    def finish(self, terminal: BaseEvent) -> list[BaseEvent]:
        """End the run with ``terminal`` (a RUN_FINISHED), everything closed before it."""
        events = self.close_all()
        self.terminal = terminal
        events.append(terminal)
        return events

    def fail(self, failure: Failure, *, usage: list[TokenUsage] | None = None,
             timestamp: int | None = None) -> list[BaseEvent]:
        """End the run with a RUN_ERROR for ``failure``, everything closed before it."""
        return self.finish(RunErrorEvent(message=failure.message, code=failure.code, usage=usage,
                                         timestamp=timestamp))
