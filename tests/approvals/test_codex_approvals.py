"""A person in the loop with the real Codex app-server (scripted Responses server, loopback-only netns, the real
service over HTTP/SSE; every stream checked by ag-ui-validate and the project's checks).

Under ``approvalPolicy: ask`` a turn runs with Codex's ``untrusted`` policy: its request to run
``echo hello > out.txt`` ends the run with an interrupt while the app-server waits; its reader never does (two
threads pause at once and each goes on by itself).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pausing import ASK, WRITE, answer, interrupts_of, is_cli_result, offline_kit, resume_body, texts
from runner_kits import RunnerKit

from ambient_runner.scripted_models.base import QUESTION, REFUSED_ANSWER

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]



def tool_outputs(bodies: list[Any]) -> list[str]:
    """The function-call outputs the model was sent."""
    return [str(item.get("output")) for body in bodies for item in (body or {}).get("input", [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"]


@pytest.fixture
async def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with offline_kit("codex-sdk", tmp_path, monkeypatch) as kit:
        yield kit


async def test_an_approved_command_runs_in_the_next_run(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-approve", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == call["toolCallId"]
    assert "echo hello > out.txt" in interrupt["message"]
    out = kit.settings.workspace_path / "out.txt"
    assert not out.exists()
    resumed = await kit.runner.post(answer("t-approve", interrupt, {"approved": True}))
    assert [e["type"] for e in resumed][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert next(e for e in resumed if is_cli_result(e))["toolCallId"] == call["toolCallId"]
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome") in (None, {"type": "success"})
    assert out.read_text().strip() == "hello"


async def test_a_refusal_declines_and_the_persons_words_follow(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-refuse", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    why = "use a temp dir"
    resumed = await kit.runner.post(answer("t-refuse", interrupt, {"approved": False, "message": why}))
    assert resumed[-1]["type"] == "RUN_FINISHED" and not resumed[-1].get("outcome")  # no new approval asked
    assert not (kit.settings.workspace_path / "out.txt").exists()
    bodies = kit.bridge.scripted.bodies()
    assert any("rejected" in output.lower() for output in tool_outputs(bodies))
    assert why in json.dumps(bodies[-1])  # the next user input told the model why
    assert "".join(REFUSED_ANSWER) in texts(resumed)  # and it answered in words: the refusal ended the turn
    assert all(e["toolCallId"] == interrupt["toolCallId"] for e in resumed if e["type"] == "TOOL_CALL_START")


async def test_two_threads_paused_at_once_go_on_independently(kit: RunnerKit) -> None:
    first, second = await asyncio.gather(kit.runner.run("t-one", WRITE, ASK),
                                         kit.runner.run("t-two", "NOTOOL hello", ASK))
    (waiting,) = interrupts_of(first)
    assert second[-1]["type"] == "RUN_FINISHED" and not second[-1].get("outcome")  # not held up by the pause
    other = await kit.runner.run("t-three", WRITE, ASK)
    (also_waiting,) = interrupts_of(other)
    refused = await kit.runner.post(answer("t-three", also_waiting, False))
    assert refused[-1]["type"] == "RUN_FINISHED"
    approved = await kit.runner.post(answer("t-one", waiting, True))
    assert approved[-1]["type"] == "RUN_FINISHED"
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"



async def test_a_question_in_plan_mode_is_asked_and_its_answer_reaches_the_model(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-question", "QUESTION about the file", {"mode": "plan"})
    (interrupt,) = interrupts_of(events)
    assert interrupt["reason"] == "question"
    question = QUESTION["question"]
    assert interrupt["responseSchema"]["properties"]["answers"]["properties"][question]["examples"] == ["Red", "Blue"]
    resumed = await kit.runner.post(answer("t-question", interrupt, "Blue"))  # one question: a bare answer
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert any("Blue" in output for output in tool_outputs(kit.bridge.scripted.bodies()))


async def test_an_unanswered_request_expires_and_the_thread_goes_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit("codex-sdk", tmp_path, monkeypatch, runner_interrupt_timeout=1.0) as kit:
        interrupts_of(await kit.runner.run("t-expire", WRITE, ASK))
        book = kit.runner.app.state.runs.interrupts
        async with asyncio.timeout(30):
            while book.pending("t-expire"):
                await asyncio.sleep(0.05)
        after = await kit.runner.run("t-expire", "NOTOOL are you there?")
        assert after[-1]["type"] == "RUN_FINISHED" and not after[-1].get("outcome")
        assert "are you there?" in json.dumps(kit.bridge.scripted.bodies()[-1])
        assert not (kit.settings.workspace_path / "out.txt").exists()


@pytest.mark.parametrize("form", ["forwardedProps", "toolMessage"])
async def test_the_other_answer_forms(kit: RunnerKit, form: str) -> None:
    events = await kit.runner.run(f"t-{form}", WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    if form == "forwardedProps":
        body = resume_body(f"t-{form}", [{"interruptId": interrupt["id"], "status": "resolved",
                                          "payload": {"approved": True}}], where="forwardedProps")
    else:
        snapshot = next(e for e in reversed(events) if e["type"] == "MESSAGES_SNAPSHOT")
        body = {"threadId": f"t-{form}", "messages": [*snapshot["messages"], {
            "id": "answer", "role": "tool", "toolCallId": interrupt["toolCallId"], "content": "yes"}]}
    resumed = await kit.runner.post(body)
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"


async def test_a_client_that_comes_back_while_paused_replays_the_interrupt(kit: RunnerKit) -> None:
    pairs = await kit.runner.run_with_ids("t-replay", WRITE, ASK)
    replayed = await kit.runner.events("t-replay", after=pairs[0][0] - 1)
    assert [e for _, e in replayed] == [e for _, e in pairs]
    interrupts_of([e for _, e in replayed])
