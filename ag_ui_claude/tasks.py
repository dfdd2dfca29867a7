"""Claude Code's background-task messages (``system`` subtypes ``task_started``, ``task_progress``,
``task_notification``, ``task_updated``) as plain reports: what a task registry needs, nothing of the runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ag_ui_cli_common.json_types import JsonObject, JsonValue

TASK_SUBTYPES = frozenset({"task_started", "task_progress", "task_notification", "task_updated",
                           "background_tasks_changed"})
TERMINAL_PATCH = frozenset({"completed", "failed", "killed"})


@dataclass(frozen=True)
class TaskReport:
    kind: Literal["started", "progress", "completed"]
    task_id: str
    description: str = ""
    task_type: str | None = None
    usage: JsonObject | None = None
    last_tool_name: str | None = None
    status: str = ""
    summary: str = ""
    output_file: str | None = None


def _system_data(item: object) -> JsonObject | None:
    if isinstance(item, dict):
        return item if item.get("type") == "system" else None
    data = getattr(item, "data", None)  # the SDK's typed SystemMessage keeps the raw payload
    return data if isinstance(data, dict) and getattr(item, "subtype", None) else None


def is_task_message(item: object) -> bool:
    data = _system_data(item)
    return data is not None and data.get("subtype") in TASK_SUBTYPES


def task_report(item: object) -> TaskReport | None:
    """The report in one CLI message, or ``None`` (not a task message, or one that changes nothing)."""
    data = _system_data(item)
    task_id = data.get("task_id") if data is not None else None
    if data is None or not isinstance(task_id, str):
        return None
    subtype = data.get("subtype")
    usage = found if isinstance(found := data.get("usage"), dict) else None
    if subtype == "task_started":
        return TaskReport("started", task_id, description=str(data.get("description", "")),
                          task_type=_str_or_none(data.get("task_type")))
    if subtype == "task_progress":
        return TaskReport("progress", task_id, usage=usage, last_tool_name=_str_or_none(data.get("last_tool_name")))
    if subtype == "task_notification":
        return TaskReport("completed", task_id, usage=usage, status=str(data.get("status", "completed")),
                          summary=str(data.get("summary", "")), output_file=_str_or_none(data.get("output_file")))
    patch = found if isinstance(found := data.get("patch"), dict) else {}
    if subtype == "task_updated" and patch.get("status") in TERMINAL_PATCH:
        return TaskReport("completed", task_id, status=str(patch["status"]))
    return None


def _str_or_none(value: JsonValue) -> str | None:
    """A field the CLI writes as a string when it writes it; anything else is not read (``None``)."""
    return value if isinstance(value, str) else None
