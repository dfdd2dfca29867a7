"""Shared helpers of the benchmarks: statistics, ports, waiting for HTTP, process memory, a runner subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
if str(REPO) not in sys.path:  # this checkout's packages, whatever the venv's editable install points at
    sys.path.insert(1, str(REPO))


def smoke() -> bool:
    """``--smoke``: the tiniest workload, only to show that the script runs and prints its figures
    (``tests/bench/test_bench_smoke.py``); its figures mean nothing."""
    return "--smoke" in sys.argv[1:]


def summary(values: list[float]) -> dict[str, Any]:
    """Median, p1/p25/p75/p95/p99, min/max and the count of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}

    def pct(p: float) -> float:
        index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
        return ordered[index]

    return {"n": len(ordered), "p50": statistics.median(ordered), "p1": pct(1), "p25": pct(25), "p75": pct(75),
            "p95": pct(95), "p99": pct(99), "min": ordered[0], "max": ordered[-1]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def wait_status(url: str, status: int = 200, timeout: float = 60.0, interval: float = 0.002) -> float:
    """Poll ``url`` until it answers ``status``; returns the monotonic time it did."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            try:
                if client.get(url).status_code == status:
                    return time.monotonic()
            except httpx.HTTPError:
                pass
            time.sleep(interval)
    raise TimeoutError(f"{url} did not answer {status} within {timeout} s")


@dataclass
class RunnerProcess:
    """A runner in its own process (``python <script>``) on a free loopback port."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    cwd: Path = REPO  # another checkout's folder runs that checkout's packages (before/after comparisons)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RunnerProcess:
        env = {**os.environ, "AGUI_HOST": "127.0.0.1", "AGUI_PORT": str(self.port), "RUNNER_LOG_LEVEL": "warning",
               **self.env}
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> RunnerProcess:
        self.start()
        try:
            wait_status(f"{self.url}/health")
        except TimeoutError:
            self.stop()
            err = self.proc.stderr.read().decode(errors="replace") if self.proc and self.proc.stderr else ""
            raise RuntimeError(f"runner {self.argv} did not start: {err[-2000:]}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


TYPE = re.compile(r'\{"type":"([A-Z_]+)"')


def event_type(line: str) -> str:
    """The type of an SSE ``data:`` line, read from its start (the type is the first field): the client does not
    parse a whole-thread snapshot, whose parsing would count as the runner's time."""
    head = line[5:].lstrip()[:80]
    match = TYPE.match(head)
    return match.group(1) if match else json.loads(line[5:])["type"]


def run_events(client: httpx.Client, url: str, body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``POST /run`` with ``body``: each ``data:`` line of its stream as (event type, line), up to and including
    ``RUN_FINISHED``. A refused run, a ``RUN_ERROR`` or a stream without its terminal event raises. The stream is
    read to its end after ``RUN_FINISHED`` (the runner ends it there), so the client's connection is kept for its
    next run, as a platform's backend keeps it: a response left unread closes it, and every run would pay a new
    connection (and the runner a client that goes away mid-response). Iterate to the end: a consumer that stops at
    ``RUN_FINISHED`` leaves the stream unread."""
    with client.stream("POST", f"{url}/run", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"POST /run answered {response.status_code}: {response.read()[:500]!r}")
        lines = response.iter_lines()
        for line in lines:
            if not line.startswith("data:"):
                continue
            kind = event_type(line)
            if kind == "RUN_ERROR":
                raise RuntimeError(f"the run ended with RUN_ERROR: {json.loads(line[5:]).get('message')}")
            yield kind, line
            if kind == "RUN_FINISHED":
                for _ in lines:  # the rest: the chunked body's end
                    pass
                return
    raise RuntimeError("the run's stream ended without a terminal event")


def isolate_or_die() -> None:
    """Move this process into a loopback-only network namespace before anything else starts."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    import netns  # noqa: PLC0415

    problem = netns.isolate_network()
    if problem is not None or not netns.is_isolated():
        raise SystemExit(f"bench: cannot isolate the network ({problem or netns.interfaces()}); refusing to run")
