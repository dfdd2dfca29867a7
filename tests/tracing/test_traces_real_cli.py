"""Traces of runs with the real Gemini CLI on its scripted model, exported to a trace backend on 127.0.0.1 that
decodes the OTLP protobuf: the Langfuse mapping (endpoint path, Basic auth, ingestion header), one trace per run with
the run, model-request and tool spans and their attributes, no credential in any of them, the trace id on the stream
as the platform's UI reads it, an error run's span with its status, feedback as a Langfuse score of that trace; and
with nothing configured no tracer at all."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from otlp_receiver import otlp_receiver
from runner_kits import clean_credentials, runner_kit
from runners import wait_for

pytestmark = pytest.mark.real_cli

PUBLIC, SECRET = "pk-lf-public-1234", "sk-lf-secret-9876"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_credentials(monkeypatch)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "MLFLOW_TRACING_ENABLED"):
        monkeypatch.delenv(name, raising=False)


def langfuse(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("LANGFUSE_ENABLED", "true")
    monkeypatch.setenv("LANGFUSE_HOST", url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)


def trace_id_of(events: list[dict]) -> str:
    (raw,) = [e for e in events if e["type"] == "RAW" and e["event"].get("type") == "langfuse_trace"]
    return raw["event"]["traceId"]


async def flushed(kit) -> None:
    tracer = kit.runner.app.runtime.tracer
    await wait_for(lambda: not tracer._runs, 30, "the run's span to end")
    assert tracer.provider.force_flush(10_000)


async def test_a_run_with_a_tool_call_is_one_trace_in_langfuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                isolated_network: None) -> None:
    with otlp_receiver() as backend:
        langfuse(monkeypatch, backend.url)
        async with runner_kit("gemini-cli", tmp_path, runner_trace_content=True) as kit:
            events = await kit.runner.run("t-trace", "Create out.txt with hello")
            placeholder = kit.bridge.model_proxy.placeholder  # the key the CLI holds instead of the real one
            # A credential the runner learns only once the bridge has started (its model proxy's upstream key), in
            # content that goes into a span.
            (upstream_key,) = kit.bridge.model_proxy.secrets()
            leaky = await kit.runner.run("t-leak", f"NOTOOL my key is {upstream_key}")
            await flushed(kit)
            caps = (await kit.runner.client.get("/capabilities")).json()
            feedback = await kit.runner.client.post("/feedback", json={  # the thread's run, not the latest run
                "type": "META", "metaType": "thumbs_up", "threadId": "t-trace",
                "payload": {"userId": "ada", "comment": "nice"}})
    assert events[-1]["type"] == "RUN_FINISHED"
    assert leaky[-1]["type"] == "RUN_FINISHED"
    paths = {path for path, _, _ in backend.requests}
    assert paths == {"/api/public/otel/v1/traces", "/api/public/scores"}
    for path, headers, _ in backend.requests:
        assert headers["authorization"] == "Basic " + base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()
        if path.endswith("/traces"):
            assert headers["x-langfuse-ingestion-version"] == "4"
            assert headers["content-type"] == "application/x-protobuf"

    trace_id = trace_id_of(events)
    assert events[1]["type"] == "RAW" and events[1]["event"]["traceId"] == trace_id  # where the platform's UI reads it
    spans = [s for s in backend.spans if s.trace_id == trace_id]
    (start,) = [s for s in backend.spans if s.name == "ambient.cli_start"]  # at boot: a trace of its own
    assert {s.trace_id for s in backend.spans} == {trace_id, trace_id_of(leaky), start.trace_id}
    (run,) = [s for s in spans if s.name == "invoke_agent gemini-cli"]
    (tool,) = [s for s in spans if s.name.startswith("execute_tool ")]
    models = [s for s in spans if s.name.startswith("chat ")]
    assert run.parent_span_id == "" and tool.parent_span_id == run.span_id
    assert models and all(m.parent_span_id == run.span_id for m in models)
    assert run.attributes["gen_ai.conversation.id"] == "t-trace" and run.attributes["ambient.outcome"] == "success"
    assert run.attributes["gen_ai.usage.input_tokens"] > 0 and run.attributes["gen_ai.usage.output_tokens"] > 0
    assert "Create out.txt with hello" in run.attributes["gen_ai.input.messages"]
    assert tool.attributes["gen_ai.tool.name"] == "run_shell_command"
    assert "echo hello" in tool.attributes["gen_ai.tool.call.arguments"]
    assert all(m.attributes["http.response.status_code"] == 200 and m.attributes["ambient.first_byte_ms"] >= 0
               for m in models)
    assert all(m.attributes["gen_ai.usage.input_tokens"] > 0 and m.attributes["gen_ai.usage.output_tokens"] > 0
               for m in models)  # read from the response, as the model API stated them
    assert run.resource["service.name"] == "ambient-runner" and run.resource["ambient.runner_type"] == "gemini-cli"
    (leak_span,) = [s for s in backend.spans if s.trace_id == trace_id_of(leaky)
                    and s.name.startswith("invoke_agent")]
    assert leak_span.attributes["gen_ai.input.messages"].endswith("my key is [REDACTED]")
    wire = json.dumps([s.__dict__ for s in backend.spans], default=str)
    assert SECRET not in wire and PUBLIC not in wire and placeholder not in wire and upstream_key not in wire

    assert caps["tracing"] == "langfuse" and caps["custom"]["tracing"] == {"destinations": ["langfuse"],
                                                                           "content": True}
    assert feedback.json()["event"]["recorded"] is True
    (score,) = backend.scores
    assert score["traceId"] == trace_id and score["value"] == 1 and score["dataType"] == "BOOLEAN"
    assert score["name"] == "user-feedback" and score["comment"] == "nice"


async def test_an_error_run_ends_its_span_with_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         isolated_network: None) -> None:
    with otlp_receiver() as backend:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", backend.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=blue,api-key=collector%20secret")
        async with runner_kit("gemini-cli", tmp_path) as kit:
            kit.model_server.mode = "error401"
            events = await kit.runner.run("t-error", "NOTOOL hello")
            await flushed(kit)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AUTH_FAILED"
    assert {path for path, _, _ in backend.requests} == {"/v1/traces"}
    assert all(h["x-team"] == "blue" and h["api-key"] == "collector secret" for _, h, _ in backend.requests)
    (run,) = [s for s in backend.spans if s.name.startswith("invoke_agent")]
    assert run.status_code == 2 and run.status_message.startswith("AUTH_FAILED: ")
    assert run.attributes["ambient.outcome"] == "error" and run.attributes["error.type"] == "AUTH_FAILED"
    assert "gen_ai.input.messages" not in run.attributes  # content only with RUNNER_TRACE_CONTENT=true
    assert any(s.name.startswith("chat ") and s.attributes["http.response.status_code"] == 401 and s.status_code == 2
               for s in backend.spans)


async def test_an_unreachable_backend_never_slows_or_fails_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 isolated_network: None) -> None:
    with otlp_receiver() as backend:
        backend.status = 503
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{backend.url}/custom/traces")
        async with runner_kit("gemini-cli", tmp_path) as kit:
            first = await kit.runner.run("t-down", "NOTOOL hello")
            second = await kit.runner.run("t-down", "NOTOOL again")
    assert first[-1]["type"] == second[-1]["type"] == "RUN_FINISHED"
    assert {path for path, _, _ in backend.requests} == {"/custom/traces"}  # it was tried, and refused
    assert backend.spans == []


async def test_nothing_configured_means_no_tracer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  isolated_network: None) -> None:
    monkeypatch.delenv("LANGFUSE_ENABLED", raising=False)
    async with runner_kit("gemini-cli", tmp_path) as kit:
        events = await kit.runner.run("t-off", "NOTOOL hello")
        caps = (await kit.runner.client.get("/capabilities")).json()
        assert kit.runner.app.runtime.tracer is None and kit.runner.app.runtime.runs.observers == []
    assert not any(e["type"] == "RAW" and e["event"].get("type") == "langfuse_trace" for e in events)
    assert caps["tracing"] is None
