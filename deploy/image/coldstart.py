"""Cold start of a runner, measured where it runs (inside the image: the standard library, smoke_client.py beside
it, and the runner's own process-table reader from the runner's folder, the working directory).

    python coldstart.py --t0 "$(date +%s.%N)"     # deploy/image/smoke.sh: t0 = just before the container starts

Starts ``python main.py`` and times, from ``--t0`` (epoch seconds; default: this script's own start):
``GET /health`` 200, ``GET /ready`` 200, and the first text event (``TEXT_MESSAGE_CONTENT``) of a first run posted
as soon as the runner is ready. It reads the runner's resident memory (the runner process alone, and with its
children, the CLI: the pod's) when it is ready, idle after that run, and idle after a conversation of ``--turns``
runs on the same thread (default 20: the first run, then plain answers and tool calls taking turns), then stops it
with SIGTERM. Prints one JSON line; exit status 0 only when every run ended with ``RUN_FINISHED``, the first after at
least one tool call, and SIGTERM exited 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from smoke_client import headers, stop_runner, stream_run

sys.path.append(os.getcwd())  # the runner's folder: /app in the image
from ambient_runner.process.proc_stat import descendants  # noqa: E402

POLL = 0.01  # s between probes: the figures are this precise


def answers_200(url: str) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers()), timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_for(url: str, deadline: float, runner: subprocess.Popen) -> None:
    while not answers_200(url):
        if runner.poll() is not None:
            raise RuntimeError(f"the runner exited with {runner.returncode} before {url} answered 200")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer 200 in time")
        time.sleep(POLL)


def rss_kib(pid: int) -> int:
    """Resident memory of one process, 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def memory(pid: int) -> dict[str, float]:
    runner = rss_kib(pid)
    tree = runner + sum(rss_kib(child.pid) for child in descendants(pid))
    return {"runnerMiB": round(runner / 1024, 1), "withChildrenMiB": round(tree / 1024, 1)}


def first_run(base: str, prompt: str, timeout: float, since: float, message_id: str = "m1") -> dict[str, object]:
    """POST one run; seconds (from ``since``, a time.time()) to its first text event, its events' types."""
    types: list[str] = []
    first_text: float | None = None
    error = None
    for event in stream_run(base, prompt, timeout, thread_id="coldstart", message_id=message_id):
        types.append(event.get("type", ""))
        if first_text is None and types[-1] == "TEXT_MESSAGE_CONTENT":
            first_text = time.time() - since
        if types[-1] == "RUN_ERROR":
            error = event.get("message")
    return {"firstText": first_text, "types": types, "error": error}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t0", type=float, help="epoch seconds the container started (default: now)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8001")
    parser.add_argument("--prompt", default="Create hello.txt with hello in it.")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--turns", type=int, default=20, help="runs in the conversation (the first one included)")
    args = parser.parse_args()
    t0 = args.t0 if args.t0 is not None else time.time()
    report: dict[str, object] = {"runnerType": os.environ.get("RUNNER_TYPE"), "uid": os.getuid()}
    runner = subprocess.Popen([sys.executable, "main.py"], stdout=sys.stderr)
    ok = False
    try:
        deadline = time.monotonic() + args.timeout
        wait_for(f"{args.base_url}/health", deadline, runner)
        report["healthSeconds"] = round(time.time() - t0, 3)
        wait_for(f"{args.base_url}/ready", deadline, runner)
        ready = time.time()
        report["readySeconds"] = round(ready - t0, 3)
        report["rssAtReady"] = memory(runner.pid)
        run = first_run(args.base_url, args.prompt, args.timeout, t0)
        types = run["types"]
        assert isinstance(types, list)
        if isinstance(run["firstText"], float):
            report["firstTextSeconds"] = round(run["firstText"], 3)
            report["firstTextAfterReadySeconds"] = round(t0 + run["firstText"] - ready, 3)
        report.update(terminal=types[-1] if types else None, toolCalls=types.count("TOOL_CALL_START"))
        if run["error"]:
            report["error"] = run["error"]
        time.sleep(1.0)  # the run's clean-up (state save, the CLI's turn end) settles
        report["rssIdleAfterRun"] = memory(runner.pid)
        ok = (types[:1] == ["RUN_STARTED"] and types[-1:] == ["RUN_FINISHED"] and report["toolCalls"] >= 1
              and "firstTextSeconds" in report)
        for turn in range(1, args.turns):  # the rest of the conversation: plain answers and tool calls
            later = first_run(args.base_url, "NOTOOL say hello" if turn % 2 else args.prompt, args.timeout, t0,
                              message_id=f"m{turn + 1}")
            if later["types"][-1:] != ["RUN_FINISHED"]:
                ok = False
                report["error"] = f"turn {turn + 1}: {later['error'] or later['types'][-1:]}"
                break
        else:
            time.sleep(1.0)
            report["turns"] = args.turns
            report["rssIdleAfterTurns"] = memory(runner.pid)
    except (RuntimeError, OSError) as exc:
        report["error"] = str(exc)
    finally:
        report.update(stop_runner(runner))
        ok = ok and report["sigtermExit"] == 0
    report["ok"] = ok
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
