"""Shared helpers of the benchmarks: statistics, ports, waiting for HTTP, process memory, a runner subprocess."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
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


def shown_path(path: Path) -> str:
    """``path`` as results written for the repository show it: relative to this checkout when inside it, else to the
    top of its own git repository (the reference runner: ``components/runners/ambient-runner``), else its name; never
    the absolute path of the machine that ran the bench (``tests/core/test_docs.py`` looks for those)."""
    path = path.resolve()
    if path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    try:
        top = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        top = ""
    if top and path != Path(top).resolve() and path.is_relative_to(Path(top).resolve()):
        return path.relative_to(Path(top).resolve()).as_posix()
    return path.name


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


def interval95(statistic: Callable[..., float | None], *samples: Sequence[Any], rounds: int = 2000,
               seed: int = 35, min_size: int = 5) -> tuple[float, float] | None:
    """A 95 % bootstrap interval of ``statistic(*samples)``: each sample drawn again with replacement, ``rounds``
    times (seeded: the same rows give the same interval). On this VM a figure of a few milliseconds moves by a
    millisecond from run to run; the interval says how far this run's figure can be trusted. A round whose
    statistic is undefined (None: a ratio over a base at or below zero) counts as unbounded. None when ``statistic``
    has no value on the samples themselves, or a sample has fewer than ``min_size`` values (too few to redraw)."""
    if any(len(sample) < min_size for sample in samples) or statistic(*samples) is None:
        return None
    draw = random.Random(seed)
    values = []
    for _ in range(rounds):
        value = statistic(*([draw.choice(sample) for _ in sample] for sample in samples))
        values.append(math.inf if value is None else value)
    values.sort()
    return values[int(0.025 * (rounds - 1))], values[int(0.975 * (rounds - 1))]


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


def cpu_ns(pids: list[int]) -> int:
    """The CPU time the threads of ``pids`` have used, in ns (``/proc/<pid>/task/<tid>/schedstat``: exact, where
    ``/proc/<pid>/stat`` counts 10 ms ticks)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in os.scandir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError), open(f"{task.path}/schedstat") as stat:
                    total += int(stat.read().split()[0])
    return total


def settle(quiet_ns: int = 100_000, every: float = 0.002, limit: float = 0.2) -> float:
    """Wait until every process this one started (the runner, the CLIs, theirs) is idle: under ``quiet_ns`` of CPU
    in ``every`` s, at most ``limit`` s. The processes go on working for a few ms after a turn (the wait's median
    was 4-5 ms on a 500-turn Gemini thread): the next turn, the other side's, would share the two cores with that,
    and the side with more processes at work (the runner's) would pay for it. Returns the wait in s."""
    from ambient_runner.process.proc_stat import descendants  # noqa: PLC0415 - after the namespace is set up

    started = time.monotonic()
    pids = [child.pid for child in descendants(os.getpid())]
    last = cpu_ns(pids)
    while time.monotonic() - started < limit:
        time.sleep(every)
        now = cpu_ns(pids)
        if now - last < quiet_ns:
            break
        last = now
    return time.monotonic() - started


def settle_ms(waits: list[float]) -> dict[str, float]:
    """``settle``'s waits (s) as ``summary``'s figures in ms."""
    return {k: v * 1000 for k, v in summary(waits).items() if k != "n"}


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
    head = line[5:85].lstrip()  # not line[5:]: a copy of a whole-thread snapshot, in the runner's timed window
    match = TYPE.match(head)
    return match.group(1) if match else json.loads(line[5:])["type"]


