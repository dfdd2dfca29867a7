"""Every benchmark script under bench/ runs, on its tiniest workload (``--smoke``), and prints its figures.

The benchmarks are not tests and nothing else runs them between two ``make bench``: this keeps them from rotting
(``bench/turns.py`` once hung on Codex and failed on Claude unnoticed). The figures of a smoke run mean nothing;
only that each one is there and is a real measurement (a finite number above zero where it is a time or a rate).
The scripts run in the loopback-only network namespace the test session lives in; the turn, start-up and tracing
benchmarks start the real CLIs on the scripted model.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ambient_runner.settings import ACP_IMAGE_AGENTS

pytestmark = [pytest.mark.slow, pytest.mark.real_cli, pytest.mark.usefixtures("isolated_network")]

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
RUNNERS = ["gemini-cli", "codex-sdk", "claude"]
# What each script prints (a JSON object): the keys that must be there.
FIGURES: dict[str, set[str]] = {
    "adapters.py": {"ag_ui_gemini_cli", "ag_ui_codex_sdk", "ag_ui_claude"},
    "adapter_ratios.py": {"reference", "gemini", "claude", "acp"},
    "relay.py": {"relay_ms", "relay_ms_per_run", "throughput", "throughput_wall", "memory_kib"},
    "model_proxy.py": {"ttfb_ms", "response_ms", "stream_mb_s", "stream_chunks"},
    "startup.py": set(RUNNERS),
    "memory.py": set(RUNNERS),
    "tracing.py": {"throughput", "first_text_s", "spans_exported"},
    "turns.py": {*RUNNERS, *(f"acp-{agent}" for agent in ACP_IMAGE_AGENTS)},  # the ACP runner per preset
    "long_thread.py": set(RUNNERS),
}
# The reference runner's folder (bench/adapter_ratios.py), when this machine has it: its part then runs too.
REFERENCE = os.environ.get("AMBIENT_REFERENCE_RUNNER") or None
DRIVER = "run.py"  # make bench: every benchmark, then the page
# the fake CLI and the server the relay benchmarks start; compare.py runs memory.py and startup.py against a second
# checkout (before/after), which a smoke run has not got
NOT_BENCHMARKS = {"serve_flood.py", "flood_cli.py", "compare.py"}


def run_script(*argv: str, timeout: float = 600) -> str:
    done = subprocess.run([sys.executable, *argv, "--smoke"], cwd=BENCH, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


SIGNED = {"overhead_ms", "overhead_warm_ms"}  # differences (runner minus bare CLI): any sign


def numbers(value: Any) -> list[float]:
    """Every number in a JSON value (but differences)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for k, v in value.items() if k not in SIGNED for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return []


def test_every_benchmark_script_is_covered() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if '__name__ == "__main__"' in p.read_text()}
    assert scripts - NOT_BENCHMARKS == set(FIGURES) | {DRIVER}


@pytest.mark.parametrize("script", sorted(FIGURES))
def test_a_benchmark_prints_its_figures(script: str) -> None:
    figures = json.loads(run_script(script))
    assert set(figures) >= FIGURES[script], figures
    measured = numbers(figures)
    assert measured and all(math.isfinite(n) and n >= 0 for n in measured), figures
    if script == "turns.py":  # a time for each side of each runner: the runner's, the bare CLI's, kept or not
        for runner in RUNNERS:
            for side in ("runner", "bare", "persistent"):
                assert set(figures[runner][side]) == {"first_text_s", "first_done_s", "later_text_s", "later_done_s"}
                assert all(0 < t < 120 for t in figures[runner][side].values()), figures[runner]
        # the ACP runner, each preset, beside its bare agent driven over ACP; an ACP agent has no headless mode
        acp = [f"acp-{agent}" for agent in ACP_IMAGE_AGENTS]
        for preset in acp:
            assert "bare" not in figures[preset] and set(figures[preset]["overhead_ms"]) == set(figures[RUNNERS[0]][
                "overhead_ms"])
        for runner in (*RUNNERS, *acp):
            for side in ("runner", "persistent"):
                assert set(figures[runner][side]) == {"first_text_s", "first_done_s", "later_text_s", "later_done_s"}
                assert all(0 < t < 120 for t in figures[runner][side].values()), figures[runner]
            for overhead in figures[runner]["overhead_ms"].values():  # a difference, and the interval around it
                for name, value in overhead.items():
                    if name.endswith("interval95"):  # none from a smoke run's few turns, else low <= high
                        assert value is None or (len(value) == 2 and value[0] <= value[1]), overhead
                    else:
                        assert math.isfinite(value), overhead
    if script == "long_thread.py":  # each turn measured on both sides; what the thread left on disk and in the log
        for runner in RUNNERS:
            thread = figures[runner]
            assert thread["turns"] == 3 and thread["runner_done_ms"]["late"] > 0 and thread["bare_done_ms"]["late"] > 0
            # its last turns beside a new thread's first ones: both windows measured, the runner's CPU for each (in
            # clock ticks: a single turn may count none)
            assert thread["interleaved_turns"] == 2 and thread["runner_done_ms"]["early"] > 0
            assert {"early", "late", "start"} <= set(thread["cpu_ms_per_turn"])
            # (the spool is written through a buffer: a 3-turn thread may not have reached the disk yet)
            assert thread["snapshot"]["last_bytes"] > 0 and thread["stored_bytes"] > thread["snapshot"]["last_bytes"]
    if script == "tracing.py":
        assert figures["spans_exported"] > 0
    if script == "memory.py":  # the runner at /ready; the runner and the CLI it keeps after the first and last turn,
        for runner in RUNNERS:  # and with (the smoke's) 2 threads that had a run
            moments = figures[runner]
            assert set(moments) == {"turns", "ready", "after_1", f"after_{moments['turns']}", "threads_2"}, moments
            assert moments["ready"]["runner"]["p50"] > 0
            for moment in ("after_1", f"after_{moments['turns']}", "threads_2"):
                assert moments[moment]["cli"]["p50"] > 0, (runner, moment, moments[moment])
    if script == "adapter_ratios.py":  # the reference's side runs whenever the reference is there
        for kind in ("gemini", "claude"):
            sides = set(figures[kind]["lines_per_s"])
            if REFERENCE is None:
                assert sides == {"ours"} and figures[kind]["wall_ratio"] == "reference not available"
            else:
                assert sides == {"ours", "reference"} and figures[kind]["wall_ratio"] > 0, figures[kind]
                # the same stream gave both sides the same run: text, tool calls, results
                assert figures[kind]["output"]["reference"]["events"] > 0


def test_make_bench_writes_its_page(tmp_path: Path) -> None:
    out = run_script(DRIVER, "--out", str(tmp_path), timeout=1200)
    assert f"bench: wrote {tmp_path / 'benchmarks.md'}" in out
    page = (tmp_path / "benchmarks.md").read_text()
    assert page.startswith("# Benchmarks") and "| measure |" in page  # the table of figures
    results = json.loads((tmp_path / "benchmarks" / "results.json").read_text())
    assert {"adapters", "adapter_ratios", "relay", "model_proxy", "startup", "memory", "tracing", "turns",
            "long_thread"} <= set(results)
