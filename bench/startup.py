"""Start-up of ``python main.py`` per RUNNER_TYPE on the scripted model: process start -> /health 200 and
-> /ready 200 (the bridge's startup: scripted server, CLI config, for codex the app-server preparation)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from common import PYTHON, REPO, RunnerProcess, summary, wait_status

RUNNER_TYPES = ("gemini-cli", "codex-sdk", "claude")


def start_once(runner_type: str, repo: Path = REPO) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-start-") as root:
        runner = RunnerProcess([PYTHON, str(repo / "main.py")], cwd=repo, env={
            "RUNNER_TYPE": runner_type, "RUNNER_SCRIPTED_MODEL": "true", "WORKSPACE_PATH": f"{root}/workspace",
            "RUNNER_STATE_ROOT": f"{root}/state", "RUNNER_EVENTS_DIR": f"{root}/events"})
        runner.start()
        try:
            health = wait_status(f"{runner.url}/health", timeout=60)
            ready = wait_status(f"{runner.url}/ready", timeout=60)
        finally:
            runner.stop()
        return health - runner.started_at, ready - runner.started_at


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"runs": 1, "warm_up": False}


def measure(runs: int = 7, warm_up: bool = True) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for runner_type in RUNNER_TYPES:
        if warm_up:
            start_once(runner_type)  # warm the page cache
        samples = [start_once(runner_type) for _ in range(runs)]
        results[runner_type] = {"health_s": summary([h for h, _ in samples]),
                                "ready_s": summary([r for _, r in samples])}
        time.sleep(0.2)
    return results


if __name__ == "__main__":
    from common import isolate_or_die, smoke

    isolate_or_die()
    out = measure(**SMOKE) if smoke() else measure(3)
    print(json.dumps({k: (v["health_s"]["p50"], v["ready_s"]["p50"]) for k, v in out.items()}, indent=1))
