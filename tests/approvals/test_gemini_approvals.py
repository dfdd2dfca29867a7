"""A person in the loop with the real ``gemini --acp`` (scripted Gemini API, loopback-only netns, the real service
over HTTP/SSE; every stream checked).

Under ``approvalPolicy: ask`` the thread's ACP session runs in mode ``default``: the CLI's
``session/request_permission`` for ``echo hello > out.txt`` ends the run with an interrupt while the live CLI waits;
the answer, in the thread's next run, is ``proceed_once`` or ``cancel`` (never "allow for the session").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pausing import ASK, WRITE, answer, interrupts_of, is_cli_result, offline_kit, texts
from runner_kits import RunnerKit

from ambient_runner.scripted_models.base import REFUSED_ANSWER

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]


def model_bodies(kit: RunnerKit) -> list[Any]:
    server = kit.bridge.scripted  # type: ignore[attr-defined]
    return [r.body for r in server.requests if ":streamGenerateContent" in r.path]


def function_responses(bodies: list[Any]) -> list[str]:
    return [json.dumps(p["functionResponse"]) for body in bodies for c in body.get("contents", [])
            for p in c.get("parts", []) if "functionResponse" in p]


@pytest.fixture
async def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with offline_kit("gemini-cli", tmp_path, monkeypatch) as kit:
        yield kit


async def test_an_approved_command_runs_in_the_next_run(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-approve", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "run_shell_command"
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == call["toolCallId"]
    assert "echo hello > out.txt" in interrupt["message"]
    out = kit.settings.workspace_path / "out.txt"
    assert not out.exists()
    pid = kit.bridge.live.pgid  # type: ignore[attr-defined]
    resumed = await kit.runner.post(answer("t-approve", interrupt, {"approved": True}))
    assert [e["type"] for e in resumed][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"], resumed
    assert next(e for e in resumed if is_cli_result(e))["toolCallId"] == call["toolCallId"]
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome") in (None, {"type": "success"})
    assert out.read_text().strip() == "hello"
    assert kit.bridge.live.pgid == pid  # type: ignore[attr-defined]  # the same live CLI went on


async def test_a_refusal_is_a_closed_call_and_the_persons_words_follow(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-refuse", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    why = "use a temp dir"
    resumed = await kit.runner.post(answer("t-refuse", interrupt, {"approved": False, "message": why}))
    result = next(e for e in resumed if is_cli_result(e))
    assert result["toolCallId"] == interrupt["toolCallId"] and result["content"] == why
    assert resumed[-1]["type"] == "RUN_FINISHED" and not resumed[-1].get("outcome")  # no new approval asked
    assert not (kit.settings.workspace_path / "out.txt").exists()
    bodies = model_bodies(kit)
    assert any("canceled by the user" in response for response in function_responses(bodies))
    assert why in json.dumps(bodies[-1])  # the next prompt told the model why
    assert "".join(REFUSED_ANSWER) in texts(resumed)  # and it answered in words: the refusal ended the turn
    assert [e["toolCallId"] for e in resumed if e["type"] == "TOOL_CALL_START"] in ([], [interrupt["toolCallId"]])


async def test_plan_mode_offers_no_shell_and_auto_runs_without_asking(kit: RunnerKit) -> None:
    out = kit.settings.workspace_path / "out.txt"
    planned = await kit.runner.run("t-plan", WRITE, {"mode": "plan", **ASK})
    assert planned[-1]["type"] == "RUN_FINISHED" and not planned[-1].get("outcome")  # nothing to ask in plan mode
    assert not out.exists()
    assert any("not found in registry" in r for r in function_responses(model_bodies(kit)))
    events = await kit.runner.run("t-auto", WRITE)
    assert events[-1]["type"] == "RUN_FINISHED" and not events[-1].get("outcome")
    assert out.read_text().strip() == "hello"
