"""The platform's Tasks tab: ``GET /tasks``, ``GET /tasks/{id}/output``, ``POST /tasks/{id}/stop``.

The tab itself follows the ``task:*`` events of the streams; these calls list the tasks, read one's output (the file
its CLI reported, never through a symlink, secrets redacted: each line a JSON object when it is one, else
``{"type": "text", "text": line}``) and stop one.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from fastapi import Path as PathParameter

from ag_ui_cli_common.errors import ErrorCode
from ag_ui_cli_common.json_types import JsonObject, JsonValue
from ambient_runner.api.errors import ApiError
from ambient_runner.api.routing import Runs, Settings, router
from ambient_runner.bridges.tasks import TERMINAL, BackgroundTask
from ambient_runner.runs.manager import RunManager
from ambient_runner.stream.encoding import Redactor

routes = router()
TaskId = Annotated[str, PathParameter(min_length=1, max_length=256, description="the task's id")]
MAX_OUTPUT_BYTES = 10 * 1024 * 1024


def _task(runs: RunManager, task_id: str) -> BackgroundTask:
    task = runs.host.tasks.get(task_id)
    if task is None:
        raise ApiError(404, ErrorCode.UNKNOWN_TASK, f"no background task {task_id!r} in this runner")
    return task


def _read_output(path: Path, allowed: list[Path], redact: Redactor) -> list[JsonObject]:
    """The file the CLI named, if it still leads into its own folders (its task dir, the CLI's state dir: a
    sub-agent's output is a link to its transcript there) and is a regular file."""
    real = path.resolve()
    if not any(real == root or root in real.parents for root in allowed):
        raise ApiError(404, ErrorCode.NO_OUTPUT, "the task's output file leads outside the agent's own folders")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise ApiError(404, ErrorCode.NO_OUTPUT, "the task's output file is not readable (or is a symlink)") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ApiError(404, ErrorCode.NO_OUTPUT, "the task's output is not a regular file")
        if info.st_size > MAX_OUTPUT_BYTES:
            raise ApiError(413, ErrorCode.OUTPUT_TOO_LARGE,
                           f"the task's output is larger than {MAX_OUTPUT_BYTES} bytes")
        text = redact(handle.read(MAX_OUTPUT_BYTES + 1).decode("utf-8", errors="replace"))
    lines: list[JsonObject] = []
    for line in text.splitlines():
        try:
            value: JsonValue = json.loads(line)
        except ValueError:
            value = None
        lines.append(value if isinstance(value, dict) else {"type": "text", "text": line})
    return lines


@routes.get("/tasks", summary="The agent's background tasks")
async def list_tasks(runs: Runs) -> Mapping[str, object]:
    return {"tasks": [task.wire() for task in runs.host.tasks.list()]}


@routes.get("/tasks/{task_id}/output", summary="A background task's output")
async def task_output(task_id: TaskId, runs: Runs, settings: Settings) -> Mapping[str, object]:
    task = _task(runs, task_id)
    if not task.output_file:
        raise ApiError(404, ErrorCode.NO_OUTPUT, f"background task {task_id!r} has no output file (yet)")
    path = Path(task.output_file)
    allowed = [path.parent.resolve(), settings.state_dir.resolve()]
    output = await asyncio.to_thread(_read_output, path, allowed, runs.redactor)
    return {"task_id": task_id, "output": output}


@routes.post("/tasks/{task_id}/stop", summary="Stop a background task")
async def stop_task(task_id: TaskId, runs: Runs) -> Mapping[str, object]:
    task = _task(runs, task_id)
    if task.status in TERMINAL:
        raise ApiError(409, ErrorCode.TASK_FINISHED, f"background task {task_id!r} has already {task.status}")
    await runs.host.tasks.stop(task)  # a TaskNotStoppableError is its 409 TASK_NOT_STOPPABLE
    return {"message": "Task stop signal sent", "task_id": task_id}
