"""Gemini CLI ACP messages (``gemini --acp``, one prompt of one session) -> AG-UI events.

One transform loop (``update``), one handler per ``sessionUpdate`` kind, and the prompt's ends:

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
* the ``session/prompt`` result -> ``RUN_FINISHED`` with the usage of ``_meta.quota`` (``finish``); a JSON-RPC error
  (its code is the model API's HTTP status) -> ``RUN_ERROR`` with the same codes as stream-json (``fail``).
* anything else (commands list, a user message replayed by a load) -> nothing; an unknown kind -> ``RAW``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ag_ui.core import (
    BaseEvent,
    RawEvent,
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
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ag_ui_gemini_cli.errors import describe_error
from ag_ui_gemini_cli.usage import PROVIDER

SOURCE = "gemini-cli"
MODE_UPDATE = "[MODE_UPDATE]"
EMPTY_SUBJECT = "****"
SHELL_TOOL = "run_shell_command"
QUIET_UPDATES = frozenset({"available_commands_update", "user_message_chunk", "current_mode_update",
                           "plan", "usage_update", "session_info_update", "config_option_update"})
ENDED = frozenset({"completed", "failed"})
STOP_ERRORS = {
    "max_turn_requests": ("TURN_LIMIT", "The Gemini CLI stopped the turn: it reached its limit of model requests "
                                        "for one turn (or detected a loop)."),
    "max_tokens": ("CONTEXT_WINDOW_EXCEEDED", "The conversation no longer fits the model's context window."),
}


# The CLI ends a prompt whose model stream broke off (the connection closed mid-answer) as an ordinary end_turn;
# only the missing usage (the stream's last chunk carries it) tells. Not a success: what arrived is incomplete.
CUT_SHORT = ("The model API's stream ended before the answer was complete (the connection closed mid-stream); "
             "what arrived is shown above. Try again.")


def _no_model_usage(result: Mapping[str, Any]) -> bool:
    quota = (result.get("_meta") or {}).get("quota") if isinstance(result.get("_meta"), Mapping) else None
    if not isinstance(quota, Mapping):
        return False
    count = quota.get("token_count") if isinstance(quota.get("token_count"), Mapping) else {}
    return not quota.get("model_usage") and not count.get("input_tokens") and not count.get("output_tokens")


def tool_name(tool_call_id: str) -> str:
    """The tool's name, which ACP does not send: the ``toolCallId``'s prefix before ``__``."""
    name, separator, _ = tool_call_id.partition("__")
    return name if separator and name else "tool"


def thought_text(text: str) -> str:
    """A thought without the empty subject the CLI writes for a part that has none."""
    if text.startswith(EMPTY_SUBJECT):
        text = text[len(EMPTY_SUBJECT):].lstrip("\n")
    return text.strip()


def _texts(content: Any) -> list[str]:
    """The text of each ``content`` block of a tool update (diffs summarised)."""
    texts: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "content" and isinstance(block.get("content"), Mapping):
            inner = block["content"]
            if isinstance(inner.get("text"), str):
                texts.append(inner["text"])
        elif block.get("type") == "diff":
            texts.append(f"{block.get('path', '')}: {'created' if not block.get('oldText') else 'changed'}")
    return texts


def tool_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """What ACP shows of a call's input: the command, the diff, the MCP arguments, or the title."""
    title = str(call.get("title") or "")
    content = call.get("content") if isinstance(call.get("content"), list) else []
    if call.get("kind") == "execute" or tool_name(str(call.get("toolCallId", ""))) == SHELL_TOOL:
        return {"command": title} if title else {}
    diffs = [b for b in content if isinstance(b, Mapping) and b.get("type") == "diff"]
    if diffs:
        return {"path": diffs[0].get("path"), "oldText": diffs[0].get("oldText"), "newText": diffs[0].get("newText")}
    for text in _texts(content):
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            return parsed
    return {"title": title} if title else {}


def usage_entries(result: Mapping[str, Any], model: str | None) -> list[TokenUsage]:
    """Per-model usage from ``_meta.quota`` of a ``session/prompt`` result (the only place ACP has it)."""
    quota = (result.get("_meta") or {}).get("quota") if isinstance(result.get("_meta"), Mapping) else None
    if not isinstance(quota, Mapping):
        return []
    per_model = [(str(m.get("model") or model or "unknown"), m.get("token_count") or {})
                 for m in quota.get("model_usage") or () if isinstance(m, Mapping)]
    if not per_model and isinstance(quota.get("token_count"), Mapping):
        per_model = [(model or "unknown", quota["token_count"])]
    entries = []
    for name, count in per_model:
        given, taken = int(count.get("input_tokens") or 0), int(count.get("output_tokens") or 0)
        entries.append(TokenUsage(provider=PROVIDER, model=name, input_tokens=given, output_tokens=taken,
                                  total_tokens=given + taken))
    return entries


