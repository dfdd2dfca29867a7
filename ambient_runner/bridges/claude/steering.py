"""Steered messages in a running Claude Code turn, and the CLI's replays that say it took them in.

A message steered into a running turn is written to the CLI as a user message (the SDK's streaming input). Claude Code
replays each user message it takes in (``--replay-user-messages``): one alone, or several that waited joined by
newlines into one. A message taken in with the next tool result stays in the CLI's turn; one still waiting when the
CLI's turn ends starts its next turn at once, and the AG-UI run goes on through it: that CLI turn's result is an
``IntermediateResult``, and the run's last result carries the token counts and cost of all of them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import ResultMessage


@dataclass(frozen=True)
class IntermediateResult:
    """A CLI turn's result after which the CLI starts another turn for a steered message (same AG-UI run)."""

    result: dict[str, Any]


class SteeredMessages:
    """The messages steered into the running turn that the CLI has not taken in yet."""

    def __init__(self) -> None:
        self._waiting: list[str] = []

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def add(self, text: str) -> None:
        self._waiting.append(text)

    def withdraw(self, text: str) -> None:
        """A message whose write failed (it is queued instead)."""
        with contextlib.suppress(ValueError):
            self._waiting.remove(text)

    def clear(self) -> None:
        self._waiting.clear()

    def take_in(self, replay: dict[str, Any]) -> None:
        """The CLI replayed a user message: the steered messages it holds are taken in."""
        for text in taken_in(self._waiting, replay_text(replay)):
            self._waiting.remove(text)

    def at_result(self, result: Any) -> Any:
        """A CLI turn's result as the running turn gets it: an ``IntermediateResult`` while a steered message waits
        (the CLI starts its next turn with it at once: this result is not the turn's end, and the CLI is not idle),
        unless the result ends the turn whatever was steered into it."""
        if self._waiting and not ended_early(result):
            return IntermediateResult(result)
        return result


def is_result(item: Any) -> bool:
    return isinstance(item, ResultMessage) or (isinstance(item, dict) and item.get("type") == "result")


def is_replay(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "user" and item.get("isReplay") is True


def replay_text(item: dict[str, Any]) -> str:
    content = (item.get("message") or {}).get("content")
    if isinstance(content, list):  # content blocks: their text
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


def taken_in(steers: list[str], replayed: str) -> list[str]:
    """The steered messages a replay holds: the CLI takes one in alone, or several that waited, joined by newlines
    into one user message (in the order they were written)."""
    taken, position = [], 0
    for text in steers:
        found = replayed.find(text.strip(), position) if text.strip() else -1
        if found >= 0:
            taken.append(text)
            position = found + len(text.strip())
    return taken


def ended_early(result: Any) -> bool:
    """A result that ends the turn whatever was steered into it (an error, an interrupt)."""
    return not isinstance(result, dict) or bool(result.get("is_error")) or result.get("subtype") != "success"


def with_usage(result: dict[str, Any], earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """The turn's last result, its token counts and cost including the earlier CLI turns it went on through."""
    usage = dict(result.get("usage") or {})
    cost = result.get("total_cost_usd")
    for other in earlier:
        for key, value in (other.get("usage") or {}).items():
            if isinstance(value, int) and isinstance(usage.get(key, 0), int):
                usage[key] = usage.get(key, 0) + value
        if isinstance(cost, int | float) and isinstance(other.get("total_cost_usd"), int | float):
            cost += other["total_cost_usd"]
    return {**result, "usage": usage, "total_cost_usd": cost}
