"""Start-up: settings errors, bridge selection, INITIAL_PROMPT."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import RunnerHarness, check_stream
from process_bridge import FakeCliBridge, script

ROOT = Path(__file__).resolve().parents[2]


def start_main(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    return subprocess.run([sys.executable, "-c", "import main"], cwd=ROOT, env=clean | env, text=True,
                          capture_output=True, timeout=60)


@pytest.mark.parametrize(("env", "expected"), [
    ({"RUNNER_TYPE": "langgraph"},
     "ambient-runner: invalid RUNNER_TYPE (got 'langgraph'): must be one of claude, gemini-cli, codex-sdk, "
     "claude-agent-sdk"),
    ({"AGUI_PORT": "99999"}, "ambient-runner: invalid AGUI_PORT (got '99999'): Input should be less than or equal "
                             "to 65535"),
    ({"RUNNER_IDLE_TIMEOUT": "-1"}, "ambient-runner: invalid RUNNER_IDLE_TIMEOUT (got '-1'): Input should be "
                                    "greater than 0"),
    ({"RUNNER_STATE_DIR": "../etc"}, "ambient-runner: invalid RUNNER_STATE_DIR (got '../etc'): must be a plain "
                                     "directory name such as .gemini"),
    ({"WORKSPACE_PATH": "/srv/repo", "RUNNER_STATE_ROOT": "/srv/repo/.state"},
     "ambient-runner: invalid RUNNER_STATE_ROOT (got '/srv/repo/.state'): must lie outside WORKSPACE_PATH "
     "(/srv/repo): the CLI's state and credentials do not belong in the user's repository"),
    ({"WORKSPACE_PATH": "/srv/repo", "RUNNER_ATTACHMENTS_DIR": "/srv/repo/uploads"},
     "ambient-runner: invalid RUNNER_ATTACHMENTS_DIR (got '/srv/repo/uploads'): must lie outside WORKSPACE_PATH "
     "(/srv/repo): a message's attachments do not belong in the user's repository"),
])
def test_a_bad_setting_stops_the_process_with_one_line(env, expected):
    result = start_main(env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [expected]


def test_only_the_selected_bridge_is_imported_and_only_after_start():
    code = ("import sys, main\n"
            "from ambient_runner.bridges.registry import create_bridge\n"
            "def loaded(): return sorted(m for m in sys.modules if m.startswith(('ambient_runner.bridges.', "
            "'claude_agent_sdk', 'openai_codex', 'ag_ui_')))\n"
            "at_import = loaded(); create_bridge(main.settings); print([at_import, loaded()])")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True, capture_output=True, timeout=60,
                            env=clean | {"RUNNER_TYPE": "gemini-cli"})
    assert result.returncode == 0, result.stderr
    at_import, after_boot = eval(result.stdout)  # noqa: S307 - our own printed lists
    assert at_import == ["ambient_runner.bridges.contract", "ambient_runner.bridges.registry"]  # no runner yet
    assert not [m for m in after_boot if m.startswith(("claude_agent_sdk", "openai_codex", "ag_ui_claude",
                                                       "ag_ui_codex_sdk", "ambient_runner.bridges.claude",
                                                       "ambient_runner.bridges.codex_sdk"))]
    assert "ambient_runner.bridges.gemini_cli.bridge" in after_boot


async def test_initial_prompt_runs_once_and_is_readable_through_events(tmp_path):
    state_root = tmp_path / "state"
    prompt = script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "started by itself"}})
    async with RunnerHarness(FakeCliBridge(tmp_path), initial_prompt=prompt, session_id="sess-1",
                             runner_state_root=state_root) as runner:
        for _ in range(200):
            state = runner.app.state.runs.thread("sess-1")
            if state is not None and state.active is None:
                break
            await asyncio.sleep(0.05)
        events = [e for _, e in await runner.events("sess-1")]
    check_stream(events)
    assert events[2]["delta"] == "started by itself"
    # A replaced pod with the same state dir does not run the initial prompt again.
    async with RunnerHarness(FakeCliBridge(tmp_path), initial_prompt=prompt, session_id="sess-1",
                             runner_state_root=state_root) as runner:
        await asyncio.sleep(0.3)
        assert runner.app.state.runs.thread("sess-1") is None


class FailingStartBridge(FakeCliBridge):
    async def startup(self) -> None:
        raise RuntimeError("scripted provider could not bind")


async def test_a_bridge_that_fails_to_start_keeps_serving_and_ready_says_why(tmp_path):
    async with RunnerHarness(FailingStartBridge(tmp_path)) as runner:
        assert (await runner.client.get("/health")).status_code == 200
        ready = await runner.client.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["detail"] == "bridge startup failed: scripted provider could not bind"


class SlowStartBridge(FakeCliBridge):
    async def startup(self) -> None:
        await asyncio.sleep(1.5)


async def test_health_answers_while_booting_and_a_run_waits_for_the_boot(tmp_path):
    async with RunnerHarness(SlowStartBridge(tmp_path)) as runner:
        assert (await runner.client.get("/health")).status_code == 200
        ready = await runner.client.get("/ready")
        assert ready.status_code == 503
        assert ready.json()["detail"] == "starting: preparing the agent CLI"
        events = await runner.run("t1", script({"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                                                         "delta": "after boot"}}))
        assert (await runner.client.get("/ready")).status_code == 200
    assert events[2]["delta"] == "after boot"
