"""Gemini CLI ACP messages (``gemini --acp``, one prompt of one session) -> AG-UI events.

The shared transform loop (``ag_ui_cli_common.CliAdapter``: ``feed`` one ``session/update``'s ``update``), one
handler per ``sessionUpdate`` kind, and the prompt's ends:

* ``agent_message_chunk`` -> text (a tool call closes the message; the next text opens a new one). The CLI's
  ``[MODE_UPDATE] <mode>`` chunk (an approval-mode change reported as assistant text) is not text: dropped.
* ``agent_thought_chunk`` -> ``REASONING_*``: each chunk is a whole thought summary (``**subject**\\ndescription``),
  not a delta, so each is a reasoning block of its own. The empty subject the CLI writes for a part without one
  (``****\\n``) is removed.
* ``tool_call`` / ``tool_call_update`` / a permission request's ``toolCall`` (``permission``) -> ``TOOL_CALL_*``:
  a call starts from whichever comes first. ACP sends no tool name and no arguments: the name is the
  ``toolCallId``'s prefix before ``__`` (``run_shell_command__run_shell_command_17..._0``), the arguments are
  ``{"command": <title>}`` for shell calls, the diff for edits, the JSON text an MCP call shows, else the title.
  The result is the update's content (empty for shell calls: the CLI does not send their output).
* the ``session/prompt`` result -> ``RUN_FINISHED`` with the usage of ``_meta.quota`` (``end``); a JSON-RPC error
  (its code is the model API's HTTP status) -> ``RUN_ERROR`` with the same codes as stream-json (``fail``).
* anything else (commands list, a user message replayed by a load) -> nothing; an unknown kind -> ``RAW``, and so
  is a known kind that does not fit its model (``reason: malformed_update``).

It takes the typed messages of ``acp_schema`` (``SessionUpdate``, ``ToolCall``, ``PromptResult``, ``JsonRpcError``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable

from ag_ui.core import BaseEvent, RawEvent, RunFinishedEvent, TokenUsage

from ag_ui_cli_common import CliAdapter, ErrorCode, Failure
from ag_ui_cli_common.json_types import JsonObject, JsonValue
from ag_ui_gemini_cli.acp_schema import (
    JsonRpcError,
    MessageChunk,
    OtherUpdate,
    PromptResult,
    Quota,
    SessionUpdate,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
    received,
)
from ag_ui_gemini_cli.errors import AGENT, describe_error
from ag_ui_gemini_cli.usage import PROVIDER

log = logging.getLogger(__name__)
SOURCE = "gemini-cli"
MALFORMED = ("malformed",)  # the kind of a known update that did not fit its model (no handler)
MODE_UPDATE = "[MODE_UPDATE]"
EMPTY_SUBJECT = "****"
SHELL_TOOL = "run_shell_command"
QUIET_UPDATES = frozenset({"available_commands_update", "user_message_chunk", "current_mode_update",
                           "plan", "usage_update", "session_info_update", "config_option_update"})
ENDED = frozenset({"completed", "failed"})
STOP_ERRORS = {
    "max_turn_requests": Failure("The Gemini CLI stopped the turn: it reached its limit of model requests for one "
                                 "turn (or detected a loop).", ErrorCode.TURN_LIMIT),
    "max_tokens": Failure("The conversation no longer fits the model's context window.",
                          ErrorCode.CONTEXT_WINDOW_EXCEEDED),
}


# The CLI ends a prompt whose model stream broke off (the connection closed mid-answer) as an ordinary end_turn;
# only the missing usage (the stream's last chunk carries it) tells. Not a success: what arrived is incomplete.
CUT_SHORT = Failure("The model API's stream ended before the answer was complete (the connection closed "
                    "mid-stream); what arrived is shown above. Try again.", ErrorCode.PROVIDER_ERROR)


def _quota(result: PromptResult) -> Quota | None:
    return result.meta.quota if result.meta is not None else None


def _no_model_usage(result: PromptResult) -> bool:
    quota = _quota(result)
    if quota is None:
        return False
    count = quota.token_count
    return not quota.model_usage and not (count and (count.input_tokens or count.output_tokens))


def tool_name(tool_call_id: str) -> str:
    """The tool's name, which ACP does not send: the ``toolCallId``'s prefix before ``__``."""
    name, separator, _ = tool_call_id.partition("__")
    return name if separator and name else "tool"


def thought_text(text: str) -> str:
    """A thought without the empty subject the CLI writes for a part that has none."""
    if text.startswith(EMPTY_SUBJECT):
        text = text[len(EMPTY_SUBJECT):].lstrip("\n")
    return text.strip()


def _texts(content: list[ToolCallContent] | None) -> list[str]:
    """The text of each ``content`` block of a tool update (diffs summarised)."""
    texts: list[str] = []
    for block in content or ():
        if block.type == "content" and block.content is not None:
            if block.content.text is not None:
                texts.append(block.content.text)
        elif block.type == "diff":
            texts.append(f"{block.path or ''}: {'created' if not block.old_text else 'changed'}")
    return texts


def tool_arguments(call: ToolCall) -> JsonObject:
    """What ACP shows of a call's input: the command, the diff, the MCP arguments, or the title."""
    title = call.title or ""
    content = call.content or []
    if call.kind == "execute" or tool_name(call.tool_call_id) == SHELL_TOOL:
        return {"command": title} if title else {}
    diffs = [b for b in content if b.type == "diff"]
    if diffs:
        return {"path": diffs[0].path, "oldText": diffs[0].old_text, "newText": diffs[0].new_text}
    for text in _texts(content):
        try:
            parsed: JsonValue = json.loads(text)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            return parsed
    return {"title": title} if title else {}


