"""A fake CLI with state: ``StatefulFakeBridge`` runs the fake CLI (tests/fakes/fake_cli.py, under the shared
process supervision) and keeps the conversation like a real CLI does, in files in the state dir:
``sessions/<session id>.jsonl`` (one line per user turn), the thread -> session map, a credential file written at
startup and a cache dir. The reply is ``history: <turn 1> | <turn 2> | ...``, so a test sees what the CLI
remembered. A prompt starting with ``SLOW `` makes the turn wait (so a test can stop or kill the runner mid-run).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

from ag_ui.core import BaseEvent
from process_bridge import FakeCliBridge, script

from ambient_runner.bridges.contract import StateFiles, Turn
from ambient_runner.bridges.session_map import SessionMap
from ambient_runner.settings import RunnerSettings


class StatefulFakeBridge(FakeCliBridge):
    runner_type = "fake-cli"

    def __init__(self, settings: RunnerSettings) -> None:
        super().__init__(settings.workspace_path)
        self.settings = settings
        self.state_dir = settings.state_dir
        self.sessions: SessionMap | None = None

    async def startup(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "auth.json").write_text('{"api_key": "from-a-secret"}')  # never synced
        (self.state_dir / "cache").mkdir(exist_ok=True)
        (self.state_dir / "cache" / "blob").write_text("rebuildable")
        self.sessions = SessionMap(self.state_dir)  # after hydration, like the real bridges

    def state_files(self) -> StateFiles:
        return StateFiles(excludes=("cache",))

    def history(self, session_id: str) -> list[str]:
        path = self.state_dir / "sessions" / f"{session_id}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]

    async def run_turn(self, turn: Turn) -> AsyncIterator[BaseEvent]:
        assert self.sessions is not None
        session_id = self.sessions.get(turn.thread_id)
        if session_id is None:
            session_id = f"session-{uuid.uuid4().hex[:8]}"
            self.sessions.set(turn.thread_id, session_id)
        path = self.state_dir / "sessions" / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as log:
            log.write(json.dumps({"text": turn.prompt}) + "\n")
        steps: list[dict] = [
            {"emit": {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}},
            {"emit": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                      "delta": "history: " + " | ".join(self.history(session_id))}},
        ]
        if turn.prompt.startswith("SLOW "):
            steps.append({"sleep": 600})
        steps.append({"emit": {"type": "TEXT_MESSAGE_END", "messageId": "m"}})
        async for event in super().run_turn(replace(turn, prompt=script(*steps))):
            yield event


def reply(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