class GeminiAcpAdapter:
    """Translates the updates of one ACP prompt (one AG-UI run of a thread)."""

    def __init__(self, thread_id: str, run_id: str, model: str | None = None, expects_usage: bool = True) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.model = model
        self.expects_usage = expects_usage  # False for a slash command (the CLI answers it with no model call)
        self._answered = False  # the model streamed something
        self.finished = False
        self._count = 0
        self._message_id: str | None = None
        self._last_message_id: str | None = None
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._handlers: dict[str, Callable[[Mapping[str, Any]], list[BaseEvent]]] = {
            "agent_message_chunk": self._on_message, "agent_thought_chunk": self._on_thought,
            "tool_call": self._on_tool, "tool_call_update": self._on_tool,
        }

    # ----- the transform loop ----------------------------------------------------------------------------
    def update(self, update: Mapping[str, Any]) -> list[BaseEvent]:
        """Events for one ``session/update``'s ``update``."""
        kind = str(update.get("sessionUpdate", ""))
        handler = self._handlers.get(kind)
        if handler is not None:
            events = handler(update)
            self._answered = self._answered or bool(events)
            return events
        if kind in QUIET_UPDATES:
            return []
        return [RawEvent(event=dict(update), source=SOURCE, metadata={"reason": "unknown_update"})]

    def permission(self, tool_call: Mapping[str, Any]) -> list[BaseEvent]:
        """A permission request: its ``toolCall`` starts the call (ACP sends no ``tool_call`` before it)."""
        return self._start(tool_call)

    def refused(self, tool_call_id: str, message: str) -> list[BaseEvent]:
        """A call the person refused: the CLI sends nothing more about it, so it is closed here."""
        return self._result(tool_call_id, message)

    def finish(self, result: Mapping[str, Any]) -> list[BaseEvent]:
        """The prompt's result: ``RUN_FINISHED`` with usage; nothing for ``cancelled`` (the core ends that run)."""
        events = self.close_open_blocks()
        self.finished = True
        stop = str(result.get("stopReason", "end_turn"))
        if stop == "cancelled":
            return events
        if stop in STOP_ERRORS:
            code, message = STOP_ERRORS[stop]
            return [*events, RunErrorEvent(message=message, code=code)]
        usage = usage_entries(result, self.model)
        if self._answered and self.expects_usage and _no_model_usage(result):
            return [*events, RunErrorEvent(message=CUT_SHORT, code="PROVIDER_ERROR")]
        return [*events, RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage or None)]

    def fail(self, error: Mapping[str, Any]) -> list[BaseEvent]:
        """A JSON-RPC error of ``session/prompt``: its ``code`` is the model API's HTTP status."""
        events = self.close_open_blocks()
        self.finished = True
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code < 600 else None
        text = str(error.get("message") or "")
        details = error.get("data", {}).get("details") if isinstance(error.get("data"), Mapping) else None
        described = describe_error(f"{text} {details}" if details else text, status=status)
        return [*events, RunErrorEvent(message=described.message, code=described.code)]

    def close_open_blocks(self) -> list[BaseEvent]:
        """END events for what is open (the text message; a tool call is whole once started)."""
        return self._close_text()

    def has_started(self, tool_call_id: str) -> bool:
        return tool_call_id in self._started

    def note_started(self, tool_call_id: str) -> None:
        self._started.add(tool_call_id)

    # ----- blocks ----------------------------------------------------------------------------------------
    def _next_id(self, kind: str) -> str:
        self._count += 1
        return f"{kind}-{self.run_id}-{self._count}"

    def _close_text(self) -> list[BaseEvent]:
        if self._message_id is None:
            return []
        event = TextMessageEndEvent(message_id=self._message_id)
        self._message_id = None
        return [event]

    # ----- handlers --------------------------------------------------------------------------------------
    def _on_message(self, update: Mapping[str, Any]) -> list[BaseEvent]:
        text = _content_text(update)
        if not text or text.startswith(MODE_UPDATE):
            return []
        events: list[BaseEvent] = []
        if self._message_id is None:
            self._message_id = self._last_message_id = self._next_id("msg")
            events.append(TextMessageStartEvent(message_id=self._message_id, role="assistant"))
        events.append(TextMessageContentEvent(message_id=self._message_id, delta=text))
        return events

    def _on_thought(self, update: Mapping[str, Any]) -> list[BaseEvent]:
        text = thought_text(_content_text(update))
        if not text:
            return []
        events = self._close_text()
        reasoning_id = self._next_id("reasoning")
        return [*events, ReasoningStartEvent(message_id=reasoning_id),
                ReasoningMessageStartEvent(message_id=reasoning_id, role="reasoning"),
                ReasoningMessageContentEvent(message_id=reasoning_id, delta=text),
                ReasoningMessageEndEvent(message_id=reasoning_id), ReasoningEndEvent(message_id=reasoning_id)]

    def _on_tool(self, update: Mapping[str, Any]) -> list[BaseEvent]:
        tool_call_id = str(update.get("toolCallId") or "")
        if not tool_call_id or tool_call_id in self._ended:
            return []
        events = self._start(update)
        status = update.get("status")
        if status in ENDED:
            text = "\n".join(_texts(update.get("content")))
            if status == "failed":
                text = f"Error: {text or 'the tool failed'}"
            events += self._result(tool_call_id, text)
        return events

    def _start(self, call: Mapping[str, Any]) -> list[BaseEvent]:
        tool_call_id = str(call.get("toolCallId") or "")
        if not tool_call_id or tool_call_id in self._started:
            return []
        self._started.add(tool_call_id)
        events = self._close_text()
        events += [ToolCallStartEvent(tool_call_id=tool_call_id, tool_call_name=tool_name(tool_call_id),
                                      parent_message_id=self._last_message_id),
                   ToolCallArgsEvent(tool_call_id=tool_call_id, delta=json.dumps(tool_arguments(call))),
                   ToolCallEndEvent(tool_call_id=tool_call_id)]
        return events

    def _result(self, tool_call_id: str, content: str) -> list[BaseEvent]:
        if tool_call_id in self._ended:
            return []
        self._ended.add(tool_call_id)
        return [ToolCallResultEvent(message_id=f"{tool_call_id}-result", tool_call_id=tool_call_id,
                                    content=content, role="tool")]


def _content_text(update: Mapping[str, Any]) -> str:
    content = update.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("text"), str):
        return content["text"]
    return ""
