"""A person's rating attached to a run's trace through its backend's own API (OTLP cannot add to a finished trace):
an MLflow assessment, a Langfuse score. Returns whether any backend took it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx

from ag_ui_cli_common.json_types import JsonObject

if TYPE_CHECKING:
    from ambient_runner.tracing.tracer import RunTracer

log = logging.getLogger(__name__)
FEEDBACK_NAME = "user-feedback"
TIMEOUT = 10.0


async def record_feedback(tracer: RunTracer, trace_id: str, positive: bool, *, comment: str = "",
                          user: str = "", metadata: Mapping[str, object] | None = None) -> bool:
    """``trace_id``: the 32-hex OpenTelemetry id the run's ``langfuse_trace`` event carried."""
    await asyncio.to_thread(tracer.provider.force_flush, int(TIMEOUT * 1000))  # MLflow wants the trace first
    recorded = False
    async with httpx.AsyncClient(timeout=TIMEOUT, trust_env=False) as client:
        for destination in tracer.destinations:
            try:
                if destination.name == "mlflow":
                    assessment: JsonObject = {
                        "assessment_name": FEEDBACK_NAME, "trace_id": f"tr-{trace_id}",
                        "source": {"source_type": "HUMAN", "source_id": user or "ambient-user"},
                        "feedback": {"value": positive}, "metadata": {k: str(v) for k, v in (metadata or {}).items()}}
                    if comment:
                        assessment["rationale"] = comment
                    response = await client.post(
                        f"{destination.tracking_uri}/api/3.0/mlflow/traces/tr-{trace_id}/assessments",
                        json={"assessment": assessment}, headers=destination.headers)
                elif destination.name == "langfuse":
                    response = await client.post(
                        f"{destination.tracking_uri}/api/public/scores",
                        headers={"Authorization": destination.headers["Authorization"]},
                        json={"traceId": trace_id, "name": FEEDBACK_NAME, "value": 1 if positive else 0,
                              "dataType": "BOOLEAN", "comment": comment or None, "metadata": metadata or {}})
                else:
                    continue
                response.raise_for_status()
                recorded = True
            except httpx.HTTPError as exc:
                log.warning("feedback to %s not recorded (%s)", destination.name, type(exc).__name__)
    return recorded
