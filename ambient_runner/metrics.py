"""Prometheus metrics of one runner process (its own registry, exposed by ``GET /metrics``)."""

from __future__ import annotations

from ag_ui.core import TokenUsage
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ambient_runner.stream.outcome import RunOutcome


class RunnerMetrics:
    def __init__(self, runner_type: str) -> None:
        self.registry = CollectorRegistry()
        self.runner_type = runner_type
        labels = {"runner": runner_type}
        self.runs_started = Counter("ambient_runs_started_total", "Runs started", ["runner"],
                                    registry=self.registry).labels(**labels)
        self._runs_finished = Counter("ambient_runs_finished_total", "Runs ended, by outcome",
                                      ["runner", "outcome"], registry=self.registry)
        self.active_runs = Gauge("ambient_active_runs", "Runs in progress", ["runner"],
                                 registry=self.registry).labels(**labels)
        self.run_seconds = Histogram("ambient_run_duration_seconds", "Run duration", ["runner"],
                                     buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
                                     registry=self.registry).labels(**labels)
        self.events = Counter("ambient_events_total", "AG-UI events emitted", ["runner"],
                              registry=self.registry).labels(**labels)
        self._tokens = Counter("ambient_tokens_total", "Tokens reported by the agent", ["runner", "kind"],
                               registry=self.registry)
        self.sse_clients = Gauge("ambient_sse_clients", "Connected SSE clients", ["runner"],
                                 registry=self.registry).labels(**labels)
        self.interrupt_escalations = Counter(
            "ambient_interrupt_escalations_total",
            "Interrupts the agent did not honour within RUNNER_INTERRUPT_GRACE (its stream was cancelled)",
            ["runner"], registry=self.registry).labels(**labels)
        self._state_syncs = Counter("ambient_state_syncs_total", "State-dir syncs to the store, by result",
                                    ["runner", "result"], registry=self.registry)

        self._upstream_requests = Counter(
            "ambient_model_upstream_requests_total", "Model API requests the model proxy forwarded, by status class "
            "(2xx..5xx, or unreachable)", ["runner", "status"], registry=self.registry)
        self.upstream_seconds = Histogram(
            "ambient_model_upstream_seconds", "Model API request time through the proxy, to the end of the response",
            ["runner"], buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=self.registry,
        ).labels(**labels)

    def model_upstream(self, status_class: str, seconds: float) -> None:
        self._upstream_requests.labels(runner=self.runner_type, status=status_class).inc()
        self.upstream_seconds.observe(seconds)

    def run_started(self) -> None:
        self.runs_started.inc()
        self.active_runs.inc()

    def run_finished(self, outcome: RunOutcome | None, seconds: float, usage: list[TokenUsage] | None) -> None:
        self.active_runs.dec()
        self._runs_finished.labels(runner=self.runner_type, outcome=outcome or "error").inc()
        self.run_seconds.observe(seconds)
        for entry in usage or ():
            for kind in ("input_tokens", "output_tokens"):
                value = getattr(entry, kind, None)
                if value:
                    self._tokens.labels(runner=self.runner_type, kind=kind.removesuffix("_tokens")).inc(value)

    def state_sync(self, result: str) -> None:
        self._state_syncs.labels(runner=self.runner_type, result=result).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
