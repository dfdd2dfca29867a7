"""One long thread per runner: N turns (500 in ``make bench``) through the runner and, interleaved turn by turn, on
the bare persistent CLI (``bench/bare.py``) with the same prompts, so both sides have the same history at each turn.

Every tenth turn asks for a tool call (the scripted model runs its shell command), the others are ``NOTOOL``. Per
turn: the runner's and the bare CLI's time to the end of the turn, their difference (the runner's own cost on that
history), the runner's RSS, the size of the run's ``MESSAGES_SNAPSHOT`` (the whole thread, as the contract asks), the
bytes of the thread's event spool on disk, and the bytes the platform's backend keeps of the run after it compacts
its log (``RUN_*``, ``MESSAGES_SNAPSHOT``, ``STATE_SNAPSHOT``, ``STEP_*``, ``RAW``, ``CUSTOM``, ``META``,
``ACTIVITY_SNAPSHOT`` and ``AskUserQuestion`` starts: the platform's ``components/backend/websocket/agui_store.go``),
summed over the runs. The thread's last ``INTERLEAVED`` turns take turns with the first ones of a new thread (on both
sides, both threads on one bare CLI held as the runner holds them), so "the runner's cost at turn 500 against turn 2"
compares windows measured at the same time. The side that goes first alternates turn by turn, and on this machine the
side that goes second is favoured by up to ~12 ms (Claude); a window's runner-minus-bare figure is the mean of the p50
of each order, which cancels that advantage, where one p50 of both orders together lands in one group or the other
(``pooled``, kept beside it); the runner's CPU per turn is what its process's threads used from that turn's start to
the next runner turn's (``schedstat``, in ns). Before each turn the bench waits until every process it started is
idle (``common.settle``), so no turn shares the two cores with the other side's CLI finishing its last one.
Snapshot build time: the thread's events (``GET /events``) fed, run by run, into the runner's own ``Conversation``,
timing its wire JSON (``snapshot_json()``, redacted) at each run's end (the same code on the same events, in this
process).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from bare import runner_env
from common import (
    PYTHON,
    REPO,
    RunClient,
    RunnerProcess,
    cpu_ns,
    event_type,
    interval95,
    rss_kib,
    run_events,
    settle,
    settle_ms,
    smoke,
    summary,
    wait_status,
)
from turns import BareCli

KEPT = {"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "STEP_STARTED",
        "STEP_FINISHED", "RAW", "CUSTOM", "META", "ACTIVITY_SNAPSHOT"}
WINDOW = 50  # NOTOOL turns per window when comparing the start of the thread with its end (the machine is noisy)
TOOL_EVERY = 10
INTERLEAVED = 56  # the long thread's last turns, each beside a new thread's turn: 50 NOTOOL ones from turn 2


def prompt(turn: int) -> str:
    return f"turn {turn}: run the command" if turn % TOOL_EVERY == 0 else f"NOTOOL turn {turn}"


def runner_turn(client: RunClient, url: str, thread_id: str, turn: int) -> dict[str, Any]:
    body = {"threadId": thread_id, "runId": f"run-{turn}",
            "messages": [{"id": f"user-{turn}", "role": "user", "content": prompt(turn)}]}
    lines: list[tuple[str, str]] = []  # sized once the clock has stopped (a snapshot's copies are the bench's time)
    started = time.monotonic()
    for kind, line in run_events(client, url, body):
        lines.append((kind, line))
        if kind == "RUN_FINISHED":
            done = time.monotonic() - started
    kept = snapshot = 0
    for kind, line in lines:
        if kind == "MESSAGES_SNAPSHOT":
            snapshot = len(line[5:].strip().encode())
        if kind in KEPT or (kind == "TOOL_CALL_START" and "askuserquestion" in line.lower()):
            kept += len(line[5:].strip().encode()) + 1
    return {"done_s": done, "snapshot_bytes": snapshot, "kept_bytes": kept}


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (its threads', not its children's), in s: its own work, whatever the load."""
    return cpu_ns([pid]) / 1e9


