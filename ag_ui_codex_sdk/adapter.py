"""Codex app-server notifications -> AG-UI events, for one turn.

The shared transform loop (``ag_ui_cli_common.CliAdapter``) and one handler per notification method
(``handlers``). Input: the SDK's ``Notification`` objects, ``(method, params)`` pairs, recorded
``{"method", "params"}`` dicts (see ``notifications.to_wire``) or recorded JSON lines. Output: ``ag_ui.core``
events; the terminal event comes from ``turn/completed``:

* ``completed``   -> ``RUN_FINISHED`` with the turn's ``TokenUsage``;
* ``interrupted`` -> ``RUN_FINISHED`` with outcome ``cancelled`` (the core marks the run cancelled);
* ``failed``      -> ``RUN_ERROR`` with a message a user can act on (``errors.describe_failure``).

Open text / reasoning blocks and tool calls are closed before the terminal event. Notifications the adapter
does not translate are kept as ``RAW`` events (source ``codex``); bookkeeping ones (``turn/started``,
user-message items, ``thread/status/changed``...) are dropped. Nothing here raises on odd input.
"""

from __future__ import annotations

import json
from collections.abc import Hashable

from ag_ui.core import BaseEvent, RawEvent, RunFinishedCancelledOutcome, RunFinishedEvent

from ag_ui_cli_common import CliAdapter
from ag_ui_cli_common.json_types import JsonObject, JsonValue, iterable_or_empty, object_or_empty
from ag_ui_codex_sdk import protocol
from ag_ui_codex_sdk.errors import describe_failure
from ag_ui_codex_sdk.notifications import to_wire
from ag_ui_codex_sdk.plan import PlanTracker
from ag_ui_codex_sdk.tools import TOOL_ITEM_TYPES, args_known_at_start, tool_arguments, tool_name, tool_result
from ag_ui_codex_sdk.usage import TurnUsage

SOURCE = "codex"
DROPPED = frozenset(protocol.DROPPED)  # bookkeeping notifications: no event
TEXT_ITEMS = ("agentMessage", "plan")
UNPARSED = "(not a notification)"  # the kind of a recorded line that is not a JSON object


