"""json_answer: the demo's JSON-addition reward. ``{"answer": N}`` somewhere (0.5), the whole reply exactly that
object, a ```json fence allowed (0.5), and N equal to the task's answer (1.0): 0 to 2 in all.

An empty reply is malformed (reward 0). The reply is read after any ``<think>`` reasoning. The value counted is the
strict object's when the reply is strict, else the lenient matches' when they all agree (hedged values earn none). ``passed`` is the
demo's pass@1 criterion: strict format and the right value. Weights are params; ``normalize=True`` scales to 0..1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed
from crossgym.verifiers.extract import strip_think

#: the lenient pattern: {"answer": <int>} anywhere in the reply (linear: no nested quantifiers); a JSON int's digits
#: are ASCII, as the strict reading's json.loads takes them (\d also matched "٧" and "７", which int() reads as 7)
LENIENT = re.compile(r'\{\s*"answer"\s*:\s*(-?[0-9]{1,30})\s*\}')
#: the lenient objects are looked for in this much of the reply (a reply is a few characters; bounds the scan)
_MAX_SCAN = 1 << 20


def strict_value(text: str) -> int | None:
    """The int when the whole reply (optionally in one ``` or ```json fence) is exactly {"answer": <int>}."""
    s = _unfence(text.strip())
    if len(s) > 200:  # a strict reply is a few characters; never parse big text
        return None
    try:
        obj = json.loads(s, object_pairs_hook=_unique)
    except (ValueError, RecursionError):  # a repeated key too: parsers differ on which one counts
        return None
    if isinstance(obj, dict) and list(obj) == ["answer"] and type(obj["answer"]) is int:
        return int(obj["answer"])
    return None


def _unfence(s: str) -> str:
    """``s`` (stripped) without a leading ```/```json and its spaces and a closing ``` and the spaces before it: what
    ``re.sub(r"^```(?:json)?\\s*|\\s*```$", "", s)`` gave, in linear time (that pattern tried its ``\\s*```$``
    from every space of a run, each try to the run's end: one run of 100,000 spaces took 8.3 s)."""
    if s.startswith("```"):
        s = s[3:]
        if s.startswith("json"):
            s = s[4:]
        s = s.lstrip()
    if s.endswith("```"):
        s = s[:-3].rstrip()
    return s


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a repeated key")
    return dict(pairs)


def score_parts(text: str, target: int) -> dict[str, Any]:
    """{"lenient", "strict", "value_ok", "value"} for one reply (the text after any reasoning). Objects with
    different values ('maybe {"answer": 7} or {"answer": 8}') give no value: hedging earns no value credit."""
    found = {int(m.group(1)) for m in LENIENT.finditer(text[:_MAX_SCAN])}
    strict = strict_value(text)
    value = strict if strict is not None else (next(iter(found)) if len(found) == 1 else None)
    return {"lenient": bool(found), "strict": strict is not None, "value": value,
            "value_ok": value is not None and value == target}


class JsonAnswer(BaseVerifier):
    """The demo's composite JSON-answer reward (answer: the int)."""

    name = "json_answer"
    # 2: ASCII digits only, as JSON writes an int ('{"answer": ٧}' earned the value's credit); 3: the reply is read
    # after the reasoning, objects with different values earn no value credit, a repeated key is not strict
    version = "3"
    description = 'demo reward: {"answer": N} present 0.5 + exact object 0.5 + right N 1.0'

    def __init__(self, *, lenient_weight: float = 0.5, strict_weight: float = 0.5, value_weight: float = 1.0,
                 normalize: bool = False, **params: Any) -> None:
        super().__init__(**params)
        weights = {"lenient_weight": lenient_weight, "strict_weight": strict_weight, "value_weight": value_weight}
        for key, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
                raise VerifierError(f"verifier 'json_answer': {key} must be a non-negative number, got {w!r} "
                                    "(fix: pass e.g. 0.5)")
        self.weights = {k: float(v) for k, v in weights.items()}
        self.normalize = bool(normalize)
        if self.normalize and sum(self.weights.values()) == 0:
            raise VerifierError("verifier 'json_answer': normalize=True needs a positive weight (fix: set one)")

    def score(self, task: Task, completion: Completion) -> Verdict:
        target = task.answer
        if isinstance(target, str) and re.fullmatch(r"-?[0-9]+", target.strip()):
            target = int(target)
        if type(target) is not int:
            raise BadTask(f"answer must be an int, got {target!r}")
        text = strip_think(completion.text)  # an object in the reasoning is not the answer
        if not text.strip():
            raise Malformed("empty reply")
        parts = score_parts(text, target)
        comps = {"lenient": self.weights["lenient_weight"] * parts["lenient"],
                 "strict": self.weights["strict_weight"] * parts["strict"],
                 "value": self.weights["value_weight"] * parts["value_ok"]}
        reward = sum(comps.values())
        if self.normalize:
            reward /= sum(self.weights.values())
        passed = parts["strict"] and parts["value_ok"]
        if passed:
            reason = f"exact object with the right answer {target}"
        elif parts["value"] is None and parts["lenient"]:
            reason = '{"answer": <int>} objects with different values (no value credit)'
        elif parts["value"] is None:
            reason = 'no {"answer": <int>} object in the reply'
        else:
            reason = (f"answer {parts['value']} ({'right' if parts['value_ok'] else f'expected {target}'}), "
                      f"{'exact' if parts['strict'] else 'not only the'} object")
        return Verdict.ok(reward, passed=passed, reason=reason, components=comps)

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example(7, '{"answer": 7}', "pass", "exact object, right value: 2.0"),
            cls.example(7, '```json\n{"answer": 7}\n```', "pass", "a json fence is allowed"),
            cls.example(7, 'The sum is {"answer": 7}.', "fail", "right value but prose around it: 1.5"),
            cls.example(7, '{"answer": 8}', "fail", "exact object, wrong value: 1.0"),
            cls.example(7, "seven", "fail", "no object: 0.0"),
            cls.example(7, "  ", "malformed", "an empty reply is unusable (reward 0)"),
        ]
