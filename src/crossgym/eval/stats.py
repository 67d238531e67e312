"""Confidence intervals for eval metrics: Wilson score intervals for a pass rate, and a seeded (deterministic)
percentile bootstrap over tasks for mean reward and pass@k, plain and paired (two runs on the same tasks).

Everything is pure Python (no numpy in crossgym's core): ``random.Random(seed)`` draws the resamples, so the same
rollouts give the same interval on every machine.

The cost stays flat at the reference scale (300,000 tasks is 1.2M rollouts in groups of 4). Every statistic here is
a ratio of two sums over a resample's tasks (:class:`SumRatio`). Up to :data:`EXACT_DRAWS` task draws in all, each
resample draws its tasks one by one (the reference method). Above that, tasks with the same values are one kind, and
a resample is drawn as multinomial counts of the kinds: the same distribution, in time that grows with the kinds,
not the tasks (1000 resamples of 300,000 pass/fail tasks: under a second, not minutes). With more than
:data:`MAX_KINDS` kinds (continuous rewards), the interval is the bootstrap's normal limit: the ratio plus or minus
z times its delta-method standard error, one pass over the tasks, and its method says so.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

CONFIDENCE = 0.95
#: the two-sided 95% normal quantile
Z95 = 1.959963984540054
RESAMPLES = 1000
SEED = 0
#: task draws (tasks x resamples) up to which each resample draws its tasks one by one
EXACT_DRAWS = 10_000_000
#: distinct kinds of task up to which a larger bootstrap draws multinomial counts of kinds
MAX_KINDS = 4096

WILSON = "wilson"
BOOTSTRAP = "bootstrap"
NORMAL = "normal"
#: how each interval in metrics.json was computed (metrics["intervals"]["methods"])
METHODS = {
    WILSON: "Wilson score interval over rollouts (each sample counted as an independent trial)",
    BOOTSTRAP: f"percentile bootstrap over tasks ({RESAMPLES} resamples with replacement, seed {SEED}; above "
               f"{EXACT_DRAWS:,} task draws, each resample is drawn as multinomial counts of the tasks' distinct "
               "values, the same distribution)",
}
#: the large-run fallback, named in METHODS where an interval used it
NORMAL_METHOD = (f"normal approximation of the bootstrap over tasks (ratio +/- z * delta-method standard error), "
                 f"used above {EXACT_DRAWS:,} task draws when the tasks have more than {MAX_KINDS} distinct values")


class Bounds(tuple):  # type: ignore[type-arg]
    """An interval's (low, high), which also says how it was computed (``method``)."""

    method: str

    def __new__(cls, low: float, high: float, method: str) -> Bounds:
        self = super().__new__(cls, (low, high))
        self.method = method
        return self

    def __getnewargs__(self) -> tuple[float, float, str]:  # (pickle, copy)
        return self[0], self[1], self.method


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

    return Bounds(at(alpha), at(1.0 - alpha), BOOTSTRAP)


