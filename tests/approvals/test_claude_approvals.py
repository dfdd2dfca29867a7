"""A person in the loop with the real Claude Code CLI (scripted Anthropic server, loopback-only netns, the real
service over HTTP/SSE; every stream checked by ag-ui-validate and the project's checks).

Under ``approvalPolicy: ask`` the CLI's permission request for ``echo hello > out.txt`` ends the run with an
interrupt while the CLI waits; the thread's next run answers it in one of three forms and the same CLI turn goes on.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from pausing import ASK, WRITE, interrupts_of, is_cli_result, offline_kit, resume_body, texts
from rich.console import Console
from runner_kits import RunnerKit
from typer.testing import CliRunner

from ambient_runner.client import answers as client_answers
from ambient_runner.client.main import app
from ambient_runner.scripted_models.base import QUESTION, REFUSED_ANSWER

pytestmark = [pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]



def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def tool_results(bodies: list[Any]) -> list[dict[str, Any]]:
    """The tool_result blocks the model was sent."""
    return [block for body in bodies for message in (body or {}).get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


async def paused_write(kit: RunnerKit, thread: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A run that asks to write out.txt and ends waiting for the answer."""
    events = await kit.runner.run(thread, WRITE, ASK)
    (interrupt,) = interrupts_of(events)
    return events, interrupt


@pytest.fixture
async def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with offline_kit("claude", tmp_path, monkeypatch) as kit:
        yield kit


async def test_an_approved_write_runs_in_the_next_run(kit: RunnerKit) -> None:
    events, interrupt = await paused_write(kit, "t-approve")
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["toolCallId"] == call["toolCallId"]
    assert "echo hello > out.txt" in interrupt["message"]
    assert interrupt["responseSchema"]["properties"]["approved"] == {"type": "boolean"}
    assert interrupt["expiresAt"].endswith("Z")
    assert types(events)[-2] == "MESSAGES_SNAPSHOT"
    assert "TOOL_CALL_RESULT" not in types(events)
    out = kit.settings.workspace_path / "out.txt"
    assert not out.exists()  # the CLI waits: nothing ran

    resumed = await kit.runner.post(resume_body("t-approve", [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]))
    assert types(resumed)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]  # the paused call, before its result
    snapshot_calls = [c["id"] for m in resumed[1]["messages"] for c in m.get("toolCalls") or ()]
    assert call["toolCallId"] in snapshot_calls
    result = next(e for e in resumed if is_cli_result(e))
    assert result["toolCallId"] == call["toolCallId"]
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome") in (None, {"type": "success"})
    assert out.read_text().strip() == "hello"
    assert "TOOL_CALL_START" not in types(resumed)  # the same turn went on: the call is not made again


@pytest.mark.parametrize("where", ["resume", "forwardedProps"])
async def test_a_refusal_reaches_the_model_with_the_persons_message(kit: RunnerKit, where: str) -> None:
    _, interrupt = await paused_write(kit, f"t-refuse-{where}")
    resumed = await kit.runner.post(resume_body(f"t-refuse-{where}", [
        {"interruptId": interrupt["id"], "status": "resolved",
         "payload": {"approved": False, "message": "not in this folder please"}}], where=where))
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert not (kit.settings.workspace_path / "out.txt").exists()
    (denied,) = [b for b in tool_results(kit.bridge.scripted.bodies()) if b["tool_use_id"] == interrupt["toolCallId"]]
    assert denied.get("is_error") is True
    assert "not in this folder please" in result_text(denied)
    assert "".join(REFUSED_ANSWER) in texts(resumed)  # the model answered the refusal in words
    assert "TOOL_CALL_START" not in types(resumed)  # and made no call again


async def test_a_cancelled_entry_refuses(kit: RunnerKit) -> None:
    _, interrupt = await paused_write(kit, "t-cancel")
    resumed = await kit.runner.post(resume_body("t-cancel", [{"interruptId": interrupt["id"], "status": "cancelled"}]))
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert not (kit.settings.workspace_path / "out.txt").exists()


async def test_a_tool_message_answers_the_paused_call(kit: RunnerKit) -> None:
    events, interrupt = await paused_write(kit, "t-toolmsg")
    snapshot = next(e for e in reversed(events) if e["type"] == "MESSAGES_SNAPSHOT")
    answer = {"id": "answer-1", "role": "tool", "toolCallId": interrupt["toolCallId"], "content": "yes"}
    resumed = await kit.runner.post({"threadId": "t-toolmsg", "messages": [*snapshot["messages"], answer]})
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"
    final = next(e for e in reversed(resumed) if e["type"] == "MESSAGES_SNAPSHOT")
    results = [m for m in final["messages"] if m["role"] == "tool" and m["toolCallId"] == interrupt["toolCallId"]]
    assert [m["id"] for m in results] != ["answer-1"] and len(results) == 1  # the CLI's result, not the answer


