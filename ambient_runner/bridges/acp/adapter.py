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
the agent reports it (opencode does), for the session's model; else the sum of the per-response usage some agents
put in an empty ``agent_message_chunk``'s ``_meta.usage`` (Qwen Code).
Qwen Code names the tool in ``_meta.toolName`` (``run_shell_command``; its title is the command), and on the Gemini
API a call under ``default`` shows first in its permission request (no ``tool_call`` before it). codex-acp names a
command ``exec_command`` in ``name``, streams its output only in ``_meta.terminal_output_delta`` (kept as the call's
result), an ``apply_patch`` call carries a diff and no ``rawInput`` (it starts on its diff), and an MCP tool's
call (titled ``mcp.<server>.<tool>``) ends with the tool's MCP result in ``rawOutput`` alone (its text blocks are the
call's result).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
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


def own_name(call: ToolCall) -> str | None:
    """The tool's own name when the agent sends one (claude-agent-acp, codex-acp: ``name``; Qwen Code:
    ``_meta.toolName``); their titles say what the call does."""
    for name in ((call.model_extra or {}).get("name"), (call.meta or {}).get("toolName")):
        if isinstance(name, str) and name:
            return name
    return None


def tool_name(call: ToolCall) -> str | None:
    """The tool's own name, else the title (opencode's first title is the tool's name)."""
    return own_name(call) or call.title


def response_usage(update: MessageChunk) -> tuple[int, int] | None:
    """(input, output) tokens of one model response, as Qwen Code reports them (``_meta.usage``)."""
    usage = (update.meta or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    given, taken = usage.get("inputTokens"), usage.get("outputTokens")
    return (given, taken) if isinstance(given, int) and isinstance(taken, int) else None


def terminal_output(update: ToolCallUpdate) -> str:
    """A command's output as codex-acp streams it (``_meta.terminal_output_delta.data``)."""
    delta = (update.meta or {}).get("terminal_output_delta")
    data = delta.get("data") if isinstance(delta, dict) else None
    return data if isinstance(data, str) else ""


def raw_output_text(output: Any) -> str:
    """The text of a call's ``rawOutput``: itself when a string (claude-agent-acp: "(Bash completed with no
    output)"), else an MCP tool's result as codex-acp wraps it (``{"result": {"content": [text blocks], ...},
    "error": ...}``): its text blocks, or the error."""
    if isinstance(output, str):
        return output
    if not isinstance(output, dict):
        return ""
    if output.get("error"):
        error = output["error"]
        return str(error.get("message", error)) if isinstance(error, dict) else str(error)
    result = output.get("result", output)
    blocks = result.get("content") if isinstance(result, dict) else None
    return "\n".join(str(b["text"]) for b in blocks or () if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str))


def with_raw_output(update: ToolCallUpdate) -> ToolCallUpdate:
    """An ended call that shows no text: its ``rawOutput`` text as its result."""
    output = raw_output_text(update.raw_output)
    if update.status not in ENDED or any(b.type == "content" for b in update.content or ()) or not output.strip():
        return update
    block = ToolCallContent(type="content", content=ContentBlock(type="text", text=output))
    return update.model_copy(update={"content": [*(update.content or ()), block]})


class AgentAcpAdapter(GeminiAcpAdapter):
    def __init__(self, thread_id: str, run_id: str, model: str | None = None, provider: str = "openai") -> None:
        super().__init__(thread_id, run_id, model=model, expects_usage=False)
        self.provider = provider  # the usage's: the agent's model API's
        self._names: dict[str, str] = {}  # tool call id -> its first title (the tool's name)
        self._reasoning: str | None = None  # the open reasoning block
        self._responses: list[tuple[int, int]] = []  # the usage of each model response (Qwen Code's)
        self._output: dict[str, list[str]] = {}  # tool call id -> its terminal output (codex-acp's)
        self.handlers["agent_thought_chunk"] = self._on_thought_delta
        self.handlers["agent_message_chunk"] = self._on_message_chunk

    def parse(self, native: SessionUpdate) -> tuple[Hashable, SessionUpdate]:
        """A call's ``name`` (codex-acp's, claude-agent-acp's: a field ACP does not have) is known here: read as
        ``_meta.toolName``, it is not kept as an unknown field."""
        kind, payload = super().parse(native)
        extra = payload.model_extra or {}
        if isinstance(payload, ToolCallUpdate) and isinstance(extra.get("name"), str):
            named = payload.model_copy(update={"meta": {**(payload.meta or {}), "toolName": extra["name"]}})
            named.__pydantic_extra__ = {k: v for k, v in extra.items() if k != "name"}
            return kind, named
        return kind, payload

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

    def _on_message_chunk(self, update: MessageChunk) -> list[BaseEvent]:
        usage = response_usage(update)
        if usage is not None:
            self._responses.append(usage)
        return self._on_message(update)

    def _on_tool(self, update: ToolCallUpdate) -> list[BaseEvent]:
        output = terminal_output(update)
        if output:
            self._output.setdefault(update.tool_call_id, []).append(output)
        return super()._on_tool(with_raw_output(self._with_output(update)))

    def _with_output(self, update: ToolCallUpdate) -> ToolCallUpdate:
        """An ended command that shows no text: its terminal output as its result."""
        output = "".join(self._output.pop(update.tool_call_id, [])) if update.status in ENDED else ""
        if not output.strip() or any(b.type == "content" for b in update.content or ()):
            return update
        block = ToolCallContent(type="content", content=ContentBlock(type="text", text=output))
        return update.model_copy(update={"content": [*(update.content or ()), block]})

    def _start(self, call: ToolCall) -> list[BaseEvent]:
        tool_call_id = call.tool_call_id
        if not tool_call_id or self.blocks.has_started(tool_call_id):
            return []
        # the best name known so far (Qwen Code's first update on Chat Completions is titled "Shell", unnamed)
        name = self._names[tool_call_id] = own_name(call) or self._names.get(tool_call_id) or call.title or "tool"
        arguments = raw_input(call)
        diff = any(block.type == "diff" for block in call.content or ())
        if not arguments and not diff and call.status not in ENDED:
            return []  # its input comes with the next update
        return self.blocks.close_segment() + self.blocks.tool_call(
            tool_call_id, name, json.dumps(arguments or tool_arguments(call)),
            parent_message_id=self.blocks.last_segment_id)

    def end(self, result: PromptResult) -> list[BaseEvent]:
        usage = turn_usage(result, self.model, self.provider) or self._summed_usage()
        if not usage or result.stop_reason != "end_turn":
            return super().end(result)
        return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage))

    def _summed_usage(self) -> list[TokenUsage]:
        if not self._responses:
            return []
        given, taken = sum(r[0] for r in self._responses), sum(r[1] for r in self._responses)
        return [TokenUsage(provider=self.provider, model=self.model or "unknown", input_tokens=given,
                           output_tokens=taken, total_tokens=given + taken)]

    def tool_call_name(self, tool_call_id: str) -> str:
        return self._names.get(tool_call_id) or super().tool_call_name(tool_call_id)

    def permission(self, tool_call: ToolCall) -> list[BaseEvent]:
        """A permission request shows the call: it starts now, with what the request shows of its input."""
        events = self._start(tool_call)
        if not events and not self.blocks.has_started(tool_call.tool_call_id):
            events = self.blocks.close_segment() + self.blocks.tool_call(
                tool_call.tool_call_id, self._names.get(tool_call.tool_call_id) or tool_name(tool_call) or "tool",
                json.dumps(tool_arguments(tool_call)), parent_message_id=self.blocks.last_segment_id)
        return events
