"""composite: a weighted sum, the minimum, or all-must-pass of other verifiers given by their specs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from crossgym.protocol.errors import CrossgymError, VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed

_MISSING = object()


#: the largest weight a component may have (weights sum to a finite total: two of 1e308 summed to infinity, and the
#: right answer got "non-finite reward nan")
MAX_WEIGHT = 1e12


class _Part:
    def __init__(self, d: Any, index: int) -> None:
        where = f"verifier 'composite': components[{index}]"
        if not isinstance(d, dict) or "verifier" not in d:
            raise VerifierError(f"{where} must be an object with a 'verifier' spec (and optional weight, "
                                "answer_key, answer, label) (fix: write it as {'verifier': {'name': ...}, "
                                "'weight': 1.0})")
        try:
            self.spec = VerifierSpec.from_dict(d["verifier"])
        except (ValueError, TypeError, AttributeError) as exc:
            raise VerifierError(f"{where}: bad verifier spec: {exc} (fix: write 'verifier' as a registered name or "
                                "{'name': ..., 'params': {...}})") from None
        w = d.get("weight", 1.0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= MAX_WEIGHT:
            raise VerifierError(f"{where}: weight must be a number from 0 to {MAX_WEIGHT:g}, got {w!r} "
                                "(fix: pass e.g. weight: 1.0)")
        self.weight = float(w)
        self.answer_key = d.get("answer_key")
        self.answer = d.get("answer", _MISSING)
        self.label = str(d.get("label") or self.spec.name)
        from crossgym.api import load_verifier

        try:
            self.verifier = load_verifier(self.spec)
        except CrossgymError as exc:
            raise VerifierError(f"{where}: {exc}") from None

    def task_for(self, task: Task) -> Task:
        if self.answer is not _MISSING:
            answer = self.answer
        elif self.answer_key is not None:
            if not isinstance(task.answer, dict) or self.answer_key not in task.answer:
                raise BadTask(f"component {self.label!r} needs task.answer[{self.answer_key!r}]")
            answer = task.answer[self.answer_key]
        else:
            answer = task.answer
        return replace(task, answer=answer, verifier=self.spec)


def in_range(part: _Part, v: Verdict) -> Verdict:
    """``v``, or an exception Verdict when a component's reward is outside 0..1. Weights and ``min`` compare rewards
    on one scale: json_answer's 2.0 (its default, 0..2) outweighed every other component, so one right value passed a
    threshold the others failed, and under ``min`` its 1.0 of 2 read as full marks."""
    if v.error is not None or 0.0 <= v.reward <= 1.0:
        return v
    return Verdict.exception(f"component {part.label!r} ({part.spec.name}) gave reward {v.reward:g}, outside 0..1 "
                             "(fix: scale it to 0..1, e.g. json_answer's normalize: true)")


class Composite(BaseVerifier):
    """Combines other verifiers' verdicts on the same completion.

    answer: passed to every component, unless a component names ``answer_key`` (it then gets
    ``task.answer[answer_key]``) or carries a fixed ``answer``.
    params: components (a list of {"verifier": {"name", "params"}, "weight": 1.0, "answer_key": ..., "answer":
    ..., "label": ...}), mode ("sum": weighted sum, divided by the total weight when normalize | "min": the lowest
    reward | "all": 1.0 when every component passes), normalize (True), threshold (passed when reward >= it;
    default: every component passed), on_error ("propagate": a component timeout/exception makes the whole
    verdict that error | "zero": it scores 0); a component reward outside 0..1 is such an error. A malformed
    component scores 0 and is reported; when every component is malformed so is the composite. components holds
    each label's reward.
    """

    name = "composite"
    version = "2"  # 2: a component reward outside 0..1 is that component's error (json_answer's 2.0 outweighed
    # the other components)
    description = "weighted sum / min / all of other verifiers' specs, with per-component rewards"

    def __init__(self, *, components: list[dict[str, Any]] | None = None, mode: str = "sum",
                 normalize: bool = True, threshold: float | None = None, on_error: str = "propagate",
                 **params: Any) -> None:
        super().__init__(**params)
        if not isinstance(components, list) or not components:
            raise VerifierError("verifier 'composite': components must be a non-empty list of "
                                "{'verifier': {...}, 'weight': ...} (fix: e.g. components: [{'verifier': "
                                "'exact_match'}, {'verifier': 'format_tags', 'weight': 0.2}])")
        if mode not in ("sum", "min", "all"):
            raise VerifierError(f"verifier 'composite': mode={mode!r} must be sum, min or all "
                                "(fix: pass one of them, or leave it out for sum)")
        if on_error not in ("propagate", "zero"):
            raise VerifierError(f"verifier 'composite': on_error={on_error!r} must be 'propagate' or 'zero' "
                                "(fix: pass one of them, or leave it out for propagate)")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
            raise VerifierError(f"verifier 'composite': threshold must be a number, got {threshold!r} "
                                "(fix: pass e.g. threshold: 0.5, or leave it out: passed when every component passed)")
        self.parts = [_Part(d, i) for i, d in enumerate(components)]
        labels = [p.label for p in self.parts]
        for i, p in enumerate(self.parts):  # unique labels for components
            if labels.count(p.label) > 1:
                p.label = f"{p.label}#{i}"
        if mode == "sum" and not any(p.weight for p in self.parts):
            raise VerifierError("verifier 'composite': the weights sum to zero (fix: give a component a weight "
                                "above 0)")
        self.mode, self.normalize, self.threshold, self.on_error = mode, bool(normalize), threshold, on_error
        # the slowest component bounds the whole call
        self.timeout = max(self.timeout, sum(p.verifier.timeout for p in self.parts
                                             if isinstance(p.verifier, BaseVerifier)))

    def score(self, task: Task, completion: Completion) -> Verdict:
        verdicts: list[tuple[_Part, Verdict]] = []
        for p in self.parts:
            v = in_range(p, p.verifier.verify(p.task_for(task), completion))
            if v.error is not None and v.error_kind != "malformed" and self.on_error == "propagate":
                return Verdict(reward=0.0, passed=False, components={p.label: 0.0},
                               reason=f"{p.label}: {v.reason}", error=v.error)
            verdicts.append((p, v))
        if all(v.error_kind == "malformed" for _, v in verdicts):
            raise Malformed("; ".join(f"{p.label}: {v.reason}" for p, v in verdicts))
        rewards = {p.label: (v.reward if v.error is None else 0.0) for p, v in verdicts}
        all_passed = all(v.passed for _, v in verdicts)
        if self.mode == "sum":
            total = sum(p.weight * rewards[p.label] for p in self.parts)
            reward = total / sum(p.weight for p in self.parts) if self.normalize else total
        elif self.mode == "min":
            reward = min(rewards.values())
        else:
            reward = float(all_passed)
        passed = all_passed if self.threshold is None else reward >= self.threshold
        reason = "; ".join(f"{p.label}={rewards[p.label]:.3g}" + (f" ({v.error_kind})" if v.error else "")
                           for p, v in verdicts)
        return Verdict.ok(reward, passed=passed, components=rewards, reason=reason)

    @classmethod
    def examples(cls) -> list[Example]:
        params = {"components": [
            {"verifier": {"name": "format_tags", "params": {"tags": ["think", "answer"]}}, "weight": 0.2,
             "answer": None, "label": "format"},
            {"verifier": {"name": "numeric"}, "weight": 0.8, "label": "correct"}]}
        return [
            cls.example(42, "<think>6*7</think><answer>42</answer>", "pass", params=params),
            cls.example(42, "<answer>42</answer>", "fail", "right but unformatted: reward 0.8", params=params),
            cls.example(42, "<think>6*7</think><answer>41</answer>", "fail", "formatted but wrong: 0.2",
                        params=params),
            cls.example(42, "", "malformed", "every component malformed", params=params),
        ]
