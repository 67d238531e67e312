"""The difficulty filter: keep the tasks the starting model solves sometimes, drop the ones it always or never solves.

A GRPO group whose rewards are all equal has zero advantage: its rollouts cost generation and teach nothing. Before
training, each distinct task gets ``difficulty.samples`` completions from the starting model (the run's sampling
settings and environments, through crossgym's eval runner), or its rollouts from an earlier eval; a task is kept
when ``min_pass < pass rate < max_pass``. The report says how many tasks each part kept and the share of
zero-variance groups (every sample's reward under the run's rule alike) among all measured tasks and among the kept
ones: the waste the filter removes.

Backends that sample dynamically while training (veRL's filter_groups, OpenRLHF's dynamic filtering) map
``grpo.filter_groups``; this filter is the offline, backend-independent half and works on TRL too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task


@dataclass
class TaskRate:
    """What the starting model did on one task: passed samples, samples, distinct rewards under the run's rule."""

    passed: int = 0
    n: int = 0
    rewards: set[float] = field(default_factory=set)

    @property
    def rate(self) -> float:
        return self.passed / self.n if self.n else math.nan

    @property
    def zero_variance(self) -> bool:
        return self.n > 1 and len(self.rewards) <= 1


@dataclass(frozen=True)
class DifficultyReport:
    """The filter's outcome: the rows kept and the figures behind it."""

    rows: list[Task]
    measured: int
    kept: int
    dropped_unsolved: int
    dropped_solved: int
    unmeasured: int
    zero_variance_before: float
    """Share of measured tasks whose samples all scored alike (GRPO groups with zero advantage)."""
    zero_variance_after: float
    """The same share among the kept tasks."""
    parts: dict[str, dict[str, int]]

    def line(self) -> str:
        parts = "" if not self.parts else " (" + ", ".join(
            f"{name} {d['kept']}/{d['measured']}" for name, d in self.parts.items()) + ")"
        extra = f", {self.unmeasured} unmeasured kept" if self.unmeasured else ""
        return (f"difficulty filter: kept {self.kept} of {self.measured} tasks{parts}: dropped {self.dropped_unsolved} "
                f"never solved and {self.dropped_solved} always solved{extra}; zero-variance groups "
                f"{100 * self.zero_variance_before:.0f}% -> {100 * self.zero_variance_after:.0f}%")

    def to_dict(self) -> dict[str, Any]:
        return {"measured": self.measured, "kept": self.kept, "dropped_unsolved": self.dropped_unsolved,
                "dropped_solved": self.dropped_solved, "unmeasured": self.unmeasured,
                "zero_variance_before": self.zero_variance_before, "zero_variance_after": self.zero_variance_after,
                "parts": self.parts, "rows": len(self.rows)}


def task_rates(run: Any, rollouts: Iterable[Rollout]) -> dict[str, TaskRate]:
    """Per task id: passed samples, samples and distinct rewards (under the run's RewardRule)."""
    from crossgym.scoring import RewardRule

    rule = RewardRule.from_run(run)
    out: dict[str, TaskRate] = {}
    for r in rollouts:
        rate = out.setdefault(r.task.id, TaskRate())
        rate.n += 1
        rate.passed += int(bool(r.verdict.passed))
        rate.rewards.add(_reward_key(rule.score(r.task, r.completion, verdict=r.verdict).reward))
    return out


def _reward_key(reward: float | None) -> float:
    """A reward as a zero-variance group compares it: rounded to 9 places, and every missing or NaN reward as the
    one ``math.nan`` object, because a set tells NaNs apart by identity (``nan != nan``): without it a group whose
    samples all scored NaN would count as varied, though every sample is alike."""
    if reward is None or math.isnan(reward):
        return math.nan
    return round(float(reward), 9)


