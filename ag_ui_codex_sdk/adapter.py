"""Codex app-server notifications -> AG-UI events, for one turn.

One transform loop (``CodexEventAdapter.stream``) and one handler per notification method (``HANDLERS``).
Input: the SDK's ``Notification`` objects, ``(method, params)`` pairs or recorded ``{"method", "params"}``
dicts (see ``notifications.to_wire``). Output: ``ag_ui.core`` events; the terminal event comes from
``turn/completed``:

* ``completed``   -> ``RUN_FINISHED`` with the turn's ``TokenUsage``;
* ``interrupted`` -> ``RUN_FINISHED`` with outcome ``cancelled`` (the core marks the run cancelled);
* ``failed``      -> ``RUN_ERROR`` with a message a user can act on (``errors.describe_failure``).

Open text / reasoning blocks and tool calls are closed before the terminal event. Notifications the adapter
does not translate are kept as ``RAW`` events (source ``codex``); bookkeeping ones (``turn/started``,
user-message items, ``thread/status/changed``...) are dropped. Nothing here raises on odd input.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
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
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ag_ui_codex_sdk.errors import describe_failure
from ag_ui_codex_sdk.notifications import to_wire
from ag_ui_codex_sdk.plan import PlanTracker
from ag_ui_codex_sdk.tools import TOOL_ITEM_TYPES, args_known_at_start, tool_arguments, tool_name, tool_result
from ag_ui_codex_sdk.usage import TurnUsage

log = logging.getLogger(__name__)
SOURCE = "codex"
DROPPED = frozenset({
    "turn/started", "thread/started", "thread/status/changed", "item/reasoning/summaryPartAdded",
    "item/commandExecution/outputDelta", "item/fileChange/outputDelta", "serverRequest/resolved",
    "thread/name/updated", "account/rateLimits/updated", "turn/diff/updated",
})
TEXT_ITEMS = ("agentMessage", "plan")


class CodexEventAdapter:
    """Translates one turn's notifications. ``transform`` per notification, ``finish`` at the end."""

    def __init__(self, thread_id: str, run_id: str, *, model: str | None = None, client_state: Any = None) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.usage = TurnUsage(model)
        self.plan = PlanTracker(client_state)  # the plan goes beside the client's own state keys
        self.terminal: BaseEvent | None = None
        self.last_error: dict[str, Any] | None = None
        self._text_open: dict[str, None] = {}  # ordered, for a stable close order
        self._text_streamed: set[str] = set()  # items that got at least one non-empty delta
        self._reasoning_open: dict[str, int] = {}  # item id -> last summary index seen
        self._reasoning_streamed: set[str] = set()
        self._tools_open: dict[str, None] = {}  # started, arguments not yet sent
        self._tools_started: set[str] = set()
        self._tools_done: set[str] = set()
        self._tool_names: dict[str, str] = {}  # started tool call -> its name (ordered)
        self.handlers: dict[str, Callable[[dict[str, Any]], list[BaseEvent]]] = {
            "item/started": self._item_started,
            "item/completed": self._item_completed,
            "item/agentMessage/delta": self._text_delta,
            "item/plan/delta": self._text_delta,
            "item/reasoning/summaryTextDelta": self._reasoning_delta,
            "item/reasoning/textDelta": self._reasoning_delta,
            "turn/plan/updated": self._plan_updated,
            "thread/tokenUsage/updated": self._token_usage,
            "error": self._error,
            "turn/completed": self._turn_completed,
        }

    # ----- the transform loop -----------------------------------------------------------------------------
    async def stream(self, notifications: AsyncIterable[Any]) -> AsyncIterator[BaseEvent]:
        async for notification in notifications:
            for event in self.transform(notification):
                yield event
            if self.terminal is not None:
                return
        for event in self.finish():
            yield event

    def run(self, notifications: Iterable[Any]) -> list[BaseEvent]:
        """Synchronous twin of ``stream`` for recorded notifications."""
        events: list[BaseEvent] = []
        for notification in notifications:
            events += self.transform(notification)
            if self.terminal is not None:
                return events
        return events + self.finish()

    def transform(self, notification: Any) -> list[BaseEvent]:
        wire = to_wire(notification)
        method, params = wire["method"], wire["params"]
        if self.terminal is not None:
            return []
        handler = self.handlers.get(method)
        if handler is None:
            return [] if method in DROPPED else [self._raw(method, params)]
        try:
            return handler(params)
        except Exception:  # a payload shape we did not expect: keep it, never crash the run
            log.warning("codex notification %s not understood; kept as RAW", method, exc_info=True)
            return [self._raw(method, params)]

    def has_started(self, tool_call_id: str) -> bool:
        return tool_call_id in self._tools_started

    def open_calls(self) -> list[tuple[str, str]]:
        """(id, name) of the tool calls started and not completed, in the order they started."""
        return [(c, self._tool_names.get(c, "")) for c in self._tool_names if c not in self._tools_done]

    def tool_name_of(self, tool_call_id: str) -> str:
        return self._tool_names.get(tool_call_id, "")

    def note_started(self, tool_call_id: str) -> None:
        """A tool call streamed by someone else (the runner, for a request the stream had not shown)."""
        self._tools_started.add(tool_call_id)
        self._tools_open.pop(tool_call_id, None)

    def finish(self) -> list[BaseEvent]:
        """Close whatever is still open (the stream ended without ``turn/completed``)."""
        return self._close_all()

    # ----- items ------------------------------------------------------------------------------------------
    def _item_started(self, params: dict[str, Any]) -> list[BaseEvent]:
        item = params.get("item") or {}
        kind, item_id = item.get("type"), str(item.get("id", ""))
        if kind in TOOL_ITEM_TYPES:
            return self._tool_start(item_id, item)
        if kind in TEXT_ITEMS or kind == "reasoning" or kind == "userMessage":
            return []  # text and reasoning blocks open on their first content
        return [self._raw("item/started", params)]

    def _item_completed(self, params: dict[str, Any]) -> list[BaseEvent]:
        item = params.get("item") or {}
        kind, item_id = item.get("type"), str(item.get("id", ""))
        if kind in TEXT_ITEMS:
            events = []
            if item_id not in self._text_streamed and item.get("text"):
                events += self._text_content(item_id, str(item["text"]))
            return events + self._text_end(item_id)
        if kind == "reasoning":
            events = []
            if item_id not in self._reasoning_streamed:
                text = "\n\n".join(str(part) for part in (item.get("summary") or item.get("content") or [])
                                   if part)
                if text:
                    events += self._reasoning_content(item_id, text)
            return events + self._reasoning_end(item_id)
        if kind in TOOL_ITEM_TYPES:
            return self._tool_complete(item_id, item)
        if kind == "userMessage":
            return []
        return [self._raw("item/completed", params)]

    # ----- text -------------------------------------------------------------------------------------------
    def _text_delta(self, params: dict[str, Any]) -> list[BaseEvent]:
        item_id, delta = str(params.get("itemId", "")), _text(params.get("delta"))
        if not delta:
            return []
        self._text_streamed.add(item_id)
        return self._text_content(item_id, delta)

    def _text_content(self, item_id: str, delta: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if item_id not in self._text_open:
            self._text_open[item_id] = None
            events.append(TextMessageStartEvent(message_id=item_id, role="assistant"))
        events.append(TextMessageContentEvent(message_id=item_id, delta=delta))
        return events

    def _text_end(self, item_id: str) -> list[BaseEvent]:
        if item_id not in self._text_open:
            return []
        self._text_open.pop(item_id, None)
        return [TextMessageEndEvent(message_id=item_id)]

    # ----- reasoning --------------------------------------------------------------------------------------
    def _reasoning_delta(self, params: dict[str, Any]) -> list[BaseEvent]:
        item_id, delta = str(params.get("itemId", "")), _text(params.get("delta"))
        if not delta:
            return []
        index = params.get("summaryIndex", params.get("contentIndex", 0))
        if item_id in self._reasoning_open and isinstance(index, int) and index > self._reasoning_open[item_id]:
            delta = "\n\n" + delta  # a new summary part
        self._reasoning_streamed.add(item_id)
        events = self._reasoning_content(item_id, delta)
        if isinstance(index, int):
            self._reasoning_open[item_id] = max(index, self._reasoning_open.get(item_id, 0))
        return events

    def _reasoning_content(self, item_id: str, delta: str) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if item_id not in self._reasoning_open:
            self._reasoning_open[item_id] = 0
            events += [ReasoningStartEvent(message_id=item_id),
                       ReasoningMessageStartEvent(message_id=item_id, role="reasoning")]
        events.append(ReasoningMessageContentEvent(message_id=item_id, delta=delta))
        return events

    def _reasoning_end(self, item_id: str) -> list[BaseEvent]:
        if self._reasoning_open.pop(item_id, None) is None:
            return []
        return [ReasoningMessageEndEvent(message_id=item_id), ReasoningEndEvent(message_id=item_id)]

    # ----- tool calls -------------------------------------------------------------------------------------
    def _tool_start(self, item_id: str, item: dict[str, Any]) -> list[BaseEvent]:
        if item_id in self._tools_started:
            return []
        self._tools_started.add(item_id)
        self._tool_names[item_id] = tool_name(item)
        events: list[BaseEvent] = [ToolCallStartEvent(tool_call_id=item_id, tool_call_name=tool_name(item))]
        if args_known_at_start(item):
            events += self._tool_args_end(item_id, item)
        else:
            self._tools_open[item_id] = None
        return events

    def _tool_args_end(self, item_id: str, item: dict[str, Any]) -> list[BaseEvent]:
        self._tools_open.pop(item_id, None)
        return [ToolCallArgsEvent(tool_call_id=item_id, delta=json.dumps(tool_arguments(item))),
                ToolCallEndEvent(tool_call_id=item_id)]

    def _tool_complete(self, item_id: str, item: dict[str, Any]) -> list[BaseEvent]:
        if item_id in self._tools_done:
            return []
        events = self._tool_start(item_id, item)
        if item_id in self._tools_open:
            events += self._tool_args_end(item_id, item)
        self._tools_done.add(item_id)
        events.append(ToolCallResultEvent(message_id=f"{item_id}:result", tool_call_id=item_id,
                                          content=tool_result(item), role="tool"))
        return events

    # ----- state, usage, errors, end ----------------------------------------------------------------------
    def _plan_updated(self, params: dict[str, Any]) -> list[BaseEvent]:
        return self.plan.update(params)

    def _token_usage(self, params: dict[str, Any]) -> list[BaseEvent]:
        self.usage.update(params.get("tokenUsage") or {})
        return []

    def _error(self, params: dict[str, Any]) -> list[BaseEvent]:
        error = params.get("error") or {}
        if not params.get("willRetry"):
            self.last_error = error
        return [self._raw("error", params)]

    def _turn_completed(self, params: dict[str, Any]) -> list[BaseEvent]:
        turn = params.get("turn") or {}
        status = turn.get("status")
        events = self._close_all()
        usage = self.usage.token_usage()
        usage_list = [usage] if usage is not None else None
        if status == "failed":
            failure = describe_failure(turn.get("error") or self.last_error)
            self.terminal = RunErrorEvent(message=failure.message, code=failure.code, usage=usage_list)
        elif status == "interrupted":
            self.terminal = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                             outcome={"type": "cancelled"}, usage=usage_list)
        else:
            self.terminal = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage_list)
        return events + [self.terminal]

    def _close_all(self) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        for item_id in list(self._text_open):
            events += self._text_end(item_id)
        for item_id in list(self._reasoning_open):
            events += self._reasoning_end(item_id)
        for item_id in list(self._tools_open):
            events += self._tool_args_end(item_id, {"type": "webSearch"})
        return events

    def _raw(self, method: str, params: dict[str, Any]) -> RawEvent:
        return RawEvent(event={"method": method, "params": params}, source=SOURCE)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a text delta, got {type(value).__name__}")
    return value
