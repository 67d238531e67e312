"""json_valid and json_match: the completion is JSON, and (json_match) equals the expected value structurally."""

from __future__ import annotations

import json
import math
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import JSONTooDeep, MalformedJSON, parse_json_text
from crossgym.verifiers.base import BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import strip_think

JSON_TYPES = {"object": dict, "array": list, "string": str, "number": (int, float), "integer": int,
              "boolean": bool, "null": type(None)}
FENCED = ("allow", "require", "forbid")


def json_type(v: Any) -> str:
    """The JSON type name of a parsed value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(v), type(v).__name__)


class Unreadable(Malformed):
    """No JSON can be judged at all (a blank completion, nesting past the limit): malformed even for json_valid,
    which fails invalid JSON. Told apart by type: a message can hold the completion's own text (a key named
    "blank" in a duplicate-key error was malformed where any other key failed)."""


class _JsonBase(BaseVerifier):
    def __init__(self, *, fenced: str = "allow", allow_surrounding: bool = False, think: bool = True,
                 **params: Any) -> None:
        super().__init__(**params)
        if fenced not in FENCED:
            raise VerifierError(f"verifier {self.name!r}: fenced={fenced!r} must be one of {', '.join(FENCED)}")
        self.fenced, self.allow_surrounding, self.think = fenced, bool(allow_surrounding), bool(think)

    def parse(self, completion: Completion) -> Any:
        """The completion's JSON value; Malformed (with the parse error) when there is none."""
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Unreadable("blank completion")
        try:
            return parse_json_text(text, fenced=self.fenced, allow_surrounding=self.allow_surrounding,
                                   unique_keys=True)
        except JSONTooDeep as exc:
            raise Unreadable(str(exc)) from None
        except MalformedJSON as exc:
            raise Malformed(str(exc)) from None


class JsonValid(_JsonBase):
    """The completion is one JSON value (optionally of a given type), and nothing else.

    answer: null, or a JSON type name ("object", "array", "string", "number", "integer", "boolean", "null").
    params: fenced ("allow": bare or one ```json block | "require" | "forbid"), allow_surrounding (False: prose
    around the JSON fails; True: the first balanced {...}/[...] is taken), think (True: read after </think>).
    Invalid JSON, duplicate keys, NaN/Infinity or the wrong type fail; a blank completion or JSON nested over
    200 levels is malformed.
    """

    name = "json_valid"
    version = "2"  # 2: malformed by the error's kind, not its words (a duplicate key named "blank" was malformed)
    description = "the completion parses as JSON (optionally a given type; fenced block allowed/required)"

    def score(self, task: Task, completion: Completion) -> Verdict:
        want = task.answer
        if want is not None and want not in JSON_TYPES:
            from crossgym.verifiers.base import BadTask

            raise BadTask(f"json_valid answer must be null or one of {', '.join(JSON_TYPES)}, got {want!r}")
        try:
            value = self.parse(completion)
        except Unreadable:
            raise
        except Malformed as exc:
            return Verdict.ok(0.0, reason=str(exc))
        got = json_type(value)
        if want is not None and not (got == want or (want == "number" and got == "integer")):
            return Verdict.ok(0.0, reason=f"JSON {got}, expected {want}")
        return Verdict.ok(1.0, reason=f"valid JSON {got}")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example("object", '```json\n{"name": "Ada", "born": 1815}\n```', "pass", "one fenced block"),
            cls.example(None, '[1, 2, 3]', "pass"),
            cls.example("object", '{"name": "Ada",}', "fail", "trailing comma"),
            cls.example("object", 'Here you go: {"name": "Ada"}', "fail", "prose around the JSON"),
            cls.example("object", "[" * 1000 + "]" * 1000, "malformed", "nested 1000 deep"),
            cls.example(None, "", "malformed", "blank"),
        ]


