"""Spans of every run: one per run (``invoke_agent``), children for each tool call (``execute_tool``) and each model
request through the runner's model proxy (``chat``), with the ``gen_ai.*`` semantic conventions.

A batch processor with a bounded queue per destination exports them in the background: nothing here waits on a
backend, and an exporter that cannot reach its backend drops spans and logs once. Prompts, outputs and tool arguments
go into spans only with ``RUNNER_TRACE_CONTENT=true``, redacted like every event; credentials never.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ag_ui.core import (
    BaseEvent,
    EventType,
    RawEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, Status, StatusCode

from ambient_runner.model_proxy.server import ModelExchange
from ambient_runner.runs.manager import ActiveRun
from ambient_runner.stream.encoding import Redactor
from ambient_runner.tracing.destinations import Destination
from ambient_runner.tracing.model_usage import token_usage

log = logging.getLogger(__name__)
QUEUE_SPANS = 2048  # per destination; beyond it spans are dropped, never waited for
EXPORT_TIMEOUT_S = 5.0  # one export (retries included); also what a stopping runner may wait for a dead backend
MAX_CONTENT_CHARS = 16 * 1024


class _LogOnce(SpanExporter):
    """An exporter that says once that its backend is unreachable (and once when it answers again)."""

    def __init__(self, name: str, inner: SpanExporter) -> None:
        self.name, self.inner, self.failing = name, inner, False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # the SDK's own exporter returns FAILURE; anything else is treated alike
            log.debug("trace export to %s raised %s", self.name, type(exc).__name__)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE and not self.failing:
            log.warning("traces to %s cannot be exported; spans are dropped until it answers", self.name)
        elif result is SpanExportResult.SUCCESS and self.failing:
            log.info("traces to %s are exported again", self.name)
        self.failing = result is SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


@dataclass
class _RunSpans:
    run: Span
    tools: dict[str, Span] = field(default_factory=dict)
    tool_names: dict[str, str] = field(default_factory=dict)
    tool_args: dict[str, list[str]] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)


class RunTracer:
    """A ``RunObserver`` (``RunManager.observers``) and a model-proxy listener that turn runs into spans."""

    def __init__(self, destinations: Sequence[Destination], *, runner_type: str, session_id: str,
                 service_name: str = "ambient-runner", trace_content: bool = False,
                 redactor: Redactor | None = None) -> None:
        resource = Resource.create({"service.name": service_name, "ambient.runner_type": runner_type,
                                    "ambient.session_id": session_id})
        self.provider = TracerProvider(resource=resource)  # the sampler comes from OTEL_TRACES_SAMPLER
        for destination in destinations:
            exporter = OTLPSpanExporter(endpoint=destination.endpoint, headers=destination.headers,
                                        timeout=EXPORT_TIMEOUT_S)
            self.provider.add_span_processor(BatchSpanProcessor(
                _LogOnce(destination.name, exporter), max_queue_size=QUEUE_SPANS, schedule_delay_millis=1000,
                export_timeout_millis=int(EXPORT_TIMEOUT_S * 1000)))
        self.destinations = list(destinations)
        self.tracer = self.provider.get_tracer("ambient-runner")
        self.runner_type = runner_type
        self.trace_content = trace_content
        # The runner's one redactor, extended in place once the bridge's credentials are known.
        self._redactor = redactor if redactor is not None else Redactor(())
        self._runs: dict[int, _RunSpans] = {}  # id(run) -> its open spans (a client may reuse a run id)
        self._wanted = frozenset({EventType.TOOL_CALL_START, EventType.TOOL_CALL_RESULT, EventType.RUN_ERROR,
                                  EventType.RUN_FINISHED, *((EventType.TOOL_CALL_ARGS, EventType.TEXT_MESSAGE_CONTENT)
                                                            if trace_content else ())})
        self.last_trace_id: str | None = None  # the latest run's, for feedback that names no thread
        self.trace_ids: dict[str, str] = {}  # thread id -> its latest run's trace id

    # ----- RunObserver -----------------------------------------------------------------------------------
    def run_started(self, run: ActiveRun) -> list[BaseEvent]:
        turn = run.turn
        model = turn.options.model or ""
        span = self.tracer.start_span(f"invoke_agent {self.runner_type}", kind=trace.SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": self.runner_type,
            "gen_ai.conversation.id": run.thread_id, "ambient.run_id": run.run_id, "session.id": run.thread_id,
            **({"gen_ai.request.model": model} if model else {}),
            **({"gen_ai.input.messages": self._content(turn.prompt)} if self.trace_content else {})})
        self._runs[id(run)] = _RunSpans(span)
        trace_id = format(span.get_span_context().trace_id, "032x")
        self.last_trace_id = self.trace_ids[run.thread_id] = trace_id
        return [RawEvent(event={"type": "langfuse_trace", "traceId": trace_id}, source="ambient-runner/tracing")]

    def run_event(self, run: ActiveRun, event: BaseEvent) -> None:
        if event.type not in self._wanted:  # most events (text deltas) change no span: the cheapest test first
            return
        spans = self._runs.get(id(run))
        if spans is None:
            return
        try:
            self._on_event(spans, event)
        except Exception:  # tracing never breaks a run
            log.exception("tracing run %s failed on %s", run.run_id, event.type)

    def run_settled(self, run: ActiveRun) -> None:
        spans = self._runs.pop(id(run), None)
        if spans is None:
            return
        for call_id in list(spans.tools):
            self._end_tool(spans, call_id, error="the run ended before the tool call did")
        if self.trace_content and spans.output:
            spans.run.set_attribute("gen_ai.output.messages", self._content("".join(spans.output)))
        spans.run.end()

    # ----- the model proxy -------------------------------------------------------------------------------
    def model_exchange(self, exchange: ModelExchange) -> None:
        """A child of the run it belongs to when one run is open; with several open (threads at once) the proxy
        cannot tell whose it is, and the request is a trace of its own rather than a wrong run's."""
        open_runs = list(self._runs.values())
        parent = trace.set_span_in_context(open_runs[0].run) if len(open_runs) == 1 else Context()
        span = self.tracer.start_span(f"chat {exchange.host}", context=parent, kind=trace.SpanKind.CLIENT,
                                      start_time=exchange.started_ns, attributes={
                                          "gen_ai.operation.name": "chat", "server.address": exchange.host,
                                          "http.request.method": exchange.method, "url.path": exchange.path})
        if exchange.status is not None:
            span.set_attribute("http.response.status_code", exchange.status)
        if exchange.first_byte_ns is not None:
            span.set_attribute("ambient.first_byte_ms", (exchange.first_byte_ns - exchange.started_ns) / 1e6)
        for attribute, value in token_usage(exchange.sample).items():
            span.set_attribute(attribute, value)
        if exchange.status is None or exchange.status >= 400:
            span.set_status(Status(StatusCode.ERROR, "unreachable" if exchange.status is None
                                   else f"HTTP {exchange.status}"))
        span.end(end_time=exchange.ended_ns)

    # ----- other work ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def operation(self, name: str, run: object = None, **attributes: str) -> Iterator[Span]:
        """A span for the runner's own work (the CLI's start, a state sync), a child of ``run``'s span when it
        is open (``run``: the ``ActiveRun``, known by identity only); ended with an error status when the work
        raises."""
        spans = self._runs.get(id(run)) if run is not None else None
        parent = trace.set_span_in_context(spans.run) if spans is not None else Context()
        span = self.tracer.start_span(name, context=parent, attributes=attributes)  # never the current span
        try:
            yield span
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            span.end()

    # ----- lifecycle -------------------------------------------------------------------------------------
    def shutdown(self, timeout: float = 5.0) -> None:
        """Export what is queued (bounded), then stop the exporters."""
        for spans in list(self._runs.values()):
            for call_id in list(spans.tools):
                self._end_tool(spans, call_id, error="the runner stopped")
            spans.run.end()
        self._runs.clear()
        self.provider.force_flush(int(timeout * 1000))
        self.provider.shutdown()

    # ----- helpers ---------------------------------------------------------------------------------------
    def _on_event(self, spans: _RunSpans, event: BaseEvent) -> None:
        kind = event.type
        if isinstance(event, ToolCallStartEvent):
            call_id, name = event.tool_call_id, event.tool_call_name
            spans.tool_names[call_id] = name
            spans.tools[call_id] = self.tracer.start_span(
                f"execute_tool {name}", context=trace.set_span_in_context(spans.run), attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    **({"ambient.subagent_run_id": sub} if (sub := getattr(event, "subagent_run_id", None)) else {})})
        elif isinstance(event, ToolCallArgsEvent) and self.trace_content:
            spans.tool_args.setdefault(event.tool_call_id, []).append(event.delta)
        elif isinstance(event, ToolCallResultEvent):
            content = str(event.content)
            failed = content.startswith(("Tool error", "Error:"))
            call_id = event.tool_call_id
            # The failure's text is content: in the span only with RUNNER_TRACE_CONTENT.
            reason = (self._content(content)[:200] if self.trace_content else "the tool call failed") if failed \
                else None
            self._end_tool(spans, call_id, error=reason, result=content)
        elif isinstance(event, TextMessageContentEvent) and self.trace_content:
            spans.output.append(event.delta)
        elif kind == EventType.RUN_ERROR:
            code = getattr(event, "code", None) or "ERROR"
            spans.run.set_attribute("ambient.outcome", "error")
            spans.run.set_attribute("error.type", code)
            message = self._redactor(str(getattr(event, "message", "")))[:500]
            spans.run.set_status(Status(StatusCode.ERROR, f"{code}: {message}"))
            self._usage(spans.run, getattr(event, "usage", None))
        elif kind == EventType.RUN_FINISHED:
            outcome = getattr(getattr(event, "outcome", None), "type", None) or "success"
            spans.run.set_attribute("ambient.outcome", outcome)
            if outcome == "cancelled":
                spans.run.set_status(Status(StatusCode.ERROR, "cancelled"))
            self._usage(spans.run, getattr(event, "usage", None))

    def _end_tool(self, spans: _RunSpans, call_id: str, *, error: str | None = None, result: str = "") -> None:
        span = spans.tools.pop(call_id, None)
        if span is None:
            return
        if self.trace_content:
            arguments = "".join(spans.tool_args.pop(call_id, []))
            span.set_attribute("gen_ai.tool.call.arguments", self._content(arguments))
            span.set_attribute("gen_ai.tool.call.result", self._content(result))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, self._redactor(error)))
        span.end()

    def _usage(self, span: Span, usage: Iterable[object] | None) -> None:
        for entry in usage or ():
            for attribute, name in (("gen_ai.usage.input_tokens", "input_tokens"),
                                    ("gen_ai.usage.output_tokens", "output_tokens")):
                value = getattr(entry, name, None)
                if isinstance(value, int):
                    span.set_attribute(attribute, value)
            model = getattr(entry, "model", None)
            if model:
                span.set_attribute("gen_ai.response.model", model)

    def _content(self, text: str) -> str:
        return self._redactor(text)[:MAX_CONTENT_CHARS]  # redacted first: a cut never splits a secret open
