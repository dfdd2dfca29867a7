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
from page_session import PageSession
from pausing import ASK, WRITE, answer, interrupts_of, is_cli_result, offline_kit, resume_body, texts
from platform_page import normalize_snapshot, structure
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
        book = kit.runner.app.runtime.runs.hitl.book
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


def snapshot_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's last MESSAGES_SNAPSHOT as the page takes it in (tool results folded into their calls)."""
    return normalize_snapshot(next(e for e in reversed(events) if e["type"] == "MESSAGES_SNAPSHOT")["messages"])


@pytest.mark.parametrize("said", ["Approve", "Deny"])
@pytest.mark.parametrize("prompt", [WRITE, f"BARECALL {WRITE}", f"THINK BARECALL {WRITE}"])
async def test_the_snapshots_of_a_paused_call_change_nothing_on_the_page(kit: RunnerKit, prompt: str,
                                                                         said: str) -> None:
    """A call with text before it and one without (``BARECALL``: the model's only output is the call, as GPT-5-class
    models answer; after reasoning too): the platform's page built from the live stream has, before the paused
    run's snapshot and the answered run's, the messages those snapshots hold: the same number, order and ids, each
    call in the same message (the guard announces the holder of a call with nothing before it, so the page has it
    too, instead of a message of its own with a random id)."""
    session = PageSession(kit.runner.post, "t-page")
    paused = await session.say(prompt, forwarded_props=ASK)
    (interrupt,) = interrupts_of(paused)
    call = next(e for e in paused if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == interrupt["toolCallId"])
    assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in paused) == ("BARECALL" not in prompt)
    holder = call["parentMessageId"]
    live, page = session.held[-1][0], structure(session.page.messages)  # before the run's snapshot, and after
    assert live == structure(snapshot_of(paused)) == page  # what the live stream built is what the snapshot holds
    if "BARECALL" in prompt:
        assert holder == f"{call['toolCallId']}-call"
        announced = [i for i, e in enumerate(paused) if e["type"] == "RAW" and e["event"].get("id") == holder]
        assert announced and announced[0] < paused.index(call)
    card = session.page.open_question()
    assert card is not None and (holder, [call["toolCallId"], card["id"]]) in page  # both cards in one message
    assert len(page) == 2 + ("THINK" in prompt)  # the person's message, the reasoning, the text or holder
    session.check_reload()

    question = json.loads(card["function"]["arguments"])["questions"][0]["question"]
    answered = await session.answer_card({question: said})
    assert (kit.settings.workspace_path / "out.txt").exists() == (said == "Approve")
    assert session.held[-1][0] == structure(snapshot_of(answered)) == structure(session.page.messages)
    assert structure(session.page.messages)[:len(page)] == page  # the paused run's messages kept as they were
    reloaded = session.check_reload()
    assert [c["id"] for c in reloaded.tool_cards()] == [call["toolCallId"], card["id"]]
    assert not any(c["pending"] for c in reloaded.tool_cards())