class RunClient:
    """The platform backend's side of ``POST /run`` (it is Go), as light as the bare CLIs' clients: one kept-alive
    HTTP/1.1 connection, each response parsed by httptools (C; uvicorn's own parser) and its body split into lines
    as it comes. httpx parses in Python: a later Gemini turn's runner-minus-bare figure was 1.0-2.0 ms higher with
    it (interleaved, 3 x 40 turns), time that is the bench client's, not the runner's."""

    def __init__(self, url: str, timeout: float = 300.0) -> None:
        self.timeout = timeout
        self._host = url.split("://", 1)[1].split("/", 1)[0]
        self._sock: socket.socket | None = None

    def __enter__(self) -> RunClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def post_lines(self, path: str, body: dict[str, Any]) -> Iterator[str]:
        """POST ``body`` (JSON) to ``path``: the response body's lines as they arrive, read to the end of the
        response. A status other than 200 raises with the body; a connection left mid-response is not reused."""
        import httptools  # noqa: PLC0415 - the runner's own dependency (uvicorn's parser)

        if self._sock is not None and _closed_by_peer(self._sock):  # an idle connection the runner let go
            self.close()
        if self._sock is None:
            host, _, port = self._host.rpartition(":")
            self._sock = socket.create_connection((host, int(port)), timeout=self.timeout)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        payload = json.dumps(body).encode()
        self._sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                           b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
                           % (path.encode(), self._host.encode(), len(payload), payload))
        response = _Response()
        parser = response.parser = httptools.HttpResponseParser(response)
        try:
            while not response.complete:
                data = self._sock.recv(65536)
                if not data:
                    raise RuntimeError(f"the runner closed the connection mid-response to POST {path}")
                parser.feed_data(data)
                status = parser.get_status_code()
                if response.complete and status != 200:
                    raise RuntimeError(f"POST {path} answered {status}: {bytes(response.body)[:500]!r}")
                if status == 200:
                    yield from response.lines()
            yield from response.lines(final=True)
        finally:
            if not (response.complete and response.keep_alive):
                self.close()


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed ``sock`` (readable with nothing to read), as HTTP clients check a pooled
    connection before they reuse it (uvicorn closes one idle for 5 s)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class _Response:
    """httptools' callbacks for one response: its body, split into lines on request."""

    def __init__(self) -> None:
        self.parser: Any = None
        self.body = bytearray()
        self.complete = False
        self.keep_alive = False  # what the response says of its connection (read while the parser knows it)

    def on_headers_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, data: bytes) -> None:
        self.body += data

    def on_message_complete(self) -> None:
        self.complete = True

    def lines(self, final: bool = False) -> Iterator[str]:
        end = len(self.body) if final else self.body.rfind(b"\n") + 1
        if end <= 0:
            return
        text = bytes(self.body[:end]).decode()
        del self.body[:end]
        yield from (line.rstrip("\r") for line in text.split("\n")[:-1 if text.endswith("\n") else None])


def run_events(client: httpx.Client | RunClient, url: str, body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``POST /run`` with ``body``: each ``data:`` line of its stream as (event type, line), up to and including
    ``RUN_FINISHED``. A refused run, a ``RUN_ERROR`` or a stream without its terminal event raises. The stream is
    read to its end after ``RUN_FINISHED`` (the runner ends it there), so the client's connection is kept for its
    next run, as a platform's backend keeps it: a response left unread closes it, and every run would pay a new
    connection (and the runner a client that goes away mid-response). Iterate to the end: a consumer that stops at
    ``RUN_FINISHED`` leaves the stream unread."""
    lines = client.post_lines("/run", body) if isinstance(client, RunClient) else _httpx_lines(client, url, body)
    with contextlib.closing(lines):  # left early (an error, a consumer that stops): the response is let go at once
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


def _httpx_lines(client: httpx.Client, url: str, body: dict[str, Any]) -> Iterator[str]:
    with client.stream("POST", f"{url}/run", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"POST /run answered {response.status_code}: {response.read()[:500]!r}")
        yield from response.iter_lines()


def isolate_or_die() -> None:
    """Move this process into a loopback-only network namespace before anything else starts."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    import netns  # noqa: PLC0415

    problem = netns.isolate_network()
    if problem is not None or not netns.is_isolated():
        raise SystemExit(f"bench: cannot isolate the network ({problem or netns.interfaces()}); refusing to run")
