"""json_valid and json_match: the completion is JSON, and (json_match) equals the expected value structurally."""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from fractions import Fraction
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import JSONTooDeep, MalformedJSON, read_json_text
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
            raise VerifierError(f"verifier {self.name!r}: fenced={fenced!r} must be one of {', '.join(FENCED)} "
                                "(fix: pass one of them, or leave it out)")
        self.fenced, self.allow_surrounding, self.think = fenced, bool(allow_surrounding), bool(think)

    def parse(self, completion: Completion) -> Any:
        """The completion's JSON value; Malformed (with the parse error) when there is none."""
        return self.read(completion)[0]

    def read(self, completion: Completion) -> tuple[Any, bool]:
        """``parse``'s value, and whether it is known to hold no infinite float (``json_text.read_strict``)."""
        text = strip_think(completion.text) if self.think else completion.text
        try:
            return read_json_text(text, fenced=self.fenced, allow_surrounding=self.allow_surrounding,
                                  unique_keys=True)
        except JSONTooDeep as exc:
            raise Unreadable(str(exc)) from None
        except MalformedJSON as exc:
            if not text.strip():
                raise Unreadable("blank completion") from None
            raise Malformed(str(exc)) from None


class JsonValid(_JsonBase):
    """The completion is one JSON value (optionally of a given type), and nothing else.

    answer: null, or a JSON type name ("object", "array", "string", "number", "integer", "boolean", "null").
    params: fenced ("allow": bare or one ```json block | "require" | "forbid"), allow_surrounding (False: prose
    around the JSON fails; True: the first balanced {...}/[...] is taken), think (True: read after </think>).
    Invalid JSON, duplicate keys, the NaN/Infinity tokens (a number such as 1e400 is valid JSON) or the wrong type
    fail; a blank completion or JSON nested over 200 levels is malformed.
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


#: the most steps (element pairs tried, steps of the matching search, at every depth) that matching arrays in any
#: order may take in one comparison; past it the completion is malformed ("arrays too large to match in any
#: order"): the verifier runs inline, and pairwise matching nested lists multiplied (81 KB took 5 s)
ORDER_FREE_STEPS = 100_000


def numbers_close(e: int | float, g: int | float, rel_tol: float, abs_tol: float) -> bool:
    """e equals g, or is within the tolerance (math.isclose's rule), for any pair of JSON numbers: never raises.
    Integers compare exactly (2**60 + 1 is not 2**60); a number too large for a float (400 digits) is compared
    as a fraction, where math.isclose raised OverflowError."""
    if e == g:  # Python compares int and float exactly
        return True
    if not (rel_tol or abs_tol):
        return False
    try:
        fe, fg = float(e), float(g)
    except OverflowError:
        fe = fg = math.nan
    if fe == fe and fg == fg and fe != fg:  # both fit a float and still differ there: math.isclose, as ever
        return math.isclose(fe, fg, rel_tol=rel_tol, abs_tol=abs_tol)
    for x in (e, g):
        if isinstance(x, float) and not math.isfinite(x):
            return False  # an infinity is close to nothing but itself (NaN to nothing)
    fre, frg = Fraction(e), Fraction(g)
    return abs(fre - frg) <= max(Fraction(rel_tol) * max(abs(fre), abs(frg)), Fraction(abs_tol))


class _TooLarge(Exception):
    """The order-free matching budget ran out."""


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
            return numbers_close(e, g, self.rel_tol, self.abs_tol)
        if isinstance(e, str) and isinstance(g, str):
            return e == g if self.case_sensitive else e.casefold() == g.casefold()
        return False

    def compare(self, e: Any, g: Any, steps: int | None = None) -> tuple[int, int, str]:
        """(matched leaves, expected leaves, first difference or ""); Malformed when matching arrays in any order
        would take more than ``steps`` (ORDER_FREE_STEPS)."""
        steps = ORDER_FREE_STEPS if steps is None else steps
        try:
            return _Comparison(self, steps).compare(e, g)
        except _TooLarge:
            raise Malformed(f"arrays too large to match in any order (over {steps:,} element comparisons)") \
                from None


class _Comparison:
    """One comparison: the order-free matching budget, shared by every depth, and caches by object identity (the
    values are alive for the whole comparison, and every cached figure depends on the value only)."""

    def __init__(self, m: _Matcher, steps: int) -> None:
        self.m, self.left = m, steps
        self.exact = not (m.rel_tol or m.abs_tol)  # no tolerance: "matches" is transitive
        self.ids: dict[int, int] = {}  # id(value) -> id of its canonical form (equal forms: equal values)
        self.forms: dict[Any, int] = {}
        self.sizes: dict[int, int] = {}  # id(value) -> leaves
        self.eqs: dict[tuple[int, int], bool] = {}
        self.charged = 0  # > 0 inside order-free matching: compare() spends steps there

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise _TooLarge

    def canon(self, v: Any) -> int:
        """A small integer naming v's value as the options see it: equal integers for equal values (so equal
        numbers mean a full match under any option; "any order" arrays compare as sorted multisets)."""
        got = self.ids.get(id(v))
        if got is not None:
            return got
        m = self.m
        form: Any
        if isinstance(v, bool):
            form = ("b", v)
        elif isinstance(v, (int, float)):
            form = ("n", v) if v == v else ("nan", id(v))  # 1 and 1.0 are one form; NaN equals nothing
        elif isinstance(v, str):
            form = ("s", v if m.case_sensitive else v.casefold())
        elif v is None:
            form = ("z",)
        elif isinstance(v, list):
            kids = [self.canon(x) for x in v]
            form = ("a", tuple(kids) if m.list_order else tuple(sorted(kids)))
        elif isinstance(v, dict):
            items = [(k, self.canon(x)) for k, x in v.items()]
            form = ("o", tuple(items) if m.key_order else frozenset(items))
        else:
            form = ("?", id(v))  # not a JSON value: equal to nothing, as leaf_eq has it
        got = self.forms.setdefault(form, len(self.forms))
        self.ids[id(v)] = got
        return got

    def leaves(self, v: Any) -> int:
        if not isinstance(v, (dict, list)):
            return 1
        got = self.sizes.get(id(v))
        if got is None:
            got = sum(self.leaves(x) for x in (v.values() if isinstance(v, dict) else v)) or 1
            self.sizes[id(v)] = got
        return got

    # ------------------------------------------------------------------ full comparison, with partial credit
    def compare(self, e: Any, g: Any) -> tuple[int, int, str]:
        m = self.m
        if self.charged:
            self.spend(1 + (len(e) + len(g) if isinstance(e, dict) and isinstance(g, dict) else 0))
        if isinstance(e, dict):
            total = self.leaves(e)
            if not isinstance(g, dict):
                return 0, total, f"expected an object, got {json_type(g)}"
            if not m.list_order and self.canon(e) == self.canon(g):
                return total, total, ""
            matched, diff, total = 0, "", 0 if e else 1
            for k, v in e.items():
                if k not in g:
                    diff = diff or f"missing key {clip(k, 30)!r}"
                    total += self.leaves(v)
                    continue
                n, t, d = self.compare(v, g[k])
                matched, total = matched + n, total + t
                diff = diff or (f"{clip(k, 30)}: {d}" if d else "")
            if not m.subset:
                extra = [k for k in g if k not in e]
                if extra:
                    diff = diff or f"unexpected key {clip(extra[0], 30)!r}"
                    total += sum(self.leaves(g[k]) for k in extra)  # (extras cost as much as what is missing)
            if m.key_order and not diff and [k for k in g if k in e] != list(e):
                diff = "keys are in a different order"
            if not e:
                matched = 1 if not diff else 0
            return matched, total, diff
        if isinstance(e, list):
            total = self.leaves(e)
            if not isinstance(g, list):
                return 0, total, f"expected an array, got {json_type(g)}"
            if not m.list_order:
                return self.unordered(e, g, total)
            matched, diff, total = 0, "", 0 if e else 1
            for i, v in enumerate(e):
                if i >= len(g):
                    diff = diff or f"array too short ({len(g)} < {len(e)})"
                    total += sum(self.leaves(x) for x in e[i:])
                    break
                n, t, d = self.compare(v, g[i])
                matched, total = matched + n, total + t
                diff = diff or (f"[{i}]: {d}" if d else "")
            if len(g) > len(e):
                diff = diff or f"array too long ({len(g)} > {len(e)})"
                total += sum(self.leaves(x) for x in g[len(e):])
            if not e:
                matched = 1 if not diff else 0
            return matched, total, diff
        ok = m.leaf_eq(e, g)
        return int(ok), 1, "" if ok else f"{clip(json.dumps(g), 30)} != {clip(json.dumps(e), 30)}"

    def unordered(self, e: list[Any], g: list[Any], total: int) -> tuple[int, int, str]:
        if len(e) == len(g) and self.canon(e) == self.canon(g):
            return total, total, ""
        pairs = self.matching(e, g)
        matched = sum(self.leaves(e[i]) for i in pairs)
        total = matched if e else 1  # (each element's own total as compared, what no element matched too: below)
        used = set(pairs.values())
        left = [j for j in range(len(g)) if j not in used]  # g's elements no element of e matches
        index = _Index(self, g, left)
        gone: set[int] = set()
        first, diff = 0, ""
        self.charged += 1
        try:
            for i, v in enumerate(e):  # partial credit: each unmatched element takes the closest one left
                if i in pairs:
                    continue
                while first < len(left) and left[first] in gone:
                    first += 1
                if first == len(left):
                    diff = diff or f"element {i} has no match"
                    total += self.leaves(v)
                    continue
                best, best_n = left[first], 0  # the matching is maximum: no element left matches v whole
                best_t = None
                for j in index.near(v):  # those sharing a value with v (or all of its type when it has none)
                    self.spend()
                    if j not in gone:
                        n, t, _ = self.compare(v, g[j])
                        if n > best_n:
                            best, best_n, best_t = j, n, t
                if best_t is None:  # (nothing of v in any element left: the one it takes costs the larger)
                    best_t = max(self.leaves(v), self.leaves(g[best]))
                matched += best_n
                total += best_t
                diff = diff or f"element {i} has no exact match"
                gone.add(best)
        finally:
            self.charged -= 1
        if len(left) > len(gone):
            diff = diff or f"{len(left) - len(gone)} unexpected array element(s)"
            total += sum(self.leaves(g[j]) for j in left if j not in gone)  # (extras cost as much as what is missing)
        return matched, total, diff

    # ------------------------------------------------------------------ "matches", for the matching
    def eq(self, e: Any, g: Any) -> bool:
        """compare(e, g) finds no difference (cached, and within the budget)."""
        key = (id(e), id(g))
        got = self.eqs.get(key)
        if got is not None:
            return got
        self.spend()
        got = self._eq(e, g)
        self.eqs[key] = got
        return got

    def _eq(self, e: Any, g: Any) -> bool:
        m = self.m
        if isinstance(e, (dict, list)) and type(e) is not type(g):
            return False
        if self.exact and not m.subset or self.canon(e) == self.canon(g):
            return self.canon(e) == self.canon(g)  # without tolerance or subset, matching is equality
        if isinstance(e, dict):
            if len(g) < len(e) or not m.subset and len(g) != len(e):
                return False
            self.spend(len(e) + (len(g) if m.key_order else 0))
            if any(k not in g or not self.eq(v, g[k]) for k, v in e.items()):
                return False
            return not m.key_order or [k for k in g if k in e] == list(e)
        if isinstance(e, list):
            return len(e) == len(g) and len(self.matching(e, g, perfect=True)) == len(e)
        return m.leaf_eq(e, g)

    def _equal_pairs(self, e: list[Any], g: list[Any], rest_e: list[int], rest_g: list[int]) -> dict[int, int]:
        """i -> j for elements of e equal to one of g's (by canonical form), each j used once."""
        spare: dict[int, list[int]] = {}
        for j in reversed(rest_g):
            spare.setdefault(self.canon(g[j]), []).append(j)
        pairs: dict[int, int] = {}
        for i in rest_e:
            js = spare.get(self.canon(e[i]))
            if js:
                pairs[i] = js.pop()
        return pairs

    def matching(self, e: list[Any], g: list[Any], perfect: bool = False) -> dict[int, int]:
        """A maximum matching of e's elements to g's (i -> j where eq(e[i], g[j])): exact equals first (safe
        without tolerance, where "matches" is transitive), then the elements side by side, then sorted, and the
        rest by augmenting paths (Kuhn), every step within the budget. perfect: give up at the first element
        that cannot be matched (eq needs all of them)."""
        pairs: dict[int, int] = {}
        rest_e, rest_g = list(range(len(e))), list(range(len(g)))
        self.spend(8 + len(e) + len(g))  # a call's own work (the index, sorting) counts too
        if self.exact:
            pairs = self._equal_pairs(e, g, rest_e, rest_g)
            if not self.m.subset:
                return pairs  # equality is all that matches
            used = set(pairs.values())
            rest_e = [i for i in rest_e if i not in pairs]
            rest_g = [j for j in rest_g if j not in used]
        for order in (None, self._sort_key):  # a perfect matching side by side, or in sorted order?
            if not rest_e or len(rest_e) != len(rest_g):
                break
            se = rest_e if order is None else sorted(rest_e, key=lambda i: order(e[i]))
            sg = rest_g if order is None else sorted(rest_g, key=lambda j: order(g[j]))
            if all(self.eq(e[i], g[j]) for i, j in zip(se, sg, strict=True)):
                pairs.update(zip(se, sg, strict=True))
                return pairs
        index = _Index(self, g, rest_g) if len(rest_g) > 8 else None
        cands: dict[int, list[int]] = {}
        owner: dict[int, int] = {}  # j -> i
        if not self.exact:  # equals first (likely, and cheap); the augmenting paths can still undo them
            pairs = self._equal_pairs(e, g, rest_e, rest_g)
            owner = {j: i for i, j in pairs.items()}
        for i in rest_e:  # one breadth-first search for an augmenting path from each element left
            if i in pairs:
                continue
            prev: dict[int, int] = {}  # j -> the i it was reached from
            queue, head, found = [i], 0, None
            while head < len(queue) and found is None:
                u = queue[head]
                head += 1
                if u not in cands:
                    cands[u] = index.candidates(e[u]) if index else rest_g
                for j in cands[u]:
                    self.spend()
                    if j in prev or not self.eq(e[u], g[j]):
                        continue
                    prev[j] = u
                    if j not in owner:
                        found = j
                        break
                    queue.append(owner[j])
            while found is not None:  # flip the path
                u = prev[found]
                nxt = pairs.get(u) if u != i else None
                owner[found], pairs[u] = u, found
                found = nxt
            if perfect and i not in pairs:
                break
        return pairs

    def _sort_key(self, v: Any) -> tuple[int, Any]:
        if isinstance(v, bool) or v is None:
            return 3, self.canon(v)
        if isinstance(v, (int, float)):
            return (0, v) if v == v else (4, 0)
        if isinstance(v, str):
            return 1, v if self.m.case_sensitive else v.casefold()
        return 2, self.canon(v)


