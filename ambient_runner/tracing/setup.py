"""Turning tracing on once the runner has booted: the destinations from the environment (MLflow's experiment
resolved), one ``RunTracer`` observing every run and the model proxy's requests. Nothing configured: ``None``, and no
tracer, exporter or thread exists."""

from __future__ import annotations

import asyncio
import logging
import os

from ambient_runner.bridge.contract import Bridge
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.tracing.destinations import destinations, resolve_mlflow
from ambient_runner.tracing.tracer import RunTracer

log = logging.getLogger(__name__)
SHUTDOWN_FLUSH = 3.0  # s the last spans may take to export when the runner stops


async def start_tracing(settings: RunnerSettings, runs: RunManager, bridge: Bridge | None) -> RunTracer | None:
    found = []
    for destination in destinations():
        if destination.name == "mlflow":
            destination = await resolve_mlflow(destination)
        if destination is not None:
            found.append(destination)
    if not found:
        return None
    tracer = RunTracer(found, runner_type=settings.runner_type, session_id=settings.session_id,
                       service_name=os.environ.get("OTEL_SERVICE_NAME", "").strip() or "ambient-runner",
                       trace_content=settings.runner_trace_content, redactor=runs.redactor)
    runs.observers.append(tracer)
    proxy = bridge.model_proxy if bridge is not None else None
    if proxy is not None:
        proxy.listeners.append(tracer.model_exchange)
    log.info("tracing to %s", ", ".join(d.name for d in found))
    return tracer


async def stop_tracing(tracer: RunTracer | None, runs: RunManager) -> None:
    if tracer is None:
        return
    if tracer in runs.observers:
        runs.observers.remove(tracer)
    await asyncio.to_thread(tracer.shutdown, SHUTDOWN_FLUSH)
