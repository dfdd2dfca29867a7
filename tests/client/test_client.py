"""The terminal client (``ambient-runner run``) against the real service over HTTP (RunnerHarness) with the fake
CLI: the client runs in-process through typer's CliRunner in a worker thread while the server runs in the test's
event loop, or as a real subprocess (Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from harness import RunnerHarness, check_stream
from process_bridge import FakeCliBridge, SteeringBridge, script
from typer.testing import CliRunner

from ambient_runner.client.main import app

REPO = Path(__file__).resolve().parents[2]


def emit(**event: Any) -> dict:
    return {"emit": event}


def text(delta: str, message_id: str = "m1") -> dict:
    return emit(type="TEXT_MESSAGE_CONTENT", messageId=message_id, delta=delta)


TOOL_RUN = script(
    emit(type="TEXT_MESSAGE_START", messageId="m1", role="assistant"),
    text("Let me look "), text("at the files."),
    emit(type="TEXT_MESSAGE_END", messageId="m1"),
    emit(type="REASONING_START", messageId="r1"),
    emit(type="REASONING_MESSAGE_START", messageId="r1", role="reasoning"),
    emit(type="REASONING_MESSAGE_CONTENT", messageId="r1", delta="listing is cheap"),
    emit(type="REASONING_MESSAGE_END", messageId="r1"),
    emit(type="REASONING_END", messageId="r1"),
    emit(type="TOOL_CALL_START", toolCallId="c1", toolCallName="run_shell_command"),
    emit(type="TOOL_CALL_ARGS", toolCallId="c1", delta='{"command": '),
    emit(type="TOOL_CALL_ARGS", toolCallId="c1", delta='"ls -1"}'),
    emit(type="TOOL_CALL_END", toolCallId="c1"),
    emit(type="TOOL_CALL_RESULT", messageId="tr1", toolCallId="c1", content="README.md\nsetup.py"),
    emit(type="TEXT_MESSAGE_START", messageId="m2", role="assistant"),
    text("The answer is 42.", "m2"),
    emit(type="TEXT_MESSAGE_END", messageId="m2"),
    emit(type="RUN_FINISHED", threadId="x", runId="y",
         usage=[{"inputTokens": 1200, "outputTokens": 34, "totalTokens": 1234}]),
)


@pytest.fixture
def bridge(tmp_path: Path) -> FakeCliBridge:
    return FakeCliBridge(tmp_path)


async def cli(*args: str) -> Result:
    """``ambient-runner <args>`` in a worker thread (the harness server keeps serving in this loop)."""
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"AGUI_TOKEN": None,
                                                                           "AMBIENT_RUNNER_URL": None})


async def events_logged(runner: RunnerHarness, thread_id: str, count: int) -> None:
    """Wait until the runner logged ``count`` events of the thread."""
    for _ in range(600):
        state = runner.app.runtime.runs.thread(thread_id)
        if state is not None and state.log.last_seq >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{thread_id}: fewer than {count} events after 30 s")


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


async def test_normal_run_renders_text_tool_call_result_and_usage(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        result = await cli("run", TOOL_RUN, "--url", runner.base_url, "--thread", "t-normal")
        replay = [event for _, event in await runner.events("t-normal")]
    check_stream(replay)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Let me look at the files.\n" in out
    assert "listing is cheap" in out
    assert '⚙ run_shell_command {"command": "ls -1"}' in out
    assert "↳ run_shell_command: README.md\n    setup.py" in out
    assert "The answer is 42.\n" in out
    assert "tokens in 1,200, out 34, total 1,234" in out
    assert out.index("Let me look") < out.index("⚙") < out.index("↳") < out.index("The answer") < out.index("✓ done")
    assert "thread t-normal" in result.stderr


async def test_json_output_equals_the_stream_events(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        result = await cli("run", TOOL_RUN, "--url", runner.base_url, "--thread", "t-json", "--json")
        replay = [event for _, event in await runner.events("t-json")]
    assert result.exit_code == 0, result.output
    printed = json_lines(result.stdout)
    assert printed == replay
    assert [e["type"] for e in printed][0] == "RUN_STARTED" and printed[-1]["type"] == "RUN_FINISHED"
    assert printed[-1]["usage"] == [{"inputTokens": 1200, "outputTokens": 34, "totalTokens": 1234}]
    assert result.stderr == ""


async def test_new_thread_id_when_none_given(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        result = await cli("run", script(text("hi")), "--url", runner.base_url, "--json")
    assert result.exit_code == 0, result.output
    started = json_lines(result.stdout)[0]
    assert started["threadId"].startswith("cli-") and len(started["threadId"]) > 20


async def test_failed_run_exits_1_and_shows_the_error(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        result = await cli("run", script(text("Starting"), {"stderr": "fatal: quota exhausted"}, {"exit": 3}),
                           "--url", runner.base_url)
    assert result.exit_code == 1, result.output
    assert "Starting" in result.stdout
    assert "✗ error [CLI_EXITED]: The fake CLI exited with code 3." in result.stdout
    assert "fatal: quota exhausted" in result.stdout


async def test_resume_from_gets_exactly_the_events_after_n(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        pairs = await runner.run_with_ids("t-resume", TOOL_RUN)
        result = await cli("run", "--url", runner.base_url, "--thread", "t-resume", "--resume-from", "5", "--json")
        human = await cli("run", "--url", runner.base_url, "--thread", "t-resume", "--resume-from", "10")
    assert result.exit_code == 0, result.output
    assert json_lines(result.stdout) == [event for seq, event in pairs if seq is not None and seq > 5]
    assert human.exit_code == 0, human.output
    assert "↳ run_shell_command: README.md" in human.stdout and "Let me look" not in human.stdout
    assert "The answer is 42." in human.stdout


async def test_resume_from_follows_a_live_run_to_its_end(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        run = asyncio.create_task(runner.run_with_ids("t-live", script(
            text("first"), {"sleep": 1.0}, text(" second"))))
        await events_logged(runner, "t-live", 3)
        result = await cli("run", "--url", runner.base_url, "--thread", "t-live", "--resume-from", "0", "--json")
        pairs = await run
    assert result.exit_code == 0, result.output
    assert json_lines(result.stdout) == [event for _, event in pairs]


async def test_wrong_token_is_a_one_line_401(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge, agui_token="right-token-123") as runner:
        wrong = await cli("run", "hi", "--url", runner.base_url, "--token", "wrong-token")
        right = await cli("run", script(text("ok")), "--url", runner.base_url, "--token", "right-token-123")
    assert wrong.exit_code == 3
    assert wrong.stderr.strip().splitlines()[-1].startswith("error: HTTP 401 UNAUTHORIZED: missing or wrong token")
    assert "--token" in wrong.stderr
    assert right.exit_code == 0, right.output
    assert "ok" in right.stdout


async def test_a_message_for_a_busy_thread_is_queued_and_its_run_shown(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        first = asyncio.create_task(runner.run("t-busy", script(text("a"), {"sleep": 1.5}, text("b"))))
        await events_logged(runner, "t-busy", 1)
        result = await cli("run", script(text("after it")), "--url", runner.base_url, "--thread", "t-busy")
        await first
    assert result.exit_code == 0, result.output
    assert "queued (#1): runs when the thread's current run ends" in result.stdout
    assert "after it" in result.stdout and "✓ done" in result.stdout


async def test_invalid_request_is_a_one_line_422(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        result = await cli("run", "hi", "--url", runner.base_url, "--thread", "bad\x01id")
    assert result.exit_code == 3
    assert "error: HTTP 422 INVALID_REQUEST: threadId must not contain control characters" in result.stderr


async def test_connection_refused_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        result = await cli("run", "hi", "--url", f"http://127.0.0.1:{port}")
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: cannot connect to http://127.0.0.1:{port}: connection refused. Is the runner running "
        "(or `kubectl port-forward` to it open)?")


async def test_usage_errors_exit_2() -> None:
    no_thread = await cli("run", "--resume-from", "3")
    no_prompt = await cli("run", "   ")
    assert no_thread.exit_code == 2 and "--resume-from needs --thread" in no_thread.stderr
    assert no_prompt.exit_code == 2 and "give a prompt" in no_prompt.stderr


async def test_ctrl_c_interrupts_the_run_and_exits_130(bridge: FakeCliBridge) -> None:
    async with RunnerHarness(bridge) as runner:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ambient_runner.client.main", "run", script(text("working on it"), {"sleep": 30}),
            "--url", runner.base_url, "--thread", "t-ctrl-c", cwd=REPO, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert proc.stderr is not None
        seen = await printed_until(proc, b"working on it")
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            rest, err = await proc.communicate()
        replay = [event for _, event in await runner.events("t-ctrl-c")]
    assert proc.returncode == 130, (proc.returncode, seen + rest, err)
    output = (seen + rest).decode()
    assert "interrupt sent" in output
    assert "⏹ cancelled" in output
    assert replay[-1]["type"] == "RUN_FINISHED" and replay[-1]["outcome"] == {"type": "cancelled"}


async def client_on_a_terminal(runner: RunnerHarness, *args: str) -> tuple[asyncio.subprocess.Process, int, bytes]:
    """``ambient-runner run ARGS`` with a terminal as its stdin (it reads typed lines only from one), once it has
    printed the run's first text: the process, the terminal to type into, and what it printed so far."""
    terminal, stdin = os.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ambient_runner.client.main", "run", *args, "--url", runner.base_url, cwd=REPO,
            stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    finally:
        os.close(stdin)
    return proc, terminal, await printed_until(proc, b"working")


