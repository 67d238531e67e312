"""The reward rule, once: a task's Verdict and its extra terms -> the reward a trainer receives.

- The task term is ``Verdict.reward``. A verifier error or timeout (error kind "timeout" or "exception", a verifier
  that raises, that returns something other than a Verdict, or a non-finite reward, or one that cannot be built)
  scores ``on_error``; ``"none"`` gives None, which a backend that can mask (TRL) leaves out. A "malformed" verdict
  is the completion's fault, not the verifier's: it keeps its own reward (normally 0.0), so garbage is never masked.
- Extra terms (``RunConfig.verifiers``) judge each completion against ``extra_task(task, spec)``: the task with its
  answer cleared (the answer belongs to the task's own verifier); each term follows the same error rule.
- reward = task_weight x task term + sum(weight x extra term). A masked term (None) is left out of the sum, as TRL
  does with NaN; the sample is masked (None) only when every term is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring.failure import is_infra
from crossgym.scoring.metrics import MALFORMED, PASSED, VERIFIER_ERROR, sample_metrics
from crossgym.scoring.parts import part_of, part_sample_metrics
from crossgym.verifiers.safe import build_verifier, checked, judge, safe_verify
from crossgym.verifiers.safe import clip_detail as _clip

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

OnError = float | Literal["none"]
__all__ = ["ExtraTerm", "OnError", "RewardRule", "Scored", "build_verifier", "check_builds", "checked", "extra_task",
           "judge", "reward_from_verdict", "safe_verify", "same_verdict"]


def reward_from_verdict(verdict: Verdict, on_error: OnError) -> float | None:
    """The reward of one term: Verdict.reward, or on_error for a verifier error or timeout (None: masked)."""
    if not is_infra(verdict):  # crossgym.scoring.failure: the one rule of whose failure a Verdict is
        return float(verdict.reward)
    return None if on_error == "none" else float(on_error)


def same_verdict(a: Verdict, b: Verdict, *, tol: float = 1e-9) -> bool:
    """Whether two verdicts give the same reward (NaN equals NaN), pass/fail and error kind: "no drift"."""
    ra, rb = a.reward, b.reward
    rewards = (math.isnan(ra) and math.isnan(rb)) or ra == rb or abs(ra - rb) <= tol
    return rewards and a.passed == b.passed and a.error_kind == b.error_kind


def extra_task(task: Task, spec: VerifierSpec) -> Task:
    """The task an extra term judges: same prompt, tools and metadata; no answer; ``spec`` as its verifier."""
    return Task(id=task.id, prompt=task.prompt, answer=None, verifier=spec, env=task.env, tools=task.tools,
                metadata=task.metadata)


@dataclass(frozen=True)
class ExtraTerm:
    """An extra weighted reward term: the verifier ``spec`` applied to every task (or to the tasks of ``parts``, the
    blend parts it belongs to), logged as ``name``."""

    name: str
    spec: VerifierSpec
    weight: float = 1.0
    parts: tuple[str, ...] = ()
    """The blend parts whose tasks this term judges; () judges every task."""

    def applies(self, part: str | None) -> bool:
        return not self.parts or part in self.parts

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "spec": self.spec.to_dict(), "weight": self.weight}
        if self.parts:
            d["parts"] = list(self.parts)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExtraTerm:
        spec = d.get("spec")
        if spec is None:  # the 0.1 OpenRLHF shape: {"name", "params", "weight"}
            spec = {"name": d["name"], "params": d.get("params") or {}}
        return cls(name=str(d["name"]), spec=VerifierSpec.from_dict(spec), weight=float(d.get("weight", 1.0)),
                   parts=tuple(str(p) for p in d.get("parts") or ()))


@dataclass(frozen=True)
class Scored:
    """One sample's outcome under a RewardRule."""

    reward: float | None
    """What the trainer receives: task_weight x task term + sum(weight x extra), masked terms left out; None when
    every term is masked."""
    task_reward: float | None
    """The task verifier's term (None when masked)."""
    verdict: Verdict
    """The task verifier's Verdict (what `crossgym reverify` re-checks)."""
    extras: dict[str, float | None] = field(default_factory=dict)
    """Each extra term's reward, by term name."""
    extra_verdicts: dict[str, Verdict] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    """The per-sample metrics, under the keys of crossgym.scoring.metrics (the same on every backend)."""
    part: str | None = None
    """The blend part of the sample's task (None: the run has no blend)."""

    def reward_or(self, default: float) -> float:
        """The reward, or ``default`` for a masked sample (for backends that need a number)."""
        return default if self.reward is None else self.reward

    def info(self, keys: Sequence[str] = ()) -> dict[str, Any]:
        """A flat per-sample dict with the same keys for every sample of a run (what veRL stacks into arrays):
        ``score`` (the reward), ``acc`` (passed), the metrics, ``error`` and ``components`` (as JSON text, since
        they differ per verifier). ``keys`` (``RewardRule.metric_keys()``): exactly the metric keys every sample
        gets; one this sample lacks (a term that does not judge its part, a masked value) is NaN."""
        import json

        metrics = ({k: self.metrics.get(k, math.nan) for k in keys} if keys else dict(self.metrics))
        return {"score": self.reward_or(math.nan), "acc": float(bool(self.verdict.passed)), **metrics,
                "error": self.verdict.error or "",
                "components": json.dumps(self.verdict.components, sort_keys=True)}


