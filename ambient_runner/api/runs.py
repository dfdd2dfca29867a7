"""``POST /run`` (and ``/``), ``POST /interrupt``, ``GET /events/{threadId}``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui.core import RunAgentInput
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse

from ambient_runner.api.errors import ApiError, ready_bridge
from ambient_runner.api.routing import Routes
from ambient_runner.api.run_input import MAX_BODY_BYTES, check_id, parse_json, parse_run_input, read_body
from ambient_runner.bridges.contract import Bridge, OptionError, RunOptions
from ambient_runner.platform.caller import Caller
from ambient_runner.runs.attachments import Attachment, AttachmentError, AttachmentRules, collect, discard_written
from ambient_runner.runs.event_log import ThreadEventLog
from ambient_runner.runs.manager import ActiveRun, DrainingError, PreviousRunStuckError, RunManager, ThreadBusyError
from ambient_runner.runs.prompt import ContextTooLargeError, NoPromptError, new_user_text, with_context
from ambient_runner.runs.resume import Answers, ResumeError, read_answers
from ambient_runner.settings import RunnerSettings
from ambient_runner.stream.encoding import sse_frame
from ambient_runner.workspace.paths import Workspace

routes = Routes()
PING_SECONDS = 15
STOPPED_WHILE_PAUSED = "The run was stopped while it waited for this answer, so this was not done."
BOOT_WAIT_FOR_RUN = 120.0  # a run posted while the runner is still starting waits for it this long
RUN_BODY_SCHEMA = {
    "type": "object", "required": ["threadId", "messages"],
    "properties": {"threadId": {"type": "string"}, "runId": {"type": "string"},
                   "messages": {"type": "array", "items": {"type": "object"}},
                   "forwardedProps": {"type": "object"}, "state": {}, "tools": {"type": "array"},
                   "context": {"type": "array"}}}
SSE = "text/event-stream"


def _runs(request: Request) -> RunManager:
    return request.app.state.runs


async def stream_frames(request: Request, event_log: ThreadEventLog, after: int) -> AsyncIterator[bytes]:
    """SSE frames of ``event_log`` after ``after``; batches are sent as one write."""
    metrics = request.app.state.metrics
    metrics.sse_clients.inc()
    try:
        async for batch in event_log.follow(after):
            yield "".join(sse_frame(seq, data) for seq, data in batch).encode()
    finally:
        metrics.sse_clients.dec()


def event_source(frames: AsyncIterator[bytes]) -> EventSourceResponse:
    return EventSourceResponse(frames, ping=PING_SECONDS, headers={"X-Accel-Buffering": "no"})


def sse_response(request: Request, event_log: ThreadEventLog, after: int) -> EventSourceResponse:
    return event_source(stream_frames(request, event_log, after))


def attachment_rules(settings: RunnerSettings, bridge: Bridge) -> AttachmentRules:
    return AttachmentRules(accepted=bridge.attachment_types, max_bytes=settings.runner_max_attachment_bytes,
                           fetch_urls=settings.runner_fetch_urls,
                           workspace=Workspace.of(settings.workspace_path, settings.state_dir),
                           directory=settings.runner_attachments_dir)


def body_limit(settings: RunnerSettings) -> int:
    """A run's body may carry two parts of the largest size, base64-encoded, beside its messages."""
    return MAX_BODY_BYTES + 2 * (settings.runner_max_attachment_bytes * 4 // 3 + 4)


async def admit(runs: RunManager, run_input: RunAgentInput, prompt: str, options: RunOptions,
                attachments: list[Attachment], answers: Answers | None = None,
                caller: Caller | None = None) -> ActiveRun:
    """Start the run, or the 409 / 503 that says why the thread or the runner does not take it now."""
    try:
        return await runs.start(run_input, prompt, options, attachments, answers, caller)
    except ThreadBusyError as exc:
        raise ApiError(409, "THREAD_BUSY", str(exc), threadId=run_input.thread_id) from None
    except PreviousRunStuckError as exc:
        raise ApiError(503, "PREVIOUS_RUN_STUCK", str(exc), threadId=run_input.thread_id) from None
    except DrainingError as exc:
        raise ApiError(503, "DRAINING", str(exc)) from None


async def start_run(request: Request) -> EventSourceResponse:
    runs = _runs(request)
    settings = request.app.state.settings
    run_input = parse_run_input(await read_body(request, limit=body_limit(settings)))
    answers = interrupt_answers(runs, run_input)
    try:
        prompt = with_context(run_input, run_prompt(runs, run_input, answers))
    except NoPromptError as exc:
        raise ApiError(422, "NO_PROMPT", str(exc)) from None
    except ContextTooLargeError as exc:
        raise ApiError(422, "CONTEXT_TOO_LARGE", str(exc)) from None
    try:
        bridge = await ready_bridge(request, BOOT_WAIT_FOR_RUN)
        options = bridge.parse_options(run_input.forwarded_props if isinstance(
            run_input.forwarded_props, dict) else None)
    except OptionError as exc:
        raise ApiError(422, "INVALID_OPTION", exc.message, option=exc.option) from None
    try:
        attachments = await collect(run_input, attachment_rules(settings, bridge))
    except AttachmentError as exc:
        raise ApiError(422, "INVALID_ATTACHMENT", str(exc), part=exc.part) from None
    if not prompt.strip() and attachments:  # a message of images alone: the CLIs want some text beside them
        prompt = "See the attached files."
    try:
        run = await admit(runs, run_input, prompt, options, attachments, answers, Caller.from_headers(request.headers))
    except BaseException:
        discard_written(attachments)  # not started: nobody else removes them
        raise
    state = runs.thread(run.thread_id)
    assert state is not None
    return sse_response(request, state.log, run.first_seq - 1)


def interrupt_answers(runs: RunManager, run_input: RunAgentInput) -> Answers:
    """The run's answers to its thread's open interrupts; a 422 for an answer that answers nothing open."""
    thread_id = run_input.thread_id
    pending = runs.interrupts.pending(thread_id)
    try:
        answers = read_answers(run_input, pending, runs.interrupts.lost(thread_id))
    except ResumeError as exc:
        raise ApiError(422, exc.code, str(exc), threadId=thread_id, **exc.details) from None
    unanswered = [p.id for p in pending if p.id not in answers.given]
    if answers.given and unanswered:
        raise ApiError(422, "INTERRUPTS_UNANSWERED", f"the run answers some of the thread's open interrupts but not "
                       f"{', '.join(unanswered)}; answer every open interrupt in one run", threadId=thread_id,
                       interruptIds=unanswered)
    return answers


def run_prompt(runs: RunManager, run_input: RunAgentInput, answers: Answers) -> str:
    """The run's new user text; a run that answers interrupts may bring none (a client resuming sends its whole
    history: the user messages the thread has seen already are not new)."""
    if not answers:
        return new_user_text(run_input)
    state = runs.thread(run_input.thread_id)
    seen = state.conversation.message_ids() if state is not None else set()
    fresh = run_input.model_copy(update={"messages": [m for m in run_input.messages if m.id not in seen
                                                      and m.id not in answers.answer_message_ids]})
    try:
        return new_user_text(fresh)
    except NoPromptError:
        return ""


routes.add("POST", "/run", start_run, "Start a run; answers an SSE stream of AG-UI events", body=RUN_BODY_SCHEMA,
           media_type=SSE)
routes.add("POST", "/", start_run, "Alias of POST /run", body=RUN_BODY_SCHEMA, media_type=SSE)


@routes.post("/interrupt", body={"type": "object", "properties": {"threadId": {"type": "string"}}},
             body_required=False)
async def interrupt(request: Request) -> JSONResponse:
    """Interrupt the run of ``threadId`` (or every active run when no thread is named)."""
    runs = _runs(request)
    body = await read_body(request, limit=64 * 1024)
    thread_id = None
    if body.strip():
        data = parse_json(body)
        if not isinstance(data, dict):
            raise ApiError(422, "INVALID_REQUEST", 'the body must be a JSON object like {"threadId": "..."}')
        thread_id = data.get("threadId", data.get("thread_id"))
        if thread_id is not None and not isinstance(thread_id, str):
            raise ApiError(422, "INVALID_REQUEST", "threadId must be a string")
    if thread_id is not None:
        check_id("threadId", thread_id)
        state = runs.thread(thread_id)
        targets = [state.active] if state is not None and state.active is not None else []
        paused = [thread_id] if runs.interrupts.pending(thread_id) else []
        if not targets and not paused:
            raise ApiError(404, "NO_ACTIVE_RUN", f"thread {thread_id!r} has no run in progress")
    else:
        targets = runs.active_runs()
        paused = runs.interrupts.paused_threads()
        if not targets and not paused:
            raise ApiError(404, "NO_ACTIVE_RUN", "no run is in progress")
    refused = [p.id for thread in paused for p in runs.interrupts.refuse_all(
        thread, STOPPED_WHILE_PAUSED, stop_turn=True)]
    for run in targets:
        await runs.interrupt(run)
    body: dict[str, object] = {"interrupted": [{"threadId": r.thread_id, "runId": r.run_id} for r in targets]}
    if refused:
        body["refusedInterrupts"] = refused  # the paused turn stops; the thread's next run shows how it ended
    return JSONResponse(body)


async def between_run_frames(request: Request) -> AsyncIterator[bytes]:
    metrics = request.app.state.metrics
    metrics.sse_clients.inc()
    try:
        async for data in _runs(request).between_runs.follow():
            yield f"data: {data}\n\n".encode()
    finally:
        metrics.sse_clients.dec()


@routes.get("/events/{thread_id:path}", "Replay a thread's events, or follow the events between runs",
            query=("after",), media_type=SSE)
async def events(request: Request) -> EventSourceResponse:
    """With a cursor (``Last-Event-ID`` or ``?after=N``): replay the thread's events after N, then follow its live
    run. Without one (the platform backend's between-run listener): only events outside any run, from now on,
    with keep-alive comments, until the runner stops."""
    thread_id = request.path_params["thread_id"]
    check_id("threadId", thread_id)
    raw = request.query_params.get("after", request.headers.get("last-event-id"))
    if raw is None:
        return event_source(between_run_frames(request))
    try:
        cursor = int(raw)
        if cursor < 0:
            raise ValueError
    except ValueError:
        raise ApiError(422, "INVALID_REQUEST",
                       f"after / Last-Event-ID must be a whole number >= 0, got {raw!r}") from None
    state = _runs(request).thread(thread_id)
    if state is None:
        raise ApiError(404, "UNKNOWN_THREAD", f"no events for thread {thread_id!r} in this runner")
    return sse_response(request, state.log, cursor)

