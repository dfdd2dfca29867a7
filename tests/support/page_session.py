"""A person on the platform's session page talking to a runner: what they send goes to the runner as the platform's
frontend sends it, each run's events go to the page double as they stream, and ``check_reload`` compares that live
page with the page a reload builds from the backend's compacted event log."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from platform_page import PlatformPage, comparable, reload

Post = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]


class PageSession:
    def __init__(self, post: Post, thread_id: str) -> None:
        self.post = post
        self.thread_id = thread_id
        self.page = PlatformPage()
        self.stored: list[dict[str, Any]] = []  # what the backend persisted, every run of the session
        self.runs: list[list[dict[str, Any]]] = []
        # What the page showed at the end of each run: before its snapshot (the live stream alone), and after it.
        self.shown: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    async def say(self, content: str, metadata: dict[str, Any] | None = None, *,
                  forwarded_props: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The chat box (or, with ``metadata``, a card's answer): the message joins the page, then the run streams."""
        return await self._run(self.page.send(content, metadata), forwarded_props)

    async def answer_card(self, answers: dict[str, str]) -> list[dict[str, Any]]:
        """The open question card's submit: its answers as the platform's hidden user message."""
        return await self._run(self.page.answer_card(answers), None)

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
        last_snapshot = max(i for i, e in enumerate(events) if e["type"] == "MESSAGES_SNAPSHOT")
        self.page.feed(events[:last_snapshot])
        before = self.page.rendered()
        self.page.feed(events[last_snapshot:])
        self.shown.append((before, self.page.rendered()))
        return events

    def reloaded(self) -> PlatformPage:
        return reload(self.stored)

    def check_reload(self) -> PlatformPage:
        """Live page = reloaded page: what a person sees (before and after the run's snapshot), and the whole
        message lists; every tool call held once, no result left blank. Returns the reloaded page."""
        reloaded = self.reloaded()
        assert reloaded.rendered() == self.page.rendered(), _diff(self.page.rendered(), reloaded.rendered())
        for before, after in self.shown:
            assert before == after, _diff(before, after)
        assert comparable(reloaded.messages) == comparable(self.page.messages), _diff(
            comparable(self.page.messages), comparable(reloaded.messages))
        held = [c["id"] for m in reloaded.messages for c in m.get("toolCalls") or ()]
        assert len(held) == len(set(held)), f"a tool call held twice: {held}"
        results = [e for e in self.stored if e["type"] == "TOOL_CALL_RESULT"]
        assert all((e.get("content") or "").strip() for e in results), [e for e in results if not e.get("content")]
        return reloaded


def _diff(live: Any, reloaded: Any) -> str:
    return f"\nlive:     {json.dumps(live, indent=None, default=str)}\nreloaded: {json.dumps(reloaded, default=str)}"
