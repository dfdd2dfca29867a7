"""The one place that guarantees docs/contracts.md section 3 for every bridge.

``StreamGuard`` sits between a bridge's event stream and the thread's event log. Whatever the bridge yields,
the client sees: ``RUN_STARTED`` first; every text message, tool call, reasoning message/block and step closed
before the terminal event; exactly one terminal event and nothing after it; no empty deltas; message and
tool-call ids unique within the thread (a reused id is remapped); tool-call arguments as valid JSON (buffered
until the call ends, so a call cut short still ends with parseable arguments); results only for started calls;
every sub-agent segment ended (``SUBAGENT_FINISHED`` when the run succeeds, else ``SUBAGENT_ERROR``), once. An event
the guard writes itself to close something keeps that thing's attribution (``subagentRunId``, ``metadata``).
Beside it: the sub-agent segments (``subagents``), the ids a thread's runs share (``thread_ids``), how the runner ends
a run itself (``outcome.Ending``); ``Ending`` and ``ThreadIds`` are imported from here too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    EventType,
    RawEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ag_ui_cli_common.blocks import OpenBlocks
from ambient_runner.stream.outcome import Ending, RunOutcome
from ambient_runner.stream.subagents import SubagentSegments
from ambient_runner.stream.thread_ids import ThreadIds

__all__ = ["HOLDER_SOURCE", "NO_OUTPUT", "Ending", "StreamGuard", "ThreadIds"]

log = logging.getLogger(__name__)

DELTA_EVENTS = {EventType.TEXT_MESSAGE_CONTENT, EventType.TOOL_CALL_ARGS, EventType.REASONING_MESSAGE_CONTENT}
# A tool result the CLI left blank (Gemini over ACP reports no output for shell commands): never sent blank.
NO_OUTPUT = "{name} finished; the CLI reports no output"
# The RAW event that announces a tool-call holder (``StreamGuard._holder_of``): the platform's page makes a message of
# a RAW event with a ``role`` and a non-empty ``content`` (an empty list of parts is one: it shows as ""), under its
# ``id``. So the page holds the calls where the snapshot does, in an assistant message of that id with no text.
HOLDER_SOURCE = "ambient-runner/tool-call-holder"


class StreamGuard:
    def __init__(self, thread_id: str, run_id: str, ids: ThreadIds) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.run_started = RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)
        self._ids = ids
        self._remap: dict[str, str] = {}  # bridge id -> id on the wire, for this run
        self._open = OpenBlocks()  # the adapters' record of open blocks, and its one close order
        self._texts: dict[str, None] = self._open.of("text")  # open text messages (ordered)
        self._tools: dict[str, list[str]] = self._open.of("tool")  # open tool call -> buffered argument deltas
        self._reasoning_blocks: dict[str, None] = self._open.of("reasoning")
        self._reasoning_messages: dict[str, None] = {}  # the open messages of those blocks (same ids)
        self._steps: dict[str, None] = {}
        self._subagents = SubagentSegments(ids.suspended)
        self._attribution: dict[str, dict[str, object]] = {}  # open id -> what its opening event was marked with
        self._call_owner: dict[str, str] = {}  # tool call (wire id) -> the sub-agent that made it
        # Where the platform's page puts a tool call (see _holder_of): the texts it has committed, and the message
        # that holds the next call that names no committed text.
        self._said: set[str] = set()  # open text or reasoning messages with content so far
        self._committed_texts: set[str] = set()
        self._holder: str | None = None
        self.terminated = False
        self.outcome: RunOutcome | None = None  # once terminated
        self.usage: list[TokenUsage] | None = None

    # ----- entry points ----------------------------------------------------------------------------------
    def started(self) -> RunStartedEvent:
        return self.run_started

    def accept(self, event: BaseEvent, *, stopping: Ending | None = None) -> list[BaseEvent]:
        """Events to emit for one bridge event (none after the terminal event).

        ``stopping``: the run is being interrupted or shut down; a terminal event from the bridge (its report of
        being stopped) is replaced by this ending, keeping the bridge's usage.
        """
        if self.terminated:
            return []
        kind = event.type
        if kind in DELTA_EVENTS and not getattr(event, "delta", None):
            return []
        handler = _HANDLERS.get(kind)
        reopened = self._subagents.reopen(event)
        if handler is None:
            return [*reopened, event]
        return [*reopened, *handler(self, event, stopping)]

    def finish(self, ending: Ending) -> list[BaseEvent]:
        """Close everything open and emit the terminal event (if not already terminated)."""
        if self.terminated:
            return []
        if ending.cancelled:
            return self._terminate(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                                    outcome=RunFinishedCancelledOutcome(), usage=ending.usage))
        if ending.error_message is not None:
            return self._terminate(RunErrorEvent(message=ending.error_message, code=ending.error_code,
                                                 usage=ending.usage))
        return self._terminate(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=ending.usage))

    # ----- helpers ---------------------------------------------------------------------------------------
    def _wire_id(self, bridge_id: str) -> str:
        return self._remap.get(bridge_id, bridge_id)

    def _open_id(self, bridge_id: str) -> str:
        final = self._ids.claim(bridge_id)
        if final != bridge_id:
            log.debug("id %s reused in thread %s; sent as %s", bridge_id, self.thread_id, final)
        self._remap[bridge_id] = final
        return final

    def _remember(self, wire_id: str, event: BaseEvent) -> None:
        marks = _marks_of(event)
        if marks:
            self._attribution[wire_id] = marks

    def _marks(self, wire_id: str) -> dict[str, object]:
        return self._attribution.get(wire_id, {})

    def close_messages(self) -> list[BaseEvent]:
        """Close the open text, reasoning and tool calls, in the adapters' one order (``CLOSE_ORDER``; sub-agent
        segments and steps stay open)."""
        out: list[BaseEvent] = []
        for kind, wire in self._open.in_close_order():
            out += (self._end_text(wire) if kind == "text" else self._end_reasoning(wire) if kind == "reasoning"
                    else self._end_tool(wire))
        return out

    def _end_reasoning(self, wire: str) -> list[BaseEvent]:
        """End an open reasoning block (its message first, when open)."""
        out: list[BaseEvent] = []
        if wire in self._reasoning_messages:
            self._end_reasoning_message(wire)
            out.append(ReasoningMessageEndEvent(message_id=wire, **self._marks(wire)))
        del self._reasoning_blocks[wire]
        return [*out, ReasoningEndEvent(message_id=wire, **self._marks(wire))]

    def wire_id(self, bridge_id: str) -> str:
        """The id ``bridge_id`` (a message's, a tool call's) was sent with in this run."""
        return self._wire_id(bridge_id)

    def _close_all(self, terminal: BaseEvent) -> list[BaseEvent]:
        out = [*self.close_messages(), *self._subagents.close(terminal)]
        for step in list(self._steps):
            out.append(StepFinishedEvent(step_name=step))
        self._steps.clear()
        return out

    def _end_tool(self, wire_id: str) -> list[BaseEvent]:
        args = "".join(self._tools.pop(wire_id))
        marks = self._marks(wire_id)
        return [ToolCallArgsEvent(tool_call_id=wire_id, delta=_valid_json(args), **marks),
                ToolCallEndEvent(tool_call_id=wire_id, **marks)]

    def _terminate(self, terminal: BaseEvent) -> list[BaseEvent]:
        out = self._close_all(terminal)
        self.terminated = True
        if isinstance(terminal, RunErrorEvent):
            self.outcome = "error"
        elif isinstance(terminal, RunFinishedEvent) and isinstance(
                terminal.outcome, RunFinishedCancelledOutcome | RunFinishedInterruptOutcome):
            self.outcome = terminal.outcome.type
        else:
            self.outcome = "success"
        self.usage = getattr(terminal, "usage", None)
        out.append(terminal)
        return out

    # ----- handlers (one per event kind) -----------------------------------------------------------------
    def _on_run_started(self, event: RunStartedEvent, stopping: Ending | None) -> list[BaseEvent]:
        return []  # the core sent RUN_STARTED already

    def _on_run_finished(self, event: RunFinishedEvent, stopping: Ending | None) -> list[BaseEvent]:
        if stopping is not None:
            return self.finish(replace(stopping, usage=event.usage))
        update: dict[str, object] = {"thread_id": self.thread_id, "run_id": self.run_id}
        outcome = event.outcome
        if isinstance(outcome, RunFinishedInterruptOutcome):  # each interrupt: its call's id on the wire, its owner
            update["outcome"] = outcome.model_copy(update={"interrupts": [
                i.model_copy(update={"tool_call_id": self._wire_id(i.tool_call_id),
                                     "subagent_run_id": self._call_owner.get(self._wire_id(i.tool_call_id))})
                if i.tool_call_id else i for i in outcome.interrupts]})
        return self._terminate(event.model_copy(update=update))

    def _on_run_error(self, event: RunErrorEvent, stopping: Ending | None) -> list[BaseEvent]:
        if stopping is not None:  # a CLI reports its own interruption as an error: the user asked for it
            return self.finish(replace(stopping, usage=event.usage))
        return self._terminate(event)

    def _on_text_start(self, event: TextMessageStartEvent, stopping: Ending | None) -> list[BaseEvent]:
        if self._wire_id(event.message_id) in self._texts:
            return []
        out = self._end_texts()  # the page streams one text at a time: a new one would drop the open one
        wire = self._open_id(event.message_id)
        self._texts[wire] = None
        self._remember(wire, event)
        return [*out, _with_id(event, "message_id", wire)]

    def _on_text_content(self, event: TextMessageContentEvent, stopping: Ending | None) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        wire = self._wire_id(event.message_id)
        if wire not in self._texts:
            out += self._end_texts()
            wire = self._open_id(event.message_id)
            self._texts[wire] = None
            self._remember(wire, event)
            out.append(TextMessageStartEvent(message_id=wire, role="assistant", **self._marks(wire)))
        self._said.add(wire)
        out.append(_with_id(event, "message_id", wire))
        return out

    def _on_text_end(self, event: TextMessageEndEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.message_id)
        if wire not in self._texts:
            return []
        return self._end_text(wire, event)

    def _end_text(self, wire: str, event: TextMessageEndEvent | None = None) -> list[BaseEvent]:
        """End an open text; with content, the page has it as a message, which holds the tool calls after it."""
        del self._texts[wire]
        if wire in self._said:
            self._said.discard(wire)
            self._committed_texts.add(wire)
            self._holder = wire
        return [_with_id(event, "message_id", wire) if event is not None
                else TextMessageEndEvent(message_id=wire, **self._marks(wire))]

    def _end_texts(self) -> list[BaseEvent]:
        return [end for wire in list(self._texts) for end in self._end_text(wire)]

    def _holder_of(self, call_id: str, parent: str | None) -> tuple[str, list[BaseEvent]]:
        """The ``parentMessageId`` a tool call is streamed with, so the platform's page holds it where the snapshot
        does (its reducer: on the message of that id; without one, on the last assistant message, which may be a
        reasoning block or a message of an earlier turn; with an id it has no message for, in a ``role: "tool"``
        message of its own with a random id, which no snapshot can rebuild). A text the page has committed keeps the
        calls after it; otherwise (nothing said yet, or reasoning since) the calls are held by a new assistant
        message ``<first call id>-call``, announced before its first call (``HOLDER_SOURCE``), so that the page has
        it, empty, where the snapshot has it. Returns the id and the announcement, if the holder is new."""
        if parent is not None and parent in self._committed_texts:
            return parent, []
        if self._holder is not None:
            return self._holder, []
        self._holder = self._ids.claim(f"{call_id}-call")
        return self._holder, [RawEvent(event={"id": self._holder, "role": "assistant", "content": []},
                                       source=HOLDER_SOURCE)]

    def _on_tool_start(self, event: ToolCallStartEvent, stopping: Ending | None) -> list[BaseEvent]:
        if self._wire_id(event.tool_call_id) in self._tools:
            return []
        wire = self._open_id(event.tool_call_id)
        self._tools[wire] = []
        self._ids.tool_calls[wire] = event.tool_call_name
        self._remember(wire, event)
        update: dict[str, object] = {"tool_call_id": wire}
        parent = self._wire_id(event.parent_message_id) if event.parent_message_id else None
        out: list[BaseEvent] = []
        if event.subagent_run_id:
            self._call_owner[wire] = event.subagent_run_id
            if parent:
                update["parent_message_id"] = parent
        else:
            out += self._end_texts()  # the page holds a call only on a text it has committed
            update["parent_message_id"], announced = self._holder_of(wire, parent)
            out += announced
        return [*out, event.model_copy(update=update)]

    def _on_tool_args(self, event: ToolCallArgsEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.tool_call_id)
        if wire in self._tools:
            self._tools[wire].append(event.delta)
        return []

    def _on_tool_end(self, event: ToolCallEndEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.tool_call_id)
        return self._end_tool(wire) if wire in self._tools else []

    def _on_tool_result(self, event: ToolCallResultEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.tool_call_id)
        out: list[BaseEvent] = []
        if wire in self._tools:
            out += self._end_tool(wire)
        if wire not in self._ids.tool_calls:
            payload = event.model_dump(mode="json", by_alias=True, exclude_none=True)
            return [RawEvent(event=payload, source="ambient-runner/orphan-tool-result")]
        message_id = self._ids.claim(event.message_id)
        update = {"tool_call_id": wire, "message_id": message_id}
        if _blank(event.content):  # the platform's page shows a blank result as a call still running
            update["content"] = NO_OUTPUT.format(name=self._ids.tool_calls.get(wire) or "the tool")
        out.append(event.model_copy(update=update))
        return out

    def _on_reasoning_start(self, event: ReasoningStartEvent, stopping: Ending | None) -> list[BaseEvent]:
        if self._wire_id(event.message_id) in self._reasoning_blocks:
            return []
        wire = self._open_id(event.message_id)
        self._reasoning_blocks[wire] = None
        self._remember(wire, event)
        return [_with_id(event, "message_id", wire)]

    def _on_reasoning_message_start(self, event: ReasoningMessageStartEvent,
                                    stopping: Ending | None) -> list[BaseEvent]:
        bridge_id = event.message_id
        out: list[BaseEvent] = []
        if self._wire_id(bridge_id) not in self._reasoning_blocks:
            out += self._on_reasoning_start(ReasoningStartEvent(message_id=bridge_id, **_marks_of(event)), stopping)
        wire = self._wire_id(bridge_id)
        if wire in self._reasoning_messages:
            return out
        self._reasoning_messages[wire] = None
        out.append(_with_id(event, "message_id", wire))
        return out

    def _on_reasoning_content(self, event: ReasoningMessageContentEvent, stopping: Ending | None) -> list[BaseEvent]:
        bridge_id = event.message_id
        out: list[BaseEvent] = []
        if self._wire_id(bridge_id) not in self._reasoning_messages:
            out += self._on_reasoning_message_start(
                ReasoningMessageStartEvent(message_id=bridge_id, role="reasoning", **_marks_of(event)), stopping)
        self._said.add(self._wire_id(bridge_id))
        out.append(_with_id(event, "message_id", self._wire_id(bridge_id)))
        return out

    def _on_reasoning_message_end(self, event: ReasoningMessageEndEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.message_id)
        if wire not in self._reasoning_messages:
            return []
        self._end_reasoning_message(wire)
        return [_with_id(event, "message_id", wire)]

    def _end_reasoning_message(self, wire: str) -> None:
        """With content, the page has the reasoning as a message: the calls after it need a holder of their own."""
        del self._reasoning_messages[wire]
        if wire in self._said:
            self._said.discard(wire)
            self._holder = None

    def _on_reasoning_end(self, event: ReasoningEndEvent, stopping: Ending | None) -> list[BaseEvent]:
        wire = self._wire_id(event.message_id)
        if wire not in self._reasoning_blocks:
            return []
        return [*self._end_reasoning(wire)[:-1], _with_id(event, "message_id", wire)]

    def _on_subagent_started(self, event: SubagentStartedEvent, stopping: Ending | None) -> list[BaseEvent]:
        return self._subagents.start(event, self._wire_id)

    def _on_subagent_ended(self, event: SubagentFinishedEvent | SubagentErrorEvent,
                           stopping: Ending | None) -> list[BaseEvent]:
        return self._subagents.end(event)

    def _on_step_started(self, event: StepStartedEvent, stopping: Ending | None) -> list[BaseEvent]:
        self._steps[event.step_name] = None
        return [event]

    def _on_step_finished(self, event: StepFinishedEvent, stopping: Ending | None) -> list[BaseEvent]:
        if event.step_name not in self._steps:
            return []
        del self._steps[event.step_name]
        return [event]

    def _on_chunk(self, event: BaseEvent, stopping: Ending | None) -> list[BaseEvent]:
        # Chunk events are a producer convenience; keep them out of the stream (the bridges never send them).
        return [RawEvent(event=event.model_dump(mode="json", by_alias=True, exclude_none=True),
                         source="ambient-runner/chunk")]


def _marks_of(event: BaseEvent) -> dict[str, object]:
    """What attributes ``event`` to a sub-agent or a parent call: kept on the events written for it."""
    return {k: v for k in ("subagent_run_id", "metadata") if (v := getattr(event, k, None)) is not None}


def _with_id(event: BaseEvent, field: str, wire_id: str) -> BaseEvent:
    """``event`` with its id as sent on the wire (copied only when the id was remapped)."""
    if getattr(event, field) == wire_id:
        return event
    return event.model_copy(update={field: wire_id})


def _blank(content: object) -> bool:
    """A result the platform's page takes for none (tool-message.tsx ``hasActualResult``)."""
    return not isinstance(content, str) or content.strip() in ("", '""', "''")


