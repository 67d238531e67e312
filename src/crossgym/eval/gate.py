"""The eval-first gate: before training, every verifier must pass its self-check and the starting model's
rewards must vary (identical rewards give GRPO zero advantage: nothing to learn). `crossgym train` calls it."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.interfaces import InferenceEngine
from crossgym.protocol.task import Task

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 8


@dataclass(frozen=True)
class GateResult:
    """ok, and one line saying why not (or what passed)."""

    ok: bool
    reason: str
    selfcheck: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    metrics: dict[str, Any] | None = None
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per blend part: tasks, completions, pass@1, mean_reward, distinct_rewards (empty without a blend)."""

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "selfcheck": self.selfcheck, "rewards": self.rewards,
                "metrics": self.metrics, "parts": self.parts}


def _selfcheck_failure(row: dict[str, Any]) -> str:
    if row.get("error"):
        return str(row["error"])
    bad = next((e for e in row["examples"] if not e["ok"]), None)
    if bad is None:
        return "no examples"
    note = f" ({bad['note']})" if bad.get("note") else ""
    return f"an example expected to {bad['expect']} gave {bad['got']}{note}"


def training_reward(run: Any, rollout: Rollout, extra: Sequence[tuple[Any, float]] = ()) -> float:
    """The reward GRPO would see for a rollout: the scoring core's rule for the run (task_weight x the task verdict +
    each extra term x its weight, a blend part's own terms for its tasks; an error scores ``on_error``, NaN for
    "none"). ``extra`` is ignored (kept for callers of 0.1: the rule knows the run's terms)."""
    from crossgym.scoring import RewardRule

    scored = RewardRule.from_run(run).score(rollout.task, rollout.completion, verdict=rollout.verdict)
    return scored.reward_or(math.nan)


def gate_sample(run: Any, tasks: Sequence[Task], limit: int) -> list[Task]:
    """The tasks the gate evaluates: the first ``limit`` distinct ones, or for a blend the first ``limit`` of each
    part (so every part's verifier is tried on the model)."""
    from crossgym.scoring.parts import part_of

    per: dict[str | None, list[Task]] = {}
    seen: set[str] = set()
    for t in tasks:
        bucket = per.setdefault(part_of(t), [])
        if t.id in seen or len(bucket) >= limit:
            continue
        seen.add(t.id)
        bucket.append(t)
    return [t for bucket in per.values() for t in bucket]


def part_summary(run: Any, rollouts: Sequence[Rollout], rewards: Sequence[float]) -> dict[str, dict[str, Any]]:
    """Per blend part: tasks, completions, pass@1 (the share of passed completions), mean reward and how many
    distinct rewards (1 means GRPO learns nothing from that part's groups)."""
    from crossgym.scoring.parts import part_of

    out: dict[str, dict[str, Any]] = {}
    for r, reward in zip(rollouts, rewards, strict=True):
        part = part_of(r.task)
        if part is None:
            continue
        row = out.setdefault(part, {"tasks": set(), "completions": 0, "passed": 0, "rewards": []})
        row["tasks"].add(r.task.id)
        row["completions"] += 1
        row["passed"] += int(bool(r.verdict.passed))
        if not math.isnan(reward):
            row["rewards"].append(reward)
    return {name: {"tasks": len(row["tasks"]), "completions": row["completions"],
                   "pass@1": row["passed"] / row["completions"],
                   "mean_reward": sum(row["rewards"]) / len(row["rewards"]) if row["rewards"] else None,
                   "distinct_rewards": len(set(row["rewards"]))} for name, row in out.items()}


def run_gate(run: Any, tasks: Sequence[Task], *, n: int | None = None, limit: int = DEFAULT_LIMIT,
             engine: InferenceEngine | None = None, output_dir: str | Path | None = None) -> GateResult:
    """Self-check every verifier the run uses, then a small eval of ``run.model`` on the first ``limit`` tasks
    with ``n`` samples each (default: the GRPO group size) and the run's sampling settings."""
    from crossgym.eval.run import build_engine, engine_model_name, environment_from_run, run_eval, sampling_from_run
    from crossgym.rollout.config import RolloutConfig
    from crossgym.scoring import RewardRule
    from crossgym.verifiers.selfcheck import check_verifier

    rule = RewardRule.from_run(run)
    names = list(dict.fromkeys([t.verifier.name for t in tasks] + [term.spec.name for term in rule.extras]))
    rows = [check_verifier(name) for name in names]
    for row in rows:
        if not row["ok"]:
            return GateResult(False, f"verifier {row['name']!r} fails its self-check: {_selfcheck_failure(row)} "
                                     f"(run `crossgym check {row['name']}`)", selfcheck=rows)
    sample = gate_sample(run, tasks, limit)
    if not sample:
        return GateResult(False, "no tasks to evaluate: the task source produced none", selfcheck=rows)
    n = n if n is not None else run.grpo.num_generations
    eng = engine if engine is not None else build_engine(run.engine, model=run.model)
    environment, env_params = environment_from_run(run)
    config = RolloutConfig(model=engine_model_name(eng, run.model), engine=getattr(eng, "name", run.engine),
                           sampling=sampling_from_run(run), n=n, environment=environment, env_params=env_params)
    result = run_eval(eng, sample, config, output_dir=output_dir, report=output_dir is not None)
    rewards = [rule.score(r.task, r.completion, verdict=r.verdict).reward_or(math.nan) for r in result.rollouts]
    parts = part_summary(run, result.rollouts, rewards)
    for name, row in parts.items():
        if row["distinct_rewards"] <= 1:
            log.warning("blend part %r: every sampled reward is the same over %d completions: its GRPO groups "
                        "will have zero advantage (see tasks filtering in docs/guides/multi-environment.md)",
                        name, row["completions"])
    finite = [x for x in rewards if not math.isnan(x)]
    where = f"{len(rewards)} completions of {len(sample)} tasks ({n} each) from {config.model}"
    if len(set(finite)) <= 1:
        value = f"{finite[0]:g}" if finite else "an error (NaN)"
        return GateResult(False, f"every sampled reward is {value} over {where}: GRPO has nothing to learn from "
                                 "(make the tasks easier, raise grpo.max_completion_length or temperature, or shape "
                                 "the reward)",
                          selfcheck=rows, rewards=rewards, metrics=result.metrics, parts=parts)
    summary = (f"{len(rows)} verifier(s) self-checked; {len(set(finite))} distinct rewards over "
               f"{where}, mean {sum(finite) / len(finite):.3f}, pass@1 {result.metrics['pass@1']:.3f}")
    if parts:
        summary += "; per part pass@1: " + ", ".join(f"{k} {v['pass@1']:.2f}" for k, v in parts.items())
    return GateResult(True, summary, selfcheck=rows, rewards=rewards, metrics=result.metrics, parts=parts)