async def test_a_question_is_asked_under_every_policy_and_its_answer_reaches_the_model(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-question", "QUESTION about the file")
    (interrupt,) = interrupts_of(events)
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "AskUserQuestion"  # the platform shows "waiting for input" by this name
    assert interrupt["reason"] == "question" and interrupt["toolCallId"] == call["toolCallId"]
    question = QUESTION["question"]
    schema = interrupt["responseSchema"]["properties"]["answers"]["properties"][question]
    assert schema["examples"] == ["Red", "Blue"]
    assert question in interrupt["message"]

    await kit.runner.post(resume_body("t-question", [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"answers": {question: "Blue"}}}]))
    (answered,) = [b for b in tool_results(kit.bridge.scripted.bodies()) if b["tool_use_id"] == call["toolCallId"]]
    assert "Blue" in result_text(answered) and not answered.get("is_error")


async def test_a_new_message_while_paused_refuses_first_then_runs(kit: RunnerKit) -> None:
    _, interrupt = await paused_write(kit, "t-new")
    events = await kit.runner.run("t-new", "NOTOOL never mind, just say hello")
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1].get("outcome") in (None, {"type": "success"})
    assert not (kit.settings.workspace_path / "out.txt").exists()
    results = [e for e in events if is_cli_result(e)]
    assert [r["toolCallId"] for r in results] == [interrupt["toolCallId"]]  # reported first
    assert types(events).index("TOOL_CALL_RESULT") < types(events).index("TEXT_MESSAGE_START")
    assert "never mind, just say hello" in json.dumps(kit.bridge.scripted.bodies()[-1])  # then the new message
    # the interrupt is gone: answering it now is a 422
    response = await kit.runner.client.post("/run", json=resume_body("t-new", [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]))
    assert response.status_code == 422 and response.json()["code"] == "UNKNOWN_INTERRUPT"


async def test_interrupt_while_paused_stops_the_turn_and_the_next_run_reports_it(kit: RunnerKit) -> None:
    _, interrupt = await paused_write(kit, "t-stop")
    response = await kit.runner.interrupt("t-stop")
    assert response.status_code == 200 and response.json()["refusedInterrupts"] == [interrupt["id"]]
    events = await kit.runner.run("t-stop", "NOTOOL hello again")
    result = next(e for e in events if is_cli_result(e))
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "stopped while it waited" in result["content"]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert not (kit.settings.workspace_path / "out.txt").exists()


async def test_a_client_that_comes_back_while_paused_replays_the_interrupt(kit: RunnerKit) -> None:
    pairs = await kit.runner.run_with_ids("t-replay", WRITE, ASK)
    replayed = await kit.runner.events("t-replay", after=pairs[0][0] - 1)
    assert [e for _, e in replayed] == [e for _, e in pairs]


