"""The whole path over loopback: fake CLI -> runner (separate process) -> SSE client (this process).

* relay overhead: each event carries the CLOCK_MONOTONIC time the fake CLI wrote it; the client subtracts it from
  the time it received the frame (CLI at 1,000 events/s);
* throughput: the fake CLI floods N events; events/s between the first and the last event the client receives;
* memory: the runner's RSS when idle and after a 100,000-event run.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
from common import PYTHON, REPO, RunnerProcess, rss_kib, summary

SERVER = [PYTHON, str(REPO / "bench" / "serve_flood.py")]


def run_body(config: dict[str, Any]) -> dict[str, Any]:
    return {"threadId": f"bench-{uuid.uuid4()}", "runId": str(uuid.uuid4()),
            "messages": [{"id": "u1", "role": "user", "content": json.dumps(config)}]}


def stream(url: str, config: dict[str, Any]) -> tuple[list[tuple[int, bytes]], float, float]:
    """POST /run and read the SSE stream; (receive time ns, data bytes) per event, start and end times."""
    received: list[tuple[int, bytes]] = []
    buffer = b""
    with httpx.Client(timeout=httpx.Timeout(10.0, read=120.0), trust_env=False) as client:
        started = time.monotonic()
        with client.stream("POST", f"{url}/run", json=run_body(config)) as response:
            assert response.status_code == 200, response.read()
            for chunk in response.iter_raw():
                now = time.monotonic_ns()
                buffer += chunk
                *frames, buffer = buffer.split(b"\r\n\r\n") if b"\r\n\r\n" in buffer else buffer.split(b"\n\n")
                for frame in frames:
                    for line in frame.splitlines():
                        if line.startswith(b"data:"):
                            received.append((now, line[5:].strip()))
        ended = time.monotonic()
    return received, started, ended


def relay_latency(url: str, count: int, rate: float) -> list[float]:
    """receive - write in ms for every stamped event."""
    received, _, _ = stream(url, {"count": count, "rate": rate})
    out = []
    for now, data in received:
        if b'"t=' in data:
            event = json.loads(data)
            if event["type"] == "TEXT_MESSAGE_CONTENT":  # not the MESSAGES_SNAPSHOT, which holds every stamp too
                out.append((now - int(event["delta"][2:].strip())) / 1e6)
    assert len(out) == count, (len(out), count)
    return out


def throughput(url: str, count: int) -> dict[str, float]:
    received, started, ended = stream(url, {"count": count, "rate": 0})
    assert json.loads(received[-1][1])["type"] == "RUN_FINISHED", received[-1]
    first, last = received[1][0], received[-1][0]
    return {"events": len(received), "events_per_s": (len(received) - 1) / ((last - first) / 1e9),
            "wall_events_per_s": len(received) / (ended - started)}


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"latency_runs": 1, "latency_events": 50, "throughput_runs": 1, "throughput_events": 1000,
         "memory_runs": 1, "memory_events": 1000}


def measure(latency_runs: int = 5, latency_events: int = 2000, throughput_runs: int = 5,
            throughput_events: int = 100_000, memory_runs: int = 3, memory_events: int = 100_000) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with RunnerProcess(SERVER) as runner:
        relay_latency(runner.url, 200, 1000)  # warm-up
        per_run = [relay_latency(runner.url, latency_events, 1000) for _ in range(latency_runs)]
        samples = [v for run in per_run for v in run]
        results["relay_ms"] = summary(samples)
        results["relay_ms_per_run"] = [summary(run) for run in per_run]
        results["relay_samples"] = samples
        throughput(runner.url, 10_000)  # warm-up
        rates = [throughput(runner.url, throughput_events) for _ in range(throughput_runs)]
        results["throughput"] = summary([r["events_per_s"] for r in rates])
        results["throughput_wall"] = summary([r["wall_events_per_s"] for r in rates])
    idle, after = [], []
    for _ in range(memory_runs):
        with RunnerProcess(SERVER) as runner:
            time.sleep(0.5)
            assert runner.proc is not None
            idle.append(rss_kib(runner.proc.pid))
            throughput(runner.url, memory_events)
            time.sleep(0.5)
            after.append(rss_kib(runner.proc.pid))
    results["memory_kib"] = {"idle_rss": summary([m["VmRSS"] for m in idle]),
                             "after_rss": summary([m["VmRSS"] for m in after]),
                             "after_peak": summary([m["VmHWM"] for m in after])}
    return results


if __name__ == "__main__":
    from common import isolate_or_die, smoke

    isolate_or_die()
    quick = measure(**SMOKE) if smoke() else measure(latency_runs=2, throughput_runs=2, memory_runs=1)
    quick.pop("relay_samples")
    print(json.dumps(quick, indent=1))
