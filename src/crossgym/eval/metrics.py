"""Eval metrics from rollouts: pass@1, unbiased pass@k, rewards and their distribution, errors by kind, 95%
intervals (eval.stats), failure modes (eval.failures), and the same per task source (``task.metadata["source"]``,
else ``["family"]``) and per verifier."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
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


def _group_stats(rollouts: Sequence[Rollout], ks: Sequence[int]) -> dict[str, Any]:
    """pass@1, pass@k, mean reward and errors of one group of rollouts."""
    per_task: dict[str, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        per_task[r.task.id].append(r)
    counts = [(len(rs), sum(1 for r in rs if r.verdict.passed)) for rs in per_task.values()]
    rewards = [r.verdict.reward for r in rollouts if not math.isnan(r.verdict.reward)]
    pass_k = {str(k): v for k in ks if (v := mean_pass_at_k(counts, k)) is not None}
    return {"n_tasks": len(per_task), "n_rollouts": len(rollouts),
            "pass@1": pass_k.get("1"), "pass@k": pass_k,
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "errors": error_counts(rollouts),
            "intervals": intervals(list(per_task.values()), [int(k) for k in pass_k])}


def intervals(tasks: Sequence[Sequence[Rollout]], ks: Sequence[int]) -> dict[str, Any]:
    """95% intervals: Wilson on pass@1 (over rollouts), a seeded bootstrap over tasks on mean reward and pass@k."""
    from crossgym.eval import stats

    counts = [(len(rs), sum(1 for r in rs if r.verdict.passed)) for rs in tasks]
    sums = [sum(r.verdict.reward for r in rs if not math.isnan(r.verdict.reward)) for rs in tasks]
    finite = [float(sum(1 for r in rs if not math.isnan(r.verdict.reward))) for rs in tasks]
    successes, trials = sum(c for _, c in counts), sum(n for n, _ in counts)
    statistics = {"mean_reward": stats.ratio_stat(sums, finite)}
    for k in ks:
        statistics[f"pass@{k}"] = stats.mean_stat([pass_at_k(n, c, k) if n >= k else None for n, c in counts])
    boot = stats.bootstrap(len(tasks), statistics)
    return {"confidence": stats.CONFIDENCE,
            "pass@1": stats.interval(stats.wilson(successes, trials), stats.WILSON, successes=successes,
                                     trials=trials),
            "mean_reward": stats.interval(boot["mean_reward"], stats.BOOTSTRAP),
            "pass@k": {str(k): stats.interval(boot[f"pass@{k}"], stats.BOOTSTRAP) for k in ks}}


def error_counts(rollouts: Iterable[Rollout]) -> dict[str, Any]:
    """Verdict errors by kind (timeout, malformed, exception), with their total and rate."""
    kinds: Counter[str] = Counter()
    n = 0
    for r in rollouts:
        n += 1
        if r.verdict.error is not None:
            kinds[r.verdict.error_kind or "exception"] += 1
    doc: dict[str, Any] = {k: kinds.get(k, 0) for k in ERROR_KINDS}
    doc.update({k: v for k, v in kinds.items() if k not in doc})
    doc["total"] = sum(kinds.values())
    doc["rate"] = doc["total"] / n if n else 0.0
    return doc


def reward_distribution(rewards: Sequence[float], bins: int = HIST_BINS) -> dict[str, Any]:
    """A histogram over [min, max] (one bin when all are equal), and the distinct values when they are few."""
    finite = [x for x in rewards if not math.isnan(x)]
    doc: dict[str, Any] = {"n": len(finite), "nan": len(rewards) - len(finite)}
    if not finite:
        return {**doc, "histogram": {"edges": [], "counts": []}, "values": {}}
    lo, hi = min(finite), max(finite)
    if hi == lo:
        edges, counts = [lo, hi], [len(finite)]
    else:
        width = (hi - lo) / bins
        edges = [lo + i * width for i in range(bins)] + [hi]
        counts = [0] * bins
        for x in finite:
            counts[min(bins - 1, int((x - lo) / width))] += 1
    doc["histogram"] = {"edges": edges, "counts": counts}
    distinct = Counter(finite)
    doc["values"] = {f"{v:g}": c for v, c in sorted(distinct.items())} if len(distinct) <= MAX_DISTINCT else None
    doc["min"], doc["max"] = lo, hi
    mean = sum(finite) / len(finite)
    doc["mean"] = mean
    doc["std"] = math.sqrt(sum((x - mean) ** 2 for x in finite) / len(finite))
    return doc


def compute_metrics(rollouts: Sequence[Rollout], *, ks: Sequence[int] | None = None) -> dict[str, Any]:
    """The metrics document (metrics.json, `crossgym eval --json`) for a set of rollouts."""
    from crossgym.eval import stats
    from crossgym.eval.failures import failure_modes
    from crossgym.eval.health import health_checks

    per_task = Counter(r.task.id for r in rollouts)
    n_max = max(per_task.values(), default=0)
    ks = list(ks) if ks is not None else k_values(n_max)
    overall = _group_stats(rollouts, ks)
    by_source: dict[str, list[Rollout]] = defaultdict(list)
    by_verifier: dict[str, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        by_source[task_source(r)].append(r)
        by_verifier[r.task.verifier.name].append(r)
    rewards = [r.verdict.reward for r in rollouts]
    dist = reward_distribution(rewards)
    finite = [x for x in rewards if not math.isnan(x)]
    doc: dict[str, Any] = {
        **overall,
        "samples_per_task": {"min": min(per_task.values(), default=0), "max": n_max},
        "reward_std": dist.get("std"),
        "reward_distribution": dist,
        "identical_rewards": len(set(finite)) <= 1,
        "mean_turns": sum(r.turns for r in rollouts) / len(rollouts) if rollouts else None,
        "mean_completion_tokens": _mean_tokens(rollouts),
        "by_source": {k: _group_stats(v, ks) for k, v in sorted(by_source.items())},
        "by_verifier": {k: {**_group_stats(v, ks), "versions": sorted(_versions(v))}
                        for k, v in sorted(by_verifier.items())},
        "timings": {key: sum(r.timings.get(key, 0.0) for r in rollouts) for key in ("generate_s", "env_s", "verify_s")},
        "failure_modes": failure_modes(rollouts, task_source),
        "health": health_checks(rollouts),
    }
    doc["intervals"]["methods"] = dict(stats.METHODS)
    from crossgym.eval.advice import next_steps

    doc["next_steps"] = next_steps(doc)  # "what to do next": the report's first box, the summary's "next:" lines
    return doc


def _mean_tokens(rollouts: Sequence[Rollout]) -> float | None:
    lens = [len(r.completion.token_ids) for r in rollouts if r.completion.token_ids is not None]
    return sum(lens) / len(lens) if lens else None


def _versions(rollouts: Iterable[Rollout]) -> set[str]:
    from crossgym.scoring.provenance import Provenance

    out = set()
    for r in rollouts:
        ref = Provenance.from_dict(r.provenance, default=r.task.verifier).verifier
        if ref is not None and ref.version is not None:
            out.add(ref.version)
    return out
