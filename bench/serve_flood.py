"""The runner's real app (``create_app``) with a bridge that runs ``flood_cli.py``, served like ``main.py`` does.

The bridge mirrors the test ``FakeCliBridge``: the shared process supervision, the bounded line reader, one
pydantic validation per line. Run as ``python bench/serve_flood.py`` with AGUI_PORT etc. in the environment.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

from ag_ui.core import BaseEvent, Event, RawEvent
from pydantic import TypeAdapter, ValidationError

from ambient_runner.app import create_app
from ambient_runner.bridges.base import BridgeBase
from ambient_runner.bridges.contract import BridgeError, Readiness, Turn
from ambient_runner.logging_setup import configure_logging
from ambient_runner.process.environment import cli_environment
from ambient_runner.process.supervisor import SupervisedProcess
from ambient_runner.server import serve
from ambient_runner.settings import load_settings

FLOOD_CLI = Path(__file__).resolve().parent / "flood_cli.py"
EVENT = TypeAdapter(Event)


class FloodBridge(BridgeBase):
    runner_type = "flood"
    framework = "flood"

    def readiness(self) -> Readiness:
        return Readiness(True)

    async def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]:
        proc = await SupervisedProcess.start([sys.executable, str(FLOOD_CLI)], cwd=Path.cwd(),
                                             env=cli_environment({}), stdin_data=turn.prompt.encode(),
                                             stderr_tail=turn.stderr_tail)
        try:
            async for line in proc.lines():
                try:
                    yield EVENT.validate_json(line.text)
                except ValidationError:
                    yield RawEvent(event={"line": line.text[:200]}, source="flood")
            code = await proc.wait()
            if code != 0:
                raise BridgeError(f"flood_cli exited with {code}", code="CLI_EXIT",
                                  stderr_tail=turn.stderr_tail.text())
        finally:
            await proc.stop()

    async def interrupt(self, thread_id: str) -> None:
        return None


if __name__ == "__main__":
    settings = load_settings(runner_type="gemini-cli")
    configure_logging(settings.runner_log_level)
    serve(create_app(settings, FloodBridge()), settings)
