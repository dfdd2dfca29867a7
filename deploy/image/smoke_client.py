"""Smoke check of a runner (standard library only, so it runs inside the image).

    python smoke_client.py --start-runner --lock requirements.lock     # inside the image (deploy/image/smoke.sh)
    python smoke_client.py --base-url http://127.0.0.1:8001           # against a runner that is already up

Starts ``python main.py`` when asked, waits for ``GET /ready``, POSTs one AG-UI ``RunAgentInput`` to ``/run`` and
reads the SSE stream until the terminal event, then stops the runner with SIGTERM. With ``--lock`` it also checks
that every installed Python distribution has the version requirements.lock pins. Prints one JSON line; exit
status 0 only when the run ended with ``RUN_FINISHED`` and every check passed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path


def headers() -> dict[str, str]:
    token = os.environ.get("AGUI_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def wait_ready(base: str, timeout: float, runner: subprocess.Popen | None) -> None:
    deadline = time.monotonic() + timeout
    last: object = "no answer"
    while time.monotonic() < deadline:
        if runner is not None and runner.poll() is not None:
            raise SystemExit(f"the runner exited with {runner.returncode} before it was ready")
        try:
            with urllib.request.urlopen(urllib.request.Request(f"{base}/ready", headers=headers()), timeout=5):
                return
        except urllib.error.HTTPError as exc:  # 503 while not ready: keep its reason
            last = json.loads(exc.read() or b"{}")
        except OSError as exc:
            last = str(exc)
        time.sleep(0.3)
    raise SystemExit(f"not ready after {timeout:.0f} s: {last}")


def stream_run(base: str, prompt: str, timeout: float, thread_id: str = "smoke-thread",
               message_id: str = "m1") -> Iterator[dict]:
    """POST one AG-UI ``RunAgentInput`` to ``/run``; its events as they arrive, up to the terminal one."""
    body = {"threadId": thread_id, "runId": f"{thread_id}-{uuid.uuid4().hex[:8]}", "state": {}, "tools": [],
            "context": [], "forwardedProps": {},
            "messages": [{"id": message_id, "role": "user", "content": prompt}]}
    request = urllib.request.Request(
        f"{base}/run", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "text/event-stream", **headers()})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        for raw in response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data:"):
                event = json.loads(line[5:].strip())
                yield event
                if event.get("type") in ("RUN_FINISHED", "RUN_ERROR"):
                    return


def stop_runner(runner: subprocess.Popen) -> dict[str, float]:
    """SIGTERM, as the kubelet stops a pod: its exit status (0 after a drain) and the seconds it took."""
    stop = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    try:
        code = runner.wait(timeout=60)
    except subprocess.TimeoutExpired:
        runner.kill()
        code = runner.wait()
    return {"sigtermExit": code, "sigtermSeconds": round(time.monotonic() - stop, 2)}


def lock_mismatches(lock: Path) -> list[str]:
    """Installed distributions whose version differs from the lock, or that the lock does not name."""
    pinned = {}
    for line in lock.read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            pinned[name.lower().replace("_", "-")] = version
    problems = []
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in ("pip", "setuptools", "wheel"):
            continue
        if pinned.get(name) != dist.version:
            problems.append(f"{name}=={dist.version} (lock: {pinned.get(name, 'absent')})")
    return sorted(problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8001")
    parser.add_argument("--prompt", default="Create hello.txt with hello in it.")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--start-runner", action="store_true", help="start `python main.py` here first")
    parser.add_argument("--lock", type=Path, help="check installed Python packages against this lock file")
    parser.add_argument("--probe", help="a JSON command (the pod's readiness probe) that must succeed once ready")
    args = parser.parse_args()
    report: dict[str, object] = {"runnerType": os.environ.get("RUNNER_TYPE"), "uid": os.getuid()}
    runner = subprocess.Popen([sys.executable, "main.py"], stdout=sys.stderr) if args.start_runner else None
    ok = True
    try:
        wait_ready(args.base_url, args.timeout, runner)
        if args.probe:
            report["readinessProbeExit"] = subprocess.run(json.loads(args.probe), timeout=30).returncode
            ok = report["readinessProbeExit"] == 0
        started = time.monotonic()
        events = list(stream_run(args.base_url, args.prompt, args.timeout))
        types = [e.get("type") for e in events]
        report.update(events=len(events), first=types[:1], terminal=types[-1] if types else None,
                      toolCalls=types.count("TOOL_CALL_START"), runSeconds=round(time.monotonic() - started, 2))
        if types[-1:] == ["RUN_ERROR"]:
            report["error"] = events[-1].get("message")
        ok = ok and types[:1] == ["RUN_STARTED"] and types[-1:] == ["RUN_FINISHED"]
    except (SystemExit, OSError) as exc:
        report["error"] = str(exc)
        ok = False
    finally:
        if runner is not None:
            report.update(stop_runner(runner))
            ok = ok and report["sigtermExit"] == 0  # a drained SIGTERM is a clean stop
    if args.lock is not None:
        report["notInLock"] = lock_mismatches(args.lock)
        ok = ok and not report["notInLock"]
    report["ok"] = ok
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