def spool_bytes(events_dir: Path) -> int:
    return sum(p.stat().st_size for p in events_dir.glob("*") if p.is_file())


def snapshot_build_ms(events: list[dict[str, Any]]) -> list[float]:
    """The thread's events fed into a ``Conversation`` as the runner feeds them; at each run's end, the time of
    ``snapshot()`` and its wire encoding (ms)."""
    from ag_ui.core import EventType, RunAgentInput, UserMessage  # noqa: PLC0415

    from ambient_runner.stream.conversation import Conversation  # noqa: PLC0415
    from ambient_runner.stream.encoding import Redactor  # noqa: PLC0415

    conversation, redactor = Conversation(), Redactor()
    times: list[float] = []
    turn = 0
    for data in events:
        kind = data["type"]
        if kind == "RUN_STARTED":
            turn += 1
            run_input = RunAgentInput(thread_id="t", run_id=f"run-{turn}", state={}, tools=[], context=[],
                                      forwarded_props={}, messages=[UserMessage(id=f"user-{turn}", role="user",
                                                                                content=prompt(turn))])
            conversation.add_input(run_input)
        elif kind == "MESSAGES_SNAPSHOT":  # as the runner writes it (``RunManager._emit_snapshot``)
            started = time.perf_counter()
            conversation.snapshot_json(redactor)
            times.append((time.perf_counter() - started) * 1000)
        elif kind not in KEPT:
            event = _event(EventType(kind), data)
            if event is not None:
                conversation.add_event(event)
    return times


def _event(kind: Any, data: dict[str, Any]) -> Any:
    from ag_ui.core import events  # noqa: PLC0415

    name = "".join(part.title() for part in kind.value.lower().split("_")) + "Event"
    cls = getattr(events, name, None)
    return cls.model_validate(data) if cls is not None else None


def all_events(client: httpx.Client, url: str, thread_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with client.stream("GET", f"{url}/events/{thread_id}", params={"after": 0}) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):  # a snapshot's messages are not needed (nor kept: they add up)
                kind = event_type(line)
                out.append({"type": kind} if kind == "MESSAGES_SNAPSHOT" else json.loads(line[5:]))
    return out


