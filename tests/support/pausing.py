"""Helpers of the tests of runs that wait for a person: the interrupts a run ended with, the bodies that answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from runner_kits import RunnerKit, clean_credentials, runner_kit

ASK = {"approvalPolicy": "ask"}
WRITE = "Create out.txt with hello"  # the scripted models' shell command writes out.txt: under ASK, it asks


def interrupts_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = events[-1].get("outcome") or {}
    assert events[-1]["type"] == "RUN_FINISHED" and outcome.get("type") == "interrupt", events[-1]
    return outcome["interrupts"]


def texts(events: list[dict[str, Any]]) -> str:
    """Everything the agent said in words in ``events``."""
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def resume_body(thread: str, entries: list[dict[str, Any]], *, where: str = "resume",
                messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A run that answers with ``entries``, as ``resume`` or as ``forwardedProps.resume``."""
    body: dict[str, Any] = {"threadId": thread, "messages": messages or []}
    if where == "resume":
        body["resume"] = entries
    else:
        body["forwardedProps"] = {"resume": entries}
    return body


def answer(thread: str, interrupt: dict[str, Any], payload: Any) -> dict[str, Any]:
    return resume_body(thread, [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}])


@asynccontextmanager
async def offline_kit(runner_type: str, root: Path, monkeypatch: pytest.MonkeyPatch,
                      **overrides: Any) -> AsyncIterator[RunnerKit]:
    clean_credentials(monkeypatch)
    async with runner_kit(runner_type, root, **overrides) as kit:
        yield kit


def is_cli_result(event: dict[str, Any]) -> bool:
    """A TOOL_CALL_RESULT of the CLI's, not the one closing the question card a paused run showed (the runner's card
    is ``<run id>-ask``, closed at the start of the run that answers it)."""
    return event["type"] == "TOOL_CALL_RESULT" and not event["toolCallId"].split("~")[0].endswith("-ask")
