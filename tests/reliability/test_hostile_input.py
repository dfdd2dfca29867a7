"""Hostile input: huge message counts, unknown roles, tool results for unknown calls, thread ids made of path
characters, and secrets planted where they could leak (CLI stderr, tool output, error messages, logs, metrics).
Every answer is a clear 4xx or a normal run; nothing is written outside the runner's own directories."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from harness import RunnerHarness, check_stream, parse_sse
from process_bridge import FakeCliBridge, script
from runners import RUNNERS, scripted_runner

USER = {"id": "u1", "role": "user", "content": script({"text": "hi"})}
HOSTILE_IDS = ["../../escape", "..%2f..%2fescape", "a/b/c", "..", "/abs/path", "x\x00y", "x" * 300,
               "%2e%2e%2fenc", "..\\..\\win", "ok\nline", " ", "spaces ok", "ünïcødé-☃", "\u202eevil"]
SPOOL_NAME = re.compile(r"^[0-9a-f]{32}\.jsonl$")


def snapshot(*roots: Path) -> set[str]:
    found = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                found.add(os.path.join(dirpath, name))
    return found


async def post_run(runner: RunnerHarness, body: Any) -> tuple[int, list[dict[str, Any]] | dict[str, Any]]:
    """POST /run; a 200 stream is read to its end (and checked), an error answer returned as JSON."""
    assert runner.client is not None
    async with runner.client.stream("POST", "/run", json=body) as response:
        if response.status_code != 200:
            return response.status_code, json.loads(await response.aread())
        events = [event async for _, event in parse_sse(response.aiter_lines())]
    check_stream(events)
    return 200, events


async def test_more_than_10000_messages_is_422(tmp_path: Path) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        messages = [{"id": f"m{i}", "role": "user", "content": "x"} for i in range(10_001)]
        status, answer = await post_run(runner, {"threadId": "t", "messages": messages})
        at_limit, events = await post_run(runner, {"threadId": "t", "messages": messages[:9_998] + [
            {"id": "a", "role": "assistant", "content": "ok"}, USER]})
    assert status == 422 and "10000" in answer["error"]
    assert at_limit == 200 and events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("message", [
    {"id": "m", "role": "wizard", "content": "hi"},
    {"id": "m", "role": None, "content": "hi"},
    {"id": "m", "content": "no role"},
    {"id": "m", "role": "user", "content": {"nested": "object"}},
    {"id": "m", "role": "user", "content": [{"type": "mystery", "data": 1}]},
])
async def test_unknown_roles_and_content_shapes_are_422(tmp_path: Path, message: dict) -> None:
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        status, answer = await post_run(runner, {"threadId": "t", "messages": [message]})
        health = await runner.client.get("/health")
    assert status == 422 and answer["code"], answer
    assert health.status_code == 200


async def test_tool_results_for_unknown_calls_do_not_break_a_run(tmp_path: Path) -> None:
    orphan_result = {"id": "r1", "role": "tool", "toolCallId": "call-that-never-was", "content": "result"}
    assistant = {"id": "a1", "role": "assistant", "toolCalls": [
        {"id": "other", "type": "function", "function": {"name": "x", "arguments": "{not json"}}]}
    async with RunnerHarness(FakeCliBridge(tmp_path)) as runner:
        only_result = await post_run(runner, {"threadId": "t1", "messages": [orphan_result]})
        mixed = await post_run(runner, {"threadId": "t2", "messages": [assistant, orphan_result, USER]})
    assert only_result[0] == 422 and only_result[1]["code"] == "NO_PROMPT"
    assert mixed[0] == 200 and mixed[1][-1]["type"] == "RUN_FINISHED"


async def test_thread_ids_with_path_characters(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    events_dir = tmp_path / "runner" / "events"
    before = snapshot(tmp_path)
    results: dict[str, tuple[int, int, int]] = {}
    async with RunnerHarness(FakeCliBridge(tmp_path / "outside"), runner_events_dir=events_dir,
                             runner_state_root=tmp_path / "runner" / "state") as runner:
        assert runner.client is not None
        for thread_id in HOSTILE_IDS:
            status, answer = await post_run(runner, {"threadId": thread_id, "messages": [USER]})
            if status == 200:
                assert answer[-1]["type"] == "RUN_FINISHED" and answer[0]["threadId"] == thread_id
            else:
                assert 400 <= status < 500 and answer["code"], answer
            quoted = await runner.client.get("/events/" + quote(thread_id, safe="").replace(".", "%2E"),
                                             params={"after": 0})
            raw_ok = thread_id.isprintable()  # the raw id in the path: httpx quotes what it must
            replay = await runner.client.get(f"/events/{thread_id}", params={"after": 0}) if raw_ok else quoted
            interrupt = await runner.interrupt(thread_id)
            for response in (replay, quoted, interrupt):
                assert response.status_code < 500, (thread_id, response.status_code, response.text)
            assert interrupt.status_code in (404, 422), interrupt.text
            if status == 200:  # the thread's events can be replayed by its id, whatever characters it has
                assert quoted.status_code == 200, (thread_id, quoted.status_code, quoted.text)
                assert json.dumps(thread_id, ensure_ascii=False)[1:-1] in quoted.text
            results[thread_id] = (status, replay.status_code, interrupt.status_code)
        spooled = sorted(p.name for p in events_dir.iterdir())
    after = snapshot(tmp_path)
    created = {p for p in after - before if not p.startswith(str(tmp_path / "runner"))}
    assert created <= {str(tmp_path / "outside" / "out.txt")}, created  # nothing escaped the runner's dirs
    assert spooled == [] or all(SPOOL_NAME.match(name) for name in spooled), spooled
    assert results["x\x00y"][0] == 422 and results["x" * 300][0] == 422
    assert results["../../escape"][0] == 200  # an id is just a name: it never becomes a path
    print(json.dumps({k[:20]: v for k, v in results.items()}, ensure_ascii=True))


SECRETS = {"AGUI_TOKEN": "agui-token-0a7c51d9e2", "AWS_SECRET_ACCESS_KEY": "aws-secret-4f19b7c3e8d2",
           "AWS_ACCESS_KEY_ID": "AKIAFAULTMATRIX77", "STATE_STORE_TOKEN": "store-token-9d2e6a41"}
BRIDGE_KEY = "bridge-api-key-6c3f0b8a51"


async def test_secrets_never_reach_events_logs_or_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    every = [*SECRETS.values(), BRIDGE_KEY]
    leak = " ".join(every)
    bridge = FakeCliBridge(tmp_path, secrets=(BRIDGE_KEY,))
    caplog.set_level(logging.DEBUG)
    async with RunnerHarness(bridge, agui_token=SECRETS["AGUI_TOKEN"], check=False) as runner:
        assert runner.client is not None
        runner.client.headers["Authorization"] = f"Bearer {SECRETS['AGUI_TOKEN']}"
        tool_run = await runner.run("t1", script(
            {"text": f"my keys: {leak}"},
            {"emit": {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "shell"}},
            {"emit": {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": json.dumps({"cmd": leak})}},
            {"emit": {"type": "TOOL_CALL_END", "toolCallId": "c1"}},
            {"emit": {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": leak}},
            {"raw": f"not json {leak}"}))
        failing_run = await runner.run("t2", script({"stderr": f"fatal: bad credentials {leak}"}, {"exit": 3}))
        logging.getLogger("ambient_runner.test").warning("a CLI said: %s", leak)  # as a bridge would log it
        replay = await runner.events("t1")
        metrics = (await runner.client.get("/metrics")).text
        env = bridge.environments
    assert failing_run[-1]["type"] == "RUN_ERROR" and "fatal: bad credentials" in failing_run[-1]["message"]
    wire = json.dumps([tool_run, failing_run, replay])
    logs = "\n".join(caplog.messages) + "\n".join(r.exc_text or "" for r in caplog.records)
    for secret in every:
        assert secret not in wire, "secret in an event"
        assert secret not in logs, "secret in a log line"
        assert secret not in metrics, "secret in the metrics"
        assert all(secret not in value for e in env for value in e.values()), "secret in the CLI's environment"
    assert "[REDACTED]" in wire and "[REDACTED]" in logs


@pytest.mark.real_cli
@pytest.mark.parametrize("runner_type", RUNNERS)
async def test_real_cli_environment_has_no_runner_secrets(runner_type: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          isolated_network: None) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    async with scripted_runner(runner_type, tmp_path, monkeypatch, agui_token=SECRETS["AGUI_TOKEN"],
                               secrets=tuple(SECRETS.values())) as r:
        assert r.harness.client is not None
        r.harness.client.headers["Authorization"] = f"Bearer {SECRETS['AGUI_TOKEN']}"
        r.server.shell_command = "env > env.txt"
        events = await r.harness.run("t-env", "Dump the environment")
        dumped = (r.settings.workspace_path / "env.txt").read_text()
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert "PATH=" in dumped
    for name, value in SECRETS.items():
        assert value not in dumped, f"{name} reached the {runner_type} CLI's tools"
