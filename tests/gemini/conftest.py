"""Fixtures for the Gemini CLI bridge tests: settings in a temp dir, the bridge with its scripted server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import runner_kits
from ag_ui.core import RunAgentInput, UserMessage

from ambient_runner.bridge.contract import BridgeError, RunOptions, Turn
from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
from ambient_runner.settings import RunnerSettings

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"


def make_settings(root: Path, **overrides: object) -> RunnerSettings:
    return runner_kits.make_settings("gemini-cli", root, **overrides)


@pytest.fixture
def settings(tmp_path: Path) -> RunnerSettings:
    return make_settings(tmp_path)


@pytest.fixture
def one_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors fail after one request (production default: 3 attempts with backoff)."""
    monkeypatch.setenv("GEMINI_CLI_MAX_ATTEMPTS", "1")


@pytest.fixture
async def bridge(settings: RunnerSettings, isolated_network: None, one_attempt: None
                 ) -> AsyncIterator[GeminiCliBridge]:
    bridge = GeminiCliBridge(settings)
    await bridge.startup()
    try:
        yield bridge
    finally:
        await bridge.shutdown()


def make_turn(thread_id: str, prompt: str, run_id: str = "run-1", model: str | None = None) -> Turn:
    run_input = RunAgentInput(thread_id=thread_id, run_id=run_id, state=None, tools=[], context=[],
                              forwarded_props=None, messages=[UserMessage(id=f"u-{run_id}", content=prompt)])
    return Turn(thread_id=thread_id, run_id=run_id, prompt=prompt, input=run_input, options=RunOptions(model=model))


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

