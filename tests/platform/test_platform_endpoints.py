"""The platform backend's calls to a runner pod (research/platform-backend-contract.md §1), made the way its backend
makes them, against the real service with the fake CLI: POST /model, POST /feedback, GET /capabilities and the
between-run listener GET /events/{session} (no cursor)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from harness import RunnerHarness, parse_sse
from process_bridge import FakeCliBridge, script

SESSION = "session-0b59fe7"
TOKEN = "agui-token-for-the-session"
BACKEND_HEADERS = {"X-Ambient-Session-Token": TOKEN, "Content-Type": "application/json"}
MODELS = "model-a,model-b"


@pytest.fixture
def bridge(tmp_path):
    return FakeCliBridge(tmp_path)


@asynccontextmanager
async def runner(bridge, **settings) -> AsyncIterator[RunnerHarness]:
    """The service as the platform's pod runs it: a session token, the session's id, the registry's models."""
    values = {"agui_token": TOKEN, "session_id": SESSION, "runner_models": MODELS, "runner_default_model": "model-a"}
    async with RunnerHarness(bridge, **(values | settings)) as harness:
        assert harness.client is not None
        harness.client.headers["X-Ambient-Session-Token"] = TOKEN
        yield harness


async def read_frames(client, path: str, count: int, **kwargs) -> list[str]:
    """The first ``count`` ``data:`` lines of an SSE stream (every line must be a single-line JSON object)."""
    frames: list[str] = []
    async with client.stream("GET", path, headers=BACKEND_HEADERS, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                json.loads(line[6:])
                frames.append(line[6:])
                if len(frames) == count:
                    break
    return frames


async def listening(runner_harness, listeners: int) -> None:
    between = runner_harness.app.runtime.runs.between_runs
    async with asyncio.timeout(10):
        while between.listeners < listeners:
            await asyncio.sleep(0.01)


async def test_model_switch(bridge):
    async with runner(bridge) as r:
        client = r.client
        listener = asyncio.create_task(read_frames(client, f"/events/{SESSION}", 1))
        await listening(r, 1)
        switched = await client.post("/model", json={"model": "model-b"}, headers=BACKEND_HEADERS)
        assert switched.status_code == 200, switched.text
        assert switched.json() == {"model": "model-b", "previousModel": "model-a"}
        (frame,) = await listener
        event = json.loads(frame)
        assert event["type"] == "CUSTOM" and event["name"] == "ambient:model_switched"
        assert event["value"] == {"previousModel": "model-a", "newModel": "model-b"}
        assert r.settings.runner_default_model == "model-b"  # what the next turn's bridge reads
        caps = (await client.get("/capabilities", headers=BACKEND_HEADERS)).json()
        assert caps["model"] in ("model-b", None)  # the fake bridge reports no default model of its own

        refusals = [({"model": ""}, 400, "MODEL_REQUIRED"), ({}, 400, "MODEL_REQUIRED"),
                    ({"model": "   "}, 400, "MODEL_REQUIRED"), ({"model": "model-z"}, 422, "INVALID_OPTION"),
                    ({"model": 7}, 422, "INVALID_REQUEST"), ([], 422, "INVALID_REQUEST")]
        for body, status, code in refusals:
            answer = await client.post("/model", json=body, headers=BACKEND_HEADERS)
            assert (answer.status_code, answer.json()["code"]) == (status, code), body
        bad_json = await client.post("/model", content=b"{", headers=BACKEND_HEADERS)
        assert bad_json.status_code == 422 and bad_json.json()["code"] == "INVALID_JSON"
        assert r.settings.runner_default_model == "model-b"  # none of those changed it


async def test_model_switch_is_refused_while_a_run_streams(bridge):
    async with runner(bridge) as r:
        client = r.client
        body = r.run_body(SESSION, script({"text": "working"}, {"sleep": 30}))
        events: list[dict] = []
        async with client.stream("POST", "/", json=body, headers=BACKEND_HEADERS) as response:
            async for _, event in parse_sse(response.aiter_lines()):
                events.append(event)
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    busy = await client.post("/model", json={"model": "model-b"}, headers=BACKEND_HEADERS)
                    assert busy.status_code == 422 and busy.json()["code"] == "RUN_ACTIVE", busy.text
                    # The backend's stop button: always the body {}.
                    assert (await client.post("/interrupt", json={}, headers=BACKEND_HEADERS)).status_code == 200
        assert [e["type"] for e in events[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert events[-1]["outcome"] == {"type": "cancelled"}
        assert r.settings.runner_default_model == "model-a"
        assert (await client.post("/model", json={"model": "model-b"}, headers=BACKEND_HEADERS)).status_code == 200


async def test_feedback_answers_the_event_the_backend_stores(bridge):
    ui_body = {"type": "META", "metaType": "thumbs_down", "threadId": SESSION, "ts": 1764590000000,
               "payload": {"userId": "u-1", "projectName": "p", "sessionName": SESSION, "messageId": "m-7",
                           "comment": "wrong file", "reason": "incorrect", "includeTranscript": False}}
    async with runner(bridge) as r:
        answer = await r.client.post("/feedback", json=ui_body, headers=BACKEND_HEADERS)
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        event = answer.json()
        assert event == {"type": "RAW", "timestamp": event["timestamp"],
                         "event": {"name": "ambient:feedback", "metaType": "thumbs_down",
                                   "payload": ui_body["payload"], "recorded": False}}
        assert isinstance(event["timestamp"], int)  # epoch ms, as the backend's store wants
        up = await r.client.post("/feedback", json={**ui_body, "metaType": "thumbs_up"}, headers=BACKEND_HEADERS)
        assert up.json()["event"]["metaType"] == "thumbs_up"
        for bad in [{**ui_body, "metaType": "meh"}, {**ui_body, "type": "RUN_STARTED"}, {**ui_body, "payload": []},
                    {"type": "META"}, [1],
                    {**ui_body, "payload": {"traceId": "a/../../../../2.0/mlflow/runs/delete?"}},
                    {**ui_body, "payload": {"traceId": 42}}]:
            refused = await r.client.post("/feedback", json=bad, headers=BACKEND_HEADERS)
            assert refused.status_code == 422 and refused.json()["code"] == "INVALID_FEEDBACK", bad


async def test_capabilities_carry_the_platform_fields(bridge):
    async with runner(bridge) as r:
        caps = (await r.client.get("/capabilities", headers=BACKEND_HEADERS)).json()
    assert caps["framework"] == "fake-cli"
    assert caps["session_id"] == SESSION
    assert {"agentic_chat", "backend_tool_rendering"} <= set(caps["agent_features"])
    assert caps["platform_features"] == ["background_tasks", "feedback", "interrupt", "mcp_diagnostics",
                                         "model_switch", "repos", "workflows"]
    assert caps["file_system"] is True and caps["mcp"] is False and caps["tracing"] is None
    assert isinstance(caps["session_persistence"], bool)
    assert {"POST /model", "POST /feedback", "GET /mcp/status", "POST /run", "POST /"} <= set(
        caps["custom"]["endpoints"])


async def test_between_run_listener_gets_no_run_event_and_nothing_twice(bridge):
    """The backend stores every data: line of its listener, and already stored the runs' events from POST /: the
    listener without a cursor gets only what happens between runs, across reconnects, each event once."""
    async with runner(bridge) as r:
        client = r.client
        await r.run(SESSION, script({"text": "first run"}))
        seen: list[str] = []
        for reconnect in range(5):
            listener = asyncio.create_task(read_frames(client, f"/events/{SESSION}", 1))
            await listening(r, 1)
            await r.run(SESSION, script({"text": f"run while listening {reconnect}"}))
            model = "model-b" if reconnect % 2 == 0 else "model-a"
            assert (await client.post("/model", json={"model": model}, headers=BACKEND_HEADERS)).status_code == 200
            seen += await listener
            async with asyncio.timeout(10):
                while r.app.runtime.runs.between_runs.listeners:  # the listener's connection is gone
                    await asyncio.sleep(0.01)
        events = [json.loads(frame) for frame in seen]
        assert [e["name"] for e in events] == ["ambient:model_switched"] * 5
        # One event per switch, in order, none repeated on a reconnect.
        assert [e["value"]["newModel"] for e in events] == ["model-b", "model-a", "model-b", "model-a", "model-b"]
        assert all(isinstance(e["timestamp"], int) for e in events)

        # An unknown thread (a pod restarted since) is a listener too; replay needs an explicit cursor.
        async with client.stream("GET", "/events/never-seen", headers=BACKEND_HEADERS) as response:
            assert response.status_code == 200
        replay = await r.events(SESSION, after=0)
        assert [e["type"] for _, e in replay].count("RUN_STARTED") == 6
        missing = await client.get("/events/never-seen", params={"after": 0}, headers=BACKEND_HEADERS)
        assert missing.status_code == 404


async def test_between_run_listener_ends_when_the_runner_stops(bridge):
    async with runner(bridge) as r:
        frames = asyncio.create_task(read_frames(r.client, f"/events/{SESSION}", 1))
        await listening(r, 1)
        await r.app.runtime.runs.shutdown()  # what SIGTERM's drain does first
        async with asyncio.timeout(10):
            assert await frames == []