class JsonMatch(_JsonBase):
    """The completion's JSON equals the expected value structurally (object key order never matters unless asked).

    answer: the expected JSON value.
    params: subset (False: True lets the completion have extra object keys), list_order (True: False matches
    array elements in any order), key_order (False: True requires the expected key order), rel_tol (0.0) and
    abs_tol (0.0) for numbers, case_sensitive (True, string values), reward ("all": 1.0 on a full match |
    "fraction": the leaf values matched over the expected ones plus those of every key or element the completion
    has that the answer has not, so an extra costs as much as a missing one and listing every candidate earns no
    more than their share), plus json_valid's fenced / allow_surrounding / think.
    true/false never equal 1/0. Text that is not JSON, or JSON with duplicate keys, is malformed. With list_order
    False, elements pair up by a maximum matching; arrays that would take over ORDER_FREE_STEPS steps to match (at
    all depths together) are malformed.
    """

    name = "json_match"
    version = "3"  # 2: any-order arrays by a maximum matching (greedy refused right answers) within one budget for
    # the whole comparison (nested lists took seconds); numbers never raise (a 400-digit integer), integers exact;
    # 3: "fraction" counts extra keys and elements (["red", "green", + 6 more] earned 1.0 for ["red", "green"])
    description = "structural JSON equality (subset, list/key order, number tolerance, partial credit)"

    def __init__(self, *, subset: bool = False, list_order: bool = True, key_order: bool = False,
                 rel_tol: float = 0.0, abs_tol: float = 0.0, case_sensitive: bool = True, reward: str = "all",
                 **params: Any) -> None:
        super().__init__(**params)
        for k, v in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise VerifierError(f"verifier 'json_match': {k} must be a non-negative number, got {v!r} "
                                    "(fix: pass e.g. 1e-6, or 0 for an exact match)")
        if reward not in ("all", "fraction"):
            raise VerifierError(f"verifier 'json_match': reward={reward!r} must be 'all' or 'fraction' "
                                "(fix: pass one of them, or leave it out for all)")
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