@dataclass(frozen=True)
class RewardRule:
    """How a run turns Verdicts into rewards: the error reward, the task term's weight and the extra terms."""

    on_error: OnError = 0.0
    task_weight: float = 1.0
    extras: tuple[ExtraTerm, ...] = ()
    override: VerifierSpec | None = None
    """Score every task with this verifier instead of its own (a backend's ``reward_function(spec)``)."""
    parts: tuple[str, ...] = ()
    """The run's blend parts (for ``metric_keys``); () when the run has no blend."""

    def __post_init__(self) -> None:
        if self.on_error != "none" and not isinstance(self.on_error, (int, float)):
            raise ConfigError(f"on_error must be a number or 'none', got {self.on_error!r}", where="on_error")
        names = [t.name for t in self.extras]
        if len(set(names)) != len(names):
            raise ConfigError(f"extra reward terms need distinct names, got {names}", where="verifiers")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_run(cls, run: Any, *, override: VerifierSpec | None = None) -> RewardRule:
        """The rule of a RunConfig. Extra terms are named by their verifier; a verifier used twice is
        ``<name>_<index in verifiers>`` (the one naming scheme every backend logs). A blend part's own verifiers
        judge only that part's tasks, named ``<part>/<name>`` the same way."""
        extras = _terms(run.verifiers)
        parts: dict[str, None] = {}
        for section in (run.tasks, getattr(run, "eval_tasks", None)):
            for part in getattr(section, "parts", None) or ():
                if part.name not in parts:
                    parts[part.name] = None
                    extras += _terms(part.verifiers, part=part.name)
        on_error = run.on_error if run.on_error == "none" else float(run.on_error)
        return cls(on_error=on_error, task_weight=float(run.task_weight), extras=tuple(extras), override=override,
                   parts=tuple(parts))

    def metric_keys(self, *, parts: bool = False) -> list[str]:
        """The metric keys every sample of this run gets from ``Scored.info(keys)``: the run-wide ones and each extra
        term's; with ``parts``, each blend part's too (a backend that groups by part itself, as veRL does by
        data_source, leaves them out: they would be NaN for every other part's samples)."""
        from crossgym.scoring.metrics import METRIC_KEYS, extra_key
        from crossgym.scoring.parts import PART_METRICS, part_keys

        keys = [*METRIC_KEYS, *(extra_key(t.name) for t in self.extras)]
        return keys + part_keys(self.parts, PART_METRICS) if parts else keys

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"on_error": self.on_error, "task_weight": self.task_weight,
                             "extras": [t.to_dict() for t in self.extras],
                             "override": None if self.override is None else self.override.to_dict()}
        if self.parts:
            d["parts"] = list(self.parts)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RewardRule:
        on_error = d.get("on_error", 0.0)
        ov = d.get("override")
        if isinstance(ov, (list, tuple)):  # the 0.1 OpenRLHF shape: (name, params)
            ov = {"name": ov[0], "params": ov[1]}
        return cls(on_error=on_error if on_error == "none" else float(on_error),
                   task_weight=float(d.get("task_weight", 1.0)),
                   extras=tuple(ExtraTerm.from_dict(t) for t in d.get("extras") or d.get("extra") or ()),
                   override=None if not ov else VerifierSpec.from_dict(ov),
                   parts=tuple(str(p) for p in d.get("parts") or ()))

    def numeric(self, backend: str) -> RewardRule:
        """This rule, checked for a backend that cannot mask a reward (veRL, OpenRLHF): on_error must be a number."""
        if self.on_error == "none":
            raise ConfigError(f"on_error 'none' cannot be honoured by {backend}: it needs a number for every sample",
                              where="on_error", fix=f"set on_error to a number (e.g. 0.0) for the {backend} backend")
        return self

    def error_reward(self) -> float | None:
        return None if self.on_error == "none" else float(self.on_error)

    # ------------------------------------------------------------------ scoring
    def task_spec(self, task: Task) -> VerifierSpec:
        return task.verifier if self.override is None else self.override

    def score(self, task: Task, completion: Completion, *, verdict: Verdict | None = None) -> Scored:
        """Score one completion. ``verdict``: the task verifier's Verdict when the caller already has it (eval, a
        GRPO group judged together); the extra terms are judged here either way."""
        if verdict is None:
            verdict = judge(self.task_spec(task), task, completion)
        else:
            verdict = checked(verdict)
        part = part_of(task)
        extra_verdicts = {t.name: judge(t.spec, extra_task(task, t.spec), completion) for t in self.extras
                          if t.applies(part)}
        return self.combine(verdict, extra_verdicts, part=part)

    def score_many(self, tasks: Sequence[Task], completions: Sequence[Completion], *,
                   workers: int | None = None) -> list[Scored]:
        """Score a batch: task verdicts through verify_many (process pools, a GRPO group of code in one sandbox
        call), then the extra terms. Same results as ``score`` one by one."""
        from crossgym.verifiers.batch import verify_many

        judged = [t if self.override is None else _with_verifier(t, self.override) for t in tasks]
        verdicts = verify_many(list(zip(judged, completions, strict=True)), workers=workers)
        parts = [part_of(t) for t in tasks]
        extra_verdicts: dict[str, dict[int, Verdict]] = {}
        for term in self.extras:
            idx = [i for i, p in enumerate(parts) if term.applies(p)]
            pairs = [(extra_task(tasks[i], term.spec), completions[i]) for i in idx]
            extra_verdicts[term.name] = dict(zip(idx, verify_many(pairs, workers=workers) if pairs else [],
                                                 strict=True))
        return [self.combine(v, {name: vs[i] for name, vs in extra_verdicts.items() if i in vs}, part=parts[i])
                for i, v in enumerate(verdicts)]

    def combine(self, verdict: Verdict, extra_verdicts: Mapping[str, Verdict], *, part: str | None = None) -> Scored:
        """The rule itself: the task Verdict and each extra term's Verdict -> a Scored (no verifier runs here).
        ``part``: the task's blend part; a term that does not judge it is not part of its reward."""
        task_reward = reward_from_verdict(verdict, self.on_error)
        extras = {name: reward_from_verdict(v, self.on_error) for name, v in extra_verdicts.items()}
        terms = [(self.task_weight, task_reward)] + [(t.weight, extras.get(t.name)) for t in self.extras
                                                      if t.applies(part)]
        kept = [w * r for w, r in terms if r is not None]
        reward = sum(kept) if kept else None
        metrics = sample_metrics(verdict, reward, task_reward, extras)
        metrics.update(part_sample_metrics(part, metrics_flags(metrics), reward))
        return Scored(reward=reward, task_reward=task_reward, verdict=verdict, extras=extras,
                      extra_verdicts=dict(extra_verdicts), metrics=metrics, part=part)

    def score_error(self, detail: str, *, task: Task | None = None) -> Scored:
        """The infrastructure failed before a completion could be judged (no response, or no task): every term is a
        verifier error and scores on_error. ``task``, when known, gives the sample its part."""
        verdict = Verdict.exception(_clip(detail))
        part = None if task is None else part_of(task)
        return self.combine(verdict, {t.name: verdict for t in self.extras if t.applies(part)}, part=part)