def long_thread(runner_type: str, turns: int) -> dict[str, Any]:
    """Turns 1..``turns`` of one thread, its last ``INTERLEAVED`` turns taking turns with the first ones of a new
    thread (both sides), so the end of the long thread and the start of a short one are measured on the same machine
    at the same time: this shared VM's speed drifts over the minutes a long thread takes by more than the runner's
    cost changes with history."""
    # The scripted model keeps only its newest requests (it would keep every one, each with the whole history:
    # hundreds of MiB in the runner's process by turn 500, which is the test model's, not the runner's).
    os.environ["SCRIPTED_MODEL_KEEP_REQUESTS"] = "20"
    with tempfile.TemporaryDirectory(prefix="bench-long-") as root, \
            tempfile.TemporaryDirectory(prefix="bench-long-bare-") as bare_root:
        events_dir = Path(root, "events")
        rows: list[dict[str, Any]] = []
        fresh_rows: list[dict[str, Any]] = []  # the new thread's turns, beside the long thread's last ones
        cli = BareCli(runner_type, Path(bare_root))
        env = runner_env(runner_type, root, cli.bridge.scripted_url)  # the bare CLI's scripted server, as a model API
        bare: Any = None  # the bare persistent CLI, both threads on it
        try:
            with RunnerProcess([PYTHON, str(REPO / "main.py")], env=env) as runner, \
                    RunClient(runner.url) as client, \
                    httpx.Client(timeout=httpx.Timeout(10.0, read=300.0), trust_env=False) as reader:
                wait_status(f"{runner.url}/ready")
                # Both threads on one bare CLI, held as the runner holds them (``bare``: Gemini's sessions in one
                # ACP process, Codex's threads in one app-server, a Claude Code process each). A second process for
                # the new thread would run its first turns cold at the end of the bench while the runner's CLI is
                # warm, and the new thread's side-by-side figure, the ratio's base, would not be like for like.
                bare = cli.persistent()

                order: list[dict[str, Any]] = []  # every runner turn in the order they ran
                waits: list[float] = []  # before each turn, until the machine is idle (``common.settle``)

                def both_sides(thread: str, turn: int, runner_first: bool) -> dict[str, Any]:
                    """One turn through the runner and on the bare CLI (``cpu_at``: the runner's CPU time as its
                    turn started; a turn's CPU is what it used until the next runner turn starts)."""
                    if not runner_first:
                        waits.append(settle())
                        bare_times = cli._call(bare.turn(prompt(turn), new=turn == 1, thread=thread), timeout=600)
                    waits.append(settle())
                    cpu_at = cpu_seconds(runner.proc.pid)
                    row = runner_turn(client, runner.url, thread, turn)
                    if runner_first:
                        waits.append(settle())
                        bare_times = cli._call(bare.turn(prompt(turn), new=turn == 1, thread=thread), timeout=600)
                    order.append(row := row | {"turn": turn, "bare_done_s": bare_times[1], "cpu_at": cpu_at,
                                               "runner_first": runner_first})
                    return row

                interleaved_from = turns - min(INTERLEAVED, turns - 1) + 1
                for turn in range(1, turns + 1):
                    row = both_sides("long-thread", turn, runner_first=turn % 2 == 1)
                    row |= {"rss_kib": rss_kib(runner.proc.pid)["VmRSS"], "spool_bytes": spool_bytes(events_dir)}
                    rows.append(row)
                    if turn >= interleaved_from:
                        fresh = turn - interleaved_from + 1
                        fresh_rows.append(both_sides("new-thread", fresh, runner_first=turn % 2 == 0))
                ends = [r["cpu_at"] for r in order[1:]] + [cpu_seconds(runner.proc.pid)]
                for r, end in zip(order, ends, strict=True):
                    r["cpu_ms"] = (end - r.pop("cpu_at")) * 1000
                events = all_events(reader, runner.url, "long-thread")
        finally:
            if bare is not None:
                cli._call(bare.close())
            cli.close()
    build = snapshot_build_ms(events)
    for row, ms in zip(rows, build, strict=False):
        row["snapshot_build_ms"] = ms
    return _figures(rows, fresh_rows) | {"settle_ms": settle_ms(waits)}


