"""Gemini CLI ``stream-json`` lines -> AG-UI events: one transform loop, one handler per line kind.

* ``init``: remembered (``session_id``, ``model``), no event.
* ``message`` (assistant): one AG-UI text message per assistant segment; a tool call closes it and the next
  assistant text opens a new one. ``message`` (user) is the CLI echoing the prompt: skipped.
* ``tool_use`` -> ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (JSON), ``TOOL_CALL_END``;
  ``tool_result`` -> ``TOOL_CALL_RESULT`` (a failed tool's content starts with ``Error: ``).
* ``error`` (the CLI carries on) -> ``CUSTOM`` ``gemini-cli/warning``.
* ``result`` -> ``RUN_FINISHED`` with per-model ``usage``, or ``RUN_ERROR`` with an actionable message.
* anything else (not JSON, unknown type, a line cut by the reader's size limit) -> ``RAW`` (source
  ``gemini-cli``), never an exception.

``finish(exit_code, stderr_tail)`` ends a stream that stopped without a ``result`` line.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import datetime
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RawEvent,
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

from ag_ui_gemini_cli.errors import describe_error, describe_exit
from ag_ui_gemini_cli.events import (
    ErrorLine,
    InitLine,
    MessageLine,
    ResultLine,
    ToolResultLine,
    ToolUseLine,
    UnparsedLine,
    parse_line,
)
from ag_ui_gemini_cli.usage import usage_from_stats

SOURCE = "gemini-cli"
WARNING_EVENT = "gemini-cli/warning"
RAW_PREVIEW_CHARS = 2000
_TRUNCATED_TOOL_ID = re.compile(r'"type"\s*:\s*"tool_result".*?"tool_id"\s*:\s*"([^"]+)"')


def _millis(timestamp: str | None) -> int | None:
    if not timestamp:
        return None
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)  # 3.11+ reads a trailing Z
    except ValueError:
        return None


class GeminiCliAdapter:
    """Translates one turn of ``gemini -p ... --output-format stream-json`` output."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.session_id: str | None = None
        self.model: str | None = None
        self.finished = False  # a terminal event was produced
        self._message_id: str | None = None
        self._last_message_id: str | None = None
        self._message_count = 0
        self._open_tools: set[str] = set()
        self._answer_chars: list[str] = []  # assistant text, for the output-token estimate
        self._last_error: str | None = None
        self._handlers: dict[type, Callable[[Any], list[BaseEvent]]] = {
            InitLine: self._on_init, MessageLine: self._on_message, ToolUseLine: self._on_tool_use,
            ToolResultLine: self._on_tool_result, ErrorLine: self._on_error, ResultLine: self._on_result,
            UnparsedLine: self._on_unparsed,
        }

    # ----- the transform loop ----------------------------------------------------------------------------
    async def events(self, lines: AsyncIterable[str]) -> AsyncIterator[BaseEvent]:
        """All events of a stream of lines; ends with ``finish()`` when no ``result`` line came."""
        async for line in lines:
            for event in self.translate_line(line):
                yield event
        for event in self.finish(None):
            yield event

    def translate_line(self, line: str, dropped_bytes: int = 0) -> list[BaseEvent]:
        """Events for one stdout line. ``dropped_bytes`` > 0: the reader cut the line at its size limit."""
        if self.finished:
            return []
        if dropped_bytes:
            return self._on_truncated(line, dropped_bytes)
        parsed = parse_line(line)
        if parsed is None:
            return []
        events = self._handlers[type(parsed)](parsed)
        extra = getattr(parsed, "model_extra", None)
        if extra and events:  # keep fields this adapter does not know on the first event of the line
            events[0].raw_event = {"unknownFields": extra}
        return events

    def finish(self, exit_code: int | None, stderr_tail: str = "") -> list[BaseEvent]:
        """End of the CLI's output: a ``RUN_ERROR`` when no ``result`` arrived, else nothing."""
        if self.finished:
            return []
        events = self._close_text()
        described = describe_exit(exit_code)
        message = described.message
        if stderr_tail.strip():
            message += f"\nLast lines of the CLI's stderr:\n{stderr_tail.strip()}"
        events.append(RunErrorEvent(message=message, code=described.code))
        self.finished = True
        return events

    def close_open_blocks(self) -> list[BaseEvent]:
        """END events for what is still open (the text message), e.g. after an interrupt."""
        return self._close_text()

    # ----- text ------------------------------------------------------------------------------------------
    def _close_text(self) -> list[BaseEvent]:
        if self._message_id is None:
            return []
        event = TextMessageEndEvent(message_id=self._message_id)
        self._message_id = None
        return [event]

    def _open_text(self, timestamp: int | None) -> list[BaseEvent]:
        if self._message_id is not None:
            return []
        self._message_count += 1
        self._message_id = self._last_message_id = f"msg-{self.run_id}-{self._message_count}"
        return [TextMessageStartEvent(message_id=self._message_id, role="assistant", timestamp=timestamp)]

    # ----- handlers --------------------------------------------------------------------------------------
    def _on_init(self, line: InitLine) -> list[BaseEvent]:
        self.session_id = line.session_id
        self.model = line.model if line.model and line.model != "auto" else self.model
        return []

    def _on_message(self, line: MessageLine) -> list[BaseEvent]:
        if line.role != "assistant" or not line.content:
            return []  # the CLI echoes the user's prompt; empty deltas are dropped
        timestamp = _millis(line.timestamp)
        events = self._open_text(timestamp)
        events.append(TextMessageContentEvent(message_id=self._message_id or "", delta=line.content,
                                              timestamp=timestamp))
        self._answer_chars.append(line.content)
        if not line.delta:  # a whole message at once
            events += self._close_text()
        return events

    def _on_tool_use(self, line: ToolUseLine) -> list[BaseEvent]:
        timestamp = _millis(line.timestamp)
        events = self._close_text()
        events.append(ToolCallStartEvent(tool_call_id=line.tool_id, tool_call_name=line.tool_name,
                                         parent_message_id=self._last_message_id, timestamp=timestamp))
        events.append(ToolCallArgsEvent(tool_call_id=line.tool_id, delta=json.dumps(line.parameters),
                                        timestamp=timestamp))
        events.append(ToolCallEndEvent(tool_call_id=line.tool_id, timestamp=timestamp))
        self._open_tools.add(line.tool_id)
        return events

    def _on_tool_result(self, line: ToolResultLine) -> list[BaseEvent]:
        if line.tool_id not in self._open_tools:
            return [RawEvent(event=line.model_dump(mode="json"), source=SOURCE,
                             metadata={"note": "tool_result for a tool call that was never started"})]
        self._open_tools.discard(line.tool_id)
        if line.status == "success":
            content = line.output or ""
        else:
            reason = (line.error.message if line.error and line.error.message else line.output) or line.status
            content = f"Error: {reason}"
            if line.output and line.output != reason:
                content += f"\n{line.output}"
        return [ToolCallResultEvent(message_id=f"{line.tool_id}-result", tool_call_id=line.tool_id,
                                    content=content, role="tool", timestamp=_millis(line.timestamp))]

    def _on_error(self, line: ErrorLine) -> list[BaseEvent]:
        if line.severity == "error":
            self._last_error = line.message
        return [CustomEvent(name=WARNING_EVENT, value={"severity": line.severity, "message": line.message},
                            timestamp=_millis(line.timestamp))]

    def _on_result(self, line: ResultLine) -> list[BaseEvent]:
        events = self._close_text()
        self.finished = True
        timestamp = _millis(line.timestamp)
        if line.status == "success":
            usage = usage_from_stats(line.stats, self.model, "".join(self._answer_chars))
            events.append(RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, usage=usage.entries or None,
                result={"usageEstimated": True} if usage.estimated else None, timestamp=timestamp))
            return events
        raw = (line.error.message if line.error else "") or self._last_error or f"status {line.status}"
        described = describe_error(raw, line.error.type if line.error else None)
        events.append(RunErrorEvent(message=described.message, code=described.code, timestamp=timestamp))
        return events

    def _on_unparsed(self, line: UnparsedLine) -> list[BaseEvent]:
        raw = line.raw if not isinstance(line.raw, str) else line.raw[:RAW_PREVIEW_CHARS]
        metadata = {"reason": line.reason} | ({"detail": line.detail} if line.detail else {})
        return [RawEvent(event=raw, source=SOURCE, metadata=metadata)]

    def _on_truncated(self, head: str, dropped_bytes: int) -> list[BaseEvent]:
        """A line longer than the reader's limit: its JSON is cut, so only what is certain is used."""
        note = {"reason": "line_too_long", "droppedBytes": dropped_bytes}
        events: list[BaseEvent] = [RawEvent(event=head[:RAW_PREVIEW_CHARS], source=SOURCE, metadata=note)]
        match = _TRUNCATED_TOOL_ID.search(head[:RAW_PREVIEW_CHARS])
        if match and match.group(1) in self._open_tools:
            tool_id = match.group(1)
            self._open_tools.discard(tool_id)
            events.append(ToolCallResultEvent(
                message_id=f"{tool_id}-result", tool_call_id=tool_id, role="tool",
                content=f"(The tool's output was too large to show: {len(head) + dropped_bytes} bytes.)"))
        return events