def _terms(verifiers: Sequence[Any], *, part: str | None = None) -> list[ExtraTerm]:
    counts: dict[str, int] = {}
    for vc in verifiers:
        counts[vc.name] = counts.get(vc.name, 0) + 1
    out = []
    for i, vc in enumerate(verifiers):
        name = vc.name if counts[vc.name] == 1 else f"{vc.name}_{i}"
        out.append(ExtraTerm(name if part is None else f"{part}/{name}", VerifierSpec(vc.name, dict(vc.params)),
                             float(vc.weight), parts=() if part is None else (part,)))
    return out


def check_builds(rule: RewardRule, tasks: Sequence[Task]) -> None:
    """Build every verifier a run uses once, so a bad name or param is one ConfigError before any model loads."""
    from crossgym.api import load_verifier

    for i, term in enumerate(rule.extras):
        try:
            load_verifier(term.spec)
        except CrossgymError as exc:
            where = f"tasks part {term.parts[0]!r}: verifiers" if term.parts else f"verifiers[{i}]"
            raise ConfigError(str(exc), where=where) from None
    specs = {} if rule.override is None else {rule.override.key(): rule.override}
    if rule.override is None:
        seen: set[int] = set()  # a blend's rows share their pooled tasks' spec objects: key each object once
        for t in tasks:
            if id(t.verifier) not in seen:
                seen.add(id(t.verifier))
                specs.setdefault(t.verifier.key(), t.verifier)
    for spec in specs.values():
        load_verifier(spec)


def metrics_flags(metrics: Mapping[str, float]) -> dict[str, float]:
    return {k: metrics[k] for k in (PASSED, MALFORMED, VERIFIER_ERROR)}


def _with_verifier(task: Task, spec: VerifierSpec) -> Task:
    return Task(id=task.id, prompt=task.prompt, answer=task.answer, verifier=spec, env=task.env, tools=task.tools,
                metadata=task.metadata)