def _figures(rows: list[dict[str, Any]], fresh_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-turn rows; the long thread's last turns (``late``) against a new thread's first ones (``early``, from
    its turn 2) measured interleaved with them, each a window of up to ``WINDOW`` NOTOOL turns (a tool turn costs
    more on both sides); and the long thread's own first turns (``start``, measured minutes earlier)."""
    def plain(window_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in window_rows if r["turn"] % TOOL_EVERY and r["turn"] >= 2]

    early, late, start = plain(fresh_rows)[:WINDOW], plain(rows)[-WINDOW:], plain(rows)[:WINDOW]

    def p50(window: list[dict[str, Any]], key: Any) -> float:
        return summary([key(r) for r in window])["p50"] if window else 0.0

    def over(r: dict[str, Any]) -> float:
        return (r["done_s"] - r["bare_done_s"]) * 1000

    def over_p50(window: list[dict[str, Any]]) -> float:
        """Runner minus bare: the p50 of the turns where the runner went first and of those where the bare CLI did,
        averaged (an order's advantage cancels)."""
        orders = [[r for r in window if r["runner_first"] is first] for first in (True, False)]
        p50s = [p50(rows_in_order, over) for rows_in_order in orders if rows_in_order]
        return sum(p50s) / len(p50s) if p50s else 0.0

    def cpu(window: list[dict[str, Any]]) -> float:  # the runner's CPU per turn, tool turns included
        return sum(r["cpu_ms"] for r in window) / len(window) if window else 0.0

    def ratio(late_value: float, early_value: float) -> float | None:
        return late_value / early_value if early_value > 0 else None

    def by_order(window: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        return [[r for r in window if r["runner_first"] is first] for first in (True, False)]

    def over_ratio(late_runner_first: list[dict[str, Any]], late_bare_first: list[dict[str, Any]],
                   early_runner_first: list[dict[str, Any]], early_bare_first: list[dict[str, Any]]) -> float | None:
        return ratio(over_p50(late_runner_first + late_bare_first), over_p50(early_runner_first + early_bare_first))

    early_over, late_over = over_p50(early), over_p50(late)
    pooled_early, pooled_late = p50(early, over), p50(late, over)
    tail = rows[-len(fresh_rows):] if fresh_rows else []
    fresh_cpu_rows = [r for r in fresh_rows if r["turn"] >= 2]
    early_cpu, late_cpu = cpu(fresh_cpu_rows), cpu(tail)
    rss = [r["rss_kib"] for r in rows]
    base = rss[min(49, len(rss) - 1)]
    stored = 0
    for r in rows:
        stored += r["kept_bytes"]
        r["stored_bytes"] = stored
    return {
        "turns": len(rows),
        "interleaved_turns": len(fresh_rows),
        "cpu_ms_per_turn": {"early": early_cpu, "late": late_cpu, "ratio": ratio(late_cpu, early_cpu),
                            "ratio_interval95": interval95(lambda a, b: ratio(cpu(a), cpu(b)), tail, fresh_cpu_rows),
                            "start": cpu([r for r in rows[1:len(fresh_rows) + 1]])},
        "overhead_ms": {"early": early_over, "late": late_over, "ratio": ratio(late_over, early_over),
                        "ratio_interval95": interval95(over_ratio, *by_order(late), *by_order(early)),
                        "start": over_p50(start),
                        "pooled": {"early": pooled_early, "late": pooled_late,
                                   "ratio": ratio(pooled_late, pooled_early)}},
        "runner_done_ms": {"early": p50(early, lambda r: r["done_s"] * 1000),
                           "late": p50(late, lambda r: r["done_s"] * 1000),
                           "start": p50(start, lambda r: r["done_s"] * 1000)},
        "bare_done_ms": {"early": p50(early, lambda r: r["bare_done_s"] * 1000),
                         "late": p50(late, lambda r: r["bare_done_s"] * 1000),
                         "start": p50(start, lambda r: r["bare_done_s"] * 1000)},
        "rss_kib": {"after_50": base, "last": rss[-1], "max": max(rss), "growth": max(rss[50:] or rss) / base - 1},
        "snapshot": {"last_bytes": rows[-1]["snapshot_bytes"],
                     "build_ms_early": p50(start, lambda r: r.get("snapshot_build_ms", 0.0)),
                     "build_ms_late": p50(late, lambda r: r.get("snapshot_build_ms", 0.0))},
        "spool_bytes": rows[-1]["spool_bytes"],
        "stored_bytes": stored,
        "rows": rows,
        "fresh_rows": fresh_rows,
    }


SMOKE = {"turns": 3}


def measure(turns: int = 500, runner_types: tuple[str, ...] = ("gemini-cli", "codex-sdk", "claude")) -> dict[str, Any]:
    return {t: long_thread(t, turns) for t in runner_types}


if __name__ == "__main__":
    import sys

    from common import isolate_or_die

    isolate_or_die()
    kinds = tuple(a for a in sys.argv[1:] if not a.startswith("-") and not a.isdigit()) or (
        "gemini-cli", "codex-sdk", "claude")
    count = next((int(a) for a in sys.argv[1:] if a.isdigit()), 500)
    out = measure(**SMOKE, runner_types=kinds) if smoke() else measure(count, kinds)
    per_turn = ("rows", "fresh_rows")
    print(json.dumps({t: {k: v for k, v in r.items() if k not in per_turn} for t, r in out.items()}, indent=1))
