"""A person on the platform's session page talking to a runner: what they send goes to the runner as the platform's
frontend sends it, each run's events go to the page double as they stream, and ``check_reload`` compares that live
page with the page a reload builds from the backend's compacted event log."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from platform_page import PlatformPage, comparable, reload, structure

Post = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]


class PageSession:
    def __init__(self, post: Post, thread_id: str) -> None:
        self.post = post
        self.thread_id = thread_id
        self.page = PlatformPage()
        self.stored: list[dict[str, Any]] = []  # what the backend persisted, every run of the session
        self.runs: list[list[dict[str, Any]]] = []
        # What the page showed around each snapshot of each run: before it (what the live stream built), and after.
        self.shown: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        # The same for the page's messages: by id, in order, with the tool calls each holds (``structure``).
        self.held: list[tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]] = []

    async def say(self, content: str, metadata: dict[str, Any] | None = None, *,
                  forwarded_props: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The chat box (or, with ``metadata``, a card's answer): the message joins the page, then the run streams."""
        return await self._run(self.page.send(content, metadata), forwarded_props)

    async def answer_card(self, answers: dict[str, str]) -> list[dict[str, Any]]:
        """The open question card's submit: its answers as the platform's hidden user message."""
        return await self._run(self.page.answer_card(answers), None)

    def card_question(self) -> dict[str, Any]:
        """The one question of the open question card, as the platform's card reads it."""
        card = self.page.open_question()
        assert card is not None, self.page.rendered()
        (question,) = json.loads(card["function"]["arguments"])["questions"]
        return question

    def shell_cards(self) -> list[dict[str, Any]]:
        """The page's tool cards other than the question card."""
        return [c for c in self.page.tool_cards() if c["name"] != "AskUserQuestion"]

    async def resume(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """A run another client started (an AG-UI 1.0 ``resume``): the page only watches its events."""
        return await self._stream(await self.post(body))

    async def _run(self, message: dict[str, Any], forwarded_props: dict[str, Any] | None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"threadId": self.thread_id, "messages": [message]}
        if forwarded_props:
            body["forwardedProps"] = forwarded_props
        return await self._stream(await self.post(body))

    async def _stream(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.stored += events
        self.runs.append(events)
        assert any(e["type"] == "MESSAGES_SNAPSHOT" for e in events), "a run without its snapshot"
        for event in events:
            if event["type"] == "MESSAGES_SNAPSHOT":
                before, held = self.page.rendered(), structure(self.page.messages)
                self.page.apply(event)
                self.shown.append((before, self.page.rendered()))
                self.held.append((held, structure(self.page.messages)))
            else:
                self.page.apply(event)
        return events

    def reloaded(self) -> PlatformPage:
        return reload(self.stored)

    def check_reload(self) -> PlatformPage:
        """Live page = reloaded page: what a person sees, and the whole message lists; a snapshot changes neither
        what is drawn nor the messages (their number, order and ids, and which one holds each tool call); every
        tool call held once, no result left blank. Returns the reloaded page."""
        reloaded = self.reloaded()
        assert reloaded.rendered() == self.page.rendered(), _diff(self.page.rendered(), reloaded.rendered())
        for before, after in self.shown:
            assert before == after, _diff(before, after)
        for held_before, held_after in self.held:
            assert held_before == held_after, _diff(held_before, held_after)
        assert structure(reloaded.messages) == structure(self.page.messages), _diff(
            structure(self.page.messages), structure(reloaded.messages))
        assert comparable(reloaded.messages) == comparable(self.page.messages), _diff(
            comparable(self.page.messages), comparable(reloaded.messages))
        held = [c["id"] for m in reloaded.messages for c in m.get("toolCalls") or ()]
        assert len(held) == len(set(held)), f"a tool call held twice: {held}"
        results = [e for e in self.stored if e["type"] == "TOOL_CALL_RESULT"]
        assert all((e.get("content") or "").strip() for e in results), [e for e in results if not e.get("content")]
        return reloaded


def _diff(live: Any, reloaded: Any) -> str:
    return f"\nlive:     {json.dumps(live, indent=None, default=str)}\nreloaded: {json.dumps(reloaded, default=str)}"