class _Index:
    """g's elements (those numbered js) by what a match must share: the same scalar (a string, true/false/null, or
    without tolerance a number), a number within the tolerance (a window, bisected), or for an object or array
    every scalar field or element of the expected one (looked up by its rarest)."""

    def __init__(self, c: _Comparison, g: list[Any], js: list[int]) -> None:
        self.c = c
        self.forms: dict[int, list[int]] = {}
        self.numbers: list[tuple[int | float, int]] = []
        self.features: dict[Any, list[int]] = {}
        self.kinds: dict[type, list[int]] = {dict: [], list: []}
        c.spend(len(js))
        for j in js:
            v = g[j]
            if isinstance(v, (dict, list)):
                self.kinds[type(v)].append(j)
                fs = self.features_of(v)
                c.spend(len(fs))
                for f in fs:
                    self.features.setdefault(f, []).append(j)
            elif self.indexed(v):
                self.forms.setdefault(c.canon(v), []).append(j)
            elif v == v:  # a number, with a tolerance (NaN matches nothing)
                self.numbers.append((v, j))
        self.numbers.sort(key=lambda n: n[0])
        self.keys = [n for n, _ in self.numbers]

    def indexed(self, v: Any) -> bool:
        """A scalar that matches only its equals."""
        return isinstance(v, bool) or not isinstance(v, (int, float)) or self.c.exact

    def features_of(self, v: dict[Any, Any] | list[Any]) -> set[Any]:
        c = self.c
        if isinstance(v, dict):
            return {("k", k, c.canon(x)) for k, x in v.items() if not isinstance(x, (dict, list)) and self.indexed(x)}
        return {("e", c.canon(x)) for x in v if not isinstance(x, (dict, list)) and self.indexed(x)}

    def candidates(self, v: Any) -> list[int]:
        """The elements that may match v (a superset of those that do)."""
        c = self.c
        if isinstance(v, (dict, list)):
            fs = self.features_of(v)
            c.spend(len(fs) + 1)
            if not fs:
                return self.kinds[type(v)]
            lists = [self.features.get(f, []) for f in fs]
            return min(lists, key=len)
        if self.indexed(v):
            return self.forms.get(c.canon(v), [])
        if v != v:
            return []
        m = c.m
        try:
            fv = float(v)
            width = (m.abs_tol + m.rel_tol * abs(fv)) / (1 - m.rel_tol) * (1 + 1e-9) + 1e-300
            lo, hi = fv - width, fv + width
        except (OverflowError, ZeroDivisionError):
            lo = hi = math.nan
        if m.rel_tol >= 1 or not (math.isfinite(lo) and math.isfinite(hi)):
            return [j for _, j in self.numbers]
        return [j for _, j in self.numbers[bisect_left(self.keys, lo):bisect_right(self.keys, hi)]]

    def near(self, v: Any) -> list[int]:
        """The elements worth trying for v's partial credit: those of its type sharing a scalar with it (all of
        its type when it has no scalar); none for a scalar (it matches none of them whole)."""
        if not isinstance(v, (dict, list)):
            return []
        fs = self.features_of(v)
        self.c.spend(len(fs) + 1)
        if not fs:
            return self.kinds[type(v)]
        return sorted({j for f in fs for j in self.features.get(f, ())})
