"""Parts of a task blend, as the scoring core sees them: which part a task belongs to, and the per-part metric keys
every backend logs (``crossgym/part/<part>/<metric>``), so a dashboard shows which environment is learning.

A blend (``RunConfig.tasks`` as a list of named parts, built by ``crossgym.rollout.blend``) stamps each task's
metadata with its part's name under :data:`PART_KEY`, and with its part's environment settings under
:data:`ENV_KEY`. The stamp travels with the Task JSON through every backend's dataset rows, so the reward side
knows the part without any backend-specific plumbing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from crossgym.protocol.task import Task

#: task metadata key: the name of the blend part a task came from
PART_KEY = "crossgym_part"
#: task metadata key: the part's environment settings ({"params": {...}, "max_turns": N}), when the part set them
ENV_KEY = "crossgym_env"
PART_PREFIX = "crossgym/part/"
#: the per-part metrics the scoring core fills (backends add completion_length and turns where they know them)
PART_METRICS = ("reward", "passed", "malformed", "verifier_error")
LENGTH_METRICS = ("completion_length", "turns")


def part_of(task: Task) -> str | None:
    """The blend part a task belongs to (None: the run has no blend)."""
    name = task.metadata.get(PART_KEY) if isinstance(task.metadata, Mapping) else None
    return str(name) if name else None


def part_key(part: str, metric: str) -> str:
    return f"{PART_PREFIX}{part}/{metric}"


def part_keys(parts: Iterable[str], metrics: Iterable[str] = PART_METRICS + LENGTH_METRICS) -> list[str]:
    """Every per-part key of ``parts`` (what a backend that needs the same keys for every sample pre-declares)."""
    metrics = tuple(metrics)
    return [part_key(p, m) for p in parts for m in metrics]


def part_sample_metrics(part: str | None, flags: Mapping[str, float], reward: float | None) -> dict[str, float]:
    """One sample's per-part metrics from its flags (crossgym.scoring.metrics.verdict_flags) and reward; {} without a
    part. A masked reward (None) is left out, as for the run-wide keys."""
    if not part:
        return {}
    from crossgym.scoring.metrics import MALFORMED, PASSED, VERIFIER_ERROR

    out = {part_key(part, "passed"): flags[PASSED], part_key(part, "malformed"): flags[MALFORMED],
           part_key(part, "verifier_error"): flags[VERIFIER_ERROR]}
    if reward is not None:
        out[part_key(part, "reward")] = float(reward)
    return out


def length_metrics(part: str | None, *, completion_length: float | None = None,
                   turns: float | None = None) -> dict[str, float]:
    """A sample's completion length (tokens) and turns under its part's keys ({} without a part)."""
    if not part:
        return {}
    out = {}
    if completion_length is not None:
        out[part_key(part, "completion_length")] = float(completion_length)
    if turns is not None:
        out[part_key(part, "turns")] = float(turns)
    return out


def mean_by_key(samples: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per-key means over the samples that have the key (NaN skipped): a part's metric averages its own samples."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for sample in samples:
        for key, value in sample.items():
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}


def parts_in_metrics(row: Mapping[str, Any]) -> list[str]:
    """The part names a metrics row (a line of metrics.jsonl) has keys for, in first-seen order."""
    seen: dict[str, None] = {}
    for key in row:
        if key.startswith(PART_PREFIX):
            seen.setdefault(key[len(PART_PREFIX):].split("/", 1)[0], None)
    return list(seen)


def part_metrics_by_step(records: Iterable[Mapping[str, Any]]) -> dict[int | None, dict[str, float]]:
    """Per training step, each blend part's metrics (reward, passed, malformed, verifier_error, turns) under the
    same ``crossgym/part/<part>/<metric>`` keys TRL logs live, from rollout records (``rollouts.jsonl`` of any
    backend: the record's task names its part, its provenance the step). Records without a part are skipped."""
    from crossgym.protocol.task import Verdict
    from crossgym.scoring.metrics import verdict_flags

    samples: dict[int | None, list[dict[str, float]]] = {}
    for rec in records:
        task = rec.get("task") or {}
        meta = task.get("metadata") if isinstance(task, Mapping) else None
        part = meta.get(PART_KEY) if isinstance(meta, Mapping) else None
        if not part:
            continue
        prov = rec.get("provenance") or {}
        step = prov.get("step") if isinstance(prov, Mapping) else None
        try:
            verdict = Verdict.from_dict(rec.get("verdict") or {})
        except (ValueError, KeyError, TypeError):
            continue
        reward = prov.get("reward_seen") if isinstance(prov, Mapping) else None
        row = part_sample_metrics(str(part), verdict_flags(verdict),
                                  float(reward) if isinstance(reward, (int, float)) else None)
        row[part_key(part, "turns")] = float(rec.get("turns") or 1)
        samples.setdefault(step if isinstance(step, int) else None, []).append(row)
    return {step: mean_by_key(rows) for step, rows in samples.items()}
