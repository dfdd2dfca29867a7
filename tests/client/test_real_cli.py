"""The terminal client against the runner with the real Gemini CLI on the scripted Gemini API (offline)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import Result
from harness import RunnerHarness
from typer.testing import CliRunner

from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.client.main import app
from ambient_runner.settings import RunnerSettings

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


async def cli(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"AGUI_TOKEN": None})


async def test_gemini_tool_call_rendered_for_a_person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_MAX_ATTEMPTS", "1")
    settings = RunnerSettings(runner_type="gemini-cli", workspace_path=tmp_path / "workspace",
                              runner_state_root=tmp_path / "state", runner_scripted_model=True)
    settings.workspace_path.mkdir(parents=True)
    bridge = GeminiCliBridge(settings)
    async with RunnerHarness(bridge, runner_type="gemini-cli", workspace_path=settings.workspace_path,
                             runner_state_root=settings.runner_state_root, runner_scripted_model=True) as runner:
        first = await cli("run", "Create out.txt with hello", "--url", runner.base_url, "--thread", "t-real")
        second = await cli("run", "NOTOOL what did you do?", "--url", runner.base_url, "--thread", "t-real")
    assert first.exit_code == 0, first.output
    assert "⚙ run_shell_command" in first.stdout and "echo hello > out.txt" in first.stdout
    assert "↳ run_shell_command:" in first.stdout
    assert "Done: I ran the command and checked the result. All good." in first.stdout
    assert "✓ done" in first.stdout and "tokens in" in first.stdout
    assert (settings.workspace_path / "out.txt").read_text().strip() == "hello"
    assert second.exit_code == 0, second.output
    assert "⚙" not in second.stdout and "✓ done" in second.stdout
