"""An ACP agent killed mid-turn by a signal: the run's ``RUN_ERROR`` names that agent, as the runner names it
elsewhere (``The <preset> agent``), not another CLI. tests/acp/reopenless_agent.py, a tiny agent on stdio that calls
no model, kills itself with SIGKILL on a ``KILLME`` prompt; the real agents' kill mid-turn is in each preset's
tests (``acp_agent_tests.killed_mid_turn_then_next``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp_agent_tests import bridge_of
from runners import scripted_runner

pytestmark = [pytest.mark.usefixtures("isolated_network")]
AGENT = Path(__file__).with_name("reopenless_agent.py")
SETTINGS = {"acp_agent": "custom", "acp_agent_command": f"{sys.executable} {AGENT}",
            "acp_agent_model_api": "openai-chat", "runner_approval_policy": "auto"}


async def test_an_agent_killed_mid_turn_is_named_in_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, **SETTINGS) as runner:
        events = await runner.harness.run("t-killed", "KILLME now")
        name = bridge_of(runner).live.agent.name
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and "killed by SIGKILL" in error["message"], error
    assert name == "The custom ACP agent"
    assert error["message"].startswith(f"{name} was killed by SIGKILL"), error["message"]
