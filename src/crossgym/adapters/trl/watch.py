"""The held-out watch (``grpo.eval_steps``): every N optimizer steps, and once before the first, the policy being
trained answers a fixed slice of ``eval_tasks`` greedily (temperature 0, one sample each) through crossgym's own
episode runner and task verifiers, and the held-out pass rate is written to metrics.jsonl beside the training
reward. Reward hacking then shows as two curves parting: the training reward climbs while the held-out pass rate
stays flat or falls.

Rows: ``{"step", "segment", "time_s", "heldout/pass_rate", "heldout/mean_reward", "heldout/infra",
"heldout/n", "heldout/seconds"}``; ``heldout/infra`` counts the verdicts whose fault is the infrastructure's (those
are left out of neither number: they are reported so a broken verifier is not read as a bad policy).

A TRL TrainerCallback (TRL's public extension point); the model is put back in training mode afterwards.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

PREFIX = "heldout/"
PASS_RATE = "heldout/pass_rate"
MEAN_REWARD = "heldout/mean_reward"


def held_out_tasks(run: RunConfig) -> list[Task]:
    """The first ``grpo.eval_limit`` of the run's eval_tasks (ConfigError when the watch is on without them)."""
    from crossgym.rollout.tasks import run_eval_tasks

    tasks = run_eval_tasks(run)
    if not tasks:
        raise ConfigError("grpo.eval_steps watches held-out tasks, and this run has no eval_tasks",
                          where="grpo.eval_steps",
                          fix="add an eval_tasks: section (tasks the model is not trained on), or remove eval_steps")
    return list(tasks[: run.grpo.eval_limit])


def plan_note(run: RunConfig) -> str | None:
    """What `crossgym plan` says about the watch (None when grpo.eval_steps is unset)."""
    g = run.grpo
    if not g.eval_steps:
        return None
    if run.eval_tasks is None:
        return "held-out watch: grpo.eval_steps is set but the run has no eval_tasks: training refuses to start"
    return (f"held-out watch: greedy on the first {g.eval_limit} eval_tasks at step 0 and every {g.eval_steps} "
            "steps (heldout/pass_rate in metrics.jsonl, beside the reward on reward_curve.png)")


def score_held_out(model: Any, tokenizer: Any, tasks: Sequence[Task], run: RunConfig) -> dict[str, Any]:
    """One greedy pass over ``tasks`` with ``model`` as it is now: pass rate, mean task reward, infra count."""
    from crossgym.inference.hf import HFEngine
    from crossgym.protocol.episode import SamplingParams
    from crossgym.rollout.config import RolloutConfig
    from crossgym.rollout.runner import run_rollouts
    from crossgym.scoring.failure import fault

    env, params = None, {}
    if "environment" in run.model_fields_set:  # as eval does: the run's environment when it sets one
        env, params = run.environment.name, dict(run.environment.params)
        if "max_turns" in run.environment.model_fields_set:
            params["max_turns"] = run.environment.max_turns
    was_training = bool(getattr(model, "training", False))
    device = str(getattr(model, "device", "cpu"))
    t0 = time.perf_counter()
    try:
        engine = HFEngine(model, tokenizer=tokenizer, device=device, batch_size=max(1, min(32, len(tasks))))
        config = RolloutConfig(model=run.model, engine="hf", n=1, environment=env, env_params=params,
                               sampling=SamplingParams(temperature=0.0, max_tokens=run.grpo.max_completion_length,
                                                       seed=run.seed))
        rollouts = run_rollouts(engine, list(tasks), config)
    finally:
        if was_training:
            model.train()
    rewards = [r.verdict.reward for r in rollouts if not math.isnan(r.verdict.reward)]
    n = len(rollouts)
    return {PASS_RATE: sum(r.verdict.passed for r in rollouts) / n if n else None,
            MEAN_REWARD: sum(rewards) / len(rewards) if rewards else None,
            f"{PREFIX}infra": sum(fault(r.verdict) == "infra" for r in rollouts), f"{PREFIX}n": n,
            f"{PREFIX}seconds": round(time.perf_counter() - t0, 3)}


def held_out_watch(run: RunConfig, output_dir: str | Path, *, segment: int = 1) -> list[Any]:
    """``[the TrainerCallback]`` when ``grpo.eval_steps`` is set, else ``[]`` (so a caller can splat it)."""
    if not run.grpo.eval_steps:
        return []
    every = int(run.grpo.eval_steps)
    tasks = held_out_tasks(run)
    from transformers import TrainerCallback

    path = Path(output_dir) / "metrics.jsonl"

    class HeldOutWatch(TrainerCallback):
        """Scores the held-out slice at step 0 and every ``every`` steps (and the last one)."""

        def __init__(self) -> None:
            self.history: list[dict[str, Any]] = []
            self._start = time.time()
            self._done: set[int] = set()

        def _measure(self, state: Any, model: Any, tokenizer: Any) -> None:
            step = int(state.global_step)
            if step in self._done or model is None or tokenizer is None:
                return
            self._done.add(step)
            try:
                scores = score_held_out(model, tokenizer, tasks, run)
            except Exception as exc:  # a watch never stops training: say so and go on
                log.warning("held-out watch at step %d failed: %s: %s", step, type(exc).__name__, exc)
                return
            row = {"step": step, "segment": segment, "time_s": round(time.time() - self._start, 3), **scores}
            self.history.append(row)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
            rate = scores[PASS_RATE]
            log.info("held-out at step %d: pass rate %s over %d tasks (%.1f s)", step,
                     "n/a" if rate is None else f"{rate:.3f}", scores[f"{PREFIX}n"], scores[f"{PREFIX}seconds"])

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                           processing_class: Any = None, **kw: Any) -> None:
            if int(state.global_step) == 0:  # the baseline, before any update (a resumed run has its own)
                self._measure(state, model, processing_class)

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None,
                        processing_class: Any = None, **kw: Any) -> None:
            step = int(state.global_step)
            if step % every == 0 or step >= int(state.max_steps) or control.should_training_stop:
                self._measure(state, model, processing_class)

    return [HeldOutWatch()]


def held_out_series(rows: Sequence[dict[str, Any]]) -> list[tuple[int, float]]:
    """(step, held-out pass rate) from metrics.jsonl rows, in order."""
    return [(int(r["step"]), float(r[PASS_RATE])) for r in rows
            if isinstance(r.get(PASS_RATE), (int, float)) and r[PASS_RATE] == r[PASS_RATE]]
