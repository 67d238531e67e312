"""Task blends (multi-environment RL): many named parts, each with its own tasks, share, environment and extra
verifiers, resolved into one list of tasks that every backend trains on.

How a blend is sampled (deterministic from the run's seed, the same on every backend and machine):

- Each part's pool is its tasks (source with params, and/or files), loaded once.
- A part's row count: ``count`` when given; else, for a ``weight``, its share of what the counts leave of ``size``
  (largest-remainder rounding, so the shares sum to ``size`` exactly); a part with neither uses its pool once.
  Without ``size``, the weighted parts together get as many rows as their pools hold (the blend re-weights, it
  does not grow).
- Rows are drawn **without replacement** within an epoch: a count up to the pool size is a seeded sample of the
  pool; a larger count is whole shuffled passes over the pool (epochs) and then a seeded sample for the rest, so no
  task appears more than once more than any other of its part.
- The blend is then interleaved in one seeded order (``shuffle: false`` keeps part after part).
- Each task is stamped: its id becomes ``<part>/<id>``, its metadata names the part (crossgym.scoring.parts) and,
  when the part sets an environment, its environment name, params and max_turns travel with it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task
from crossgym.scoring.parts import ENV_KEY, PART_KEY

if TYPE_CHECKING:
    from crossgym.config.run import BlendConfig, TaskPart


@dataclass(frozen=True)
class PartPlan:
    """What a blend takes from one part: its pool, its rows and how they were drawn."""

    name: str
    pool: int
    rows: int
    how: str
    """"count", "weight <w>" or "all"."""
    environment: str
    """The part's environment ("(each task's own)" when the part and the run leave it to the tasks)."""
    max_turns: int | None
    verifiers: tuple[str, ...]

    @property
    def epochs(self) -> float:
        return self.rows / self.pool if self.pool else 0.0


@dataclass(frozen=True)
class Blend:
    """A resolved blend: the stamped tasks in training order and the plan per part."""

    tasks: list[Task]
    parts: list[PartPlan]


def is_blend(section: Any) -> TypeGuard[BlendConfig]:
    """Whether a tasks section is a blend of parts (else a single source/files section)."""
    return hasattr(section, "parts")


def distinct_tasks(tasks: Sequence[Task]) -> list[Task]:
    """Each task once, in first-seen order (a blend's rows repeat a part's tasks over epochs)."""
    seen: set[str] = set()
    out = []
    for t in tasks:
        if t.id not in seen:
            seen.add(t.id)
            out.append(t)
    return out


def resolve_blend(blend: BlendConfig, *, seed: int = 0, where: str = "tasks", run: Any = None) -> Blend:
    """Load every part's pool, draw each part's rows and interleave them (see the module doc for the rule)."""
    from crossgym.rollout.tasks import load_run_tasks

    pools = [load_run_tasks(p.tasks_config(), where=f"{where}.parts[{i}] ({p.name})")
             for i, p in enumerate(blend.parts)]
    counts = row_counts(blend, [len(pool) for pool in pools], where=where)
    rows: list[Task] = []
    plans: list[PartPlan] = []
    for part, pool, n in zip(blend.parts, pools, counts, strict=True):
        stamped = [stamp(t, part) for t in pool]
        rows.extend(draw(stamped, n, random.Random(f"{seed}:{part.name}")))
        plans.append(_plan(part, len(pool), n, run))
    if blend.shuffle:
        random.Random(f"{seed}:blend").shuffle(rows)
    return Blend(tasks=rows, parts=plans)


