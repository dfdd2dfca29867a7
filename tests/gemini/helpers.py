"""Helpers of the gemini tests (constants and functions; the fixtures are in conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import runner_kits

from ambient_runner.bridge.contract import BridgeError, Turn
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.settings import RunnerSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"


def make_settings(root: Path, **overrides: object) -> RunnerSettings:
    return runner_kits.make_settings("gemini-cli", root, **overrides)


def wire(event: Any) -> dict[str, Any]:
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


async def collect(bridge: GeminiCliBridge, turn: Turn) -> list[dict[str, Any]]:
    """run_turn's events as wire dicts; a BridgeError becomes a final RUN_ERROR entry."""
    events: list[dict[str, Any]] = []
    try:
        async for event in bridge.run_turn(turn):
            events.append(wire(event))
    except BridgeError as exc:
        events.append({"type": "RUN_ERROR", "message": exc.message, "code": exc.code, "stderr": exc.stderr_tail})
    return events
