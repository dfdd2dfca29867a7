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
import time
from typing import Literal

from ag_ui.core import EventType, RawEvent
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from ag_ui_cli_common.errors import ErrorCode
from ambient_runner.api.routing import Runs, RuntimeState, body_rules, router
from ambient_runner.stream.encoding import event_json
from ambient_runner.tracing.feedback import record_feedback

log = logging.getLogger(__name__)
routes = router()
FEEDBACK_EVENT = "ambient:feedback"
MAX_FEEDBACK_BYTES = 4 * 1024 * 1024  # a payload may carry the transcript
TRACE_ID = r"^(tr-)?[0-9a-f]{32}$"


class FeedbackPayload(BaseModel):
    model_config = ConfigDict(extra="allow")
    traceId: str | None = Field(None, pattern=TRACE_ID, description="the rated run's trace")  # noqa: N815
    messageId: str | None = None  # noqa: N815
    comment: str | None = None
    userId: str | None = None  # noqa: N815


class Feedback(BaseModel):
    """The UI's META event, as the platform's backend forwards it."""

    model_config = ConfigDict(extra="ignore")
    type: Literal["META"] = "META"
    metaType: Literal["thumbs_up", "thumbs_down"]  # noqa: N815
    payload: FeedbackPayload = Field(default_factory=FeedbackPayload)
    threadId: str | None = None  # noqa: N815


@routes.post("/feedback", summary="A person's thumbs up or down", response_class=Response,
             responses={200: {"content": {"application/json": {}}, "description": "the RAW event stored"}})
@body_rules(limit=MAX_FEEDBACK_BYTES, invalid_code=ErrorCode.INVALID_FEEDBACK,
            invalid_message="the body is not a rating (a META event with metaType thumbs_up or thumbs_down)")
async def feedback(body: Feedback, runtime: RuntimeState, runs: Runs) -> Response:
    """Answered with the AG-UI ``RAW`` event the backend stores; ``recorded`` says whether a trace took it."""
    payload = body.payload.model_dump(exclude_none=True)
    log.info("feedback %s for message %s", body.metaType, str(payload.get("messageId", "?"))[:128])
    tracer = runtime.tracer
    trace_id = str(payload.get("traceId") or "") or (  # the rated run's trace: named, else its thread's latest
        (tracer.trace_ids.get(body.threadId) if body.threadId else None) or tracer.last_trace_id
        if tracer is not None else None)
    recorded = False
    if tracer is not None and trace_id:
        recorded = await record_feedback(
            tracer, trace_id.removeprefix("tr-"), body.metaType == "thumbs_up",
            comment=str(payload.get("comment") or ""),
            user=str(payload.get("userId") or ""),
            metadata={k: payload[k] for k in ("messageId", "sessionName", "projectName") if payload.get(k)})
    event = RawEvent(type=EventType.RAW, timestamp=int(time.time() * 1000), event={
        "name": FEEDBACK_EVENT, "metaType": body.metaType, "payload": payload, "recorded": recorded})
    return Response(event_json(event, runs.redactor), media_type="application/json")

