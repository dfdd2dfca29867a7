"""Runners with state sync for the scenario tests: in-process (RunnerHarness with the sync extension) and as a
separate process (tests/state/runner_app.py) that a test can SIGTERM or SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from harness import RunnerHarness, check_stream, parse_sse
from process_bridge import FakeCliBridge
from runner_process import free_port

from ambient_runner.app import create_app
from ambient_runner.bridges.contract import Bridge
from ambient_runner.settings import RunnerSettings
from ambient_runner.state.lifecycle import StateSyncExtension
from tests.state.state_fakes import StatefulFakeBridge

RUNNER_APP = Path(__file__).parent / "runner_app.py"
REPO = Path(__file__).resolve().parents[2]


def synced_harness(store_url: str, workspace: Path,
                   make_bridge: Callable[[RunnerSettings], Bridge] = StatefulFakeBridge,
                   *, retry_delays: tuple[float, ...] = (0.05,), **settings: Any) -> RunnerHarness:
    """RunnerHarness (fresh temp state root) whose app has the state-sync extension; ``runner.bridge`` is the
    bridge ``make_bridge`` built from the harness's settings."""
    runner = RunnerHarness(FakeCliBridge(workspace), state_store_url=store_url, workspace_path=workspace, **settings)
    bridge = make_bridge(runner.settings)
    runner.bridge = bridge
    runner.app = create_app(runner.settings, bridge, install_signal_handlers=False,
                            extensions=[StateSyncExtension(runner.settings, retry_delays=retry_delays)])
    return runner


class RunnerProcess:
    """``tests/state/runner_app.py`` in its own process group, configured through the environment."""

    def __init__(self, root: Path, store_url: str, workspace: Path, **env: str) -> None:
        self.root = root
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = root / "runner.log"
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "STATE_STORE_URL": store_url,
                    "WORKSPACE_PATH": str(workspace), "RUNNER_STATE_ROOT": str(root / "state"),
                    "RUNNER_EVENTS_DIR": str(root / "events"), "AGUI_HOST": "127.0.0.1", "AGUI_PORT": str(self.port),
                    "RUNNER_TYPE": "gemini-cli", "RUNNER_SHUTDOWN_GRACE": "10", "RUNNER_INTERRUPT_GRACE": "3", **env}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def state_dir(self) -> Path:
        return self.root / "state" / ".gemini"

    async def start(self) -> RunnerProcess:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([sys.executable, str(RUNNER_APP)], env=self.env, cwd=REPO, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(base_url=self.base_url) as client:
            while True:
                assert self.process.poll() is None, f"runner exited: {self.log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, "runner did not start"
                try:
                    if (await client.get("/health")).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)

    async def run(self, thread_id: str, prompt: str) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=120) as client:
            return await read_run(client, thread_id, prompt)

    def signal(self, sig: int) -> None:
        assert self.process is not None
        if sig == signal.SIGKILL:  # a crash takes the whole pod: the runner and its CLI
            os.killpg(self.process.pid, sig)
        else:
            self.process.send_signal(sig)

    async def wait(self, timeout: float = 60) -> int:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            assert time.monotonic() < deadline, "runner did not exit"
            await asyncio.sleep(0.05)
        return self.process.returncode

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


async def read_run(client: httpx.AsyncClient, thread_id: str, prompt: str,
                   on_event: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    body = {"threadId": thread_id, "messages": [{"id": f"u-{abs(hash(prompt))}", "role": "user", "content": prompt}]}
    events: list[dict[str, Any]] = []
    async with client.stream("POST", "/run", json=body) as response:
        assert response.status_code == 200, (response.status_code, await response.aread())
        async for _, event in parse_sse(response.aiter_lines()):
            events.append(event)
            if on_event is not None:
                on_event(event)
    check_stream(events)
    return events
