"""Confidence intervals for eval metrics: Wilson score intervals for a pass rate, and a seeded (deterministic)
percentile bootstrap over tasks for mean reward and pass@k, plain and paired (two runs on the same tasks).

Everything is pure Python (no numpy in crossgym's core): ``random.Random(seed)`` draws the resamples, so the same
rollouts give the same interval on every machine.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

CONFIDENCE = 0.95
#: the two-sided 95% normal quantile
Z95 = 1.959963984540054
RESAMPLES = 1000
SEED = 0

WILSON = "wilson"
BOOTSTRAP = "bootstrap"
#: how each interval in metrics.json was computed (metrics["intervals"]["methods"])
METHODS = {
    WILSON: "Wilson score interval over rollouts (each sample counted as an independent trial)",
    BOOTSTRAP: f"percentile bootstrap over tasks ({RESAMPLES} resamples with replacement, seed {SEED})",
}


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (None without trials)."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"wilson needs 0 <= successes <= trials, got {successes}/{trials}")
    p = successes / trials
    z2 = z * z
    denom = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def _percentiles(values: list[float], confidence: float) -> tuple[float, float]:
    values.sort()
    alpha = (1.0 - confidence) / 2
    n = len(values)

    def at(q: float) -> float:  # linear interpolation between order statistics (numpy's default)
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(n - 1, lo + 1)
        return values[lo] + (values[hi] - values[lo]) * (pos - lo)

    return at(alpha), at(1.0 - alpha)


def bootstrap(n_units: int, statistics: dict[str, Callable[[Sequence[int]], float | None]], *,
              resamples: int = RESAMPLES, seed: int = SEED,
              confidence: float = CONFIDENCE) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of several statistics over the same resamples of ``n_units`` units (tasks).

    Each statistic maps a resample (a list of unit indices, drawn with replacement) to a value, or None when it is
    undefined on that resample (left out). Deterministic for a given seed."""
    if n_units <= 0 or not statistics:
        return {name: None for name in statistics}
    rng = random.Random(seed)
    units = range(n_units)
    draws: dict[str, list[float]] = {name: [] for name in statistics}
    for _ in range(resamples):
        idx = rng.choices(units, k=n_units)
        for name, stat in statistics.items():
            value = stat(idx)
            if value is not None and not math.isnan(value):
                draws[name].append(value)
    return {name: _percentiles(vals, confidence) if vals else None for name, vals in draws.items()}


def ratio_stat(numerators: Sequence[float], denominators: Sequence[float]) -> Callable[[Sequence[int]], float | None]:
    """sum(numerators[i]) / sum(denominators[i]) over a resample (None when the denominator is 0)."""

    num, den_of = list(numerators).__getitem__, list(denominators).__getitem__

    def stat(idx: Sequence[int]) -> float | None:  # (map: the same sums in the same order, a third of the time)
        den = sum(map(den_of, idx))
        return sum(map(num, idx)) / den if den else None

    return stat


def mean_stat(values: Sequence[float | None]) -> Callable[[Sequence[int]], float | None]:
    """The mean of the defined values[i] over a resample (None when none is defined)."""
    if all(v is not None for v in values):  # every value defined: the same sum, in the same order, faster
        defined: list[float] = [v for v in values if v is not None]
        of = defined.__getitem__

        def dense(idx: Sequence[int]) -> float | None:
            return sum(map(of, idx)) / len(idx) if idx else None

        return dense

    def stat(idx: Sequence[int]) -> float | None:
        got = [v for i in idx if (v := values[i]) is not None]
        return sum(got) / len(got) if got else None

    return stat


def interval(bounds: tuple[float, float] | None, method: str, **extra: Any) -> dict[str, Any] | None:
    """One interval as metrics.json writes it."""
    if bounds is None:
        return None
    return {"low": bounds[0], "high": bounds[1], "method": method, **extra}
