"""Background tasks an agent starts (Claude's background ``Bash``, its sub-agents): one registry per runner.

A bridge reports what its CLI says about a task (``started``, ``progress``, ``completed``); each report that changes
something becomes the platform's ``CUSTOM`` event (``task:started {task_id, description, task_type}``,
``task:progress {task_id, usage, last_tool_name}``, ``task:completed {task_id, status, summary, usage,
output_file}``), sent on the run that is streaming or, between runs, to the between-run listeners. A task completes
once: the CLI may report the end twice (a status patch, then a notification); an end known only from the patch is
announced between runs a moment later.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ag_ui.core import CustomEvent, EventType

from ag_ui_cli_common.errors import ErrorCode, RunnerError

TERMINAL = ("completed", "failed", "stopped")
STATUS_WORDS = {"killed": "stopped", "cancelled": "stopped"}  # the CLI's raw words, in the platform's
MAX_TASKS = 1000


class TaskNotStoppableError(RunnerError, RuntimeError):
    """A task its CLI cannot stop (the message says why)."""

    code = ErrorCode.TASK_NOT_STOPPABLE


TaskStopper = Callable[["BackgroundTask"], Awaitable[None]]  # raises TaskNotStoppableError when it cannot


@dataclass
class BackgroundTask:
    task_id: str
    thread_id: str
    description: str = ""
    task_type: str | None = None
    status: str = "running"
    summary: str = ""
    usage: dict[str, Any] | None = None
    last_tool_name: str | None = None
    output_file: str | None = None
    started_at: float = field(default_factory=time.time)
    stop: TaskStopper | None = field(default=None, repr=False)  # how its CLI stops it; None: it cannot

    def wire(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "thread_id": self.thread_id, "description": self.description,
                "task_type": self.task_type, "status": self.status, "summary": self.summary, "usage": self.usage,
                "last_tool_name": self.last_tool_name, "output_file": self.output_file,
                "started_at": int(self.started_at * 1000)}


def _event(name: str, value: dict[str, Any]) -> CustomEvent:
    return CustomEvent(type=EventType.CUSTOM, name=name, value=value, timestamp=int(time.time() * 1000))


class TaskRegistry:
    def __init__(self) -> None:
        self._tasks: dict[str, BackgroundTask] = {}

    def list(self) -> list[BackgroundTask]:
        return list(self._tasks.values())

    def get(self, task_id: str) -> BackgroundTask | None:
        return self._tasks.get(task_id)

    def started(self, thread_id: str, task_id: str, description: str, task_type: str | None,
                stop: TaskStopper | None = None) -> CustomEvent | None:
        if task_id in self._tasks:
            return None
        if len(self._tasks) >= MAX_TASKS:  # forget the oldest finished one
            done = next((t for t in self._tasks.values() if t.status in TERMINAL), None)
            if done is not None:
                del self._tasks[done.task_id]
        self._tasks[task_id] = BackgroundTask(task_id, thread_id, description, task_type, stop=stop)
        return _event("task:started", {"task_id": task_id, "description": description, "task_type": task_type})

    async def stop(self, task: BackgroundTask) -> None:
        """Ask the task's CLI to stop it (its end is then reported like any other); ``TaskNotStoppableError`` when
        its runner cannot."""
        if task.stop is None:
            raise TaskNotStoppableError(f"this runner cannot stop background task {task.task_id}")
        await task.stop(task)

    def progress(self, task_id: str, usage: dict[str, Any] | None, last_tool_name: str | None) -> CustomEvent | None:
        task = self._tasks.get(task_id)
        if task is None or task.status in TERMINAL:
            return None
        task.usage, task.last_tool_name = usage or task.usage, last_tool_name or task.last_tool_name
        return _event("task:progress", {"task_id": task_id, "usage": task.usage, "last_tool_name": task.last_tool_name})

    def completed(self, task_id: str, status: str, summary: str = "", usage: dict[str, Any] | None = None,
                  output_file: str | None = None) -> CustomEvent | None:
        task = self._tasks.get(task_id)
        if task is None:
            return None
        status = STATUS_WORDS.get(status, status)
        if output_file:
            task.output_file = output_file
        if task.status in TERMINAL:
            return None
        task.status = status if status in TERMINAL else "completed"
        task.summary, task.usage = summary or task.summary, usage or task.usage
        return _event("task:completed", {"task_id": task_id, "status": task.status, "summary": task.summary,
                                         "usage": task.usage, "output_file": task.output_file})


TaskKind = Literal["started", "progress", "completed"]


class TaskReport(Protocol):
    """What a CLI said about a task: the one type a bridge hands ``Bridge.task_event``. An adapter's own report
    (e.g. ``ag_ui_claude.tasks.TaskReport``, a frozen dataclass) matches it structurally; the members are read-only."""

    @property
    def kind(self) -> TaskKind: ...
    @property
    def task_id(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def task_type(self) -> str | None: ...
    @property
    def usage(self) -> dict[str, Any] | None: ...
    @property
    def last_tool_name(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def output_file(self) -> str | None: ...


TASK_END_GRACE = 2.0  # s a task's full end notification may follow its bare status change
