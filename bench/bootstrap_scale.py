"""Bootstrap intervals at the reference scale, old and new side by side in one run.

The paired bootstrap in `crossgym compare` and the intervals in metrics.json resample tasks 1000 times. Drawing each
resample's tasks one by one (the reference method, still used up to stats.EXACT_DRAWS draws) grows with the tasks:
at 300,000 tasks (1.2M rollouts in groups of 4) that is minutes per interval, and compare computes one per source
and per verifier too. Above the limit, resamples are drawn as multinomial counts of the tasks' distinct values (the
same distribution), or, with continuous rewards, the interval is the bootstrap's normal limit.

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/bootstrap_scale.py [--tasks 20000 100000] [--new-only 300000]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from crossgym.eval import stats


def one_by_one(values: Sequence[float]) -> Callable[[Sequence[int]], float | None]:
    """The same statistic as a plain callable: the bootstrap draws its tasks one by one."""
    of = list(values).__getitem__
    return lambda idx: sum(map(of, idx)) / len(idx)


def timed(n: int, stat: object) -> tuple[float, tuple[float, float] | None]:
    t = time.perf_counter()
    got = stats.bootstrap(n, {"m": stat})["m"]  # type: ignore[dict-item]
    return time.perf_counter() - t, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--new-only", type=int, nargs="+", default=[300_000])
    args = parser.parse_args()
    rng = random.Random(0)
    print(f"{'tasks':>8s} {'values':>12s} {'one by one s':>13s} {'now s':>8s} {'speed-up':>9s} {'now method':>11s}  "
          "interval one by one | now")
    for n in [*args.tasks, *args.new_only]:
        diffs = [rng.choice([-1.0, -0.75, -0.5, -0.25, 0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(n)]
        rewards = [rng.random() for _ in range(n)]
        for label, values in (("pass rates", diffs), ("continuous", rewards)):
            now_s, now = timed(n, stats.mean_stat(values))
            if n in args.tasks:
                old_s, old = timed(n, one_by_one(values))
                print(f"{n:8d} {label:>12s} {old_s:13.2f} {now_s:8.3f} {old_s / now_s:8.0f}x "
                      f"{getattr(now, 'method', '?'):>11s}  ({old[0]:.5f}, {old[1]:.5f}) | "  # type: ignore[index]
                      f"({now[0]:.5f}, {now[1]:.5f})")  # type: ignore[index]
            else:
                print(f"{n:8d} {label:>12s} {'(skipped)':>13s} {now_s:8.3f} {'':>9s} {getattr(now, 'method', '?'):>11s}"
                      f"  now ({now[0]:.5f}, {now[1]:.5f})")  # type: ignore[index]


if __name__ == "__main__":
    main()
