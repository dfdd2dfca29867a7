"""The pod's memory per runner: ``python main.py`` (RUNNER_TYPE=each, RUNNER_SCRIPTED_MODEL=true), the runner
process alone and the CLI it keeps (every process below it, summed), at ``/ready``, idle after one run, idle
after a 20-turn conversation on one thread, and idle with 4, 8 and 20 threads that have had a run (memory against
the number of threads); a fresh process per sample.

The turns alternate a shell tool call (the scripted model's default) and a plain answer (``NOTOOL``), so the
conversation grows as a real one does. The scripted model server runs as threads inside the runner process: its
share (a small ``http.server``, no extra packages) is in the runner's figure. "Idle" is read once the run's
clean-up has settled (the RSS of the whole tree unchanged over ``SETTLE_STEP``, at most ``SETTLE_MAX``).

``--repo DIR`` measures another checkout's ``main.py`` (before/after comparisons with the same client)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from common import PYTHON, REPO, RunnerProcess, rss_kib, run_events, summary, wait_status

from ambient_runner.process.proc_stat import descendants

RUNNER_TYPES = ("gemini-cli", "codex-sdk", "claude")
TURNS = 20
THREADS = (4, 8, 20)  # threads with a run each, at which the tree is read again
TOOL_PROMPT = "Create hello.txt with hello in it."
PLAIN_PROMPT = "NOTOOL say hello"
SETTLE_STEP = 0.25  # s between two reads of an idle tree
SETTLE_MAX = 3.0


def tree_kib(pid: int) -> dict[str, int]:
    """VmRSS of the runner process and, summed, of every process below it (the CLI it keeps), in KiB."""
    cli = 0
    for child in descendants(pid):
        try:
            cli += rss_kib(child.pid).get("VmRSS", 0)
        except OSError:  # gone in between
            continue
    return {"runner": rss_kib(pid)["VmRSS"], "cli": cli}


def settled_kib(pid: int) -> dict[str, int]:
    """The tree's RSS once it stops changing (a run's state save, the CLI's turn end), bounded by SETTLE_MAX."""
    deadline = time.monotonic() + SETTLE_MAX
    last = tree_kib(pid)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_STEP)
        now = tree_kib(pid)
        if abs(now["runner"] - last["runner"]) < 256 and abs(now["cli"] - last["cli"]) < 1024:
            return now
        last = now
    return last


def run_turn(url: str, thread_id: str, prompt: str) -> None:
    body = {"threadId": thread_id, "messages": [{"role": "user", "content": prompt}]}
    with httpx.Client(timeout=httpx.Timeout(10.0, read=120.0), trust_env=False) as client:
        for _ in run_events(client, url, body):
            pass


def sample(runner_type: str, repo: Path = REPO, turns: int = TURNS,
           threads: tuple[int, ...] = THREADS) -> dict[str, dict[str, int]]:
    """One fresh runner: its tree's RSS at /ready, idle after the first run, idle after ``turns`` runs, then idle
    with each number of ``threads`` that have had a run (Claude keeps a CLI per thread, at most
    RUNNER_MAX_LIVE_CLIS of them; Gemini and Codex one for all)."""
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as root:
        Path(root, "workspace").mkdir()
        env = {"RUNNER_TYPE": runner_type, "RUNNER_SCRIPTED_MODEL": "true", "WORKSPACE_PATH": f"{root}/workspace",
               "RUNNER_STATE_ROOT": f"{root}/state", "RUNNER_EVENTS_DIR": f"{root}/events"}
        with RunnerProcess([PYTHON, str(repo / "main.py")], env=env, cwd=repo) as runner:
            wait_status(f"{runner.url}/ready", timeout=60)
            assert runner.proc is not None
            out = {"ready": tree_kib(runner.proc.pid)}
            for turn in range(turns):
                run_turn(runner.url, "bench-memory", TOOL_PROMPT if turn % 2 == 0 else PLAIN_PROMPT)
                if turn == 0:
                    out["after_1"] = settled_kib(runner.proc.pid)
            out[f"after_{turns}"] = settled_kib(runner.proc.pid)
            for index in range(1, max(threads, default=0)):  # the conversation above is thread 1
                run_turn(runner.url, f"bench-memory-{index}", PLAIN_PROMPT)
                if index + 1 in threads:
                    out[f"threads_{index + 1}"] = settled_kib(runner.proc.pid)
    return out


def pack(samples: list[dict[str, dict[str, int]]]) -> dict[str, Any]:
    """Per moment: the runner's, the CLI's and the pod's (their sum) RSS, each a summary in KiB."""
    return {moment: {"runner": summary([s[moment]["runner"] for s in samples]),
                     "cli": summary([s[moment]["cli"] for s in samples]),
                     "pod": summary([s[moment]["runner"] + s[moment]["cli"] for s in samples])}
            for moment in samples[0]}


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"runs": 1, "turns": 2, "threads": (2,)}


def measure(runs: int = 3, turns: int = TURNS, runner_types: tuple[str, ...] = RUNNER_TYPES,
            repo: Path = REPO, threads: tuple[int, ...] = THREADS) -> dict[str, Any]:
    """``runs`` fresh runners per runner type, the types taking turns (a shared machine drifts)."""
    samples: dict[str, list[dict[str, dict[str, int]]]] = {t: [] for t in runner_types}
    for _ in range(runs):
        for runner_type in runner_types:
            samples[runner_type].append(sample(runner_type, repo, turns, threads))
    return {t: {"turns": turns, **pack(s)} for t, s in samples.items()}


def mib_table(results: dict[str, Any]) -> str:
    lines = []
    for kind, moments in results.items():
        for moment, parts in moments.items():
            if moment == "turns":
                continue
            lines.append(f"{kind:11} {moment:9} " + "  ".join(
                f"{part} {parts[part]['p50'] / 1024:6.1f} [{parts[part]['min'] / 1024:.1f}-"
                f"{parts[part]['max'] / 1024:.1f}]" for part in ("runner", "cli", "pod")))
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    from common import isolate_or_die, smoke

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="*", default=list(RUNNER_TYPES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--table", action="store_true", help="MiB per moment and part instead of the JSON")
    args = parser.parse_args()
    isolate_or_die()
    out = (measure(**SMOKE, runner_types=tuple(args.kinds), repo=args.repo.resolve()) if smoke()
           else measure(args.runs, runner_types=tuple(args.kinds), repo=args.repo.resolve()))
    print(mib_table(out) if args.table else json.dumps(out))
