"""How sure a mean is: 95% bootstrap confidence intervals, alone and for paired differences.

A mean over 100 questions moves by several points when other questions are drawn: an interval
says how much. :func:`bootstrap_interval` resamples the per-question values with replacement
(:data:`RESAMPLES` times, with a fixed seed, so the same values always give the same interval)
and takes the 2.5th and 97.5th percentiles of the resampled means (the percentile bootstrap).

Two strategies answered the same questions, so they are compared *paired*:
:func:`paired_difference` bootstraps the mean of the per-question differences ``b - a``. The
difference is *significant* when its interval does not hold 0; a difference of 2 F1 points over
100 questions usually is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LEVEL", "RESAMPLES", "SEED", "Interval", "bootstrap_interval", "paired_difference"]

RESAMPLES = 2000
"""Bootstrap resamples per interval: enough for stable 2.5/97.5 percentiles at this size of set."""
SEED = 20181
"""The fixed seed of every resampling: the same values always give the same interval."""
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean and its 95% bootstrap interval, over ``n`` values."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def significant(self) -> bool:
        """The interval does not hold 0 (for a difference: the two means differ beyond chance)."""
        return self.n > 0 and (self.low > 0 or self.high < 0)

    def scaled(self, factor: float) -> Interval:
        return Interval(self.mean * factor, self.low * factor, self.high * factor, self.n)

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def bootstrap_interval(values: Sequence[float], *, seed: int = SEED, resamples: int = RESAMPLES) -> Interval:
    """The mean of ``values`` and its 95% percentile-bootstrap interval.

    One value gives a zero-width interval; no values give an interval of NaN with ``n`` 0.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    means = data[picks].mean(axis=1)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(data.mean()), float(low), float(high), int(data.size))


def paired_difference(
    a: Sequence[float], b: Sequence[float], *, seed: int = SEED, resamples: int = RESAMPLES
) -> Interval:
    """Mean of ``b[i] - a[i]`` over paired values, with its 95% bootstrap interval.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"paired values differ in number: {len(a)} and {len(b)}")
    return bootstrap_interval([float(y) - float(x) for x, y in zip(a, b, strict=True)], seed=seed, resamples=resamples)
