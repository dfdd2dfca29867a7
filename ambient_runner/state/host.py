"""What state sync reads of the runner: the runtime ``create_app`` builds (``ambient_runner.runtime``), declared here
so that the layer below never imports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ambient_runner.bridges.contract import Bridge
    from ambient_runner.metrics import RunnerMetrics
    from ambient_runner.runs.manager import RunManager
    from ambient_runner.tracing.tracer import RunTracer


class StateHost(Protocol):
    """What state sync reads of the runtime ``create_app`` builds (``ambient_runner.runtime``)."""

    @property
    def bridge(self) -> Bridge | None: ...
    @property
    def runs(self) -> RunManager: ...
    @property
    def metrics(self) -> RunnerMetrics: ...
    @property
    def tracer(self) -> RunTracer | None: ...
    @property
    def readiness_checks(self) -> list[Callable[[], str | None]]: ...