async def printed_until(proc: asyncio.subprocess.Process, text: bytes) -> bytes:
    """What the client printed up to and including ``text`` (fails when it ends first, or after 30 s)."""
    assert proc.stdout is not None
    seen = b""
    async with asyncio.timeout(30):
        while text not in seen:
            chunk = await proc.stdout.read(4096)
            assert chunk, seen
            seen += chunk
    return seen


async def test_a_line_typed_while_the_run_streams_is_sent_and_its_queued_run_shown_next(
        bridge: FakeCliBridge, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        proc, terminal, seen = await client_on_a_terminal(
            runner, script(text("working "), {"wait_file": str(gate)}, text("first done")), "--json",
            "--thread", "t-typed")
        os.write(terminal, (script(text("second run")) + "\n").encode())
        async with asyncio.timeout(30):
            while not runner.app.runtime.runs.thread("t-typed").queue:
                await asyncio.sleep(0.02)
        gate.touch()
        async with asyncio.timeout(60):
            rest, err = await proc.communicate()
        os.close(terminal)
        replay = [event for _, event in await runner.events("t-typed")]
    assert proc.returncode == 0, (seen + rest, err)
    events = json_lines((seen + rest).decode())
    accepted = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "ambient:message_accepted"]
    assert [a["value"]["mode"] for a in accepted] == ["queued"]
    assert "queued (#1)" in err.decode()
    runs = [e["runId"] for e in events if e["type"] == "RUN_STARTED"]
    assert len(runs) == 2 and runs[1].startswith("cli-")
    assert [e["runId"] for e in events if e["type"] == "RUN_FINISHED"] == runs  # each run's end, in order
    assert "".join(e.get("delta", "") for e in events) == "working first donesecond run"
    assert [e["runId"] for e in replay if e["type"] == "RUN_FINISHED"] == runs


async def test_a_line_typed_into_a_steering_runner_is_steered_and_said_so(tmp_path: Path) -> None:
    bridge = SteeringBridge(tmp_path)
    gate = tmp_path / "gate"
    async with RunnerHarness(bridge) as runner:
        proc, terminal, seen = await client_on_a_terminal(
            runner, script(text("working "), {"wait_file": str(gate)}, text("done")), "--thread", "t-steer")
        os.write(terminal, b"also check the tests\n")
        async with asyncio.timeout(30):
            while not bridge.steered:
                await asyncio.sleep(0.02)
        gate.touch()
        async with asyncio.timeout(60):
            rest, err = await proc.communicate()
        os.close(terminal)
    output = (seen + rest).decode()
    assert proc.returncode == 0, (output, err)
    assert bridge.steered == [("t-steer", "also check the tests")]
    assert "↪ sent into the running turn" in output
    assert output.count("✓ done") == 1  # the steering POST's own short run is no second run on screen
