"""veRL's custom reward function: rebuild the task and its verifier from a row's extra_info and score the completion.

veRL calls ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)`` once per
sample (solution_str is the decoded response, special tokens skipped). The generated reward module of a run
(``reward_module_source``) binds the run's settings (on_error, task_weight, extra verifiers) and calls ``score``.

Reward semantics are crossgym's everywhere: the task term is ``Verdict.reward``; a verifier error or timeout scores
``on_error``; a "malformed" verdict keeps its own reward. veRL cannot mask a missing reward, so on_error must be a
number here. The returned dict has the same keys for every sample (veRL stacks them into arrays per key).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec

log = logging.getLogger(__name__)

#: extra_info keys written by crossgym.adapters.verl.dataset (and by the agent loop, for whole episodes).
TASK_KEY = "crossgym_task"
COMPLETION_KEY = "crossgym_completion"
#: Keys of the per-sample info dict, in order: always the same, whatever the verifier.
INFO_KEYS = ("score", "acc", "task_reward", "malformed", "verifier_error", "error", "components")


def completion_for(solution_str: str, extra_info: Mapping[str, Any] | None) -> Completion:
    """The whole episode when the agent loop left it in extra_info, else the decoded response as one reply."""
    raw = (extra_info or {}).get(COMPLETION_KEY)
    if raw:
        try:
            return Completion.from_dict(json.loads(raw) if isinstance(raw, str) else raw)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable %s in extra_info (%s): scoring the decoded response instead", COMPLETION_KEY, exc)
    return Completion.from_text(solution_str or "")


def task_for(extra_info: Mapping[str, Any] | None) -> Task:
    """The crossgym Task a row carries (its JSON under extra_info["crossgym_task"])."""
    from crossgym.rollout.tasks import task_from_json

    raw = (extra_info or {}).get(TASK_KEY)
    if not raw:
        raise CrossgymError(f"the row's extra_info has no {TASK_KEY!r}: it was not written by crossgym "
                            "(build parquet files with `crossgym plan`/`train --backend verl`)")
    return task_from_json(raw) if isinstance(raw, str) else Task.from_dict(raw)


def judge(spec: VerifierSpec, task: Task, completion: Completion) -> Verdict:
    """The verifier's Verdict; a verifier that cannot be built or breaks its contract gives an "exception" Verdict."""
    from crossgym.adapters.common import safe_verify
    from crossgym.api import load_verifier

    try:
        verifier = load_verifier(spec)
    except CrossgymError as exc:
        return Verdict.exception(str(exc))
    return safe_verify(verifier, task, completion)


def reward_of(verdict: Verdict, on_error: float) -> float:
    """Verdict.reward, or on_error for a verifier error/timeout (crossgym's rule, see adapters.common)."""
    from crossgym.adapters.common import reward_from_verdict

    value = reward_from_verdict(verdict, on_error)
    return float(on_error) if value is None else float(value)


def score(solution_str: str, extra_info: Mapping[str, Any] | None, *, on_error: float = 0.0,
          task_weight: float = 1.0, extra: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """veRL's reward dict for one sample: ``score`` is task_weight x task reward + sum(weight x extra reward)."""
    completion = completion_for(solution_str, extra_info)
    try:
        task = task_for(extra_info)
    except (CrossgymError, ValueError, KeyError, TypeError) as exc:
        verdict = Verdict.exception(f"cannot rebuild the task: {exc}")
        task = None
    else:
        verdict = judge(task.verifier, task, completion)
    task_reward = reward_of(verdict, on_error)
    total = task_weight * task_reward
    info: dict[str, Any] = {}
    for term in extra:
        spec = VerifierSpec.from_dict(term["spec"])
        v = judge(spec, task, completion) if task is not None else verdict
        r = reward_of(v, on_error)
        info[f"extra/{term['name']}"] = r
        total += float(term.get("weight", 1.0)) * r
    kind = verdict.error_kind
    out: dict[str, Any] = {
        "score": float(total),
        "acc": 1.0 if verdict.passed else 0.0,
        "task_reward": task_reward,
        "malformed": 1.0 if kind == "malformed" else 0.0,
        "verifier_error": 1.0 if kind in ("timeout", "exception") else 0.0,
        "error": verdict.error or "",
        # a JSON string: components differ per verifier, and veRL needs the same keys for every sample
        "components": json.dumps(verdict.components, sort_keys=True),
    }
    out.update(info)
    return out


def compute_score(data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Mapping[str, Any] | None = None, *, on_error: float = 0.0, task_weight: float = 1.0,
                  extra: Sequence[Mapping[str, Any]] = (), **_: Any) -> dict[str, Any]:
    """veRL's custom_reward_function signature; settings may come as reward_kwargs. Unknown kwargs are ignored."""
    return score(solution_str, extra_info, on_error=on_error, task_weight=task_weight, extra=extra)


class SpecReward:
    """veRL's native reward object for one verifier: a compute_score function applying ``spec`` to every row."""

    def __init__(self, spec: VerifierSpec, *, on_error: float = 0.0) -> None:
        self.spec = spec
        self.on_error = float(on_error)
        self.__name__ = "compute_score"

    def __repr__(self) -> str:
        return f"SpecReward({self.spec.key()})"

    def __call__(self, data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                 extra_info: Mapping[str, Any] | None = None, **_: Any) -> dict[str, Any]:
        completion = completion_for(solution_str, extra_info)
        try:
            task = task_for(extra_info)
        except (CrossgymError, ValueError, KeyError, TypeError) as exc:
            verdict = Verdict.exception(f"cannot rebuild the task: {exc}")
        else:
            verdict = judge(self.spec, task, completion)
        reward = reward_of(verdict, self.on_error)
        return {"score": reward, "acc": 1.0 if verdict.passed else 0.0, "error": verdict.error or ""}


def reward_settings(run: Any) -> dict[str, Any]:
    """The run's reward settings the generated module binds: on_error, task_weight and the extra verifiers."""
    from crossgym.protocol.errors import ConfigError

    if run.on_error == "none":
        raise ConfigError("on_error 'none' cannot be honoured by veRL: it needs a number for every sample",
                          where="on_error", fix="set on_error to a number (e.g. 0.0) for the verl backend")
    extra = []
    names: set[str] = set()
    for i, vc in enumerate(run.verifiers):
        name = vc.name if vc.name not in names else f"{vc.name}_{i}"
        names.add(name)
        extra.append({"name": name, "spec": {"name": vc.name, "params": dict(vc.params)}, "weight": vc.weight})
    return {"on_error": float(run.on_error), "task_weight": float(run.task_weight), "extra": extra}


_MODULE = '''"""veRL custom reward function generated by crossgym for {what}.

veRL loads it through reward.custom_reward_function.path=<this file> and .name=compute_score; every sample's task
and verifier are rebuilt from its extra_info by crossgym (which must be importable where veRL runs).
"""

from crossgym.adapters.verl.reward import score

SETTINGS = {settings}


def compute_score(data_source=None, solution_str="", ground_truth=None, extra_info=None, **kwargs):
    """crossgym's reward for one sample: a dict with "score" and the same extra keys for every sample."""
    settings = {{**SETTINGS, **{{k: v for k, v in kwargs.items() if k in SETTINGS}}}}
    return score(solution_str, extra_info, **settings)
'''


def reward_module_source(settings: Mapping[str, Any], *, what: str = "a crossgym run") -> str:
    """The text of the generated reward module for ``settings`` (see ``reward_settings``)."""
    import pprint

    return _MODULE.format(what=what, settings=pprint.pformat(dict(settings), sort_dicts=True, width=100))
