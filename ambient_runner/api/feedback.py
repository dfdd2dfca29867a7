"""``POST /feedback``: a person's thumbs up or down, in the platform's META shape.

The platform's backend forwards the UI's ``{type: "META", metaType, payload, threadId, ts}`` and stores the JSON
object this answers as one event of the session, so the answer is an AG-UI ``RAW`` event:
``{type: "RAW", event: {name: "ambient:feedback", metaType, payload, recorded}, timestamp}``. ``recorded`` says
whether a tracing backend took the rating: it is attached to the trace of ``payload.traceId`` (else the latest run's)
as an MLflow assessment or a Langfuse score. A body that is not such a rating is
``422``. The payload (a comment, maybe a transcript) is never logged.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from ag_ui.core import EventType, RawEvent
from starlette.requests import Request
from starlette.responses import Response

from ambient_runner.api.errors import ApiError
from ambient_runner.api.routing import Routes
from ambient_runner.api.run_input import parse_json, read_body
from ambient_runner.stream.encoding import event_json
from ambient_runner.tracing.feedback import record_feedback

log = logging.getLogger(__name__)
routes = Routes()
META_TYPES = ("thumbs_up", "thumbs_down")
FEEDBACK_EVENT = "ambient:feedback"
MAX_FEEDBACK_BYTES = 4 * 1024 * 1024  # a payload may carry the transcript


TRACE_ID = re.compile(r"(tr-)?[0-9a-f]{32}")


def _check(data: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(data, dict):
        raise ApiError(422, "INVALID_FEEDBACK", "the body must be a JSON object (a META event)")
    if data.get("type", "META") != "META":
        raise ApiError(422, "INVALID_FEEDBACK", f"type must be META (got {data.get('type')!r})")
    meta_type = data.get("metaType")
    if meta_type not in META_TYPES:
        raise ApiError(422, "INVALID_FEEDBACK", f"metaType must be one of {', '.join(META_TYPES)} "
                                                f"(got {meta_type!r})")
    payload = data.get("payload", {})
    if not isinstance(payload, dict):
        raise ApiError(422, "INVALID_FEEDBACK", "payload must be a JSON object")
    trace_id = payload.get("traceId")
    if trace_id not in (None, "") and not (isinstance(trace_id, str) and TRACE_ID.fullmatch(trace_id)):
        raise ApiError(422, "INVALID_FEEDBACK", "payload.traceId must be a trace id (32 hex digits, maybe after tr-)")
    return meta_type, payload


@routes.post("/feedback", "A person's thumbs up or down", body={
    "type": "object", "required": ["metaType"], "properties": {
        "type": {"const": "META"}, "metaType": {"enum": list(META_TYPES)}, "payload": {"type": "object"},
        "threadId": {"type": "string"}}})
async def feedback(request: Request) -> Response:
    data = parse_json(await read_body(request, limit=MAX_FEEDBACK_BYTES))
    meta_type, payload = _check(data)
    thread_id = data.get("threadId") if isinstance(data.get("threadId"), str) else None
    log.info("feedback %s for message %s", meta_type, str(payload.get("messageId", "?"))[:128])
    tracer = request.app.state.tracer
    trace_id = str(payload.get("traceId") or "") or (  # the rated run's trace: named, else its thread's latest
        (tracer.trace_ids.get(thread_id) if thread_id else None) or tracer.last_trace_id
        if tracer is not None else None)
    recorded = False
    if tracer is not None and trace_id:
        recorded = await record_feedback(
            tracer, trace_id.removeprefix("tr-"), meta_type == "thumbs_up", comment=str(payload.get("comment") or ""),
            user=str(payload.get("userId") or ""),
            metadata={k: payload[k] for k in ("messageId", "sessionName", "projectName") if payload.get(k)})
    event = RawEvent(type=EventType.RAW, timestamp=int(time.time() * 1000),
                     event={"name": FEEDBACK_EVENT, "metaType": meta_type, "payload": payload, "recorded": recorded})
    return Response(event_json(event, request.app.state.runs.redactor), media_type="application/json")
