"""Eval metrics from rollouts: pass@1, unbiased pass@k, rewards and their distribution, errors by kind, 95%
intervals (eval.stats), failure modes (eval.failures), and the same per task source (``task.metadata["source"]``,
else ``["family"]``) and per verifier.

Everything is computed in two streaming passes over the rollouts (``compute_metrics`` takes any re-iterable: a list,
or an eval store read lazily, crossgym.eval.run.StoredRollouts): the first keeps running summaries per task, per
source and per verifier (counts, sums, error kinds, the reward range), the second what needs the first's totals (the
reward histogram and standard deviation, failed components, failure examples). No Rollout is held: memory grows
with the number of tasks (the bootstrap resamples tasks), not with samples. Sums run in rollout order, exactly as
``sum()`` over a list did, so the document is the same as one built from the list."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.task import ERROR_KINDS
from crossgym.rollout.passk import k_values, mean_pass_at_k, pass_at_k
from crossgym.scoring.parts import PART_KEY

HIST_BINS = 10
#: reward values are listed one by one when there are at most this many distinct ones
MAX_DISTINCT = 20


def task_source(rollout: Rollout) -> str:
    """The group a rollout's metrics are reported under: its blend part, else its task source (or family)."""
    meta = rollout.task.metadata
    return str(meta.get(PART_KEY) or meta.get("source") or meta.get("family") or "unknown")


class _Errors:
    """Verdict errors by kind, counted as rollouts stream by."""

    __slots__ = ("kinds", "n")

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.n = 0

    def add(self, r: Rollout) -> None:
        self.n += 1
        if r.verdict.error is not None:
            self.kinds[r.verdict.error_kind or "exception"] += 1

    def doc(self) -> dict[str, Any]:
        kinds = self.kinds
        doc: dict[str, Any] = {k: kinds.get(k, 0) for k in ERROR_KINDS}
        doc.update({k: v for k, v in kinds.items() if k not in doc})
        doc["total"] = sum(kinds.values())
        doc["rate"] = doc["total"] / self.n if self.n else 0.0
        return doc


class _Group:
    """One group's running summary (the whole run, a task source, a verifier): per task (first-seen order) its
    samples, passes, reward sum and finite rewards; the group's reward sum; its error kinds; verifier versions."""

    __slots__ = ("errors", "n", "reward_n", "reward_sum", "tasks", "versions")

    def __init__(self, versions: bool = False) -> None:
        self.tasks: dict[str, list[Any]] = {}  # id -> [samples, passed, reward sum, finite rewards]
        self.n = 0
        self.reward_sum: float = 0
        self.reward_n = 0
        self.errors = _Errors()
        self.versions: set[str] | None = set() if versions else None

    def add(self, r: Rollout) -> None:
        self.n += 1
        t = self.tasks.get(r.task.id)
        if t is None:
            t = self.tasks[r.task.id] = [0, 0, 0, 0.0]
        t[0] += 1
        t[1] += 1 if r.verdict.passed else 0
        reward = r.verdict.reward
        if not math.isnan(reward):
            t[2] += reward
            t[3] += 1.0
            self.reward_sum += reward
            self.reward_n += 1
        self.errors.add(r)
        if self.versions is not None:
            from crossgym.scoring.provenance import Provenance

            ref = Provenance.from_dict(r.provenance, default=r.task.verifier).verifier
            if ref is not None and ref.version is not None:
                self.versions.add(ref.version)

    def stats(self, ks: Sequence[int]) -> dict[str, Any]:
        """pass@1, pass@k, mean reward and errors of the group."""
        counts = [(t[0], t[1]) for t in self.tasks.values()]
        pass_k = {str(k): v for k in ks if (v := mean_pass_at_k(counts, k)) is not None}
        doc: dict[str, Any] = {"n_tasks": len(self.tasks), "n_rollouts": self.n,
               "pass@1": pass_k.get("1"), "pass@k": pass_k,
               "mean_reward": self.reward_sum / self.reward_n if self.reward_n else None,
               "errors": self.errors.doc(),
               "intervals": _intervals(counts, [t[2] for t in self.tasks.values()],
                                       [t[3] for t in self.tasks.values()], [int(k) for k in pass_k])}
        if self.versions is not None:
            doc["versions"] = sorted(self.versions)
        return doc


