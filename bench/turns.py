"""Turn latency per runner with its real CLI on the scripted model, next to the bare CLI run by hand.

Runner: ``python main.py`` (RUNNER_TYPE=each, RUNNER_SCRIPTED_MODEL=true); POST /run (one kept-alive connection)
-> first TEXT_MESSAGE_CONTENT and -> terminal event, for the first turn of a new thread and later turns on the same
thread; then the RSS of the runner and of the CLI processes it keeps (Gemini's live ``gemini --acp``, Codex's
app-server, Claude's CLI).
Bare: the same CLI binary with the same home/config/env the bridge prepares (``bridge.startup()`` in this
process starts the same scripted server), on the same prompt, spawn -> first text line and -> process exit:
  gemini-cli: ``gemini --prompt= --model M --output-format stream-json --approval-mode yolo`` (prompt on stdin),
              later turn ``--resume <session_id>``;
  claude:     ``claude -p PROMPT --output-format stream-json --verbose --include-partial-messages
              --permission-mode bypassPermissions``, later turn ``--resume <session_id>``;
  codex-sdk:  ``codex exec --json --skip-git-repo-check PROMPT``, later turn ``codex exec ... resume <thread_id>``
              (the bridge drives ``codex app-server`` through the SDK; ``exec`` is the bare headless path);
  acp-<agent>: none: an ACP agent (``RUNNER_TYPE=acp``, ``ACP_AGENT=<agent>``, each preset with an image;
              ``acp``: opencode) is measured against the persistent side only (no "bare").
Persistent (``persistent``): the bare CLI kept across turns as the runner keeps it, driven directly (``bench/bare.py``:
a minimal ACP client on ``gemini --acp`` and on each ACP preset's agent, the Codex app-server through its SDK,
``ClaudeSDKClient``), prompt sent ->
first text and -> end of the turn; ``overhead_ms`` is runner minus persistent (p50 and p95 of each, and of the
per-repetition differences): the runner's own cost per turn (HTTP, guard, event log, snapshot, model proxy, tracing).
Each kept-CLI turn starts once every process the bench started is idle (``common.settle``, ``settle_ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bare import persistent, runner_env, runner_of
from common import (
    PYTHON,
    REPO,
    RunClient,
    RunnerProcess,
    interval95,
    rss_kib,
    run_events,
    settle,
    settle_ms,
    smoke,
    summary,
    wait_status,
)

from ambient_runner.process.proc_stat import descendants
from ambient_runner.settings import ACP_IMAGE_AGENTS, RunnerSettings

PROMPT_1 = "NOTOOL say hello"
PROMPT_2 = "NOTOOL and once more"
# the runners, and the ACP runner once per preset (acp-<agent>; "acp" alone: opencode)
RUNNER_TYPES = ("gemini-cli", "codex-sdk", "claude", *(f"acp-{agent}" for agent in ACP_IMAGE_AGENTS))
HEADLESS = ("gemini-cli", "codex-sdk", "claude")  # the runners whose CLI has a headless mode to time by hand


# ----- through the runner ------------------------------------------------------------------------------------
def runner_turn(url: str, thread_id: str, prompt: str, client: RunClient | None = None) -> tuple[float, float]:
    """``client``: a kept-alive connection (as a platform's backend keeps one), else a new one for this turn."""
    body = {"threadId": thread_id, "messages": [{"role": "user", "content": prompt}]}
    first = None
    with contextlib.nullcontext(client) if client is not None else RunClient(url, timeout=120.0) as client:
        started = time.monotonic()
        for kind, _ in run_events(client, url, body):
            if kind == "TEXT_MESSAGE_CONTENT" and first is None:
                first = time.monotonic()
            if kind == "RUN_FINISHED":  # before the stream is closed
                end = time.monotonic()
    assert first is not None
    return first - started, end - started


# ----- the bare CLI ------------------------------------------------------------------------------------------
def bare_turn(argv: list[str], env: dict[str, str], cwd: Path, stdin: str | None, is_text: Any,
              session_key: str) -> tuple[float, float, str | None]:
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else
                            subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    first, session = None, None
    assert proc.stdout is not None
    lines = []
    for raw in proc.stdout:
        lines.append(raw)
        if first is None and is_text(raw):
            first = time.monotonic()
        if session is None and session_key.encode() in raw:
            session = json.loads(raw).get(session_key)
    code = proc.wait()
    end = time.monotonic()
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode(errors="replace")
    assert code == 0 and first is not None, (argv, code, stderr[-2000:], b"".join(lines[-5:]).decode(errors="replace"))
    return first - started, end - started, session


class BareCli:
    """The bridge's prepared home/env/scripted server, and the CLI's own headless command line.

    The bridge's servers (the scripted model, the model proxy the CLI's config points at) live in an event loop of
    their own, on a thread, for as long as this object: started in a loop that then ends, the proxy would stop
    answering and the bare CLI would wait for it forever."""

    def __init__(self, kind: str, root: Path) -> None:
        self.runner_type, agent = runner_of(kind)
        self.settings = RunnerSettings(runner_type=self.runner_type, workspace_path=root / "workspace",
                                       runner_state_root=root / "state", runner_scripted_model=True,
                                       acp_agent=agent or "opencode")
        self.settings.workspace_path.mkdir(parents=True, exist_ok=True)
        from ambient_runner.bridges.registry import create_bridge  # noqa: PLC0415

        # Only the CLI's home, settings and scripted server are needed here (no live ACP process for Gemini).
        self.bridge: Any = create_bridge(self.settings.model_copy(update={"gemini_transport": "stream-json"}))
        if self.runner_type == "acp":  # no live agent of the bridge's own: the persistent side starts one (bare.py)
            async def no_agent() -> None:
                return None

            self.bridge.prepare = no_agent
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bare-cli-servers", daemon=True)
        self.thread.start()
        self._call(self.bridge.startup())

    def _call(self, coroutine: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def persistent(self) -> Any:
        """The bare persistent CLI (``bench/bare.py``), started, in this object's loop; ``call(coro)`` runs there."""
        kept = persistent(self)
        self._call(kept.start())
        return kept

    def close(self) -> None:
        try:
            with contextlib.suppress(Exception):
                self._call(self.bridge.shutdown())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()

    def turn(self, prompt: str, session: str | None) -> tuple[float, float, str | None]:
        cwd = self.settings.workspace_path
        if self.runner_type == "gemini-cli":
            from ambient_runner.bridges.gemini_cli.bridge import DEFAULT_MODEL  # noqa: PLC0415
            from ambient_runner.bridges.gemini_cli.config import find_cli, turn_argv  # noqa: PLC0415

            argv = turn_argv(str(find_cli(self.settings.gemini_cli_path)), DEFAULT_MODEL, session)
            env = self.bridge._cli_environment()  # what the bridge gives its CLI (the model proxy's URL and key)
            return bare_turn(argv, env, cwd, prompt, lambda r: b'"role":"assistant"' in r, "session_id")
        if self.runner_type == "claude":
            from ambient_runner.bridges.claude.auth import through_proxy as claude_through_proxy  # noqa: PLC0415
            from ambient_runner.bridges.claude.config import claude_environment, find_cli  # noqa: PLC0415

            argv = [str(find_cli(self.settings)), "-p", prompt, "--output-format", "stream-json", "--verbose",
                    "--include-partial-messages", "--permission-mode", "bypassPermissions"]
            argv += ["--resume", session] if session else []
            auth = claude_through_proxy(self.bridge.auth, self.bridge.model_proxy)  # as the bridge's CLI gets it
            env = {k: v for k, v in claude_environment(self.settings, auth.env).items() if v}
            return bare_turn(argv, env, cwd, None, lambda r: b'"text_delta"' in r, "session_id")
        bridge = self.bridge
        _, env = bridge._configure()  # CODEX_HOME written as for the app-server, and the environment it gets
        if bridge.path_dir:
            env["PATH"] = f"{bridge.path_dir}:{env.get('PATH', '')}"
        argv = [str(bridge.codex_bin), "exec", "--json", "--skip-git-repo-check"]
        argv += ["resume", session, prompt] if session else [prompt]
        return bare_turn(argv, env, cwd, None, lambda r: b'"agent_message"' in r, "thread_id")


def side_by_side(kind: str, runs: int, later: int = 1, model_api: bool = True) -> dict[str, Any]:
    """Runner, bare headless CLI and bare persistent CLI turns interleaved, so all see the same machine: on a shared
    VM the noise drifts over a minute by more than the gap being measured. Each repetition: the headless CLI's two
    turns (a new process each, the heavy part), then a new thread with one first turn and ``later`` later turns on
    the runner and on the persistent CLI, turn by turn, the side going first swapping every turn (runner, bare,
    bare, runner, ...: half of each side's turns follow the other side's, caches as cold as a turn after a
    person's pause finds them, half its own); then one such thread on each side with its turns back to back
    (``*_warm``, ``overhead_warm_ms``: each turn after its own).
    ``model_api``: the runner's model is the bench's scripted server (the one the bare CLIs use), reached as a model
    API, not a scripted server in the runner's own process (whose work there is the test model's, not the
    runner's)."""
    # The scripted model keeps only its newest requests: kept all, every request of every turn (a Claude agent's
    # are ~50 KB of JSON, two a turn) stays in this process, whose full collections then grew to 10-23 ms within 100
    # turns, paused the scripted server and the bench's clients, and landed in whichever side's turn was running.
    os.environ["SCRIPTED_MODEL_KEEP_REQUESTS"] = "20"
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as root, \
            tempfile.TemporaryDirectory(prefix="bench-bare-") as bare_root:
        cli = BareCli(kind, Path(bare_root))
        env = runner_env(kind, root, cli.bridge.scripted_url if model_api else None)
        kept = None
        try:
            with RunnerProcess([PYTHON, str(REPO / "main.py")], env=env) as runner, \
                    RunClient(runner.url, timeout=120.0) as client:
                wait_status(f"{runner.url}/ready")
                kept = cli.persistent()
                runner_turn(runner.url, "warm-up", PROMPT_1, client)
                headless = kind in HEADLESS
                if headless:
                    cli.turn(PROMPT_1, None)
                cli._call(kept.turn(PROMPT_1, new=True))
                sides: dict[str, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = {
                    "runner": ([], []), "bare": ([], []), "persistent": ([], []), "runner_warm": ([], []),
                    "persistent_warm": ([], [])}

                waits: list[float] = []

                def by_hand() -> None:
                    a, b, session = cli.turn(PROMPT_1, None)
                    sides["bare"][0].append((a, b))
                    c, d, _ = cli.turn(PROMPT_2, session)
                    sides["bare"][1].append((c, d))

                def one_turn(side: str, thread: str, turn: int) -> None:
                    """Turn ``turn`` (0: the thread's first) of ``thread`` through the runner or on the persistent
                    CLI (``side``: runner / persistent, with ``_warm`` for back-to-back turns), recorded."""
                    prompt, index = (PROMPT_1, 0) if turn == 0 else (PROMPT_2, 1)
                    waits.append(settle())  # nothing else at work: the other side's CLI may still be finishing
                    sides[side][index].append(
                        runner_turn(runner.url, thread, prompt, client) if side.startswith("runner")
                        else cli._call(kept.turn(prompt, new=turn == 0)))

                def paired_threads(runner_leads: bool) -> None:
                    """A new thread on each side, turn by turn: the runner's turn and the persistent CLI's with the
                    same prompt, the one going first swapping every turn (neither side always follows the other)."""
                    thread = f"bench-{uuid.uuid4()}"
                    for turn in range(1 + later):
                        leads = (turn % 2 == 0) == runner_leads
                        for side in ("runner", "persistent") if leads else ("persistent", "runner"):
                            one_turn(side, thread, turn)

                def back_to_back(runner_leads: bool) -> None:
                    """A new thread on each side, one side's turns back to back, then the other's."""
                    for side in ("runner_warm", "persistent_warm") if runner_leads else (
                            "persistent_warm", "runner_warm"):
                        thread = f"bench-{uuid.uuid4()}"
                        for turn in range(1 + later):
                            one_turn(side, thread, turn)

                for rep in range(runs):
                    if headless:
                        by_hand()  # the headless CLI, a new process per turn: heavy, so before both kept sides alike
                    paired_threads(runner_leads=rep % 2 == 0)
                    back_to_back(runner_leads=rep % 2 == 1)
                memory = tree_rss_kib(runner.proc.pid)  # idle, after the turns: the runner and the CLI it keeps
        finally:
            if kept is not None:
                cli._call(kept.close())
            cli.close()
    out: dict[str, Any] = {side: _pack(first, later) for side, (first, later) in sides.items() if first}
    out["overhead_ms"] = _overhead(sides["runner"], sides["persistent"])
    out["overhead_warm_ms"] = _overhead(sides["runner_warm"], sides["persistent_warm"])
    return {**out, "memory_kib": memory, "settle_ms": settle_ms(waits)}


def _overhead(runner: tuple[list[tuple[float, float]], list[tuple[float, float]]],
              bare: tuple[list[tuple[float, float]], list[tuple[float, float]]]) -> dict[str, Any]:
    """Runner minus bare persistent CLI, in ms: the difference of the p50s and of the p95s, and the p50 of the
    differences of turns paired in the order they ran (same repetition, same place in the thread)."""
    out: dict[str, Any] = {}
    for index, turn in ((0, "first"), (1, "later")):
        for pos, what in ((0, "text"), (1, "done")):
            ours = [t[pos] * 1000 for t in runner[index]]
            theirs = [t[pos] * 1000 for t in bare[index]]
            pairs = list(zip(ours, theirs, strict=False))
            out[f"{turn}_{what}"] = {"p50": _p50_difference(ours, theirs),
                                     "p95": summary(ours)["p95"] - summary(theirs)["p95"],
                                     "paired_p50": _paired_p50(pairs)}
            if what == "done":  # how far this run's figure can be trusted (the report shows the interval)
                out[f"{turn}_{what}"] |= {"p50_interval95": interval95(_p50_difference, ours, theirs),
                                          "paired_p50_interval95": interval95(_paired_p50, pairs)}
    return out


def _p50_difference(ours: list[float], theirs: list[float]) -> float:
    return statistics.median(ours) - statistics.median(theirs)


def _paired_p50(pairs: list[tuple[float, float]]) -> float:
    return statistics.median(x - y for x, y in pairs)


def tree_rss_kib(pid: int) -> dict[str, int]:
    """VmRSS of the runner process and, summed, of every process below it (a CLI kept between turns)."""
    cli = 0
    for child in descendants(pid):
        try:
            cli += rss_kib(child.pid).get("VmRSS", 0)
        except OSError:
            continue
    return {"runner": rss_kib(pid)["VmRSS"], "cli": cli}


def _pack(first: list[tuple[float, float]], later: list[tuple[float, float]]) -> dict[str, Any]:
    return {"first_text_s": summary([a for a, _ in first]), "first_done_s": summary([b for _, b in first]),
            "later_text_s": summary([a for a, _ in later]), "later_done_s": summary([b for _, b in later])}


# The tiniest workload (``--smoke``): shows the script runs and prints its figures, which then mean nothing.
SMOKE = {"runs": 1}


def measure(runs: int = 5, runner_types: tuple[str, ...] = RUNNER_TYPES, later: int = 1) -> dict[str, Any]:
    return {t: side_by_side(t, runs, later) for t in runner_types}


if __name__ == "__main__":
    import sys

    from common import isolate_or_die

    isolate_or_die()
    # python bench/turns.py [RUNNER_TYPE...] [--runs N] [--later N] [--smoke]; e.g. python bench/turns.py acp --runs 2
    args = sys.argv[1:]

    def option(name: str, default: int) -> int:
        return int(args[args.index(name) + 1]) if name in args else default

    values = {args[args.index(name) + 1] for name in ("--runs", "--later") if name in args}
    kinds = tuple(a for a in args if not a.startswith("--") and a not in values) or RUNNER_TYPES
    unknown = set(kinds) - {*RUNNER_TYPES, "acp"}
    if unknown:
        raise SystemExit(f"turns: unknown runner {sorted(unknown)}: one of {', '.join(RUNNER_TYPES)}")
    out = measure(**SMOKE, runner_types=kinds) if smoke() else measure(option("--runs", 5), kinds,
                                                                       later=option("--later", 10))
    raw = ("memory_kib", "overhead_ms", "overhead_warm_ms", "settle_ms")
    print(json.dumps({t: {side: {k: round(v["p50"], 4) for k, v in d.items()} if side not in raw else d
                          for side, d in r.items()} for t, r in out.items()}, indent=1))