async def test_bad_answers_are_422(kit: RunnerKit) -> None:
    _, interrupt = await paused_write(kit, "t-bad")
    cases = [
        ([{"interruptId": "int-nope", "status": "resolved", "payload": {"approved": True}}], "UNKNOWN_INTERRUPT"),
        ([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"ok": 1}}], "INVALID_RESUME"),
        ([{"interruptId": interrupt["id"], "status": "maybe"}], "INVALID_RUN_INPUT"),  # not a ResumeEntry
        ([{"interruptId": interrupt["id"], "status": "resolved", "payload": True},
          {"interruptId": interrupt["id"], "status": "resolved", "payload": True}], "INVALID_RESUME"),
    ]
    for entries, code in cases:
        response = await kit.runner.client.post("/run", json=resume_body("t-bad", entries))
        assert response.status_code == 422, response.text
        assert response.json()["code"] == code, response.json()
    response = await kit.runner.client.post("/run", json={"threadId": "t-bad", "messages": [],
                                                          "forwardedProps": {"resume": {"not": "a list"}}})
    assert response.status_code == 422 and response.json()["code"] == "INVALID_RESUME"
    # the pause survived the bad answers
    resumed = await kit.runner.post(resume_body("t-bad", [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": True}]))
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert (kit.settings.workspace_path / "out.txt").exists()


async def test_an_unanswered_interrupt_expires_and_the_next_run_reports_it(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit("claude", tmp_path, monkeypatch, runner_interrupt_timeout=1.0) as kit:
        _, interrupt = await paused_write(kit, "t-expire")
        book = kit.runner.app.runtime.runs.hitl.book
        async with asyncio.timeout(30):
            while book.pending("t-expire"):
                await asyncio.sleep(0.05)
        events = await kit.runner.run("t-expire", "NOTOOL are you there?")
        result = next(e for e in events if is_cli_result(e))
        assert result["toolCallId"] == interrupt["toolCallId"] and "Nobody answered" in result["content"]
        assert not (kit.settings.workspace_path / "out.txt").exists()


async def test_a_pod_replaced_while_paused_says_the_interrupt_is_lost(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with offline_kit("claude", tmp_path, monkeypatch) as kit:
        _, interrupt = await paused_write(kit, "t-lost")
    async with offline_kit("claude", tmp_path, monkeypatch) as kit:  # the same state dir: the replaced pod's successor
        events = await kit.runner.post(resume_body("t-lost", [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]))
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "INTERRUPT_LOST", events[-1]
        assert not (kit.settings.workspace_path / "out.txt").exists()
        after = await kit.runner.run("t-lost", "NOTOOL hello again")
        assert after[-1]["type"] == "RUN_FINISHED"
        seen = json.dumps(kit.bridge.scripted.bodies()[-1])
        assert WRITE in seen  # the saved session continued: the model sees the earlier turn


async def cli(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"AGUI_TOKEN": None})


async def test_the_terminal_client_approves_and_resumes(kit: RunnerKit) -> None:
    url = kit.runner.base_url
    waiting = await cli("run", WRITE, "--url", url, "--thread", "t-cli-1", "--ask")  # no terminal to ask at
    assert waiting.exit_code == 5, waiting.output
    assert "⏸" in waiting.output and "echo hello > out.txt" in waiting.output
    assert not (kit.settings.workspace_path / "out.txt").exists()
    done = await cli("run", WRITE, "--url", url, "--thread", "t-cli-2", "--ask", "--approve-all")
    assert done.exit_code == 0, done.output
    assert "approved (--approve-all)" in done.output and "✓ done" in done.output
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"


def test_the_client_puts_each_interrupt_to_the_person() -> None:
    question = {"id": "i-2", "reason": "question", "message": "Which colour?", "responseSchema": {
        "properties": {"answers": {"properties": {"Which colour?": {"type": "string", "examples": ["Red", "Blue"]}}}}}}
    approval = {"id": "i-1", "reason": "tool_approval", "message": "run rm -rf build?"}
    replies = iter(["n", "too risky", "2"])
    entries = client_answers.resume_entries([approval, question], approve_all=False, ask=lambda _: next(replies),
                             out=Console(file=io.StringIO()))
    assert entries == [
        {"interruptId": "i-1", "status": "resolved", "payload": {"approved": False, "message": "too risky"}},
        {"interruptId": "i-2", "status": "resolved", "payload": {"answers": {"Which colour?": "Blue"}}}]
    terminal = {"type": "RUN_FINISHED", "outcome": {"type": "interrupt", "interrupts": [approval]}}
    assert client_answers.interrupts_of(terminal) == [approval]
    assert client_answers.interrupts_of({"type": "RUN_FINISHED"}) == []



async def test_a_sub_agent_waiting_for_approval_is_suspended_and_goes_on_in_the_next_run(kit: RunnerKit) -> None:
    events = await kit.runner.run("t-sub", "SUBAGENT look around", ASK)
    (interrupt,) = interrupts_of(events)
    started = next(e for e in events if e["type"] == "SUBAGENT_STARTED")
    run = started["subagentRunId"]
    assert interrupt["subagentRunId"] == run  # the sub-agent's own Bash call asks
    finished = next(e for e in events if e["type"] == "SUBAGENT_FINISHED")
    assert finished["outcome"] == {"type": "suspended", "interruptIds": [interrupt["id"]]}
    resumed = await kit.runner.post(resume_body("t-sub", [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]))
    kinds = [(e["type"], e.get("subagentRunId")) for e in resumed]
    again = kinds.index(("SUBAGENT_STARTED", run))  # the same invocation, announced again
    assert kinds.index(("TOOL_CALL_RESULT", run)) > again
    assert resumed[again]["name"] == started["name"]
    assert ("SUBAGENT_FINISHED", run) in kinds and resumed[-1]["type"] == "RUN_FINISHED"
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"
