"""Spans of the runner's own work with the fake CLI (no model, no real CLI): a state sync after a run is a child of
the run's span; a tool call the agent made is a child too, failed when its result says so; the run's trace id is on
the stream; a run interrupted by a person ends its span as cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harness import RunnerHarness
from otlp_receiver import otlp_receiver
from process_bridge import FakeCliBridge, script
from runners import wait_for


def emit(**event: object) -> dict:
    return {"emit": event}


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGFUSE_ENABLED", "MLFLOW_TRACING_ENABLED", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


async def flushed(runner: RunnerHarness) -> None:
    tracer = runner.app.runtime.tracer
    await wait_for(lambda: not tracer._runs, 30, "the run's span to end")
    assert tracer.provider.force_flush(10_000)


async def test_state_sync_and_tool_spans_are_children_of_the_run(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with otlp_receiver() as backend:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", backend.url)
        async with RunnerHarness(FakeCliBridge(tmp_path), with_state_sync=True,
                                 state_store_url=f"file://{tmp_path / 'store'}") as runner:
            events = await runner.run("t1", script(
                emit(type="TOOL_CALL_START", toolCallId="c1", toolCallName="shell"),
                emit(type="TOOL_CALL_END", toolCallId="c1"),
                emit(type="TOOL_CALL_RESULT", messageId="r1", toolCallId="c1", content="Tool error: exit 1"),
                {"text": "done"}))
            await flushed(runner)
    trace_id = events[1]["event"]["traceId"]
    assert events[1]["type"] == "RAW" and events[1]["event"]["type"] == "langfuse_trace"
    spans = {s.name: s for s in backend.spans if s.trace_id == trace_id}
    run = spans["invoke_agent gemini-cli"]
    assert spans["ambient.state_sync"].parent_span_id == run.span_id
    assert spans["ambient.state_sync"].attributes["store"].startswith("file://")
    tool = spans["execute_tool shell"]
    assert tool.parent_span_id == run.span_id and tool.status_code == 2  # failed, by its result
    assert run.attributes["ambient.outcome"] == "success" and run.status_code == 0


async def test_an_interrupted_run_ends_its_span_as_cancelled(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with otlp_receiver() as backend:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", backend.url)
        async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
            run = asyncio.create_task(runner.run("t2", script({"text": "working"}, {"sleep": 30})))
            await wait_for(lambda: runner.app.runtime.runs.active_runs(), 30, "the run to start")
            await wait_for(lambda: runner.app.runtime.tracer._runs, 30, "its span")
            assert (await runner.client.post("/interrupt", json={"threadId": "t2"})).status_code == 200
            events = await run
            await flushed(runner)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    (span,) = [s for s in backend.spans if s.name.startswith("invoke_agent")]
    assert span.attributes["ambient.outcome"] == "cancelled" and span.status_code == 2
