"""Gemini CLI ``stream-json`` lines -> AG-UI events: the shared transform loop (``ag_ui_cli_common.CliAdapter``),
one handler per line kind.

* ``init``: remembered (``session_id``, ``model``), no event.
* ``message`` (assistant): one AG-UI text message per assistant segment; a tool call closes it and the next
  assistant text opens a new one. ``message`` (user) is the CLI echoing the prompt: skipped.
* ``tool_use`` -> ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (JSON), ``TOOL_CALL_END``;
  ``tool_result`` -> ``TOOL_CALL_RESULT`` (a failed tool's content starts with ``Error: ``).
* ``error`` (the CLI carries on) -> ``CUSTOM`` ``gemini-cli/warning``.
* ``result`` -> ``RUN_FINISHED`` with per-model ``usage``, or ``RUN_ERROR`` with an actionable message.
* anything else (not JSON, unknown type, a line cut by the reader's size limit) -> ``RAW`` (source
  ``gemini-cli``), never an exception.

``finish(Exit(exit_code, stderr_tail))`` ends a stream that stopped without a ``result`` line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from datetime import datetime

from ag_ui.core import BaseEvent, CustomEvent, RawEvent, RunFinishedEvent

from ag_ui_cli_common.adapter import RAW_PREVIEW_CHARS, CliAdapter
from ag_ui_cli_common.errors import Failure
from ag_ui_gemini_cli.errors import AGENT, describe_error, describe_exit
from ag_ui_gemini_cli.events import (
    ErrorLine,
    GeminiLine,
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
_TRUNCATED_TOOL_ID = re.compile(r'"type"\s*:\s*"tool_result".*?"tool_id"\s*:\s*"([^"]+)"')


def _millis(timestamp: str | None) -> int | None:
    global _last_millis
    if not timestamp:
        return None
    last = _last_millis  # one tuple, read once: consistent whoever else calls
    if timestamp == last[0]:  # lines printed in the same millisecond (a burst of deltas)
        return last[1]
    try:
        millis = int(datetime.fromisoformat(timestamp).timestamp() * 1000)  # 3.11+ reads a trailing Z
    except ValueError:
        millis = None
    _last_millis = (timestamp, millis)
    return millis


_last_millis: tuple[str | None, int | None] = (None, None)  # the last timestamp read and its milliseconds


class GeminiCliAdapter(CliAdapter[str]):
    """Translates one turn of ``gemini -p ... --output-format stream-json`` output, one stdout line at a time."""

    agent = AGENT
    source = SOURCE

    def __init__(self, thread_id: str, run_id: str) -> None:
        super().__init__(thread_id, run_id)
        self.session_id: str | None = None
        self.model: str | None = None
        self._answer_chars: list[str] = []  # assistant text, for the output-token estimate
        self._last_error: str | None = None
        self.handlers = {
            InitLine: self._on_init, MessageLine: self._on_message, ToolUseLine: self._on_tool_use,
            ToolResultLine: self._on_tool_result, ErrorLine: self._on_error, ResultLine: self._on_result,
            UnparsedLine: self._on_unparsed,
        }

    # ----- the transform loop's Gemini parts -------------------------------------------------------------
    def parse(self, native: str) -> tuple[type, GeminiLine | UnparsedLine] | None:
        parsed = parse_line(native)
        return None if parsed is None else (type(parsed), parsed)

    def on_malformed(self, kind: Hashable, payload: GeminiLine) -> list[BaseEvent]:
        return [self.raw(payload.model_dump(mode="json"), reason="invalid")]

    def exit_failure(self, exit_code: int | None) -> Failure:
        return describe_exit(exit_code)

    # ----- handlers --------------------------------------------------------------------------------------
    def _on_init(self, line: InitLine) -> list[BaseEvent]:
        self.session_id = line.session_id
        self.model = line.model if line.model and line.model != "auto" else self.model
        return []

    def _on_message(self, line: MessageLine) -> list[BaseEvent]:
        if line.role != "assistant" or not line.content:
            return []  # the CLI echoes the user's prompt; empty deltas are dropped
        events = self.blocks.segment(self.run_id, line.content, timestamp=_millis(line.timestamp))
        self._answer_chars.append(line.content)
        if not line.delta:  # a whole message at once
            events += self.blocks.close_segment()
        return events

    def _on_tool_use(self, line: ToolUseLine) -> list[BaseEvent]:
        return self.blocks.close_segment() + self.blocks.tool_call(
            line.tool_id, line.tool_name, json.dumps(line.parameters), parent_message_id=self.blocks.last_segment_id,
            timestamp=_millis(line.timestamp))

    def _on_tool_result(self, line: ToolResultLine) -> list[BaseEvent]:
        if not self.blocks.awaiting_result(line.tool_id):
            return [self.raw(line.model_dump(mode="json"), note="tool_result for a tool call that was never started")]
        if line.status == "success":
            content = line.output or ""
        else:
            reason = (line.error.message if line.error and line.error.message else line.output) or line.status
            content = f"Error: {reason}"
            if line.output and line.output != reason:
                content += f"\n{line.output}"
        return self.blocks.tool_result(line.tool_id, content, timestamp=_millis(line.timestamp))

    def _on_error(self, line: ErrorLine) -> list[BaseEvent]:
        if line.severity == "error":
            self._last_error = line.message
        return [CustomEvent(name=WARNING_EVENT, value={"severity": line.severity, "message": line.message},
                            timestamp=_millis(line.timestamp))]

    def _on_result(self, line: ResultLine) -> list[BaseEvent]:
        timestamp = _millis(line.timestamp)
        if line.status == "success":
            usage = usage_from_stats(line.stats, self.model, "".join(self._answer_chars))
            return self.blocks.finish(RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, usage=usage.entries or None,
                result={"usageEstimated": True} if usage.estimated else None, timestamp=timestamp))
        raw = (line.error.message if line.error else "") or self._last_error or f"status {line.status}"
        return self.blocks.fail(describe_error(raw, line.error.type if line.error else None), timestamp=timestamp)

    def _on_unparsed(self, line: UnparsedLine) -> list[BaseEvent]:
        raw = line.raw if not isinstance(line.raw, str) else line.raw[:RAW_PREVIEW_CHARS]
        metadata = {"reason": line.reason} | ({"detail": line.detail} if line.detail else {})
        return [RawEvent(event=raw, source=SOURCE, metadata=metadata)]

    def on_truncated(self, head: str, dropped_bytes: int) -> list[BaseEvent]:
        """A line longer than the reader's limit: its JSON is cut, so only what is certain is used."""
        events = super().on_truncated(head, dropped_bytes)
        match = _TRUNCATED_TOOL_ID.search(head[:RAW_PREVIEW_CHARS])
        if match and self.blocks.awaiting_result(match.group(1)):
            events += self.blocks.tool_result(
                match.group(1), f"(The tool's output was too large to show: {len(head) + dropped_bytes} bytes.)")
        return events
