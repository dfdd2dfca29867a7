"""A CLI bridge's shutdown: the turns waiting for a person end first, then the CLIs stop, also when a waiting turn
does not end in time (a CLI that never answers the cancel must not keep its process past the runner)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ambient_runner.bridges import base
from ambient_runner.bridges.base import CliBridge
from ambient_runner.bridges.contract import Readiness
from ambient_runner.interrupts.parked import LiveTurn
from tests.support import runner_kits


class Bridge(CliBridge[Any]):
    """Only what shutdown touches: the parked turns and the CLI."""

    runner_type = "test"
    stopped = False

    def resolve_auth(self) -> Any:
        return None

    def model_upstream(self) -> None:
        return None

    def readiness(self) -> Readiness:
        return Readiness(True)

    async def interrupt(self, thread_id: str) -> None:
        return None

    async def stop_cli(self) -> None:
        self.stopped = True

    def turn_hooks(self) -> Any:
        raise AssertionError("no turn runs here")


async def never_ends() -> None:
    await asyncio.Event().wait()  # a CLI that never answers the cancel


async def nothing() -> AsyncIterator[Any]:
    yield None


@pytest.mark.parametrize("close_hangs", [False, True])
async def test_the_cli_stops_after_the_waiting_turns_even_when_one_does_not_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, close_hangs: bool) -> None:
    monkeypatch.setattr(base, "SHUTDOWN_TIMEOUT", 0.2)
    bridge = Bridge(runner_kits.make_settings("gemini-cli", tmp_path))
    closed: list[str] = []

    async def close() -> None:
        closed.append("t")
        if close_hangs:
            await never_ends()

    bridge.hitl.turns.park("t", LiveTurn(nothing(), None), close=close)
    await asyncio.wait_for(bridge.shutdown(), 5)
    assert closed == ["t"] and bridge.stopped and not bridge.hitl.turns.parked("t")