class _Matcher:
    """Structural comparison of expected vs got with options; counts matched leaves for partial credit."""

    def __init__(self, subset: bool, list_order: bool, key_order: bool, rel_tol: float, abs_tol: float,
                 case_sensitive: bool) -> None:
        self.subset, self.list_order, self.key_order = subset, list_order, key_order
        self.rel_tol, self.abs_tol, self.case_sensitive = rel_tol, abs_tol, case_sensitive

    def leaf_eq(self, e: Any, g: Any) -> bool:
        if isinstance(e, bool) or isinstance(g, bool) or e is None or g is None:
            return type(e) is type(g) and e == g
        if isinstance(e, (int, float)) and isinstance(g, (int, float)):
            return e == g or math.isclose(e, g, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        if isinstance(e, str) and isinstance(g, str):
            return e == g if self.case_sensitive else e.casefold() == g.casefold()
        return False

    def compare(self, e: Any, g: Any) -> tuple[int, int, str]:
        """(matched leaves, expected leaves, first difference or "")."""
        if isinstance(e, dict):
            total = sum(self.leaves(v) for v in e.values()) or 1
            if not isinstance(g, dict):
                return 0, total, f"expected an object, got {json_type(g)}"
            matched, diff = 0, ""
            for k, v in e.items():
                if k not in g:
                    diff = diff or f"missing key {clip(k, 30)!r}"
                    continue
                m, _, d = self.compare(v, g[k])
                matched += m
                diff = diff or (f"{clip(k, 30)}: {d}" if d else "")
            if not self.subset and not diff:
                extra = [k for k in g if k not in e]
                if extra:
                    diff = f"unexpected key {clip(extra[0], 30)!r}"
            if self.key_order and not diff and [k for k in g if k in e] != list(e):
                diff = "keys are in a different order"
            if not e:
                matched = 1 if not diff else 0
            return matched, total, diff
        if isinstance(e, list):
            total = sum(self.leaves(v) for v in e) or 1
            if not isinstance(g, list):
                return 0, total, f"expected an array, got {json_type(g)}"
            if not self.list_order:
                return self._unordered(e, g, total)
            matched, diff = 0, ""
            for i, v in enumerate(e):
                if i >= len(g):
                    diff = diff or f"array too short ({len(g)} < {len(e)})"
                    break
                m, _, d = self.compare(v, g[i])
                matched += m
                diff = diff or (f"[{i}]: {d}" if d else "")
            if len(g) > len(e) and not diff:
                diff = f"array too long ({len(g)} > {len(e)})"
            if not e:
                matched = 1 if not diff else 0
            return matched, total, diff
        ok = self.leaf_eq(e, g)
        return int(ok), 1, "" if ok else f"{clip(json.dumps(g), 30)} != {clip(json.dumps(e), 30)}"

    def _unordered(self, e: list[Any], g: list[Any], total: int) -> tuple[int, int, str]:
        if len(e) * len(g) > 250_000:
            raise Malformed("arrays too long for order-free matching")
        left = list(range(len(g)))
        matched, diff = 0, ""
        for i, v in enumerate(e):
            best, best_m = None, -1
            for j in left:
                m, _, d = self.compare(v, g[j])
                if not d:
                    best, best_m = j, m
                    break
                if m > best_m:
                    best, best_m = j, m
            if best is None:
                diff = diff or f"element {i} has no match"
                continue
            m, _, d = self.compare(v, g[best])
            matched += m
            diff = diff or (f"element {i} has no exact match" if d else "")
            left.remove(best)
        if left and not diff:
            diff = f"{len(left)} unexpected array element(s)"
        return matched, total, diff

    def leaves(self, v: Any) -> int:
        if isinstance(v, dict):
            return sum(self.leaves(x) for x in v.values()) or 1
        if isinstance(v, list):
            return sum(self.leaves(x) for x in v) or 1
        return 1


class JsonMatch(_JsonBase):
    """The completion's JSON equals the expected value structurally (object key order never matters unless asked).

    answer: the expected JSON value.
    params: subset (False: True lets the completion have extra object keys), list_order (True: False matches
    array elements in any order), key_order (False: True requires the expected key order), rel_tol (0.0) and
    abs_tol (0.0) for numbers, case_sensitive (True, string values), reward ("all": 1.0 on a full match |
    "fraction": share of expected leaf values matched), plus json_valid's fenced / allow_surrounding / think.
    true/false never equal 1/0. Text that is not JSON, or JSON with duplicate keys, is malformed.
    """

    name = "json_match"
    version = "1"
    description = "structural JSON equality (subset, list/key order, number tolerance, partial credit)"

    def __init__(self, *, subset: bool = False, list_order: bool = True, key_order: bool = False,
                 rel_tol: float = 0.0, abs_tol: float = 0.0, case_sensitive: bool = True, reward: str = "all",
                 **params: Any) -> None:
        super().__init__(**params)
        for k, v in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise VerifierError(f"verifier 'json_match': {k} must be a non-negative number, got {v!r}")
        if reward not in ("all", "fraction"):
            raise VerifierError(f"verifier 'json_match': reward={reward!r} must be 'all' or 'fraction'")
        self.matcher = _Matcher(bool(subset), bool(list_order), bool(key_order), float(rel_tol), float(abs_tol),
                                bool(case_sensitive))
        self.reward = reward

    def score(self, task: Task, completion: Completion) -> Verdict:
        got = self.parse(completion)
        matched, total, diff = self.matcher.compare(task.answer, got)
        frac = matched / total if total else 1.0
        if not diff:
            return Verdict.ok(1.0, components={"matched": 1.0}, reason="JSON matches")
        reward = frac if self.reward == "fraction" else 0.0
        return Verdict.ok(reward, passed=False, components={"matched": frac}, reason=diff)

    @classmethod
    def examples(cls) -> list[Example]:
        exp = {"city": "Paris", "temp_c": 21.5, "tags": ["sunny", "warm"]}
        return [
            cls.example(exp, '{"tags": ["sunny", "warm"], "temp_c": 21.5, "city": "Paris"}', "pass",
                        "key order ignored"),
            cls.example(exp, '{"city": "Paris", "temp_c": 21.49, "tags": ["warm", "sunny"]}', "pass",
                        "tolerance and any list order", params={"abs_tol": 0.05, "list_order": False}),
            cls.example(exp, '{"city": "Paris", "temp_c": 21.5, "tags": ["sunny", "warm"], "x": 1}', "fail",
                        "extra key"),
            cls.example(exp, '{"city": "Paris", "city": "Rome", "temp_c": 21.5, "tags": []}', "malformed",
                        "duplicate key"),
            cls.example(exp, "It is sunny in Paris.", "malformed", "not JSON"),
        ]