def intervals(tasks: Sequence[Sequence[Rollout]], ks: Sequence[int]) -> dict[str, Any]:
    """95% intervals: Wilson on pass@1 (over rollouts; the bootstrap when tasks have unequal samples), a seeded
    bootstrap over tasks on mean reward and pass@k."""
    return _intervals([(len(rs), sum(1 for r in rs if r.verdict.passed)) for rs in tasks],
                      [sum(r.verdict.reward for r in rs if not math.isnan(r.verdict.reward)) for rs in tasks],
                      [float(sum(1 for r in rs if not math.isnan(r.verdict.reward))) for rs in tasks], ks)


def _intervals(counts: Sequence[tuple[int, int]], sums: Sequence[float], finite: Sequence[float],
               ks: Sequence[int]) -> dict[str, Any]:
    """The intervals document from per-task (samples, passes), reward sums and finite-reward counts."""
    from crossgym.eval import stats

    successes, trials = sum(c for _, c in counts), sum(n for n, _ in counts)
    statistics = {"mean_reward": stats.ratio_stat(sums, finite)}
    unequal = len({n for n, _ in counts}) > 1  # pass@1's interval is then the bootstrap's (_pass1_interval)
    for k in sorted(set(ks) | ({1} if unequal else set())):
        statistics[f"pass@{k}"] = stats.mean_stat([pass_at_k(n, c, k) if n >= k else None for n, c in counts])
    boot = stats.bootstrap(len(counts), statistics)
    return {"confidence": stats.CONFIDENCE,
            "pass@1": _pass1_interval(counts, successes, trials, boot.get("pass@1")),
            "mean_reward": stats.interval(boot["mean_reward"], stats.BOOTSTRAP),
            "pass@k": {str(k): stats.interval(boot[f"pass@{k}"], stats.BOOTSTRAP) for k in ks}}


def _pass1_interval(counts: Sequence[tuple[int, int]], successes: int, trials: int,
                    boot: tuple[float, float] | None) -> dict[str, Any] | None:
    """pass@1's interval: Wilson over the rollouts when every task has the same number of samples, since only then
    is the pooled rate (successes / trials) the reported pass@1 (the mean of per-task rates). With unequal samples
    the two differ (a task of 1 passing sample beside one of 100 failing: pass@1 0.5, pooled 1/101) and a Wilson
    interval around the pooled rate need not hold pass@1, so it is the bootstrap over tasks instead (its method
    says so; None when pass@1 was not bootstrapped)."""
    from crossgym.eval import stats

    if len({n for n, _ in counts}) <= 1:
        return stats.interval(stats.wilson(successes, trials), stats.WILSON, successes=successes, trials=trials)
    return stats.interval(boot, stats.BOOTSTRAP, successes=successes, trials=trials)


def error_counts(rollouts: Iterable[Rollout]) -> dict[str, Any]:
    """Verdict errors by kind (timeout, malformed, exception), with their total and rate."""
    errors = _Errors()
    for r in rollouts:
        errors.add(r)
    return errors.doc()


class _Rewards:
    """The reward distribution in two passes: count, range, sum and the distinct values (while few) first; the
    histogram and the squared deviations from the mean second."""

    def __init__(self, bins: int = HIST_BINS) -> None:
        self.bins = bins
        self.n = self.nan = 0
        self.lo = self.hi = math.nan
        self.total: float = 0
        self.distinct: Counter[float] | None = Counter()
        self.counts: list[int] = []
        self.squares: float = 0

    def add(self, x: float) -> None:
        if math.isnan(x):
            self.nan += 1
            return
        if self.n == 0:
            self.lo = self.hi = x
        else:
            self.lo, self.hi = min(self.lo, x), max(self.hi, x)
        self.n += 1
        self.total += x
        if self.distinct is not None:
            self.distinct[x] += 1
            if len(self.distinct) > MAX_DISTINCT:
                self.distinct = None

    @property
    def distinct_count_at_most_one(self) -> bool:
        return self.distinct is not None and len(self.distinct) <= 1

    def start_second(self) -> None:
        self.counts = [0] * self.bins
        self.squares = 0
        self._mean = self.total / self.n if self.n else 0.0
        self._width = (self.hi - self.lo) / self.bins if self.n and self.hi != self.lo else 0.0

    def add_second(self, x: float) -> None:
        if math.isnan(x):
            return
        if self._width:
            self.counts[min(self.bins - 1, int((x - self.lo) / self._width))] += 1
        self.squares += (x - self._mean) ** 2

    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"n": self.n, "nan": self.nan}
        if not self.n:
            return {**doc, "histogram": {"edges": [], "counts": []}, "values": {}}
        lo, hi = self.lo, self.hi
        if hi == lo:
            edges, counts = [lo, hi], [self.n]
        else:
            edges = [lo + i * self._width for i in range(self.bins)] + [hi]
            counts = self.counts
        doc["histogram"] = {"edges": edges, "counts": counts}
        distinct = self.distinct
        doc["values"] = {f"{v:g}": c for v, c in sorted(distinct.items())} if distinct is not None else None
        doc["min"], doc["max"] = lo, hi
        doc["mean"] = self._mean
        doc["std"] = math.sqrt(self.squares / self.n)
        return doc


