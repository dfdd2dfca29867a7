"""``POST /run`` (and ``/``), ``POST /interrupt``, ``GET /events/{threadId}``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

from ag_ui.core import BaseEvent
from fastapi import Header, Query, Request
from fastapi import Path as PathParameter
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.api.errors import ApiError, ready_bridge
from ambient_runner.api.routing import Metrics, Runs, Settings, WorkflowSet, WorkspaceRoot, body_rules, router
from ambient_runner.api.run_input import MAX_BODY_BYTES, RunInput, check_id, check_run_input, prepare_run_input
from ambient_runner.bridges.caller import Caller
from ambient_runner.bridges.contract import Capabilities
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.admission import Reader
from ambient_runner.runs.attachments import AttachmentRules
from ambient_runner.runs.event_log import ThreadEventLog
from ambient_runner.runs.manager import (
    RunManager,
)
from ambient_runner.runs.request import Queued, QueuedMessage, Steered, Submitted
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.encoding import Redactor, event_json, sse_frame
from ambient_runner.workspace.paths import Workspace

routes = router()
PING_SECONDS = 15
STOPPED_WHILE_PAUSED = "The run was stopped while it waited for this answer, so this was not done."
BOOT_WAIT_FOR_RUN = 120.0  # a run posted while the runner is still starting waits for it this long
SSE = "text/event-stream"
STREAM: dict[int | str, dict[str, Any]] = {
    200: {"content": {SSE: {}}, "description": "AG-UI events, one `data:` line each, with an `id:`"}}


async def stream_frames(metrics: RunnerMetrics, event_log: ThreadEventLog, after: int,
                        one_run: bool = False) -> AsyncIterator[bytes]:
    """SSE frames of ``event_log`` after ``after`` (to the end of that run only, with ``one_run``); batches are sent
    as one write."""
    metrics.sse_clients.inc()
    try:
        async for batch in event_log.follow(after, one_run=one_run):
            yield "".join(sse_frame(seq, data) for seq, data in batch).encode()
    finally:
        metrics.sse_clients.dec()


def own_frames(events: Sequence[BaseEvent], redactor: Redactor) -> bytes:
    """Events of a POST's own run that are in no thread log (so they carry no ``id:``)."""
    return "".join(f"data: {event_json(event, redactor)}\n\n" for event in events).encode()


async def steered_frames(metrics: RunnerMetrics, events: list[BaseEvent], redactor: Redactor) -> AsyncIterator[bytes]:
    metrics.sse_clients.inc()
    try:
        yield own_frames(events, redactor)
    finally:
        metrics.sse_clients.dec()


async def queued_frames(metrics: RunnerMetrics, event_log: ThreadEventLog, message: QueuedMessage,
                        redactor: Redactor) -> AsyncIterator[bytes]:
    """A queued message's run: its head at once, keep-alives while it waits, then its own events from the thread's
    log (after the head, which the log holds too) or the terminal event that ended it unstarted. The message is the
    runner's: a client going away does not cancel it."""
    metrics.sse_clients.inc()
    try:
        yield own_frames(message.head, redactor)
        outcome = await asyncio.shield(message.outcome)
        if not isinstance(outcome, int):
            yield own_frames([outcome], redactor)
            return
        async for batch in event_log.follow(outcome + len(message.head) - 1, one_run=True):
            yield "".join(sse_frame(seq, data) for seq, data in batch).encode()
    finally:
        metrics.sse_clients.dec()


def event_source(frames: AsyncIterator[bytes]) -> EventSourceResponse:
    return EventSourceResponse(frames, ping=PING_SECONDS, headers={"X-Accel-Buffering": "no"})


def sse_response(metrics: RunnerMetrics, event_log: ThreadEventLog, after: int,
                 one_run: bool = False) -> EventSourceResponse:
    return event_source(stream_frames(metrics, event_log, after, one_run))


def attachment_rules(settings: RunnerSettings, capabilities: Capabilities, workspace: Workspace) -> AttachmentRules:
    """The parts a run may bring: the types the bridge takes (its ``capabilities``), within the settings' bounds."""
    return AttachmentRules(accepted=frozenset(capabilities.input_mime_types),
                           max_bytes=settings.runner_max_attachment_bytes,
                           fetch_urls=settings.runner_fetch_urls, workspace=workspace,
                           directory=settings.runner_attachments_dir)


