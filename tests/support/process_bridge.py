"""A test bridge over the shared process supervision: it runs ``tests/fakes/fake_cli.py`` with the run's prompt
as the fake CLI's script and passes the AG-UI events it prints on to the core."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from ag_ui.core import BaseEvent, Event, RawEvent
from pydantic import TypeAdapter, ValidationError

from ambient_runner.bridges.base import BridgeBase
from ambient_runner.bridges.contract import BridgeError, Readiness, Turn
from ambient_runner.process.environment import cli_environment
from ambient_runner.process.supervisor import ProcessLimits, SupervisedProcess

FAKE_CLI = Path(__file__).resolve().parents[1] / "fakes" / "fake_cli.py"
EVENT = TypeAdapter(Event)


class FakeCliBridge(BridgeBase):
    runner_type = "fake-cli"
    framework = "fake-cli"
    attachment_types = frozenset({"image/png", "image/jpeg", "application/pdf"})

    def __init__(self, workdir: Path, *, max_line_bytes: int = 8 * 1024 * 1024, kill_grace: float = 1.0,
                 secrets: tuple[str, ...] = ()) -> None:
        self.workdir = workdir
        self.limits = ProcessLimits(max_line_bytes=max_line_bytes, kill_grace=kill_grace)
        self.processes: dict[str, SupervisedProcess] = {}
        self.pgids: list[int] = []
        self.environments: list[dict[str, str]] = []
        self.turns: list[Turn] = []
        self.attachment_files: list[dict[str, bytes]] = []  # each turn's written attachments, read when it ran
        self._secrets = secrets

    def readiness(self) -> Readiness:
        return Readiness(True)

    def secret_values(self) -> tuple[str, ...]:
        return self._secrets

    async def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]:
        env = cli_environment({"FAKE": "1"})
        self.environments.append(env)
        self.turns.append(turn)
        self.attachment_files.append({str(a.path): a.path.read_bytes() for a in turn.attachments})
        proc = await SupervisedProcess.start([sys.executable, str(FAKE_CLI), "-"], cwd=self.workdir, env=env,
                                             stdin_data=turn.prompt.encode(), stderr_tail=turn.stderr_tail,
                                             limits=self.limits)
        self.processes[turn.thread_id] = proc
        self.pgids.append(proc.pgid)
        try:
            async for line in proc.lines():
                if line.truncated:
                    yield RawEvent(event={"oversizedLine": True, "droppedBytes": line.dropped_bytes},
                                   source="fake-cli")
                    continue
                try:
                    yield EVENT.validate_json(line.text)
                except ValidationError:
                    yield RawEvent(event={"line": line.text[:200]}, source="fake-cli")
            code = await proc.wait()
            if code != 0:
                raise BridgeError(f"The fake CLI exited with code {code}.", code="CLI_EXITED",
                                  stderr_tail=turn.stderr_tail.text())
        finally:
            self.processes.pop(turn.thread_id, None)
            await proc.stop()

    async def interrupt(self, thread_id: str) -> None:
        proc = self.processes.get(thread_id)
        if proc is not None:
            proc.signal_group(signal.SIGINT)


class SteeringBridge(FakeCliBridge):
    """The fake CLI with mid-turn input: a steered message is recorded (the test then lets the turn end)."""

    steering = True

    def __init__(self, workdir: Path, *, takes: bool = True) -> None:
        super().__init__(workdir)
        self.takes = takes
        self.steered: list[tuple[str, str]] = []
        self.entered: list[str] = []
        self.hold: asyncio.Event | None = None  # set: a steer waits for it (a slow delivery)

    async def steer(self, thread_id: str, text: str) -> bool:
        self.entered.append(text)
        if self.hold is not None:
            await self.hold.wait()
        if not self.takes or thread_id not in self.processes:
            return False
        self.steered.append((thread_id, text))
        return True


def script(*steps: dict) -> str:
    return json.dumps(list(steps))
