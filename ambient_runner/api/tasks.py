"""The platform's Tasks tab: ``GET /tasks``, ``GET /tasks/{id}/output``, ``POST /tasks/{id}/stop``.

The tab itself follows the ``task:*`` events of the streams; these calls list the tasks, read one's output (the file
its CLI reported: each line a JSON object when it is one, else ``{"type": "text", "text": line}``) and stop one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ambient_runner.api.errors import ApiError, ready_bridge
from ambient_runner.runs.tasks import TERMINAL, BackgroundTask, TaskNotStoppableError

router = APIRouter()
MAX_OUTPUT_BYTES = 10 * 1024 * 1024
BOOT_WAIT = 8.0


def _task(request: Request, task_id: str) -> BackgroundTask:
    task = request.app.state.runs.tasks.get(task_id)
    if task is None:
        raise ApiError(404, "UNKNOWN_TASK", f"no background task {task_id!r} in this runner")
    return task


def _read_output(path: Path) -> list[Any]:
    if path.stat().st_size > MAX_OUTPUT_BYTES:
        raise ApiError(413, "OUTPUT_TOO_LARGE", f"the task's output is larger than {MAX_OUTPUT_BYTES} bytes")
    lines: list[Any] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        lines.append(value if isinstance(value, dict) else {"type": "text", "text": line})
    return lines


@router.get("/tasks")
async def list_tasks(request: Request) -> JSONResponse:
    return JSONResponse({"tasks": [task.wire() for task in request.app.state.runs.tasks.list()]})


@router.get("/tasks/{task_id}/output")
async def task_output(request: Request, task_id: str) -> JSONResponse:
    task = _task(request, task_id)
    path = Path(task.output_file) if task.output_file else None
    if path is None or not path.is_file():
        raise ApiError(404, "NO_OUTPUT", f"background task {task_id!r} has no output file (yet)")
    output = await asyncio.to_thread(_read_output, path)
    return JSONResponse({"task_id": task_id, "output": output})


@router.post("/tasks/{task_id}/stop")
async def stop_task(request: Request, task_id: str) -> JSONResponse:
    task = _task(request, task_id)
    if task.status in TERMINAL:
        raise ApiError(409, "TASK_FINISHED", f"background task {task_id!r} has already {task.status}")
    bridge = await ready_bridge(request, BOOT_WAIT)
    try:
        await bridge.stop_task(task)
    except TaskNotStoppableError as exc:
        raise ApiError(409, "TASK_NOT_STOPPABLE", str(exc)) from None
    return JSONResponse({"message": "Task stop signal sent", "task_id": task_id})