def filter_rows(rows: Sequence[Task], rates: dict[str, TaskRate], *, min_pass: float, max_pass: float
                ) -> DifficultyReport:
    """Keep the rows whose task's pass rate lies strictly inside (min_pass, max_pass); unmeasured tasks stay."""
    from crossgym.scoring.parts import part_of

    keep: dict[str, bool] = {}
    parts: dict[str, dict[str, int]] = {}
    unsolved = solved = unmeasured = 0
    for t in rows:
        if t.id in keep:
            continue
        rate = rates.get(t.id)
        part = parts.setdefault(part_of(t) or "", {"measured": 0, "kept": 0})
        if rate is None or not rate.n:
            keep[t.id] = True
            unmeasured += 1
            continue
        part["measured"] += 1
        ok = min_pass < rate.rate < max_pass
        keep[t.id] = ok
        part["kept"] += int(ok)
        if not ok:
            if rate.rate <= min_pass:
                unsolved += 1
            else:
                solved += 1
    measured = [tid for tid in keep if tid in rates and rates[tid].n]
    kept_measured = [tid for tid in measured if keep[tid]]

    def share(ids: list[str]) -> float:
        return sum(rates[i].zero_variance for i in ids) / len(ids) if ids else 0.0

    return DifficultyReport(rows=[t for t in rows if keep[t.id]], measured=len(measured), kept=len(kept_measured),
                            dropped_unsolved=unsolved, dropped_solved=solved, unmeasured=unmeasured,
                            zero_variance_before=share(measured), zero_variance_after=share(kept_measured),
                            parts={k: v for k, v in parts.items() if k})


def measure(run: Any, tasks: Sequence[Task], *, engine: Any = None, output_dir: str | Path | None = None
            ) -> Sequence[Rollout]:
    """``difficulty.samples`` completions of the starting model for each distinct task (the run's sampling and
    environments); with ``output_dir``, stored there and resumed like any eval (and read back lazily from there:
    EvalResult.rollouts)."""
    from crossgym.eval.run import build_engine, engine_model_name, environment_from_run, run_eval, sampling_from_run
    from crossgym.rollout.blend import distinct_tasks
    from crossgym.rollout.config import RolloutConfig

    eng = engine if engine is not None else build_engine(run.engine, model=run.model)
    environment, env_params = environment_from_run(run)
    config = RolloutConfig(model=engine_model_name(eng, run.model), engine=getattr(eng, "name", run.engine),
                           sampling=sampling_from_run(run), n=run.difficulty.samples, environment=environment,
                           env_params=env_params)
    return run_eval(eng, distinct_tasks(tasks), config, output_dir=output_dir, report=False).rollouts


def apply_difficulty(run: Any, rows: Sequence[Task], *, engine: Any = None,
                     output_dir: str | Path | None = None) -> DifficultyReport:
    """The run's difficulty filter over its training rows (``run.difficulty`` must be set)."""
    from crossgym.scoring.records import iter_rollouts

    cfg = run.difficulty
    if cfg.rollouts:
        path = Path(cfg.rollouts).expanduser()
        if path.is_dir():
            path = path / "rollouts.jsonl"
        if not path.is_file():
            raise ConfigError("no such rollouts file", where=f"difficulty.rollouts: {path}",
                              fix="point it at an eval's rollouts.jsonl (or its folder), or leave it unset to "
                                  "measure before training")
        rollouts: Iterable[Rollout] = iter_rollouts(path)
    else:
        rollouts = measure(run, rows, engine=engine, output_dir=output_dir)
    report = filter_rows(rows, task_rates(run, rollouts), min_pass=cfg.min_pass, max_pass=cfg.max_pass)
    if not report.rows:
        raise ConfigError(f"the difficulty filter kept no tasks ({report.dropped_unsolved} never solved, "
                          f"{report.dropped_solved} always solved of {report.measured})",
                          where="difficulty", fix="widen the band (min_pass/max_pass), raise samples, or pick "
                          "tasks nearer the model's level")
    return report
