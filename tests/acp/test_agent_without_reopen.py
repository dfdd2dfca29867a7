"""An ACP agent whose ``initialize`` offers neither ``session/load`` nor ``session/resume`` (tests/acp/
reopenless_agent.py, a tiny agent on stdio that calls no model): its threads run, and after a restart a thread's
next run ends with ``RESUME_FAILED`` and words that say what happened and what to do, never a new session silently
in the old one's place."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp_agent_tests import bridge_of, texts
from runners import scripted_runner

from ambient_runner.bridges.acp_client.live import LOAD, RESUME, reopens

pytestmark = [pytest.mark.usefixtures("isolated_network")]
AGENT = Path(__file__).with_name("reopenless_agent.py")
SETTINGS = {"acp_agent": "custom", "acp_agent_command": f"{sys.executable} {AGENT}",
            "acp_agent_model_api": "openai-chat", "runner_approval_policy": "auto"}


async def test_a_thread_after_a_restart_ends_with_a_clear_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch, **SETTINGS) as first:
        before = await first.harness.run("t-reopen", "NOTOOL hello")
        session = bridge_of(first).sessions.get("t-reopen")
        again = await first.harness.run("t-reopen", "NOTOOL still the same process")
    assert texts(before) == texts(again) == ["Hello from an agent that keeps no sessions."]
    assert session is not None and bridge_of(first).live.reopens == ()
    async with scripted_runner("acp", tmp_path, monkeypatch, **SETTINGS) as restarted:
        events = await restarted.harness.run("t-reopen", "NOTOOL and now?")
        other = await restarted.harness.run("t-other", "NOTOOL a new thread")
        assert bridge_of(restarted).sessions.get("t-reopen") == session  # kept: no new session in its place
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "RESUME_FAILED", error
    assert "neither load nor resume" in error["message"] and "Start a new session" in error["message"]
    assert not [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert other[-1]["type"] == "RUN_FINISHED"  # a new thread still runs


def test_the_agents_capabilities_say_how_a_session_is_reopened() -> None:
    assert reopens({"loadSession": True, "sessionCapabilities": {"resume": {}}}) == (LOAD, RESUME)
    assert reopens({"loadSession": True, "sessionCapabilities": {"resume": {}}}, resume_first=True) == (RESUME, LOAD)
    assert reopens({"sessionCapabilities": {"resume": {}}}) == (RESUME,)
    assert reopens({"loadSession": False}) == ()
