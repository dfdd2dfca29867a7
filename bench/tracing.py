"""Tracing on and off, side by side: whole-path throughput (fake CLI flood -> runner -> SSE client) and time to first
text of a real Gemini CLI turn on the scripted model, each with the runner exporting its spans over OTLP/HTTP to a
trace backend on 127.0.0.1 (tests/support/otlp_receiver: decodes every export) and with nothing configured. The two
runners alternate per repetition, so both see the same machine."""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from common import PYTHON, REPO, RunnerProcess, summary, wait_status
from relay import SERVER, throughput
from turns import PROMPT_1, runner_turn

sys.path.insert(0, str(REPO / "tests" / "support"))
from otlp_receiver import otlp_receiver  # noqa: E402

# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"runs": 1, "events": 1000, "warm_up_events": 100}


def measure(runs: int = 5, events: int = 100_000, warm_up_events: int = 10_000) -> dict[str, Any]:
    with otlp_receiver() as backend, tempfile.TemporaryDirectory(prefix="bench-trace-") as root:
        on = {"OTEL_EXPORTER_OTLP_ENDPOINT": backend.url}
        out: dict[str, Any] = {"throughput": {}, "first_text_s": {}}
        rates: dict[str, list[float]] = {"off": [], "on": []}
        with RunnerProcess(SERVER) as off_runner, RunnerProcess(SERVER, env=on) as on_runner:
            runners = {"off": off_runner, "on": on_runner}
            for runner in runners.values():
                wait_status(f"{runner.url}/ready")
                throughput(runner.url, warm_up_events)
            for rep in range(runs):
                for side in (("off", "on") if rep % 2 == 0 else ("on", "off")):
                    rates[side].append(throughput(runners[side].url, events)["events_per_s"])
        out["throughput"] = {side: summary(values) for side, values in rates.items()}

        texts: dict[str, list[float]] = {"off": [], "on": []}
        base = {"RUNNER_TYPE": "gemini-cli", "RUNNER_SCRIPTED_MODEL": "true"}
        envs = {}
        for side in ("off", "on"):
            Path(root, side, "workspace").mkdir(parents=True)
            envs[side] = {**base, "WORKSPACE_PATH": f"{root}/{side}/workspace",
                          "RUNNER_STATE_ROOT": f"{root}/{side}/state", "RUNNER_EVENTS_DIR": f"{root}/{side}/events",
                          **(on if side == "on" else {})}
        with RunnerProcess([PYTHON, str(REPO / "main.py")], env=envs["off"]) as off_runner, \
                RunnerProcess([PYTHON, str(REPO / "main.py")], env=envs["on"]) as on_runner:
            runners = {"off": off_runner, "on": on_runner}
            for runner in runners.values():
                wait_status(f"{runner.url}/ready")
                runner_turn(runner.url, "warm-up", PROMPT_1)
            for rep in range(runs):
                for side in (("off", "on") if rep % 2 == 0 else ("on", "off")):
                    texts[side].append(runner_turn(runners[side].url, f"bench-{uuid.uuid4()}", PROMPT_1)[0])
        out["first_text_s"] = {side: summary(values) for side, values in texts.items()}
        out["spans_exported"] = len(backend.spans)
    return out


if __name__ == "__main__":
    import json

    from common import isolate_or_die, smoke

    isolate_or_die()
    result = measure(**SMOKE) if smoke() else measure(2, 20_000)
    print(json.dumps({k: ({s: round(v["p50"], 4) for s, v in d.items()} if isinstance(d, dict) else d)
                      for k, d in result.items()}, indent=1))