def reward_distribution(rewards: Sequence[float], bins: int = HIST_BINS) -> dict[str, Any]:
    """A histogram over [min, max] (one bin when all are equal), and the distinct values when they are few."""
    acc = _Rewards(bins)
    for x in rewards:
        acc.add(x)
    acc.start_second()
    for x in rewards:
        acc.add_second(x)
    return acc.doc()


def compute_metrics(rollouts: Iterable[Rollout], *, ks: Sequence[int] | None = None) -> dict[str, Any]:
    """The metrics document (metrics.json, `crossgym eval --json`) for a set of rollouts: two streaming passes over
    ``rollouts`` (a list, or any re-iterable such as an eval store's StoredRollouts), holding no Rollout."""
    from crossgym.eval import stats
    from crossgym.eval.failures import FailureModes
    from crossgym.eval.health import Health

    if iter(rollouts) is rollouts:  # a one-shot iterator cannot be read twice
        rollouts = list(rollouts)
    overall = _Group()
    by_source: dict[str, _Group] = {}
    by_verifier: dict[str, _Group] = {}
    rewards = _Rewards()
    fm = FailureModes(task_source)
    health = Health()
    n = turns = 0
    tokens = tokens_n = 0
    timing_keys = ("generate_s", "env_s", "verify_s")
    timings: dict[str, float] = dict.fromkeys(timing_keys, 0)
    for r in rollouts:  # the first pass: running summaries
        n += 1
        overall.add(r)
        source = task_source(r)
        (by_source.get(source) or by_source.setdefault(source, _Group())).add(r)
        name = r.task.verifier.name
        (by_verifier.get(name) or by_verifier.setdefault(name, _Group(versions=True))).add(r)
        rewards.add(r.verdict.reward)
        turns += r.turns
        if r.completion.token_ids is not None:
            tokens += len(r.completion.token_ids)
            tokens_n += 1
        for key in timing_keys:
            timings[key] += r.timings.get(key, 0.0)
        fm.add(r)
        health.add(r)
    rewards.start_second()
    fm.start_second()
    for r in rollouts:  # the second: what needs the first's totals
        rewards.add_second(r.verdict.reward)
        fm.add_second(r)
    per_task = [t[0] for t in overall.tasks.values()]
    n_max = max(per_task, default=0)
    ks = list(ks) if ks is not None else k_values(n_max)
    dist = rewards.doc()
    doc: dict[str, Any] = {
        **overall.stats(ks),
        "samples_per_task": {"min": min(per_task, default=0), "max": n_max},
        "reward_std": dist.get("std"),
        "reward_distribution": dist,
        "identical_rewards": rewards.n == 0 or rewards.distinct_count_at_most_one,
        "mean_turns": turns / n if n else None,
        "mean_completion_tokens": tokens / tokens_n if tokens_n else None,
        "by_source": {k: v.stats(ks) for k, v in sorted(by_source.items())},
        "by_verifier": {k: v.stats(ks) for k, v in sorted(by_verifier.items())},
        "timings": timings,
        "failure_modes": fm.doc(),
        "health": health.doc(),
    }
    doc["intervals"]["methods"] = dict(stats.METHODS)
    groups = [doc, *doc["by_source"].values(), *doc["by_verifier"].values()]
    if any(i is not None and i["method"] == stats.NORMAL
           for g in groups for i in (g["intervals"]["mean_reward"], *g["intervals"]["pass@k"].values())):
        doc["intervals"]["methods"][stats.NORMAL] = stats.NORMAL_METHOD  # a large run with continuous rewards
    from crossgym.eval.advice import next_steps

    doc["next_steps"] = next_steps(doc)  # "what to do next": the report's first box, the summary's "next:" lines
    return doc