def usage_entries(result: PromptResult, model: str | None) -> list[TokenUsage]:
    """Per-model usage from ``_meta.quota`` of a ``session/prompt`` result (the only place ACP has it)."""
    quota = _quota(result)
    if quota is None:
        return []
    per_model = [(m.model or model or "unknown", m.token_count) for m in quota.model_usage or ()]
    if not per_model and quota.token_count is not None:
        per_model = [(model or "unknown", quota.token_count)]
    entries = []
    for name, count in per_model:
        given = (count.input_tokens or 0) if count else 0
        taken = (count.output_tokens or 0) if count else 0
        entries.append(TokenUsage(provider=PROVIDER, model=name, input_tokens=given, output_tokens=taken,
                                  total_tokens=given + taken))
    return entries


class GeminiAcpAdapter(CliAdapter[SessionUpdate]):
    """Translates the updates of one ACP prompt (one AG-UI run of a thread): ``feed`` one ``session/update``'s
    ``update``, ``permission`` / ``refused`` for an approval, ``end`` / ``fail`` for the prompt's result."""

    agent = AGENT
    source = SOURCE

    def __init__(self, thread_id: str, run_id: str, model: str | None = None, expects_usage: bool = True) -> None:
        super().__init__(thread_id, run_id)
        self.model = model
        self.expects_usage = expects_usage  # False for a slash command (the CLI answers it with no model call)
        self._answered = False  # the model streamed something
        self.handlers = {"agent_message_chunk": self._on_message, "agent_thought_chunk": self._on_thought,
                         "tool_call": self._on_tool, "tool_call_update": self._on_tool}

    # ----- the transform loop's ACP parts ----------------------------------------------------------------
    def parse(self, native: SessionUpdate) -> tuple[Hashable, SessionUpdate]:
        kind = native.session_update
        if isinstance(native, OtherUpdate) and kind in self.handlers:
            return MALFORMED, native
        return kind, native

    def feed(self, native: SessionUpdate, dropped_bytes: int = 0) -> list[BaseEvent]:
        events = super().feed(native, dropped_bytes)
        self._answered = self._answered or any(not isinstance(event, RawEvent) for event in events)
        return events

    def on_unknown(self, kind: Hashable, payload: SessionUpdate) -> list[BaseEvent]:
        if kind == MALFORMED:
            log.warning("gemini --acp sent a %r update that does not fit ACP; kept as RAW", payload.session_update)
            return [self.raw(received(payload), reason="malformed_update")]
        return [] if kind in QUIET_UPDATES else [self.raw(received(payload), reason="unknown_update")]

    def tool_call_name(self, tool_call_id: str) -> str:
        """The name a call is streamed under (a permission request's interrupt names it the same)."""
        return tool_name(tool_call_id)

    def permission(self, tool_call: ToolCall) -> list[BaseEvent]:
        """A permission request: its ``toolCall`` starts the call (ACP sends no ``tool_call`` before it)."""
        return self._start(tool_call)

    def refused(self, tool_call_id: str, message: str) -> list[BaseEvent]:
        """A call the person refused: the CLI sends nothing more about it, so it is closed here."""
        return self._result(tool_call_id, message)

    def end(self, result: PromptResult) -> list[BaseEvent]:
        """The prompt's result: ``RUN_FINISHED`` with usage; for ``cancelled`` only the closes (the core ends
        that run)."""
        stop = result.stop_reason
        if stop == "cancelled":
            return self.blocks.close_all()
        if stop in STOP_ERRORS:
            return self.blocks.fail(STOP_ERRORS[stop])
        if self._answered and self.expects_usage and _no_model_usage(result):
            return self.blocks.fail(CUT_SHORT)
        usage = usage_entries(result, self.model)
        return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage or None))

    def fail(self, error: JsonRpcError) -> list[BaseEvent]:
        """A JSON-RPC error of ``session/prompt``: its ``code`` is the model API's HTTP status."""
        code = error.code
        status = code if isinstance(code, int) and 400 <= code < 600 else None
        text = error.message
        details = error.data.get("details") if isinstance(error.data, dict) else None
        return self.blocks.fail(describe_error(f"{text} {details}" if details else text, status=status))

    # ----- handlers --------------------------------------------------------------------------------------
    def _on_message(self, update: MessageChunk) -> list[BaseEvent]:
        text = update.text
        if not text or text.startswith(MODE_UPDATE):
            return []
        return self.blocks.segment(self.run_id, text)

    def _on_thought(self, update: MessageChunk) -> list[BaseEvent]:
        text = thought_text(update.text)
        if not text:
            return []
        events = self.blocks.close_segment()
        reasoning_id = self.blocks.next_message_id(self.run_id, "reasoning")
        return events + self.blocks.reasoning(reasoning_id, text) + self.blocks.end_reasoning(reasoning_id)

    def _on_tool(self, update: ToolCallUpdate) -> list[BaseEvent]:
        tool_call_id = update.tool_call_id
        if not tool_call_id or self.blocks.has_result(tool_call_id):
            return []
        events = self._start(update)
        status = update.status
        if status in ENDED:
            text = "\n".join(_texts(update.content))
            if status == "failed":
                text = f"Error: {text or 'the tool failed'}"
            events += self._result(tool_call_id, text)
        return events

    def _start(self, call: ToolCall) -> list[BaseEvent]:
        tool_call_id = call.tool_call_id
        if not tool_call_id or self.blocks.has_started(tool_call_id):
            return []
        return self.blocks.close_segment() + self.blocks.tool_call(
            tool_call_id, tool_name(tool_call_id), json.dumps(tool_arguments(call)),
            parent_message_id=self.blocks.last_segment_id)

    def _result(self, tool_call_id: str, content: str) -> list[BaseEvent]:
        return [] if self.blocks.has_result(tool_call_id) else self.blocks.tool_result(tool_call_id, content)

