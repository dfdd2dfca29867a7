"""The core service over real HTTP/SSE with a fake CLI under the shared process supervision."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from harness import RunnerHarness, check_stream, parse_sse
from process_bridge import FakeCliBridge, script
from proctable import group_members, pid_alive
from runners import wait_for

from ambient_runner.api.runs import body_limit


def text(delta: str, message_id: str = "m") -> dict:
    return {"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}}


def emit(**event) -> dict:
    return {"emit": event}


@pytest.fixture
def bridge(tmp_path):
    return FakeCliBridge(tmp_path)


async def test_text_stream_is_framed_and_complete(bridge):
    async with RunnerHarness(bridge) as runner:
        pairs = await runner.run_with_ids("t1", script(
            emit(type="TEXT_MESSAGE_START", messageId="m", role="assistant"),
            text("Hello"), text(""), text(" world"),
            emit(type="TEXT_MESSAGE_END", messageId="m")))
    assert [seq for seq, _ in pairs] == [1, 2, 3, 4, 5, 6, 7]
    events = [e for _, e in pairs]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": events[0]["runId"],
                         "protocolVersion": "1.0"}
    assert events[1:] == [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hello"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": " world"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": events[5]["messages"][0]["id"], "role": "user", "content": events[5]["messages"][0]["content"]},
            {"id": "m", "role": "assistant", "content": "Hello world"}]},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": events[0]["runId"]},
    ]
    assert '"Hello"' in events[5]["messages"][0]["content"]  # the user message is the run's prompt (a script)


async def test_crash_mid_tool_call_closes_everything_and_reports_stderr(bridge):
    async with RunnerHarness(bridge) as runner:
        events = await runner.run("t1", script(
            text("Working"),
            emit(type="TOOL_CALL_START", toolCallId="c1", toolCallName="shell"),
            emit(type="TOOL_CALL_ARGS", toolCallId="c1", delta='{"cmd": "ls'),
            {"stderr": "fatal: model connection lost"}, {"kill": 9}))
    kinds = [e["type"] for e in events]
    assert kinds == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                     "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert json.loads(events[5]["delta"]) == {"_raw": '{"cmd": "ls'}
    error = events[-1]
    assert error["code"] == "CLI_EXITED"
    assert "exited with code -9" in error["message"]
    assert "fatal: model connection lost" in error["message"]


async def test_nonzero_exit_without_output(bridge):
    async with RunnerHarness(bridge) as runner:
        events = await runner.run("t1", script({"stderr": "bad flag --frob"}, {"exit": 3}))
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    assert "code 3" in events[-1]["message"] and "bad flag --frob" in events[-1]["message"]


async def test_second_concurrent_run_on_a_thread_that_rejects_when_busy_gets_409(bridge):
    async with RunnerHarness(bridge) as runner:
        first = asyncio.create_task(runner.run("t1", script(text("a"), {"sleep": 1.5}, text("b"))))
        await wait_for(lambda: runner.seen("t1", "TEXT_MESSAGE_CONTENT"), what="the first run streaming")
        busy = runner.run_body("t1", script(text("x")), {"whenBusy": "reject"})
        response = await runner.client.post("/run", json=busy)
        assert response.status_code == 409
        assert response.json()["code"] == "THREAD_BUSY"
        other = await runner.run("t2", script(text("other thread is fine")))
        assert other[-1]["type"] == "RUN_FINISHED"
        events = await first
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_reconnect_with_last_event_id_gets_the_rest_exactly_once(bridge):
    steps = [text(f"chunk {i} ") for i in range(6)]
    steps.insert(3, {"sleep": 1.0})
    async with RunnerHarness(bridge) as runner:
        seen: list[tuple[int, dict]] = []
        async with runner.client.stream("POST", "/run", json=runner.run_body("t1", script(*steps))) as response:
            async for pair in parse_sse(response.aiter_lines()):
                seen.append(pair)
                if len(seen) == 3:
                    break  # the client goes away mid-run
        last_id = seen[-1][0]
        async with runner.client.stream("GET", "/events/t1", headers={"Last-Event-ID": str(last_id)}) as response:
            rest = [pair async for pair in parse_sse(response.aiter_lines())]
        # After the run has ended, a reconnect with ?after= replays and closes at once.
        replay = await runner.events("t1", after=0)
    ids = [seq for seq, _ in seen + rest]
    assert ids == list(range(1, len(ids) + 1)), "every event exactly once, in order"
    events = [e for _, e in seen + rest]
    check_stream(events)
    assert "".join(e.get("delta", "") for e in events) == "".join(f"chunk {i} " for i in range(6))
    assert replay == seen + rest


async def test_interrupt_cancels_and_leaves_no_process(bridge, tmp_path):
    grandchild_pid_file = tmp_path / "grandchild.pid"
    async with RunnerHarness(bridge) as runner:
        run = asyncio.create_task(runner.run("t1", script(
            {"grandchild": str(grandchild_pid_file)}, text("started "), {"sleep": 60}, text("never"))))
        await wait_for(lambda: grandchild_pid_file.exists() and runner.seen("t1", "TEXT_MESSAGE_CONTENT"),
                       what="the CLI's grandchild started, then its text")
        response = await runner.interrupt("t1")
        assert response.status_code == 200
        assert response.json()["interrupted"][0]["threadId"] == "t1"
        events = await run
        again = await runner.run("t1", script(text("next turn")))
        escalations = await runner.metric("ambient_interrupt_escalations_total")
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t1", "runId": events[0]["runId"],
                          "outcome": {"type": "cancelled"}}
    assert escalations == 0  # the polite interrupt was enough
    assert "never" not in "".join(e.get("delta", "") for e in events)
    assert group_members(bridge.pgids[0]) == []
    assert not pid_alive(int(grandchild_pid_file.read_text()))
    assert again[-1]["type"] == "RUN_FINISHED" and "outcome" not in again[-1]


async def test_interrupt_escalates_when_the_cli_ignores_signals(tmp_path):
    bridge = FakeCliBridge(tmp_path, kill_grace=0.5)
    async with RunnerHarness(bridge, runner_interrupt_grace=0.5) as runner:
        run = asyncio.create_task(runner.run("t1", script(
            {"ignore": ["SIGINT", "SIGTERM"]}, text("stubborn "), {"stall": True})))
        await wait_for(lambda: runner.seen("t1", "TEXT_MESSAGE_CONTENT"),
                       what="the CLI ignoring signals (its text follows)")
        assert (await runner.interrupt()).status_code == 200
        events = await run
        escalations = await runner.metric("ambient_interrupt_escalations_total")
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert escalations == 1
    assert group_members(bridge.pgids[0]) == []


async def test_interrupt_without_a_run_is_404(bridge):
    async with RunnerHarness(bridge) as runner:
        response = await runner.interrupt("nobody")
        assert response.status_code == 404
        assert response.json()["code"] == "NO_ACTIVE_RUN"
        assert (await runner.interrupt()).status_code == 404


async def test_idle_timeout_fires_with_a_silent_cli(bridge):
    async with RunnerHarness(bridge, runner_idle_timeout=1.5) as runner:  # (the CLI's start is inside it too)
        events = await runner.run("t1", script({"stderr": "waiting for the model"}, text("one "), {"stall": True}))
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "IDLE_TIMEOUT"
    assert "RUNNER_IDLE_TIMEOUT" in events[-1]["message"] and "waiting for the model" in events[-1]["message"]
    assert group_members(bridge.pgids[0]) == []


async def test_wall_timeout_fires_even_while_the_cli_keeps_printing(bridge):
    steps = [step for i in range(100) for step in (text(f"{i} "), {"sleep": 0.1})]
    async with RunnerHarness(bridge, runner_idle_timeout=5, runner_run_timeout=1.0) as runner:
        events = await runner.run("t1", script(*steps))
    assert events[-1]["code"] == "RUN_TIMEOUT"
    assert "RUNNER_RUN_TIMEOUT" in events[-1]["message"]
    assert group_members(bridge.pgids[0]) == []


async def test_a_50_mb_line_and_non_json_lines_do_not_break_the_stream(tmp_path):
    bridge = FakeCliBridge(tmp_path, max_line_bytes=1024 * 1024)
    async with RunnerHarness(bridge) as runner:
        events = await runner.run("t1", script(text("before "), {"huge": 50 * 1024 * 1024},
                                               {"raw": "Loaded cached credentials."}, text("after")))
    assert [e["type"] for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RAW",
                                           "RAW", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "MESSAGES_SNAPSHOT",
                                           "RUN_FINISHED"]
    assert events[3]["event"]["oversizedLine"] is True
    assert events[3]["event"]["droppedBytes"] > 48 * 1024 * 1024
    assert events[4]["event"] == {"line": "Loaded cached credentials."}


async def test_ids_stay_unique_across_runs_of_a_thread(bridge):
    turn = script(emit(type="TOOL_CALL_START", toolCallId="call_1", toolCallName="shell"),
                  emit(type="TOOL_CALL_ARGS", toolCallId="call_1", delta="{}"),
                  emit(type="TOOL_CALL_END", toolCallId="call_1"),
                  emit(type="TOOL_CALL_RESULT", messageId="r1", toolCallId="call_1", content="ok"),
                  emit(type="TOOL_CALL_RESULT", messageId="r2", toolCallId="ghost", content="?"))
    async with RunnerHarness(bridge) as runner:
        first = await runner.run("t1", turn)
        second = await runner.run("t1", turn)  # the harness checks ids are unique within the thread
    assert first[1]["event"]["id"] == "call_1-call"  # the announced holder of a call with nothing said before it
    assert first[2]["toolCallId"] == "call_1" and first[2]["parentMessageId"] == "call_1-call"
    assert second[1]["event"]["id"] == "call_1~2-call"
    assert second[2]["toolCallId"] == "call_1~2" and second[2]["parentMessageId"] == "call_1~2-call"
    assert second[5] == {"type": "TOOL_CALL_RESULT", "messageId": "r1~2", "toolCallId": "call_1~2",
                         "content": "ok"}
    assert second[6]["type"] == "RAW" and second[6]["event"]["toolCallId"] == "ghost"


async def test_secrets_never_reach_events_and_runner_secrets_never_reach_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("STORAGE_SECRET_ACCESS_KEY", "s3-secret-value-123")
    bridge = FakeCliBridge(tmp_path, secrets=("sk-live-abcdef123456",))
    async with RunnerHarness(bridge, agui_token="runner-token-xyz",
                             secrets=("sk-live-abcdef123456", "runner-token-xyz", "s3-secret-value-123")) as runner:
        runner.client.headers["Authorization"] = "Bearer runner-token-xyz"
        events = await runner.run("t1", script(
            text("key is sk-live-abcdef123456 and token runner-token-xyz"),
            {"stderr": "auth failed for sk-live-abcdef123456 / s3-secret-value-123"}, {"exit": 1}))
    wire = json.dumps(events)
    assert "[REDACTED]" in events[2]["delta"]
    assert "auth failed for [REDACTED] / [REDACTED]" in events[-1]["message"]
    assert "runner-token-xyz" not in wire and "s3-secret-value-123" not in wire
    cli_env = bridge.environments[0]
    assert "AGUI_TOKEN" not in cli_env and "STORAGE_SECRET_ACCESS_KEY" not in cli_env


async def test_malformed_bodies_get_422_json(bridge):
    bad_bodies = [b"", b"{", b"[]", b'"x"', b'{"messages": []}', b'{"threadId": "t", "messages": "no"}',
                  b'{"threadId": "", "messages": [{"role": "user", "content": "hi"}]}',
                  b'{"threadId": "a\\u0000b", "messages": [{"role": "user", "content": "hi"}]}',
                  b'{"threadId": "t", "messages": [{"role": "wizard", "content": "hi"}]}',
                  b'{"threadId": "t", "messages": [{"role": "assistant", "content": "only me"}]}',
                  b"\xff\xfe{}", b"[" * 100_000 + b"]" * 100_000]
    async with RunnerHarness(bridge) as runner:
        for body in bad_bodies:
            response = await runner.client.post("/run", content=body,
                                                headers={"content-type": "application/json"})
            assert response.status_code == 422, (body[:60], response.status_code, response.text)
            assert response.json()["error"]
        huge = await runner.client.post("/run", content=b"x" * (body_limit(runner.settings) + 1))
        assert huge.status_code == 413 and huge.json()["code"] == "BODY_TOO_LARGE"
        bad_after = await runner.client.get("/events/t1", params={"after": "-3"})
        assert bad_after.status_code == 422
        unknown = await runner.client.get("/events/never-seen", params={"after": 0})
        assert unknown.status_code == 404 and unknown.json()["code"] == "UNKNOWN_THREAD"


async def test_snake_case_body_and_the_root_alias(bridge):
    body = {"thread_id": "snake", "run_id": "r-1", "messages": [{"id": "u", "role": "user",
                                                                  "content": script(text("hi"))}]}
    async with RunnerHarness(bridge) as runner:
        async with runner.client.stream("POST", "/", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [e async for _, e in parse_sse(response.aiter_lines())]
    check_stream(events)
    assert events[0]["threadId"] == "snake" and events[0]["runId"] == "r-1"


async def test_token_is_required_everywhere_but_health(bridge):
    async with RunnerHarness(bridge, agui_token="s3cr3t-token") as runner:
        client = runner.client
        assert (await client.get("/health")).status_code == 200
        for method, path in [("GET", "/ready"), ("GET", "/capabilities"), ("GET", "/metrics"),
                             ("POST", "/run"), ("POST", "/"), ("POST", "/interrupt"), ("GET", "/events/t1"),
                             ("POST", "/model"), ("POST", "/feedback"), ("GET", "/mcp/status")]:
            response = await client.request(method, path, json={})
            assert response.status_code == 401, path
            assert response.json()["code"] == "UNAUTHORIZED"
            wrong = await client.request(method, path, json={}, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        ok = await client.get("/capabilities", headers={"X-Ambient-Session-Token": "s3cr3t-token"})
        assert ok.status_code == 200
        # The platform's content and git calls also forward the user's own Authorization, written first (Go sorts
        # headers): the session token alone decides, whatever else is sent.
        both = [("Authorization", "Bearer the-users-own-token"), ("X-Ambient-Session-Token", "s3cr3t-token")]
        assert (await client.get("/capabilities", headers=both)).status_code == 200
        wrong_session = [("Authorization", "Bearer s3cr3t-token"), ("X-Ambient-Session-Token", "nope")]
        assert (await client.get("/capabilities", headers=wrong_session)).status_code == 401


async def test_health_ready_capabilities_metrics(bridge):
    async with RunnerHarness(bridge) as runner:
        await runner.run("t1", script(text("hi")))
        client = runner.client
        assert (await client.get("/health")).json()["status"] == "ok"
        assert (await client.get("/ready")).json() == {"ready": True}
        caps = (await client.get("/capabilities")).json()
        assert caps["custom"]["runnerType"] == "fake-cli" and caps["custom"]["protocolVersion"] == "1.0"
        metrics = (await client.get("/metrics")).text
        assert 'ambient_runs_finished_total{outcome="success",runner="gemini-cli"} 1.0' in metrics
        assert (await client.get("/nowhere")).json()["code"] == "NOT_FOUND"


async def test_client_disconnect_does_not_stop_the_run(bridge):
    async with RunnerHarness(bridge) as runner:
        body = runner.run_body("t1", script(text("a "), {"sleep": 1.0}, text("b")))
        try:
            async with runner.client.stream("POST", "/run", json=body, timeout=httpx.Timeout(0.3)) as response:
                async for _ in response.aiter_lines():
                    pass
        except httpx.ReadTimeout:
            pass
        await wait_for(lambda: runner.app.runtime.runs.thread("t1"), what="the run admitted")
        replay = [e for _, e in await runner.events("t1")]  # follows the run (it goes on without its client) to its end
    check_stream(replay)
    assert replay[-1]["type"] == "RUN_FINISHED"
    assert "".join(e.get("delta", "") for e in replay) == "a b"