def _valid_json(args: str) -> str:
    """Arguments as valid JSON text: kept when they parse, wrapped as {"_raw": ...} when they do not."""
    if not args.strip():
        return "{}"
    try:
        json.loads(args)
        return args
    except ValueError:
        return json.dumps({"_raw": args})


# One handler per event kind, each typed with its event class (the event's ``type`` picks it).
_Handler = Callable[[StreamGuard, Any, "Ending | None"], list[BaseEvent]]
_HANDLERS: dict[EventType, _Handler] = {
    EventType.RUN_STARTED: StreamGuard._on_run_started,
    EventType.RUN_FINISHED: StreamGuard._on_run_finished,
    EventType.RUN_ERROR: StreamGuard._on_run_error,
    EventType.TEXT_MESSAGE_START: StreamGuard._on_text_start,
    EventType.TEXT_MESSAGE_CONTENT: StreamGuard._on_text_content,
    EventType.TEXT_MESSAGE_END: StreamGuard._on_text_end,
    EventType.TOOL_CALL_START: StreamGuard._on_tool_start,
    EventType.TOOL_CALL_ARGS: StreamGuard._on_tool_args,
    EventType.TOOL_CALL_END: StreamGuard._on_tool_end,
    EventType.TOOL_CALL_RESULT: StreamGuard._on_tool_result,
    EventType.REASONING_START: StreamGuard._on_reasoning_start,
    EventType.REASONING_MESSAGE_START: StreamGuard._on_reasoning_message_start,
    EventType.REASONING_MESSAGE_CONTENT: StreamGuard._on_reasoning_content,
    EventType.REASONING_MESSAGE_END: StreamGuard._on_reasoning_message_end,
    EventType.REASONING_END: StreamGuard._on_reasoning_end,
    EventType.SUBAGENT_STARTED: StreamGuard._on_subagent_started,
    EventType.SUBAGENT_FINISHED: StreamGuard._on_subagent_ended,
    EventType.SUBAGENT_ERROR: StreamGuard._on_subagent_ended,
    EventType.STEP_STARTED: StreamGuard._on_step_started,
    EventType.STEP_FINISHED: StreamGuard._on_step_finished,
    EventType.TEXT_MESSAGE_CHUNK: StreamGuard._on_chunk,
    EventType.TOOL_CALL_CHUNK: StreamGuard._on_chunk,
    EventType.REASONING_MESSAGE_CHUNK: StreamGuard._on_chunk,
}

