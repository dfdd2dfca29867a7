"""Claude Code's foreground sub-agents (its ``Agent`` tool, listed as ``Task``) as AG-UI 1.0 sub-agents.

The CLI announces a sub-agent with ``system/task_started`` (``tool_use_id`` = the ``Agent`` call, ``task_id`` = the
sub-agent, ``is_backgrounded``); the sub-agent's messages carry ``parent_tool_use_id`` = that call; it ends with
``task_updated`` / ``task_notification`` (``completed`` or ``failed``) and the call's ``tool_result``. A foreground
one is a ``SUBAGENT_STARTED`` … ``SUBAGENT_FINISHED`` (or ``SUBAGENT_ERROR``) segment of the run, its events carrying
``subagentRunId``. A backgrounded one outlives its run: it is a background task (``ag_ui_claude.tasks``), not this.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ag_ui.core import BaseEvent, SubagentErrorEvent, SubagentFinishedEvent, SubagentStartedEvent

from ag_ui_cli_common.json_types import JsonObject

FAILED = frozenset({"failed", "killed"})
ENDED = FAILED | {"completed"}


@dataclass
class SubagentTracker:
    """The open foreground sub-agents of one turn, by the ``Agent`` call that started them."""

    _by_call: dict[str, str] = field(default_factory=dict)  # Agent tool_use id -> subagentRunId (task id)
    _open: dict[str, str] = field(default_factory=dict)  # subagentRunId -> its Agent tool_use id
    _foreground: set[str] = field(default_factory=set)  # every foreground task id seen (its task messages are ours)

    def owns(self, task_id: object) -> bool:
        """A task message that belongs to a foreground sub-agent (not to the task registry)."""
        return isinstance(task_id, str) and task_id in self._foreground

    def run_for(self, parent_tool_use_id: str | None) -> str | None:
        """The ``subagentRunId`` of the sub-agent whose messages carry ``parent_tool_use_id``."""
        return self._by_call.get(parent_tool_use_id) if parent_tool_use_id else None

    def on_task_message(self, data: JsonObject) -> list[BaseEvent]:
        """Events for a ``system`` task message (``started`` / ``updated`` / ``notification``), if it is ours."""
        subtype, task_id = data.get("subtype"), data.get("task_id")
        if not isinstance(task_id, str):
            return []
        if subtype == "task_started":
            return self._started(task_id, data)
        if task_id not in self._open:
            return []
        if subtype == "task_notification" and data.get("status") in ENDED:
            return self._end(task_id, str(data["status"]), str(data.get("summary") or ""))
        patch = found if isinstance(found := data.get("patch"), dict) else {}
        if subtype == "task_updated" and patch.get("status") in ENDED:
            return self._end(task_id, str(patch["status"]), str(patch.get("error") or ""))
        return []

    def on_tool_result(self, tool_use_id: str, is_error: bool, text: str) -> list[BaseEvent]:
        """The ``Agent`` call's result: its sub-agent ends here if the CLI has not said so already."""
        task_id = self._by_call.get(tool_use_id)
        if task_id is None or task_id not in self._open:
            return []
        return self._end(task_id, "failed" if is_error else "completed", text)

    def _started(self, task_id: str, data: JsonObject) -> list[BaseEvent]:
        call = data.get("tool_use_id")
        if data.get("is_backgrounded") is not False or not isinstance(call, str) or task_id in self._foreground:
            return []
        self._foreground.add(task_id)
        self._by_call[call] = task_id
        self._open[task_id] = call
        name = str(data.get("subagent_type") or data.get("task_type") or "Agent")
        return [SubagentStartedEvent(subagent_run_id=task_id, name=name, parent_tool_call_id=call,
                                     description=str(data.get("description") or "") or None)]

    def _end(self, task_id: str, status: str, text: str) -> list[BaseEvent]:
        del self._open[task_id]
        if status in FAILED:
            return [SubagentErrorEvent(subagent_run_id=task_id, message=text or f"the sub-agent {status}",
                                       code=f"SUBAGENT_{status.upper()}")]
        return [SubagentFinishedEvent(subagent_run_id=task_id, result=text or None)]
