"""Traces in a real MLflow tracking server (3.17, SQLite, on 127.0.0.1, started here), with the real Gemini CLI on
its scripted model, read back through MLflow's own REST API: the experiment named by ``MLFLOW_EXPERIMENT_NAME`` is
created, a run with a tool call is one trace with its run, model-request and tool spans and their attributes and no
secret in any of them; an error run and an interrupted run end their spans with that status; a thumbs-up through
``/feedback`` is the trace's assessment."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow_server import MlflowServer, attributes
from runner_kits import clean_credentials, runner_kit
from runners import wait_for

pytestmark = pytest.mark.real_cli
EXPERIMENT = "ambient-runner-tests"


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path_factory.mktemp("mlflow")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, mlflow: MlflowServer) -> None:
    clean_credentials(monkeypatch)
    for name in ("LANGFUSE_ENABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_TRACING_ENABLED", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow.url)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", EXPERIMENT)


def trace_id_of(events: list[dict]) -> str:
    (raw,) = [e for e in events if e["type"] == "RAW" and e["event"].get("type") == "langfuse_trace"]
    return "tr-" + raw["event"]["traceId"]


async def flushed(kit) -> None:
    tracer = kit.runner.app.runtime.tracer
    await wait_for(lambda: not tracer._runs, 30, "the run's span to end")
    assert tracer.provider.force_flush(10_000)


async def test_runs_are_traces_in_mlflow(tmp_path: Path, mlflow: MlflowServer, isolated_network: None) -> None:
    async with runner_kit("gemini-cli", tmp_path) as kit:
        events = await kit.runner.run("t-tool", "Create out.txt with hello")  # a run waits for the boot
        assert [d.name for d in kit.runner.app.runtime.tracer.destinations] == ["mlflow"]
        placeholder = kit.bridge.model_proxy.placeholder
        await flushed(kit)
        feedback = await kit.runner.client.post("/feedback", json={
            "type": "META", "metaType": "thumbs_up", "payload": {"userId": "ada", "comment": "spot on",
                                                                  "messageId": "m-1"}})

        kit.model_server.mode = "error500"
        failed = await kit.runner.run("t-error", "NOTOOL hello")
        kit.model_server.mode = None
        slow = asyncio.create_task(kit.runner.run("t-stop", "SLOW please"))
        await wait_for(lambda: kit.runner.app.runtime.runs.active_runs(), 30, "the slow run")
        assert (await kit.runner.client.post("/interrupt", json={"threadId": "t-stop"})).status_code == 200
        stopped = await slow
        await flushed(kit)

    experiment = mlflow.experiment_id(EXPERIMENT)  # created by the runner
    tool_trace = trace_id_of(events)
    found = {t["trace_id"]: t for t in mlflow.traces(experiment)}
    assert tool_trace in found and found[tool_trace]["state"] == "OK"

    trace = mlflow.trace(tool_trace)
    spans = {s["name"]: s for s in trace["spans"]}
    run = spans["invoke_agent gemini-cli"]
    tools = [s for name, s in spans.items() if name.startswith("execute_tool ")]
    models = [s for name, s in spans.items() if name.startswith("chat ")]
    assert len(tools) == 1 and models
    assert all(s["parent_span_id"] == run["span_id"] for s in [*tools, *models])
    run_attributes = attributes(run)
    assert run_attributes["gen_ai.conversation.id"] == "t-tool" and run_attributes["ambient.outcome"] == "success"
    assert run_attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes(tools[0])["gen_ai.tool.name"] == "run_shell_command"
    assert all(attributes(m)["http.response.status_code"] == 200 for m in models)
    assert placeholder not in json.dumps(trace) and "gen_ai.input.messages" not in run_attributes

    assert feedback.json()["event"]["recorded"] is True
    (assessment,) = found[tool_trace]["assessments"] if found[tool_trace].get("assessments") else \
        mlflow.trace(tool_trace)["trace_info"]["assessments"]
    assert assessment["assessment_name"] == "user-feedback" and assessment["feedback"]["value"] is True
    assert assessment["source"]["source_type"] == "HUMAN" and assessment["source"]["source_id"] == "ada"
    assert assessment["rationale"] == "spot on"

    assert failed[-1]["type"] == "RUN_ERROR"
    error_trace = mlflow.trace(trace_id_of(failed))
    assert error_trace["trace_info"]["state"] == "ERROR"
    (error_run,) = [s for s in error_trace["spans"] if s["name"].startswith("invoke_agent")]
    assert error_run["status"]["code"] == "STATUS_CODE_ERROR"
    assert error_run["status"]["message"].startswith(f"{failed[-1]['code']}: ")

    assert stopped[-1]["outcome"] == {"type": "cancelled"}
    stopped_trace = mlflow.trace(trace_id_of(stopped))
    (stopped_run,) = [s for s in stopped_trace["spans"] if s["name"].startswith("invoke_agent")]
    assert attributes(stopped_run)["ambient.outcome"] == "cancelled"
    assert stopped_run["status"]["code"] == "STATUS_CODE_ERROR" and stopped_run["status"]["message"] == "cancelled"
