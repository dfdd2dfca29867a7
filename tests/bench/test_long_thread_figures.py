"""The long thread's runner-minus-bare figure (``bench/long_thread._figures``): the side that goes first alternates
turn by turn, and going second is worth several ms on a busy machine. A window's figure is the mean of the p50 of
each order, so that advantage cancels, where one p50 of both orders together lands in whichever group is larger."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from long_thread import _figures  # noqa: E402


def rows(turns: range, cost_ms: float, second_wins_ms: float, *, runner_first_on_odd: bool) -> list[dict[str, Any]]:
    """Turns where the runner costs ``cost_ms`` more than the bare CLI, and the side going second is ``second_wins_ms``
    faster than it would be going first."""
    out = []
    for turn in turns:
        runner_first = (turn % 2 == 1) == runner_first_on_odd
        bare = 0.020
        runner = bare + cost_ms / 1000 + (second_wins_ms / 1000 if runner_first else -second_wins_ms / 1000)
        out.append({"turn": turn, "done_s": runner, "bare_done_s": bare, "runner_first": runner_first, "cpu_ms": 5.0,
                    "rss_kib": 100_000, "kept_bytes": 10, "snapshot_bytes": 5, "spool_bytes": 1})
    return out


def test_the_order_a_turn_ran_in_cancels_out() -> None:
    # The long thread's last turns: 3 ms of the runner's own, the side going second 6 ms ahead. The window holds one
    # order more often than the other (its NOTOOL turns), as the bench's windows do.
    long = rows(range(1, 121), 3.0, 6.0, runner_first_on_odd=True)
    long[-60:] = [r for r in long[-60:] if r["turn"] % 2 == 1 or r["turn"] % 4 == 0]
    fresh = rows(range(1, 57), 3.0, 6.0, runner_first_on_odd=False)

    overhead = _figures(long, fresh)["overhead_ms"]

    assert abs(overhead["late"] - 3.0) < 1e-6 and abs(overhead["early"] - 3.0) < 1e-6
    assert abs(overhead["ratio"] - 1.0) < 1e-6
    low, high = overhead["ratio_interval95"]  # no noise: every redraw gives the same figure
    assert abs(low - 1.0) < 1e-6 and abs(high - 1.0) < 1e-6
    # one p50 of both orders lands in the larger group: 9 ms, three times the runner's cost
    assert abs(overhead["pooled"]["late"] - 9.0) < 1e-6


def test_a_cost_that_grows_with_the_thread_still_shows() -> None:
    long = rows(range(1, 61), 3.0, 6.0, runner_first_on_odd=True) + rows(range(61, 121), 6.0, 6.0,
                                                                           runner_first_on_odd=True)
    fresh = rows(range(1, 57), 3.0, 6.0, runner_first_on_odd=False)

    overhead = _figures(long, fresh)["overhead_ms"]

    assert abs(overhead["ratio"] - 2.0) < 1e-6


def test_a_noisy_window_says_how_far_its_ratio_can_be_trusted() -> None:
    draw = random.Random(7)
    long = rows(range(1, 121), 3.0, 0.0, runner_first_on_odd=True)
    fresh = rows(range(1, 57), 3.0, 0.0, runner_first_on_odd=False)
    for r in long + fresh:
        r["done_s"] += draw.gauss(0, 0.004)  # 4 ms of noise a turn against a 3 ms cost
        r["cpu_ms"] += draw.gauss(0, 0.2)

    figures = _figures(long, fresh)

    low, high = figures["overhead_ms"]["ratio_interval95"]
    assert low < figures["overhead_ms"]["ratio"] < high and high - low > 0.5
    cpu_low, cpu_high = figures["cpu_ms_per_turn"]["ratio_interval95"]
    assert cpu_low < 1.0 < cpu_high and cpu_high - cpu_low < 0.2
