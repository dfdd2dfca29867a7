"""Turning tracing on once the runner has booted: the destinations from the settings (MLflow's experiment
resolved), one ``RunTracer`` observing every run and the model proxy's requests. Nothing configured: ``None``, and no
tracer, exporter or thread exists."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from ambient_runner.bridges.contract import Bridge
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.tracing.destinations import destinations, resolve_mlflow

if TYPE_CHECKING:  # the OpenTelemetry SDK is imported only when a destination is configured
    from ambient_runner.tracing.tracer import RunTracer

log = logging.getLogger(__name__)
SHUTDOWN_FLUSH = 3.0  # s the last spans may take to export when the runner stops


async def start_tracing(settings: RunnerSettings, runs: RunManager) -> RunTracer | None:
    found = []
    for configured in destinations(settings.tracing):
        destination = await resolve_mlflow(configured) if configured.name == "mlflow" else configured
        if destination is not None:
            found.append(destination)
    if not found:
        return None
    from ambient_runner.tracing.tracer import RunTracer

    tracer = RunTracer(found, runner_type=settings.runner_type, session_id=settings.session_id,
                       service_name=settings.otel_service_name.strip() or "ambient-runner",
                       trace_content=settings.runner_trace_content, redactor=runs.redactor)
    runs.observers.append(tracer)
    log.info("tracing to %s", ", ".join(d.name for d in found))
    return tracer


def trace_model_requests(tracer: RunTracer | None, bridge: Bridge) -> None:
    """Every request through the bridge's model proxy (started with the bridge) as a span of its run."""
    if tracer is not None and bridge.model_proxy is not None:
        bridge.model_proxy.listeners.append(tracer.model_exchange)


def operation(tracer: RunTracer | None, name: str, run: object = None,
              **attributes: str) -> contextlib.AbstractContextManager[object]:
    """``tracer.operation`` when tracing is on, else nothing."""
    return tracer.operation(name, run, **attributes) if tracer is not None else contextlib.nullcontext()


async def stop_tracing(tracer: RunTracer | None, runs: RunManager) -> None:
    if tracer is None:
        return
    if tracer in runs.observers:
        runs.observers.remove(tracer)
    await asyncio.to_thread(tracer.shutdown, SHUTDOWN_FLUSH)
