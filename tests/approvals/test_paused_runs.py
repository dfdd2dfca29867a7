"""What every runner that pauses a live CLI turn does the same way (Codex's app-server, Gemini's ``gemini --acp``;
Claude's own gate has its own tests): the real CLI on its scripted model, loopback-only netns, the real service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pausing import ASK, WRITE, answer, interrupts_of, offline_kit

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network"),
              pytest.mark.parametrize("runner_type", ["codex-sdk", "gemini-cli"])]


@pytest.fixture
async def kit(runner_type: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with offline_kit(runner_type, tmp_path, monkeypatch) as kit:
        yield kit


async def test_interrupt_while_paused_cancels_the_request(kit: Any) -> None:
    events = await kit.runner.run("t-stop", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    response = await kit.runner.interrupt("t-stop")
    assert response.status_code == 200 and response.json()["refusedInterrupts"] == [interrupt["id"]]
    after = await kit.runner.run("t-stop", "NOTOOL hello again")
    assert after[-1]["type"] == "RUN_FINISHED"
    assert not (kit.settings.workspace_path / "out.txt").exists()


async def test_a_new_message_while_paused_cancels_the_request_then_runs(kit: Any) -> None:
    events = await kit.runner.run("t-new", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    after = await kit.runner.run("t-new", "NOTOOL never mind, just say hello")
    assert after[-1]["type"] == "RUN_FINISHED" and not after[-1].get("outcome")
    assert not (kit.settings.workspace_path / "out.txt").exists()
    assert "never mind, just say hello" in json.dumps(kit.model_requests()[-1].body)
    response = await kit.runner.client.post("/run", json=answer("t-new", interrupt, True))
    assert response.status_code == 422 and response.json()["code"] == "UNKNOWN_INTERRUPT"


async def test_a_pod_replaced_while_paused_says_the_interrupt_is_lost(runner_type: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit(runner_type, tmp_path, monkeypatch) as kit:
        (interrupt,) = interrupts_of(await kit.runner.run("t-lost", WRITE, ASK))
    async with offline_kit(runner_type, tmp_path, monkeypatch) as kit:
        events = await kit.runner.post(answer("t-lost", interrupt, True))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "INTERRUPT_LOST", events[-1]
        after = await kit.runner.run("t-lost", "NOTOOL hello again")
        assert after[-1]["type"] == "RUN_FINISHED", after[-1]
        assert WRITE in json.dumps(kit.model_requests()[-1].body)  # the conversation was resumed
    assert not (tmp_path / "workspace" / "out.txt").exists()
