"""The runner's objects, typed: ``create_app`` builds one ``Runtime`` and hands it on explicitly, to the API's
dependencies (``api/routing.py``), to ``Boot`` (which fills the bridge and tracer slots) and to the start-up
extensions (state sync). Nothing else writes the app's state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

from ambient_runner.boot import Boot
from ambient_runner.bridges.contract import Bridge
from ambient_runner.metrics import RunnerMetrics
from ambient_runner.runs.manager import RunManager
from ambient_runner.settings import RunnerSettings
from ambient_runner.workspace.paths import Workspace
from ambient_runner.workspace.repos import Repositories
from ambient_runner.workspace.workflows import Workflows

if TYPE_CHECKING:  # OpenTelemetry is imported only when a trace destination is configured
    from ambient_runner.tracing.tracer import RunTracer

ReadinessCheck = Callable[[], str | None]  # a problem in words, or None


@dataclass(eq=False)
class Runtime:
    settings: RunnerSettings
    runs: RunManager
    boot: Boot
    metrics: RunnerMetrics
    workspace: Workspace
    repos: Repositories
    workflows: Workflows
    on_workflow_change: Callable[[], Awaitable[None]]  # after POST /workflow changed the active workflow
    bridge: Bridge | None = None  # set by Boot when it is imported after start
    tracer: RunTracer | None = None  # a RunTracer once booted, when a trace destination is configured
    readiness_checks: list[ReadinessCheck] = field(default_factory=list)  # what /ready asks besides the bridge


def runtime_of(connection: HTTPConnection) -> Runtime:
    """The Runtime of the app serving ``connection`` (``RunnerApp.runtime``)."""
    runtime = connection.app.runtime
    assert isinstance(runtime, Runtime)
    return runtime
