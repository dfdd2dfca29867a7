"""The platform's own session page over real-CLI streams of all three runners (the real CLIs on their scripted models,
loopback-only netns, the real service over HTTP/SSE): ``tests/support/platform_page.py`` is the page (its reducer,
badge, tool cards and the backend's compaction), ``page_session.py`` a person using it.

Live page = reloaded page, message for message; every tool call held once; no blank result; reasoning kept. A run that
waits for an approval shows ``waiting_input`` with the question card; the card's answer (the platform's
``ask_user_question_response`` message) lets the command run once, and the card then shows the answer; a ``Deny``
leaves the file absent and the model is told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from page_session import PageSession
from pausing import ASK, WRITE, interrupts_of, offline_kit, resume_body
from platform_page import backend_status
from runner_kits import RUNNERS, RunnerKit

from ambient_runner.scripted_models.base import QUESTION

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]
# What each CLI tells its model about a refused call (the model must learn of a Deny).
REFUSAL_SEEN = {"codex-sdk": "rejected", "gemini-cli": "canceled by the user", "claude": "refused"}


@pytest.fixture(params=RUNNERS)
async def kit(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with offline_kit(request.param, tmp_path, monkeypatch) as kit:
        yield kit


async def test_live_and_reloaded_pages_are_the_same(kit: RunnerKit) -> None:
    session = PageSession(kit.runner.post, "t-page")
    first = await session.say("THINK Create out.txt with hello")  # reasoning, then a call with no text before it
    await session.say("NOTOOL thanks")
    await session.say("Create out.txt with hello")  # a second turn's call
    await session.say("BARECALL Create out.txt with hello")  # a call alone: no text, no reasoning before it
    reloaded = session.check_reload()
    streamed = [e["delta"] for e in first if e["type"] == "REASONING_MESSAGE_CONTENT"]
    assert streamed, "the scripted model's reasoning was not streamed"
    shown = [item["text"] for item in reloaded.rendered() if item["kind"] == "reasoning"]
    assert "".join(shown) == "".join(streamed)  # reasoning kept after the reload
    cards = session.shell_cards()
    assert len(cards) == 3 and not any(card["pending"] for card in cards)
    assert session.page.status() == reloaded.status() == "idle"
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"


async def test_an_approval_is_a_question_card_and_its_approve_runs_the_command_once(kit: RunnerKit) -> None:
    session = PageSession(kit.runner.post, "t-approve")
    paused = await session.say(WRITE, forwarded_props=ASK)
    (interrupt,) = interrupts_of(paused)  # the AG-UI 1.0 outcome, as it was
    assert session.page.status() == "waiting_input" and session.reloaded().status() == "waiting_input"
    assert backend_status(session.stored) == "waiting_input"
    question = session.card_question()
    assert "echo hello > out.txt" in question["question"]
    assert [o["label"] for o in question["options"]] == ["Approve", "Deny"]
    session.check_reload()
    out = kit.settings.workspace_path / "out.txt"
    assert not out.exists()
    requests_before = len(kit.model_requests())

    await session.answer_card({question["question"]: "Approve"})
    assert out.read_text().strip() == "hello"
    assert session.page.status() == "idle" and backend_status(session.stored) == "idle"
    card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
    assert json.loads(card["result"]) == {"answers": {question["question"]: "Approve"}}  # the card shows the answer
    (shell,) = session.shell_cards()  # the command ran once, and its card has its result
    assert shell["id"] == interrupt["toolCallId"] and not shell["pending"]
    assert len(kit.model_requests()) == requests_before + 1  # the paused turn went on: one request, its result
    assert "ask_user_question_response" not in json.dumps([r.body for r in kit.model_requests()])  # no new prompt
    session.check_reload()


@pytest.mark.parametrize("said", ["Deny", "NOTOOL not there, use a temp dir"])
async def test_a_deny_from_the_card_leaves_the_file_absent_and_the_model_is_told(kit: RunnerKit, said: str) -> None:
    session = PageSession(kit.runner.post, "t-deny")
    await session.say(WRITE, forwarded_props=ASK)
    question = session.card_question()
    await session.answer_card({question["question"]: said})
    assert not (kit.settings.workspace_path / "out.txt").exists()
    told = json.dumps([r.body for r in kit.model_requests()]).lower()
    assert REFUSAL_SEEN[kit.runner_type] in told
    if said != "Deny":
        assert said.lower() in told  # other words refuse with those words
    card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
    assert json.loads(card["result"]) == {"answers": {question["question"]: said}}
    assert session.page.status() == "idle"
    session.check_reload()


@pytest.mark.parametrize("where", ["resume", "forwardedProps"])
async def test_an_answer_through_resume_closes_the_card_too(kit: RunnerKit, where: str) -> None:
    session = PageSession(kit.runner.post, f"t-{where}")
    (interrupt,) = interrupts_of(await session.say(WRITE, forwarded_props=ASK))
    question = session.card_question()
    await session.resume(resume_body(session.thread_id, [{"interruptId": interrupt["id"], "status": "resolved",
                                                           "payload": {"approved": True}}], where=where))
    assert (kit.settings.workspace_path / "out.txt").read_text().strip() == "hello"
    card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
    assert json.loads(card["result"]) == {"answers": {question["question"]: "Approve"}}
    assert session.page.status() == "idle"
    session.check_reload()


async def test_a_new_message_instead_of_an_answer_closes_the_card(kit: RunnerKit) -> None:
    session = PageSession(kit.runner.post, "t-instead")
    await session.say(WRITE, forwarded_props=ASK)
    question = session.card_question()
    await session.say("NOTOOL never mind, just say hello")
    assert not (kit.settings.workspace_path / "out.txt").exists()
    card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
    assert "new message" in json.loads(card["result"])["answers"][question["question"]]
    assert session.page.status() == "idle"
    session.check_reload()


async def test_an_agents_question_is_the_card_with_its_own_options(kit: RunnerKit) -> None:
    """Claude's own AskUserQuestion call is the card; Codex's request_user_input gets one; Gemini's CLI leaves its
    ask_user tool out under ACP (it could not carry the answer back), so its model asks in plain text."""
    session = PageSession(kit.runner.post, "t-question")
    events = await session.say("QUESTION about the file", forwarded_props={"mode": "plan"})
    if kit.runner_type == "gemini-cli":
        assert events[-1]["type"] == "RUN_FINISHED" and not events[-1].get("outcome")
        declared = json.dumps([r.body.get("tools") for r in kit.model_requests() if isinstance(r.body, dict)])
        assert '"read_file"' in declared and '"ask_user"' not in declared
        session.check_reload()
        return
    interrupts_of(events)
    asks = [c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion"]
    assert len(asks) == 1 and session.page.status() == "waiting_input"
    question = session.card_question()
    assert question["question"] == QUESTION["question"]
    assert [o["label"] for o in question["options"]] == ["Red", "Blue"]
    await session.answer_card({QUESTION["question"]: "Blue"})
    assert "Blue" in json.dumps(kit.model_requests()[-1].body)  # the answer reached the model
    assert session.page.status() == "idle"
    (card,) = [c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion"]
    assert card["result"] and "Blue" in card["result"]
    session.check_reload()
