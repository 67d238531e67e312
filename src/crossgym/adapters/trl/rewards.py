"""TRL reward functions over crossgym's scoring core: one reward function per term of a RewardRule.

TRL calls each of ``reward_funcs`` with the same batch and sums them with ``reward_weights`` (NaN left out). So that
the sum TRL computes is exactly ``Scored.reward`` of the scoring core, every function of a run shares one
:class:`BatchScores`: the first call of a batch scores each row once (task term and extra terms, through
``RewardRule.score``), the others read their column. Task terms are one function per task verifier name (TRL then
logs ``rewards/<verifier>/mean``; rows of other verifiers are None, which TRL leaves out); extra terms are named
``extra/<term>``. The per-sample metrics of crossgym.scoring.metrics go to TRL's ``log_metric``, once per sample, so
TRL averages them per step like every other backend does (a blend part's keys only for its own samples: TRL
averages each key over the values logged, so ``crossgym/part/<p>/...`` is that part's mean, with its completion
length in tokens and its assistant turns). A masked term (on_error "none") is None in its column,
which TRL leaves out of the sum, exactly as the scoring core does.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import Any

from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_COLUMN
from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.rollout.driver import episode_from_json
from crossgym.rollout.tasks import task_from_json
from crossgym.scoring import RecordWriter, RewardRule, Scored
from crossgym.scoring.parts import length_metrics

#: the prefix of an extra term's reward function name (TRL logs rewards/extra/<term>/mean)
EXTRA_PREFIX = "extra/"


def completion_from_trl(value: Any) -> Completion:
    """A Completion from what TRL passes a reward function: a string, or a list of message dicts."""
    if isinstance(value, str):
        return Completion.from_text(value)
    if isinstance(value, dict):
        value = [value]
    msgs = []
    for m in value or ():
        content = m.get("content")
        if isinstance(content, list):  # content blocks
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        msgs.append({"role": m.get("role", "assistant"), "content": content or "",
                     **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}),
                     # kept, as Completion.from_dict keeps them: a tool result's call id, an environment's
                     # message name (openenv_reward finds its step results by it)
                     **{k: m[k] for k in ("tool_call_id", "name") if isinstance(m.get(k), str)}})
    try:
        return Completion(messages=msgs)  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError):  # odd tool-call shapes: keep the text
        return Completion.from_text("".join(str(m.get("content") or "") for m in msgs))


class BatchScores:
    """Scores one TRL batch once for all the reward functions of a run; records and logs it once."""

    def __init__(self, rule: RewardRule, *, sink: RecordWriter | None = None) -> None:
        self.rule = rule
        self.sink = sink
        self._lock = threading.Lock()
        #: the lists of the batch scored last (held, so no later batch can reuse their ids)
        self._batch: tuple[Any, Any, Any] | None = None
        self._scores: list[Scored] = []
        self.tasks: list[Task] = []
        self.completions: list[Completion] = []

    def scores(self, completions: Any, kwargs: dict[str, Any]) -> list[Scored]:
        """Each row's Scored; TRL's reward functions of one batch get the same lists, so it is scored once."""
        key = (completions, kwargs.get(TASK_COLUMN), kwargs.get(COMPLETION_COLUMN))
        with self._lock:
            last = self._batch
            if last is None or completions is None or any(a is not b for a, b in zip(key, last, strict=True)):
                self._scores = self._score(completions, kwargs)
                self._batch = key
            return self._scores

    def _score(self, completions: Any, kwargs: dict[str, Any]) -> list[Scored]:
        tasks_json = kwargs.get(TASK_COLUMN)
        if tasks_json is None:
            raise CrossgymError(f"the dataset has no {TASK_COLUMN!r} column "
                                "(build rows with crossgym.adapters.trl.rows.task_rows)")
        episodes = kwargs.get(COMPLETION_COLUMN)
        tasks: list[Task] = []
        comps: list[Completion] = []
        failures: list[str | None] = []
        for i, tj in enumerate(tasks_json):
            task = task_from_json(tj)
            failed: str | None = None
            if episodes is not None and episodes[i] is not None:
                completion, failed = episode_from_json(episodes[i])
            else:
                completion = completion_from_trl(completions[i])
                ids = kwargs.get("completion_ids")
                if ids is not None and i < len(ids) and ids[i] is not None:  # as eval's engines give them
                    completion = dataclasses.replace(completion, token_ids=tuple(int(t) for t in ids[i]))
            tasks.append(task)
            comps.append(completion)
            failures.append(failed)
        # the batch at once (a GRPO group of code judged in one sandbox call, process pools for the rest); an
        # environment that failed: the episode driver's exception Verdict, every term on_error
        ok = [i for i, f in enumerate(failures) if f is None]
        judged = iter(self.rule.score_many([tasks[i] for i in ok], [comps[i] for i in ok]) if ok else [])
        scored: list[Scored] = [next(judged) if f is None else self.rule.score_error(f, task=t)
                                for t, f in zip(tasks, failures, strict=True)]
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            ids = kwargs.get("completion_ids")
            for i, (s, c) in enumerate(zip(scored, comps, strict=True)):
                for key, value in s.metrics.items():
                    log_metric(key, value)
                length = len(ids[i]) if ids is not None and i < len(ids) and ids[i] is not None else None
                for key, value in length_metrics(s.part, completion_length=length,
                                                 turns=len(c.assistant_messages)).items():
                    log_metric(key, value)
        if self.sink is not None:
            self.sink.write(self.sink.record(t, c, s) for t, c, s in zip(tasks, comps, scored, strict=True))
        self.tasks, self.completions = tasks, comps
        return scored


class TermReward:
    """One TRL reward function: a term of the rule (``term`` None: the task term of tasks verified by ``only``,
    or of every task when ``only`` is None)."""

    def __init__(self, name: str, batch: BatchScores, *, term: str | None = None, only: str | None = None) -> None:
        self.__name__ = name
        self.name = name
        self.batch = batch
        self.term = term
        self.only = only
        #: called after every batch with (tasks, completions, verdicts, rewards): this function's column as TRL
        #: receives it; verdicts are None on rows it does not score
        self.observers: list[Callable[[list[Task], list[Completion], list[Verdict | None], list[float | None]],
                                      None]] = []

    def __repr__(self) -> str:
        return f"TermReward({self.name!r})"

    @property
    def spec(self) -> VerifierSpec | None:
        """The verifier of an extra term (it judges ``extra_task(task, spec)``); None for a task term."""
        return next((t.spec for t in self.batch.rule.extras if t.name == self.term), None)

    def __call__(self, prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float | None]:
        scored = self.batch.scores(completions, kwargs)
        out: list[float | None] = []
        verdicts: list[Verdict | None] = []
        for s, task in zip(scored, self.batch.tasks, strict=True):
            if self.term is not None:
                out.append(s.extras.get(self.term))
                verdicts.append(s.extra_verdicts.get(self.term))
            elif self.only is not None and task.verifier.name != self.only:
                out.append(None)
                verdicts.append(None)
            else:
                out.append(s.task_reward)
                verdicts.append(s.verdict)
        for observer in self.observers:
            observer(list(self.batch.tasks), list(self.batch.completions), verdicts, list(out))
        return out


def task_verifier_names(tasks: Sequence[Task]) -> list[str]:
    """Distinct task verifier names, in first-seen order."""
    seen: dict[str, None] = {}
    for t in tasks:
        seen.setdefault(t.verifier.name, None)
    return list(seen)


def reward_functions(rule: RewardRule, tasks: Sequence[Task], *, sink: RecordWriter | None = None
                     ) -> tuple[list[TermReward], list[float]]:
    """TRL's reward_funcs and reward_weights for ``rule``: a function per task verifier name (weight task_weight),
    then one per extra term (its weight)."""
    batch = BatchScores(rule, sink=sink)
    funcs: list[TermReward] = []
    weights: list[float] = []
    if rule.override is not None:
        funcs.append(TermReward(rule.override.name, batch))
        weights.append(rule.task_weight)
    else:
        for vname in task_verifier_names(tasks):
            funcs.append(TermReward(vname, batch, only=vname))
            weights.append(rule.task_weight)
    for term in rule.extras:
        funcs.append(TermReward(EXTRA_PREFIX + term.name, batch, term=term.name))
        weights.append(term.weight)
    return funcs, weights


def spec_reward(spec: VerifierSpec, *, on_error: float | str = 0.0) -> TermReward:
    """TRL's native reward object for one verifier: a reward function applying ``spec`` to every row."""
    rule = RewardRule(on_error="none" if on_error == "none" else float(on_error), override=spec)
    return reward_functions(rule, ())[0][0]