def row_counts(blend: BlendConfig, pool_sizes: Sequence[int], *, where: str = "tasks") -> list[int]:
    """Each part's row count (the module doc's rule)."""
    fixed = {i: (p.count if p.count is not None else pool_sizes[i])
             for i, p in enumerate(blend.parts) if p.weight is None}
    weighted = [i for i, p in enumerate(blend.parts) if p.weight is not None]
    if blend.size is None:
        budget = sum(pool_sizes[i] for i in weighted)
    else:
        budget = blend.size - sum(fixed.values())
        if budget < 0 or (budget > 0 and not weighted):
            raise ConfigError(f"size {blend.size} does not match the parts: counts and unweighted parts take "
                              f"{sum(fixed.values())} rows" + ("" if weighted else " and no part has a weight"),
                              where=f"{where}.size",
                              fix="raise size, lower the counts, or give some parts a weight to share the rest")
    out = [0] * len(blend.parts)
    for i, n in fixed.items():
        out[i] = n
    if weighted:
        top = max(float(blend.parts[i].weight or 0.0) for i in weighted)
        shares = [float(blend.parts[i].weight or 0.0) / top for i in weighted]  # (1e308 twice summed to inf)
        exact = [budget * w / sum(shares) for w in shares]
        floors = [int(x) for x in exact]
        left = budget - sum(floors)
        order = sorted(range(len(weighted)), key=lambda j: (-(exact[j] - floors[j]), j))
        for j in order[:left]:
            floors[j] += 1
        for j, i in enumerate(weighted):
            out[i] = floors[j]
    for i, n in enumerate(out):
        if n == 0:
            raise ConfigError(f"part {blend.parts[i].name!r} gets no rows (its weight's share of {budget} rounds "
                              "to 0)", where=f"{where}.parts[{i}]", fix="raise its weight or the blend's size")
    return out


def draw(pool: Sequence[Task], n: int, rng: random.Random) -> list[Task]:
    """``n`` rows from ``pool`` without replacement within an epoch: whole shuffled passes, then a sample."""
    out: list[Task] = []
    for _ in range(n // len(pool)):
        epoch = list(pool)
        rng.shuffle(epoch)
        out.extend(epoch)
    rest = n % len(pool)
    if rest:
        out.extend(rng.sample(list(pool), rest))
    return out


def stamp(task: Task, part: TaskPart) -> Task:
    """The task as a member of ``part``: id ``<part>/<id>``, its part in metadata, the part's environment."""
    meta = dict(task.metadata)
    meta[PART_KEY] = part.name
    env_name = task.env
    env = part.environment
    if env is not None:
        fields = env.model_fields_set
        if "name" in fields:
            env_name = env.name
        settings: dict[str, Any] = {"explicit_name": "name" in fields}
        if "params" in fields:
            settings["params"] = dict(env.params)
        if "max_turns" in fields:
            settings["max_turns"] = int(env.max_turns)
        meta[ENV_KEY] = settings
    return Task(id=f"{part.name}/{task.id}", prompt=task.prompt, answer=task.answer, verifier=task.verifier,
                env=env_name, tools=task.tools, metadata=meta)


def _plan(part: TaskPart, pool: int, rows: int, run: Any) -> PartPlan:
    how = "count" if part.count is not None else f"weight {part.weight:g}" if part.weight is not None else "all"
    env = part.environment
    if env is not None and "name" in env.model_fields_set:
        env_name = env.name
    elif run is not None and "name" in run.environment.model_fields_set:
        env_name = run.environment.name
    else:
        env_name = "(each task's own)"
    max_turns = None
    if env is not None and "max_turns" in env.model_fields_set:
        max_turns = env.max_turns
    elif run is not None and "max_turns" in run.environment.model_fields_set:
        max_turns = run.environment.max_turns
    return PartPlan(name=part.name, pool=pool, rows=rows, how=how, environment=env_name, max_turns=max_turns,
                    verifiers=tuple(v.name for v in part.verifiers))


def blend_lines(blend: Blend) -> list[str]:
    """The blend as `crossgym plan` prints it: one line per part."""
    total = sum(p.rows for p in blend.parts) or 1
    out = [f"blend: {len(blend.parts)} parts, {sum(p.rows for p in blend.parts)} rows"]
    for p in blend.parts:
        turns = "" if p.max_turns is None else f", max_turns {p.max_turns}"
        extra = f", extra verifiers: {', '.join(p.verifiers)}" if p.verifiers else ""
        out.append(f"  {p.name}: {p.rows} rows ({100 * p.rows / total:.1f}%, {p.how}) from {p.pool} tasks "
                   f"({p.epochs:.2f} epochs); env {p.environment}{turns}{extra}")
    return out
