"""The Codex bridge with the real bundled codex app-server (docs/runners.md#versions) against the scripted
Responses API, end to end through the real service (RunnerHarness: every stream passes check_stream)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from harness import RunnerHarness
from proctable import group_members
from runner_kits import make_turn
from runners import wait_for

from ambient_runner.bridges.codex_sdk.bridge import CodexBridge
from ambient_runner.bridges.contract import BridgeError
from ambient_runner.scripted_models.base import PLAIN_ANSWER
from tests.codex.helpers import codex_processes, harness_for, make_settings

pytestmark = pytest.mark.real_cli
TIMEOUT = 120


def scripted(runner: RunnerHarness) -> Any:
    bridge = runner.bridge
    assert isinstance(bridge, CodexBridge) and bridge.scripted is not None
    return bridge.scripted


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def request_texts(runner: RunnerHarness) -> list[str]:
    """The text of every input item of the latest Responses request."""
    body = [b for b in scripted(runner).bodies() if isinstance(b, dict) and "input" in b][-1]
    return [json.dumps(item) for item in body["input"]]


async def request_seen(server: Any, text: str) -> None:
    """Wait until the scripted server has received a request containing ``text``."""
    for _ in range(TIMEOUT * 20):
        if any(text in json.dumps(body) for body in server.bodies()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no request with {text!r}")


async def run(runner: RunnerHarness, thread_id: str, prompt: str, **kwargs: Any) -> list[dict[str, Any]]:
    async with asyncio.timeout(TIMEOUT):
        return await runner.run(thread_id, prompt, **kwargs)


async def test_text_arrives_as_several_deltas(runner: RunnerHarness) -> None:
    events = await run(runner, "t-text", "NOTOOL say hello")
    assert [e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")] == PLAIN_ANSWER
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["usage"] == [{"provider": "openai", "model": "gpt-5.5", "inputTokens": 100, "outputTokens": 10,
                                  "totalTokens": 110, "reasoningTokens": 0, "cachedInputTokens": 0,
                                  "cacheWriteInputTokens": 0}]


async def test_command_tool_call_creates_a_file(runner: RunnerHarness) -> None:
    events = await run(runner, "t-tool", "Create out.txt with hello")
    workspace = runner.settings.workspace_path
    assert (workspace / "out.txt").read_text() == "hello\n"
    (start,) = of_type(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "shell"
    args = json.loads("".join(e["delta"] for e in of_type(events, "TOOL_CALL_ARGS")))
    assert "echo hello > out.txt" in args["command"] and args["cwd"] == str(workspace)
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert json.loads(result["content"])["exitCode"] == 0
    assert "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")).endswith("All good.")


async def test_apply_patch_file_change(runner: RunnerHarness) -> None:
    events = await run(runner, "t-patch", "THINK PATCH create hello.txt")
    assert (runner.settings.workspace_path / "hello.txt").read_text() == "hello from patch\n"
    (start,) = of_type(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "apply_patch"
    args = json.loads(of_type(events, "TOOL_CALL_ARGS")[0]["delta"])
    assert args == {"changes": [{"path": str(runner.settings.workspace_path / "hello.txt"), "kind": "add"}]}
    assert of_type(events, "REASONING_MESSAGE_CONTENT"), "THINK gives a reasoning summary"


async def test_second_turn_continues_the_thread_also_in_a_new_bridge(
        tmp_path: Path, isolated_network: None, no_openai_env: None) -> None:
    async with harness_for(CodexBridge(make_settings(tmp_path)), tmp_path) as runner:
        await run(runner, "t-resume", "Create out.txt with hello")
        await run(runner, "t-resume", "NOTOOL what did you do?")
        texts = request_texts(runner)
        assert any("Create out.txt with hello" in t for t in texts)
        assert any('"function_call_output"' in t for t in texts)
        first_codex_thread = runner.bridge.sessions.get("t-resume")  # type: ignore[attr-defined]
    # a replaced pod: a new bridge and app-server on the same state dir
    async with harness_for(CodexBridge(make_settings(tmp_path)), tmp_path) as runner:
        await run(runner, "t-resume", "NOTOOL and before that?")
        texts = request_texts(runner)
        assert any("Create out.txt with hello" in t for t in texts)
        assert any("NOTOOL what did you do?" in t for t in texts)
        assert runner.bridge.sessions.get("t-resume") == first_codex_thread  # type: ignore[attr-defined]


async def test_interrupt_mid_stream_then_the_thread_continues(runner: RunnerHarness) -> None:
    server = scripted(runner)
    server.slow_delay = 0.5
    task = asyncio.create_task(run(runner, "t-slow", "SLOW count for me"))
    async with asyncio.timeout(TIMEOUT):
        await request_seen(server, "SLOW count")
        await wait_for(lambda: runner.seen("t-slow", "TEXT_MESSAGE_CONTENT"), what="a first chunk streamed")
        response = await runner.interrupt("t-slow")
        assert response.status_code == 200
        events = await task
    assert of_type(events, "TEXT_MESSAGE_CONTENT"), "some text streamed before the interrupt"
    assert len(of_type(events, "TEXT_MESSAGE_CONTENT")) < server.slow_chunks
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1].get("outcome") == {"type": "cancelled"}
    events = await run(runner, "t-slow", "NOTOOL are you still there?")
    assert events[-1]["type"] == "RUN_FINISHED" and "outcome" not in events[-1]
    assert any("SLOW count for me" in t for t in request_texts(runner))


@pytest.mark.parametrize(("mode", "words"), [
    ("error401", ["OpenAI rejected the API key (HTTP 401)", "OPENAI_API_KEY", "CODEX_API_KEY"]),
    ("error429", ["rate limit or quota", "HTTP 429"]),
    ("error500", ["server error (HTTP 5xx)", "Retry"]),
])
async def test_provider_errors_become_specific_run_errors(runner: RunnerHarness, mode: str,
                                                          words: list[str]) -> None:
    scripted(runner).mode = mode
    events = await run(runner, f"t-{mode}", "NOTOOL hello")
    error = events[-1]
    assert error["type"] == "RUN_ERROR"
    for word in words:
        assert word in error["message"], error["message"]
    scripted(runner).mode = "ok"
    events = await run(runner, f"t-{mode}", "NOTOOL hello again")
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_shutdown_leaves_no_codex_process(tmp_path: Path, isolated_network: None, no_openai_env: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGUI_STORAGE_SECRET", "runner-secret-value-123")
    before = {pid for pid, _ in codex_processes(under=os.getpid())}  # (re-parented to us, a subreaper, if left)
    bridge = CodexBridge(make_settings(tmp_path))
    async with harness_for(bridge, tmp_path) as runner:
        await run(runner, "t-proc", "Create out.txt with hello")
        pgid = bridge._app.pgid if bridge._app else None  # noqa: SLF001 - the test checks the process group
        assert pgid is not None and pgid in [pid for pid, _ in group_members(pgid)]
        environ = await asyncio.to_thread(Path(f"/proc/{pgid}/environ").read_bytes)
        assert b"runner-secret-value-123" not in environ, "the runner's own env must not reach codex"
        assert f"CODEX_HOME={bridge.codex_home}".encode() in environ
        assert b"HOME=" + str(Path.home()).encode() + b"\0" not in environ
    assert group_members(pgid) == []
    assert {pid for pid, _ in codex_processes(under=os.getpid())} - before == set()


async def test_missing_credentials(tmp_path: Path, no_openai_env: None) -> None:
    bridge = CodexBridge(make_settings(tmp_path, runner_scripted_model=False))
    readiness = bridge.readiness()
    assert not readiness.ready
    assert {"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_AUTH_JSON_FILE"} <= set(readiness.missing)
    with pytest.raises(BridgeError) as caught:
        async for _ in bridge.run_turn(make_turn("t", "hi")):
            pass
    assert caught.value.code == "AUTH_MISSING"
    assert "OPENAI_API_KEY" in caught.value.message and "CODEX_API_KEY" in caught.value.message


async def test_auth_json_is_copied_private_and_api_key_stays_out_of_files(
        tmp_path: Path, no_openai_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted = tmp_path / "mounted-auth.json"
    mounted.write_text('{"tokens": {"access_token": "x"}}')
    monkeypatch.setenv("CODEX_AUTH_JSON_FILE", str(mounted))
    bridge = CodexBridge(make_settings(tmp_path, runner_scripted_model=False))
    assert bridge.readiness().ready
    await bridge.startup()
    copied = bridge.codex_home / "auth.json"
    assert copied.read_text() == mounted.read_text() and (copied.stat().st_mode & 0o777) == 0o600
    assert "auth.json" in bridge.state_files().credentials
    config = (bridge.codex_home / "config.toml").read_text()
    assert 'approval_policy = "never"' in config and "model_provider" not in config
    await bridge.shutdown()

    monkeypatch.delenv("CODEX_AUTH_JSON_FILE")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    bridge = CodexBridge(make_settings(tmp_path, runner_scripted_model=False))
    await bridge.startup()
    assert list(bridge.secret_values()) == ["sk-test-key-456"]
    assert not (bridge.codex_home / "auth.json").exists()
    config = (bridge.codex_home / "config.toml").read_text()
    proxy = bridge.model_proxy  # the app-server talks to the runner's proxy, which forwards to OPENAI_BASE_URL
    assert proxy is not None and proxy.upstream.base_url == "http://127.0.0.1:9/v1"
    assert f'base_url = "{proxy.base_url}/v1"' in config and 'env_key = "OPENAI_API_KEY"' in config
    assert "sk-test-key-456" not in config and "127.0.0.1:9/" not in config
    for feature in ("plugins", "remote_plugin", "apps", "api_key_model_discovery"):
        assert f"{feature} = false" in config
    await bridge.shutdown()


def test_capabilities(tmp_path: Path) -> None:
    capabilities = CodexBridge(make_settings(tmp_path)).capabilities()
    assert capabilities.runner_type == "codex-sdk"
    assert capabilities.reasoning and capabilities.state_snapshots
    assert capabilities.default_model == "gpt-5.5"
    assert os.path.basename(str(make_settings(tmp_path).state_dir)) == ".codex"


async def test_app_server_death_ends_the_run_and_the_next_turn_restarts_it(runner: RunnerHarness) -> None:
    import signal

    bridge = runner.bridge
    assert isinstance(bridge, CodexBridge)
    await run(runner, "t-crash", "NOTOOL first")
    server = scripted(runner)
    server.slow_delay = 0.5
    before = len(runner.logged("t-crash"))
    task = asyncio.create_task(run(runner, "t-crash", "SLOW keep going"))
    async with asyncio.timeout(TIMEOUT):
        await request_seen(server, "SLOW keep going")
        await wait_for(lambda: runner.seen("t-crash", "TEXT_MESSAGE_CONTENT", after=before), what="a chunk streamed")
        assert bridge._app is not None and bridge._app.pgid is not None  # noqa: SLF001
        dead_group = bridge._app.pgid  # noqa: SLF001
        os.killpg(dead_group, signal.SIGKILL)
        events = await task
    assert events[-1]["type"] == "RUN_ERROR"
    assert "app-server stopped unexpectedly" in events[-1]["message"]
    events = await run(runner, "t-crash", "NOTOOL after the crash")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert bridge._app.pgid != dead_group  # noqa: SLF001 - a new app-server
    texts = request_texts(runner)
    assert any("NOTOOL first" in t for t in texts), "the restarted app-server resumed the thread"


async def test_idle_timeout_stops_the_turn_and_the_thread_stays_usable(
        tmp_path: Path, isolated_network: None, no_openai_env: None) -> None:
    bridge = CodexBridge(make_settings(tmp_path))
    async with harness_for(bridge, tmp_path, runner_idle_timeout=3.0) as runner:
        await run(runner, "t-hang", "NOTOOL first")
        scripted(runner).mode = "hang"
        events = await run(runner, "t-hang", "NOTOOL this one hangs")
        assert events[-1]["type"] == "RUN_ERROR"
        scripted(runner).mode = "ok"
        events = await run(runner, "t-hang", "NOTOOL after the timeout")
        assert events[-1]["type"] == "RUN_FINISHED"
        texts = request_texts(runner)  # a new turn (not a join of the hung one) on the same thread
        assert "NOTOOL after the timeout" in texts[-1] and any("NOTOOL first" in t for t in texts)


async def test_plan_mode_runs_commands_read_only(runner: RunnerHarness) -> None:
    events = await run(runner, "t-plan", "Create out.txt with hello", forwarded_props={"mode": "plan"})
    assert not (runner.settings.workspace_path / "out.txt").exists()
    # the pinned codex emits no commandExecution item for a command its read-only sandbox failed; the model sees it
    (output,) = [t for t in request_texts(runner) if '"function_call_output"' in t]
    assert "Read-only file system" in output
    assert events[-1]["type"] == "RUN_FINISHED"
