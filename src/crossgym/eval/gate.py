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

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "selfcheck": self.selfcheck, "rewards": self.rewards,
                "metrics": self.metrics}


def _selfcheck_failure(row: dict[str, Any]) -> str:
    if row.get("error"):
        return str(row["error"])
    bad = next((e for e in row["examples"] if not e["ok"]), None)
    if bad is None:
        return "no examples"
    note = f" ({bad['note']})" if bad.get("note") else ""
    return f"an example expected to {bad['expect']} gave {bad['got']}{note}"


def training_reward(run: Any, rollout: Rollout, extra: Sequence[tuple[Any, float]]) -> float:
    """The reward GRPO would see: task_weight x the task verdict + each extra verifier x its weight;
    an error scores ``on_error`` (NaN for "none")."""
    on_error = math.nan if run.on_error == "none" else float(run.on_error)

    def value(v: Any) -> float:
        return on_error if v.error is not None else v.reward

    total = run.task_weight * value(rollout.verdict)
    for verifier, weight in extra:
        try:
            verdict = verifier.verify(rollout.task, rollout.completion)
        except Exception as exc:
            log.warning("verifier %s raised: %s", getattr(verifier, "name", verifier), exc)
            total += weight * on_error
            continue
        total += weight * value(verdict)
    return float(total)


def run_gate(run: Any, tasks: Sequence[Task], *, n: int | None = None, limit: int = DEFAULT_LIMIT,
             engine: InferenceEngine | None = None, output_dir: str | Path | None = None) -> GateResult:
    """Self-check every verifier the run uses, then a small eval of ``run.model`` on the first ``limit`` tasks
    with ``n`` samples each (default: the GRPO group size) and the run's sampling settings."""
    from crossgym.api import load_verifier
    from crossgym.eval.run import build_engine, engine_model_name, environment_from_run, run_eval, sampling_from_run
    from crossgym.rollout.config import RolloutConfig
    from crossgym.verifiers.selfcheck import check_verifier

    names = list(dict.fromkeys([t.verifier.name for t in tasks] + [v.name for v in run.verifiers]))
    rows = [check_verifier(name) for name in names]
    for row in rows:
        if not row["ok"]:
            return GateResult(False, f"verifier {row['name']!r} fails its self-check: {_selfcheck_failure(row)} "
                                     f"(run `crossgym check {row['name']}`)", selfcheck=rows)
    sample = list(tasks)[:limit]
    if not sample:
        return GateResult(False, "no tasks to evaluate: the task source produced none", selfcheck=rows)
    n = n if n is not None else run.grpo.num_generations
    eng = engine if engine is not None else build_engine(run.engine, model=run.model)
    environment, env_params = environment_from_run(run)
    config = RolloutConfig(model=engine_model_name(eng, run.model), engine=getattr(eng, "name", run.engine),
                           sampling=sampling_from_run(run), n=n, environment=environment, env_params=env_params)
    result = run_eval(eng, sample, config, output_dir=output_dir, report=output_dir is not None)
    extra = [(load_verifier(v.name, **v.params), v.weight) for v in run.verifiers]
    rewards = [training_reward(run, r, extra) for r in result.rollouts]
    finite = [x for x in rewards if not math.isnan(x)]
    where = f"{len(rewards)} completions of {len(sample)} tasks ({n} each) from {config.model}"
    if len(set(finite)) <= 1:
        value = f"{finite[0]:g}" if finite else "an error (NaN)"
        return GateResult(False, f"every sampled reward is {value} over {where}: GRPO has nothing to learn from "
                                 "(make the tasks easier, raise grpo.max_completion_length or temperature, or shape "
                                 "the reward)",
                          selfcheck=rows, rewards=rewards, metrics=result.metrics)
    summary = (f"{len(rows)} verifier(s) self-checked; {len(set(finite))} distinct rewards over "
               f"{where}, mean {sum(finite) / len(finite):.3f}, pass@1 {result.metrics['pass@1']:.3f}")
    return GateResult(True, summary, selfcheck=rows, rewards=rewards, metrics=result.metrics)
