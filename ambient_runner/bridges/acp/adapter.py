"""ACP's updates to AG-UI for the ACP runner's agents: the shared ACP translation (``GeminiAcpAdapter``) with the
tool calls as these agents send them.

ACP sends no tool name and gives a call's input as ``rawInput``. opencode's first ``tool_call`` has the tool's name
as its ``title`` (``bash``) and no input yet (``rawInput`` holds only ``cwd``); the input comes with the next
update. So a call starts once its input is known (or it ended, or a permission request shows it), named by the
first title it had, its arguments ``rawInput`` without ``cwd`` (the shared translation's when it has none).
Their thought chunks are deltas of one thought (Gemini's are whole summaries): one reasoning block until something
else comes. Usage: the prompt result's ``usage`` (ACP's per-turn usage: ``inputTokens``, ``outputTokens``), when
the agent reports it (opencode does), for the session's model.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import BaseEvent, RunFinishedEvent, TokenUsage

from ag_ui_gemini_cli import GeminiAcpAdapter
from ag_ui_gemini_cli.acp import tool_arguments
from ag_ui_gemini_cli.acp_schema import MessageChunk, PromptResult, SessionUpdate, ToolCall

ENDED = ("completed", "failed")
PROVIDER = "openai"  # the usage's provider: the model API of every preset so far (openai-chat)


def turn_usage(result: PromptResult, model: str | None) -> list[TokenUsage]:
    """The prompt result's ``usage``, as one entry for the turn's model (none when the agent reports none)."""
    usage = (result.model_extra or {}).get("usage")
    if not isinstance(usage, dict):
        return []
    given, taken = usage.get("inputTokens"), usage.get("outputTokens")
    if not isinstance(given, int) or not isinstance(taken, int):
        return []
    total = usage.get("totalTokens")
    return [TokenUsage(provider=PROVIDER, model=model or "unknown", input_tokens=given, output_tokens=taken,
                       total_tokens=total if isinstance(total, int) else given + taken)]


def raw_input(call: ToolCall) -> dict[str, Any]:
    """The call's ``rawInput`` without the working folder the agent adds."""
    raw = (call.model_extra or {}).get("rawInput")
    return {k: v for k, v in raw.items() if k != "cwd"} if isinstance(raw, dict) else {}


class AgentAcpAdapter(GeminiAcpAdapter):
    def __init__(self, thread_id: str, run_id: str, model: str | None = None) -> None:
        super().__init__(thread_id, run_id, model=model, expects_usage=False)
        self._names: dict[str, str] = {}  # tool call id -> its first title (the tool's name)
        self._reasoning: str | None = None  # the open reasoning block
        self.handlers["agent_thought_chunk"] = self._on_thought_delta

    def feed(self, native: SessionUpdate, dropped_bytes: int = 0) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if self._reasoning is not None and native.session_update != "agent_thought_chunk":
            if self.blocks.is_open(self._reasoning):
                events = self.blocks.end_reasoning(self._reasoning)
            self._reasoning = None
        return events + super().feed(native, dropped_bytes)

    def _on_thought_delta(self, update: MessageChunk) -> list[BaseEvent]:
        if not update.text:
            return []
        events: list[BaseEvent] = []
        if self._reasoning is None or not self.blocks.is_open(self._reasoning):
            events = self.blocks.close_segment()
            self._reasoning = self.blocks.next_message_id(self.run_id, "reasoning")
        return events + self.blocks.reasoning(self._reasoning, update.text)

    def _start(self, call: ToolCall) -> list[BaseEvent]:
        tool_call_id = call.tool_call_id
        if not tool_call_id or self.blocks.has_started(tool_call_id):
            return []
        name = self._names.setdefault(tool_call_id, call.title or "tool")
        arguments = raw_input(call)
        if not arguments and call.status not in ENDED:
            return []  # its input comes with the next update
        return self.blocks.close_segment() + self.blocks.tool_call(
            tool_call_id, name, json.dumps(arguments or tool_arguments(call)),
            parent_message_id=self.blocks.last_segment_id)

    def end(self, result: PromptResult) -> list[BaseEvent]:
        usage = turn_usage(result, self.model)
        if not usage or result.stop_reason != "end_turn":
            return super().end(result)
        return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage))

    def tool_call_name(self, tool_call_id: str) -> str:
        return self._names.get(tool_call_id) or super().tool_call_name(tool_call_id)

    def permission(self, tool_call: ToolCall) -> list[BaseEvent]:
        """A permission request shows the call: it starts now, with what the request shows of its input."""
        events = self._start(tool_call)
        if not events and not self.blocks.has_started(tool_call.tool_call_id):
            events = self.blocks.close_segment() + self.blocks.tool_call(
                tool_call.tool_call_id, self._names.get(tool_call.tool_call_id, tool_call.title or "tool"),
                json.dumps(tool_arguments(tool_call)), parent_message_id=self.blocks.last_segment_id)
        return events
