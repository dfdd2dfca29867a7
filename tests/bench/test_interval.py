"""``bench/common.interval95``: the 95 % bootstrap interval the report shows beside a noisy figure (a runner-minus-bare
difference of a few ms, the long thread's ratio), so a reader sees how far one run's figure can be trusted."""

from __future__ import annotations

import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from common import interval95  # noqa: E402


def median_difference(a: list[float], b: list[float]) -> float:
    return statistics.median(a) - statistics.median(b)


def test_values_that_do_not_vary_give_the_figure_itself() -> None:
    assert interval95(median_difference, [7.0] * 30, [4.0] * 30) == (3.0, 3.0)


def test_the_interval_holds_the_figure_and_widens_with_the_noise() -> None:
    draw = random.Random(1)
    quiet = [10 + draw.gauss(0, 1) for _ in range(50)], [7 + draw.gauss(0, 1) for _ in range(50)]
    noisy = [10 + draw.gauss(0, 6) for _ in range(50)], [7 + draw.gauss(0, 6) for _ in range(50)]

    low, high = interval95(median_difference, *quiet)
    assert low <= median_difference(*quiet) <= high and 2.0 < low < high < 4.0
    wide_low, wide_high = interval95(median_difference, *noisy)
    assert wide_high - wide_low > 3 * (high - low)
    assert interval95(median_difference, *noisy) == (wide_low, wide_high)  # seeded: the same rows, the same interval


def test_a_ratio_whose_base_can_reach_zero_is_unbounded_above() -> None:
    def ratio(late: list[float], early: list[float]) -> float | None:
        base = statistics.mean(early)
        return statistics.mean(late) / base if base > 0 else None

    low, high = interval95(ratio, [5.0] * 20, [1.0] * 19 + [-10.0])
    assert low > 0 and high == math.inf


def test_too_few_values_or_no_figure_give_no_interval() -> None:
    assert interval95(median_difference, [1.0, 2.0], [1.0] * 30) is None
    assert interval95(lambda a: None, [1.0] * 30) is None