def bootstrap(n_units: int, statistics: Mapping[str, Callable[[Sequence[int]], float | None]], *,
              resamples: int = RESAMPLES, seed: int = SEED,
              confidence: float = CONFIDENCE) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of several statistics over the same resamples of ``n_units`` units (tasks).

    Each statistic maps a resample (a list of unit indices, drawn with replacement) to a value, or None when it is
    undefined on that resample (left out). Deterministic for a given seed. Past :data:`EXACT_DRAWS` draws, when
    every statistic is a :class:`SumRatio`, resamples are drawn as counts of kinds (see the module's notes)."""
    if n_units <= 0 or not statistics:
        return {name: None for name in statistics}
    if n_units * resamples > EXACT_DRAWS and all(isinstance(s, SumRatio) for s in statistics.values()):
        ratios = cast(Mapping[str, SumRatio], statistics)
        kinds = _kinds(n_units, list(ratios.values()))
        if kinds is not None:
            return _counted(kinds, ratios, resamples, seed, confidence)
        return {name: _normal(stat, confidence) for name, stat in ratios.items()}
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


class SumRatio:
    """A statistic that is sum(num[i]) / sum(den[i]) over a resample's units (None where the denominator is 0);
    called with a resample's unit indices. Its per-unit sums let a large bootstrap draw counts of kinds."""

    __slots__ = ("num", "den", "_call")

    def __init__(self, num: list[float], den: list[float], call: Callable[[Sequence[int]], float | None]) -> None:
        self.num, self.den, self._call = num, den, call

    def __call__(self, idx: Sequence[int]) -> float | None:
        return self._call(idx)


def ratio_stat(numerators: Sequence[float], denominators: Sequence[float]) -> SumRatio:
    """sum(numerators[i]) / sum(denominators[i]) over a resample (None when the denominator is 0)."""
    nums, dens = list(numerators), list(denominators)
    num, den_of = nums.__getitem__, dens.__getitem__

    def stat(idx: Sequence[int]) -> float | None:  # (map: the same sums in the same order, a third of the time)
        den = sum(map(den_of, idx))
        return sum(map(num, idx)) / den if den else None

    return SumRatio(nums, dens, stat)


def mean_stat(values: Sequence[float | None]) -> SumRatio:
    """The mean of the defined values[i] over a resample (None when none is defined)."""
    nums = [0.0 if v is None else v for v in values]
    dens = [0.0 if v is None else 1.0 for v in values]
    if all(v is not None for v in values):  # every value defined: the same sum, in the same order, faster
        of = nums.__getitem__

        def dense(idx: Sequence[int]) -> float | None:
            return sum(map(of, idx)) / len(idx) if idx else None

        return SumRatio(nums, dens, dense)

    def stat(idx: Sequence[int]) -> float | None:
        got = [v for i in idx if (v := values[i]) is not None]
        return sum(got) / len(got) if got else None

    return SumRatio(nums, dens, stat)


def _kinds(n_units: int, stats: list[SumRatio]) -> list[tuple[int, tuple[float, ...]]] | None:
    """The units' distinct value tuples (every statistic's num and den) with their counts, in first-seen order;
    None past MAX_KINDS."""
    counts: dict[tuple[float, ...], int] = {}
    columns = [col for s in stats for col in (s.num, s.den)]
    for key in zip(*columns, strict=True):
        if key in counts:
            counts[key] += 1
        elif len(counts) < MAX_KINDS:
            counts[key] = 1
        else:
            return None
    assert sum(counts.values()) == n_units
    return [(c, key) for key, c in counts.items()]


def _counted(kinds: list[tuple[int, tuple[float, ...]]], stats: Mapping[str, SumRatio], resamples: int, seed: int,
             confidence: float) -> dict[str, tuple[float, float] | None]:
    """The percentile bootstrap with each resample drawn as multinomial counts of ``kinds`` (a resample of n units
    with replacement has exactly this distribution of counts)."""
    rng = random.Random(seed)
    n = sum(c for c, _ in kinds)
    names = list(stats)
    draws: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(resamples):
        sums = [0.0] * (2 * len(names))
        left, mass = n, n
        for c, key in kinds:
            if left <= 0:
                break
            k = left if c >= mass else binomial(left, c / mass, rng)
            left -= k
            mass -= c
            if k:
                for j, v in enumerate(key):
                    sums[j] += k * v
        for j, name in enumerate(names):
            num, den = sums[2 * j], sums[2 * j + 1]
            if den and not math.isnan(value := num / den):
                draws[name].append(value)
    return {name: _percentiles(vals, confidence) if vals else None for name, vals in draws.items()}


def _normal(stat: SumRatio, confidence: float) -> tuple[float, float] | None:
    """The bootstrap's normal limit for a ratio of sums: r +/- z * sqrt(sum((num - r den)^2)) / sum(den)."""
    den = math.fsum(stat.den)
    if not den:
        return None
    r = math.fsum(stat.num) / den
    if math.isnan(r):
        return None
    se = math.sqrt(math.fsum((a - r * b) ** 2 for a, b in zip(stat.num, stat.den, strict=True))) / den
    z = _z(confidence)
    return Bounds(r - z * se, r + z * se, NORMAL)


def _z(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence``."""
    if confidence == CONFIDENCE:
        return Z95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def binomial(n: int, p: float, rng: random.Random) -> int:
    """One Binomial(n, p) draw from ``rng``: waiting times between successes while n p < 10, else Hormann's
    transformed rejection with squeeze (BTRS, 1993), both exact."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - binomial(n, 1.0 - p, rng)
    if n * p < 10.0:  # count the successes: each gap is geometric
        log_q, x, y = math.log1p(-p), 0, 0
        while True:
            y += int(math.log(1.0 - rng.random()) / log_q) + 1
            if y > n:
                return x
            x += 1
    q = 1.0 - p
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = math.floor((n + 1) * p)
    h = math.lgamma(m + 1) + math.lgamma(n - m + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        if us <= 0.0:
            continue
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= vr:
            return k
        if v <= 0.0:
            continue
        if math.log(v * alpha / (a / (us * us) + b)) <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - m) * lpq:
            return k


def interval(bounds: tuple[float, float] | None, method: str, **extra: Any) -> dict[str, Any] | None:
    """One interval as metrics.json writes it; bounds that say how they were computed (:class:`Bounds`) name their
    own method."""
    if bounds is None:
        return None
    return {"low": bounds[0], "high": bounds[1], "method": getattr(bounds, "method", method), **extra}
