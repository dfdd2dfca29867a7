"""opencode's permission requests in the platform's own session page (``tests/support/platform_page.py``, a person
using it: ``page_session.py``): the run waits with the question card, the card's Approve runs the command once, a
Deny leaves the file absent and the model is told (opencode ends its turn on a refusal: its model learns of it with
the next prompt); the page reloaded is the live page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from page_session import PageSession
from pausing import ASK, WRITE, interrupts_of
from platform_page import backend_status
from runners import scripted_runner

pytestmark = [pytest.mark.real_cli, pytest.mark.slow, pytest.mark.usefixtures("isolated_network")]


async def test_the_cards_approve_runs_the_command_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch) as runner:
        session = PageSession(runner.harness.post, "t-approve")
        (interrupt,) = interrupts_of(await session.say(WRITE, forwarded_props=ASK))
        assert session.page.status() == "waiting_input" and backend_status(session.stored) == "waiting_input"
        question = session.card_question()
        assert "echo hello > out.txt" in question["question"]
        assert [o["label"] for o in question["options"]] == ["Approve", "Deny"]
        out = runner.settings.workspace_path / "out.txt"
        assert not out.exists()
        await session.answer_card({question["question"]: "Approve"})
        assert out.read_text() == "hello\n"
        assert session.page.status() == "idle" and backend_status(session.stored) == "idle"
        card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
        assert json.loads(card["result"]) == {"answers": {question["question"]: "Approve"}}
        (shell,) = session.shell_cards()  # the command ran once, and its card has its result
        assert shell["id"] == interrupt["toolCallId"] and not shell["pending"]
        session.check_reload()


@pytest.mark.parametrize("said", ["Deny", "NOTOOL not there, use a temp dir"])
async def test_a_deny_from_the_card_leaves_the_file_absent_and_the_model_is_told(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str) -> None:
    async with scripted_runner("acp", tmp_path, monkeypatch) as runner:
        session = PageSession(runner.harness.post, "t-deny")
        await session.say(WRITE, forwarded_props=ASK)
        question = session.card_question()
        await session.answer_card({question["question"]: said})
        assert not (runner.settings.workspace_path / "out.txt").exists()
        await session.say("NOTOOL ok then")  # a refusal ends opencode's turn: its model learns of it next
        told = json.dumps([r.body for r in runner.server.requests]).lower()
        assert "rejected" in told  # opencode tells its model the call was rejected
        if said != "Deny":
            assert said.lower() in told  # other words refuse with those words
        card = next(c for c in session.page.tool_cards() if c["name"] == "AskUserQuestion")
        assert json.loads(card["result"]) == {"answers": {question["question"]: said}}
        assert session.page.status() == "idle"
        session.check_reload()