class CodexEventAdapter(CliAdapter[object]):
    """Translates one turn's notifications: ``feed`` per notification, ``finish`` at the end."""

    agent = "The Codex app-server"
    source = SOURCE
    result_suffix = ":result"  # what Codex clients have seen since the first release

    def __init__(self, thread_id: str, run_id: str, *, model: str | None = None, client_state: object = None) -> None:
        super().__init__(thread_id, run_id)
        self.usage = TurnUsage(model)
        self.plan = PlanTracker(client_state)  # the plan goes beside the client's own state keys
        self.last_error: JsonValue = None
        self._text_streamed: set[str] = set()  # items that got at least one non-empty delta
        self._reasoning_streamed: set[str] = set()
        self._summary_index: dict[str, int] = {}  # reasoning item -> last summary part seen
        self.handlers = {
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
            UNPARSED: self._on_unparsed,
        }

    # ----- the transform loop's Codex parts --------------------------------------------------------------
    def parse(self, native: object) -> tuple[Hashable, JsonValue] | None:
        if isinstance(native, str):  # a recorded app-server line
            if not native.strip():
                return None
            try:
                decoded: JsonValue = json.loads(native)
            except ValueError:
                return UNPARSED, native
            if not isinstance(decoded, dict):
                return UNPARSED, decoded
            native = decoded
        wire = to_wire(native)
        return wire["method"], wire["params"]

    def on_unknown(self, kind: Hashable, payload: JsonValue) -> list[BaseEvent]:
        return [] if kind in DROPPED else [self._raw(str(kind), payload)]

    def on_malformed(self, kind: Hashable, payload: JsonValue) -> list[BaseEvent]:
        return [self._raw(str(kind), payload)]

    def open_calls(self) -> list[tuple[str, str]]:
        """(id, name) of the tool calls started and not completed, in the order they started."""
        return self.blocks.open_calls()

    def tool_name_of(self, tool_call_id: str) -> str:
        return self.blocks.tool_name(tool_call_id)

    # ----- items ------------------------------------------------------------------------------------------
    def _item_started(self, params: JsonObject) -> list[BaseEvent]:
        item = object_or_empty(params.get("item"))
        kind, item_id = item.get("type"), str(item.get("id", ""))
        if kind in TOOL_ITEM_TYPES:
            return self._tool_start(item_id, item)
        if kind in TEXT_ITEMS or kind == "reasoning" or kind == "userMessage":
            return []  # text and reasoning blocks open on their first content
        return [self._raw("item/started", params)]

    def _item_completed(self, params: JsonObject) -> list[BaseEvent]:
        item = object_or_empty(params.get("item"))
        kind, item_id = item.get("type"), str(item.get("id", ""))
        if kind in TEXT_ITEMS:
            events: list[BaseEvent] = []
            if item_id not in self._text_streamed and item.get("text"):
                events += self.blocks.text(item_id, str(item["text"]))
            return events + self.blocks.close(item_id)
        if kind == "reasoning":
            events = []
            if item_id not in self._reasoning_streamed:
                parts = iterable_or_empty(item.get("summary") or item.get("content"))
                text = "\n\n".join(str(part) for part in parts if part)
                if text:
                    events += self._reasoning_content(item_id, text)
            return events + self.blocks.end_reasoning(item_id)
        if kind in TOOL_ITEM_TYPES:
            return self._tool_complete(item_id, item)
        if kind == "userMessage":
            return []
        return [self._raw("item/completed", params)]

    # ----- text and reasoning -----------------------------------------------------------------------------
    def _text_delta(self, params: JsonObject) -> list[BaseEvent]:
        item_id, delta = str(params.get("itemId", "")), _text(params.get("delta"))
        if not delta:
            return []
        self._text_streamed.add(item_id)
        return self.blocks.text(item_id, delta)

    def _reasoning_delta(self, params: JsonObject) -> list[BaseEvent]:
        item_id, delta = str(params.get("itemId", "")), _text(params.get("delta"))
        if not delta:
            return []
        index = params.get("summaryIndex", params.get("contentIndex", 0))
        if self.blocks.is_open(item_id) and isinstance(index, int) and index > self._summary_index.get(item_id, 0):
            delta = "\n\n" + delta  # a new summary part
        self._reasoning_streamed.add(item_id)
        events = self._reasoning_content(item_id, delta)
        if isinstance(index, int):
            self._summary_index[item_id] = max(index, self._summary_index.get(item_id, 0))
        return events

    def _reasoning_content(self, item_id: str, delta: str) -> list[BaseEvent]:
        if not self.blocks.is_open(item_id):
            self._summary_index[item_id] = 0
        return self.blocks.reasoning(item_id, delta)

    # ----- tool calls -------------------------------------------------------------------------------------
    def _tool_start(self, item_id: str, item: JsonObject) -> list[BaseEvent]:
        if self.blocks.has_started(item_id):
            return []
        if args_known_at_start(item):
            return self.blocks.tool_call(item_id, tool_name(item), json.dumps(tool_arguments(item)))
        return self.blocks.start_tool(item_id, tool_name(item),
                                      fallback_args=json.dumps(tool_arguments({"type": item.get("type")})))

    def _tool_complete(self, item_id: str, item: JsonObject) -> list[BaseEvent]:
        if self.blocks.has_result(item_id):
            return []
        events = self._tool_start(item_id, item)
        if self.blocks.is_open(item_id):  # its arguments are known now (a web search's query)
            events += self.blocks.end_tool(item_id, json.dumps(tool_arguments(item)))
        return events + self.blocks.tool_result(item_id, tool_result(item))

    # ----- state, usage, errors, end ----------------------------------------------------------------------
    def _plan_updated(self, params: JsonObject) -> list[BaseEvent]:
        return self.plan.update(params)

    def _token_usage(self, params: JsonObject) -> list[BaseEvent]:
        self.usage.update(object_or_empty(params.get("tokenUsage")))
        return []

    def _error(self, params: JsonObject) -> list[BaseEvent]:
        if not params.get("willRetry"):
            self.last_error = params.get("error") or {}  # read when the turn fails
        return [self._raw("error", params)]

    def _turn_completed(self, params: JsonObject) -> list[BaseEvent]:
        turn = object_or_empty(params.get("turn"))
        status = turn.get("status")
        usage = self.usage.token_usage()
        usage_list = [usage] if usage is not None else None
        if status == "failed":
            return self.blocks.fail(describe_failure(turn.get("error") or self.last_error), usage=usage_list)
        if status == "interrupted":
            return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                                       outcome=RunFinishedCancelledOutcome(), usage=usage_list))
        return self.blocks.finish(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, usage=usage_list))

    def _on_unparsed(self, line: JsonValue) -> list[BaseEvent]:
        return [RawEvent(event={"line": line}, source=SOURCE)]

    def _raw(self, method: str, params: JsonValue) -> RawEvent:
        return RawEvent(event={"method": method, "params": params}, source=SOURCE)


def _text(value: JsonValue) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a text delta, got {type(value).__name__}")
    return value
