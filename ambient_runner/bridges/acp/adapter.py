"""ACP's updates to AG-UI for the ACP runner's agents: the shared ACP translation (``GeminiAcpAdapter``) with the
tool calls as these agents send them.

ACP v1 sends no tool name and gives a call's input as ``rawInput``. opencode's first ``tool_call`` has the tool's
name as its ``title`` (``bash``) and no input yet (``rawInput`` holds only ``cwd``); the input comes with the next
update. claude-agent-acp names the tool in ``name`` (``Bash``; its title is what the call does: ``Terminal``, then
the command), its input comes with the next update too, and a call without output ends with only a ``rawOutput``.
So a call starts once its input is known (or it ended, or a permission request shows it), named by its ``name``,
else the first title it had, its arguments ``rawInput`` without ``cwd`` (the shared translation's when it has
none); an ended call that shows no text has its ``rawOutput`` as its result.
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
from ag_ui_gemini_cli.acp_schema import (
    ContentBlock,
    MessageChunk,
    PromptResult,
    SessionUpdate,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
)

ENDED = ("completed", "failed")


def turn_usage(result: PromptResult, model: str | None, provider: str) -> list[TokenUsage]:
    """The prompt result's ``usage``, as one entry for the turn's model (none when the agent reports none)."""
    usage = (result.model_extra or {}).get("usage")
    if not isinstance(usage, dict):
        return []
    given, taken = usage.get("inputTokens"), usage.get("outputTokens")
    if not isinstance(given, int) or not isinstance(taken, int):
        return []
    total = usage.get("totalTokens")
    return [TokenUsage(provider=provider, model=model or "unknown", input_tokens=given, output_tokens=taken,
                       total_tokens=total if isinstance(total, int) else given + taken)]


def raw_input(call: ToolCall) -> dict[str, Any]:
    """The call's ``rawInput`` without the working folder the agent adds."""
    raw = call.raw_input
    return {k: v for k, v in raw.items() if k != "cwd"} if isinstance(raw, dict) else {}


def tool_name(call: ToolCall) -> str | None:
    """The tool's own name when the agent sends one (claude-agent-acp: ``name``, its title is what the call does),
    else the first title (opencode's title is the tool's name)."""
    name = (call.model_extra or {}).get("name")
    return name if isinstance(name, str) and name else call.title


def with_raw_output(update: ToolCallUpdate) -> ToolCallUpdate:
    """An ended call that shows no text: its ``rawOutput`` text as its result (claude-agent-acp: "(Bash completed
    with no output)")."""
    output = update.raw_output
    if update.status not in ENDED or any(b.type == "content" for b in update.content or ()) \
            or not isinstance(output, str) or not output.strip():
        return update
    block = ToolCallContent(type="content", content=ContentBlock(type="text", text=output))
    return update.model_copy(update={"content": [*(update.content or ()), block]})


class AgentAcpAdapter(GeminiAcpAdapter):
    def __init__(self, thread_id: str, run_id: str, model: str | None = None, provider: str = "openai") -> None:
        super().__init__(thread_id, run_id, model=model, expects_usage=False)
        self.provider = provider  # the usage's: the agent's model API's
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

    def _on_tool(self, update: ToolCallUpdate) -> list[BaseEvent]:
        return super()._on_tool(with_raw_output(update))

    def _start(self, call: ToolCall) -> list[BaseEvent]:
        tool_call_id = call.tool_call_id
        if not tool_call_id or self.blocks.has_started(tool_call_id):
            return []
        name = self._names.setdefault(tool_call_id, tool_name(call) or "tool")
        arguments = raw_input(call)
        if not arguments and call.status not in ENDED:
            return []  # its input comes with the next update
        return self.blocks.close_segment() + self.blocks.tool_call(
            tool_call_id, name, json.dumps(arguments or tool_arguments(call)),
            parent_message_id=self.blocks.last_segment_id)

    def end(self, result: PromptResult) -> list[BaseEvent]:
        usage = turn_usage(result, self.model, self.provider)
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
                tool_call.tool_call_id, self._names.get(tool_call.tool_call_id, tool_name(tool_call) or "tool"),
                json.dumps(tool_arguments(tool_call)), parent_message_id=self.blocks.last_segment_id)
        return events