def body_limit(settings: RunnerSettings) -> int:
    """A run's body may carry two parts of the largest size, base64-encoded, beside its messages."""
    return MAX_BODY_BYTES + 2 * (settings.runner_max_attachment_bytes * 4 // 3 + 4)


@routes.post("/run", summary="Start a run; answers an SSE stream of AG-UI events", response_class=EventSourceResponse,
             responses=STREAM)
@body_rules(limit=body_limit, prepare=prepare_run_input, invalid_code=ErrorCode.INVALID_RUN_INPUT,
            invalid_message="the body is not a valid AG-UI RunAgentInput")
async def start_run(body: RunInput, request: Request, runs: Runs, settings: Settings, metrics: Metrics,
                    workspace: WorkspaceRoot, workflows: WorkflowSet) -> EventSourceResponse:
    """Start a run of ``threadId`` (or answer its paused one, or steer or queue it while its run streams) and stream
    its events. The run is read once, against its thread, and submitted (``RunManager.submit``); what refuses it is a
    ``RunnerError`` with its status."""
    reader = Reader(expand=workflows.expand, ready=lambda: ready_bridge(request, BOOT_WAIT_FOR_RUN),
                    attachment_rules=lambda capabilities: attachment_rules(settings, capabilities, workspace),
                    caller=Caller.from_headers(request.headers))
    submitted = await submit(runs, body, reader)
    return stream(submitted, metrics, runs.redactor)


async def submit(runs: RunManager, body: RunInput, reader: Reader) -> Submitted:
    """The run checked (ids, protocol), then read against its thread and submitted (``RunManager.submit``)."""
    run_input = check_run_input(body)
    return await runs.submit(run_input, reader)


def stream(submitted: Submitted, metrics: RunnerMetrics, redactor: Redactor) -> EventSourceResponse:
    """A submitted run's stream: its own events from the thread's log, a steered message's whole stream, or a
    queued message's head, then its run."""
    if isinstance(submitted, Steered):
        return event_source(steered_frames(metrics, submitted.events, redactor))
    if isinstance(submitted, Queued):
        return event_source(queued_frames(metrics, submitted.log, submitted.message, redactor))
    return sse_response(metrics, submitted.log, submitted.after, one_run=True)


routes.add_api_route("/", start_run, methods=["POST"], summary="Alias of POST /run (the platform's backend posts here)",
                     response_class=EventSourceResponse, responses=STREAM)


class InterruptBody(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    thread_id: str | None = Field(None, alias="threadId", description="the thread; every active run when absent")
    drop_queued: bool = Field(False, alias="dropQueued", description="the queued messages end unstarted too (else "
                                                                     "they run next, in order)")


@routes.post("/interrupt", summary="Interrupt a run")
@body_rules(limit=64 * 1024)
async def interrupt(runs: Runs, body: InterruptBody | None = None) -> dict[str, Any]:
    """Interrupt the run of ``threadId`` (or every active run when no thread is named). The thread's queued
    messages then run in order, unless ``dropQueued``."""
    thread_id = body.thread_id if body is not None else None
    drop = body is not None and body.drop_queued
    if thread_id is not None:
        check_id("threadId", thread_id)
        state = runs.thread(thread_id)
        targets = [state.active] if state is not None and state.active is not None else []
        paused = [thread_id] if runs.hitl.paused(thread_id) else []
        queued = bool(state is not None and state.queue)
        if not targets and not paused and not (drop and queued):
            raise ApiError(404, ErrorCode.NO_ACTIVE_RUN, f"thread {thread_id!r} has no run in progress")
    else:
        targets = runs.active_runs()
        paused = runs.hitl.paused_threads()
        queued = any(state.queue for state in runs.threads.values())
        if not targets and not paused and not (drop and queued):
            raise ApiError(404, ErrorCode.NO_ACTIVE_RUN, "no run is in progress")
    dropped = [m.request.run_id for m in runs.drop_queued(thread_id)] if drop else []
    refused = runs.hitl.refuse(paused, STOPPED_WHILE_PAUSED)
    for run in targets:
        await runs.interrupt(run)
    answer: dict[str, Any] = {"interrupted": [{"threadId": r.thread_id, "runId": r.run_id} for r in targets]}
    if drop:
        answer["droppedQueued"] = dropped
    if refused:
        answer["refusedInterrupts"] = refused  # the paused turn stops; the thread's next run shows how it ended
    return answer


async def between_run_frames(runs: RunManager, metrics: RunnerMetrics) -> AsyncIterator[bytes]:
    metrics.sse_clients.inc()
    try:
        async for data in runs.between_runs.follow():
            yield f"data: {data}\n\n".encode()
    finally:
        metrics.sse_clients.dec()


@routes.get("/events/{thread_id:path}", summary="Replay a thread's events, or follow the events between runs",
            response_class=EventSourceResponse, responses=STREAM)
async def events(runs: Runs, metrics: Metrics, thread_id: Annotated[str, PathParameter()],
                 after: Annotated[str | None, Query(description="replay after this event id")] = None,
                 last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None) -> EventSourceResponse:
    """With a cursor (``Last-Event-ID`` or ``?after=N``): replay the thread's events after N, then follow its live
    run. Without one (the platform backend's between-run listener): only events outside any run, from now on,
    with keep-alive comments, until the runner stops."""
    check_id("threadId", thread_id)
    raw = after if after is not None else last_event_id
    if raw is None:
        return event_source(between_run_frames(runs, metrics))
    try:
        cursor = int(raw)
        if cursor < 0:
            raise ValueError
    except ValueError:
        raise ApiError(422, ErrorCode.INVALID_REQUEST,
                       f"after / Last-Event-ID must be a whole number >= 0, got {raw!r}") from None
    state = runs.thread(thread_id)
    if state is None:
        raise ApiError(404, ErrorCode.UNKNOWN_THREAD, f"no events for thread {thread_id!r} in this runner")
    return sse_response(metrics, state.log, cursor)

