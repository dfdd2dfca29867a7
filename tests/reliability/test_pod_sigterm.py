"""Pod SIGTERM during a run, on the real entry point (``python main.py``) with each real CLI on its scripted
model: the client gets a terminal event, the CLI's processes are gone, the runner exits within its grace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from harness import check_stream
from proctable import pid_alive
from runner_process import free_port, wait_ready

from ambient_runner.process import proc_stat

ROOT = Path(__file__).resolve().parents[2]
RUNNERS = ["gemini-cli", "codex-sdk", "claude"]


def descendants(pid: int) -> set[int]:
    return {stat.pid for stat in proc_stat.descendants(pid)}


def start_runner(runner_type: str, tmp_path: Path, port: int, **env: str) -> subprocess.Popen:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "AGUI_"))}
    return subprocess.Popen(
        [sys.executable, "main.py"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=clean | {"RUNNER_TYPE": runner_type, "RUNNER_SCRIPTED_MODEL": "true", "AGUI_HOST": "127.0.0.1",
                     "AGUI_PORT": str(port), "WORKSPACE_PATH": str(tmp_path / "workspace"),
                     "RUNNER_STATE_ROOT": str(tmp_path / "state"), "RUNNER_SHUTDOWN_GRACE": "8",
                     "RUNNER_INTERRUPT_GRACE": "3"} | env)


@pytest.mark.real_cli
@pytest.mark.parametrize("runner_type", RUNNERS)
def test_sigterm_during_a_run_ends_it_cleanly(runner_type, tmp_path, isolated_network):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_runner(runner_type, tmp_path, port)
    try:
        wait_ready(url, proc)
        body = {"threadId": "t1", "messages": [{"id": "u1", "role": "user", "content": "SLOW please stream"}]}
        events: list[dict] = []
        cli_processes: set[int] = set()
        with httpx.stream("POST", f"{url}/run", json=body, timeout=60) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                events.append(json.loads(line[5:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT" and not cli_processes:
                    cli_processes = descendants(proc.pid)
                    assert cli_processes, "the CLI should be running"
                    sent_at = time.monotonic()
                    proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        exited_after = time.monotonic() - sent_at
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check_stream(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "SHUTDOWN", events[-1]
    assert "shutting down" in events[-1]["message"]
    assert code == 0, proc.stdout.read() if proc.stdout else code  # a drained SIGTERM is a clean stop
    assert exited_after < 8 + 5
    left, deadline = list(cli_processes), time.monotonic() + 10
    while left and time.monotonic() < deadline:  # polled: a process's end may reach the table a moment later
        time.sleep(0.05)
        left = [pid for pid in left if pid_alive(pid)]
    assert left == []
