"""95% bootstrap intervals: reproducible on their fixed seed, and as wide as the data says."""

from __future__ import annotations

import math
import statistics

import pytest

from reasonloop.eval.intervals import SEED, bootstrap_interval, paired_difference


def _values(n: int) -> list[float]:
    # a fixed, irregular sample: 0/100 outcomes with a 40% hit rate
    return [100.0 if (i * 7) % 10 < 4 else 0.0 for i in range(n)]


def test_the_same_values_give_the_same_interval_and_another_seed_another() -> None:
    values = _values(50)
    first, again = bootstrap_interval(values), bootstrap_interval(values)
    assert first == again
    assert bootstrap_interval(values, seed=SEED + 1) != first
    assert first.mean == pytest.approx(40.0) and first.n == 50
    assert first.low < first.mean < first.high


def test_the_interval_matches_the_normal_approximation_on_a_large_sample() -> None:
    # for a mean over 400 values the bootstrap interval is close to mean ± 1.96 s / sqrt(n)
    values = _values(400)
    half = 1.96 * statistics.pstdev(values) / math.sqrt(len(values))
    iv = bootstrap_interval(values)
    assert iv.low == pytest.approx(40.0 - half, abs=0.6)
    assert iv.high == pytest.approx(40.0 + half, abs=0.6)


def test_fewer_questions_give_a_wider_interval() -> None:
    small, large = bootstrap_interval(_values(20)), bootstrap_interval(_values(400))
    assert small.high - small.low > 2 * (large.high - large.low)


def test_constant_values_single_values_and_no_values() -> None:
    assert bootstrap_interval([3.0] * 10).to_dict() == {"mean": 3.0, "low": 3.0, "high": 3.0, "n": 10}
    one = bootstrap_interval([7.0])
    assert (one.low, one.high) == (7.0, 7.0)
    empty = bootstrap_interval([])
    assert empty.n == 0 and math.isnan(empty.mean) and not empty.significant


def test_a_paired_difference_cancels_what_both_share() -> None:
    a = _values(30)
    # the same questions, one more of them right: the difference is small but certain in sign
    b = list(a)
    b[a.index(0.0)] = 100.0
    same = paired_difference(a, a)
    assert (same.mean, same.low, same.high, same.significant) == (0.0, 0.0, 0.0, False)
    shifted = paired_difference(a, [v + 2.0 for v in a])
    assert shifted.mean == pytest.approx(2.0) and shifted.significant  # every question moved by +2
    one_more = paired_difference(a, b)
    assert one_more.mean == pytest.approx(100 / 30)
    assert one_more.low == 0.0 and not one_more.significant  # one question in 30 is not evidence


def test_paired_values_must_pair() -> None:
    with pytest.raises(ValueError, match="differ in number: 2 and 3"):
        paired_difference([1, 2], [1, 2, 3])
