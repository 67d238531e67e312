"""tool_call: the completion makes the expected function calls, with arguments valid for the tools' schemas."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import MalformedToolCall, parse_tool_calls
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.schema_lite import json_equal, validator

#: more calls than this in one completion is malformed (matching is quadratic in the call count)
MAX_CALLS = 64


def _norm_str(s: str) -> str:
    """strings="normalized": case and runs of whitespace ignored."""
    return " ".join(s.casefold().split())


_BFCL_DROP = re.compile(r"[ ,./\-_*^]")


def _bfcl_str(s: str) -> str:
    """strings="bfcl": a string as BFCL's AST checker compares it (its ``standardize_string``): spaces and the
    characters , . / - _ * ^ dropped, lower-cased, ' read as \" ("April 1, 2024" is "April 1 2024")."""
    return _BFCL_DROP.sub("", s).lower().replace("'", '"')


_NORMS = {"normalized": _norm_str, "bfcl": _bfcl_str, "exact": None}


def _norm_deep(v: Any, norm: Callable[[str], str] = _norm_str, depth: int = 0, levels: int = 100) -> Any:
    """Every string value normalised, in lists and objects down to ``levels`` below ``v`` (keys stay exact)."""
    if isinstance(v, str):
        return norm(v)
    if depth >= levels:
        return v
    if isinstance(v, list):
        return [_norm_deep(x, norm, depth + 1, levels) for x in v]
    if isinstance(v, dict):
        return {k: _norm_deep(x, norm, depth + 1, levels) for k, x in v.items()}
    return v


def _bfcl_string_levels(schema: Any) -> int:
    """How deep strings="bfcl" standardises strings inside an argument of this schema: BFCL's list_checker and
    dict_checker standardise an argument's own items and values and compare anything deeper as it is; its
    list_dict_checker (an array of objects) the values of each object."""
    items = schema.get("items") if isinstance(schema, dict) and schema.get("type") == "array" else None
    return 2 if isinstance(items, dict) and items.get("type") == "object" else 1

#: BFCL's Python types of a JSON Schema item type, for its check of an array argument's items
_BFCL_ITEM_TYPES: dict[str, type] = {"integer": int, "number": float, "string": str, "boolean": bool}


def _bfcl_items_ok(value: Any, schema: Any, accepted: list[Any], optional: bool) -> bool:
    """BFCL's type_checker on an array argument with typed items: every item of ``value`` is of the items' type
    (1.0 is no integer, 1 no float, True no integer), or of the type of the first item of an accepted list (its
    reading of a variable); an accepted value that is no list (its "" of an optional argument, too) lets any items
    through, as there."""
    items = schema.get("items") if isinstance(schema, dict) and schema.get("type") == "array" else None
    kind = items.get("type") if isinstance(items, dict) else None
    want = _BFCL_ITEM_TYPES.get(kind) if isinstance(kind, str) else None
    if want is None or not isinstance(value, list) or optional:
        return True
    for a in accepted:
        if not isinstance(a, list):
            return True
        variable = type(a[0]) if a else None
        if all(type(x) is want or type(x) is variable for x in value):
            return True
    return False


#: a BFCL dict argument's per-key alternatives expand to at most this many whole values
MAX_BFCL_COMBINATIONS = 1024


def _from_bfcl(d: Any, index: int) -> Any:
    """An expected call in BFCL's possible-answer form, ``{"get_weather": {"city": ["Paris", "paris"], "unit":
    ["celsius", ""]}}`` (one key, the function; each argument's accepted values, "" meaning it may be left out), as
    crossgym's ``{"name", "arguments", "optional"}``; anything else unchanged. A dict-valued argument's accepted
    values are objects of per-key alternatives in BFCL (``{"k": ["a", "b"], "n": [1, ""]}``): they are expanded
    into the whole objects they accept."""
    if not isinstance(d, dict) or len(d) != 1:
        return d
    ((name, params),) = d.items()
    if name == "name" or not isinstance(params, dict) or not all(isinstance(v, list) for v in params.values()):
        return d
    args: dict[str, list[Any]] = {}
    optional = []
    for arg, accepted in params.items():
        if any(a == "" and isinstance(a, str) for a in accepted):
            optional.append(arg)
        values: list[Any] = []
        where = f"expected call {index + 1} ({name}): {arg}"
        for a in accepted:
            if isinstance(a, str) and a == "":
                continue
            if _alternatives(a):
                values.extend(_expand(a, where))
            elif isinstance(a, list) and a and all(_alternatives(x) for x in a):
                values.extend(_expand_list(a, where))  # a list of such objects, element by element (version 12)
            else:
                values.append(a)
        args[arg] = values
    return {"name": name, "arguments": args, "optional": optional}


def _alternatives(a: Any) -> bool:
    """A BFCL per-key alternatives object: ``{"k": ["a", "b"], "n": [1, ""]}``."""
    return isinstance(a, dict) and bool(a) and all(isinstance(x, list) for x in a.values())


def _expand_list(elements: list[dict[str, list[Any]]], where: str) -> list[list[dict[str, Any]]]:
    """The lists a BFCL list of per-key alternatives objects accepts (its ``list_dict_checker``: as many objects, in
    that order, each one its own alternatives accepts): ``[{"item": ["burger"], "n": [5]}]`` accepts
    ``[{"item": "burger", "n": 5}]``; it was compared as written, so the right list failed."""
    out: list[list[dict[str, Any]]] = [[]]
    for element in elements:
        out = [[*partial, obj] for partial in out for obj in _expand(element, where)]
        if len(out) > MAX_BFCL_COMBINATIONS:
            raise BadTask(f"{where}: its alternatives make more than {MAX_BFCL_COMBINATIONS} lists")
    return out


def _expand(alternatives: dict[str, list[Any]], where: str) -> list[dict[str, Any]]:
    """The objects a BFCL per-key alternatives object accepts ("" for a key: it may be absent)."""
    out: list[dict[str, Any]] = [{}]
    for key, values in alternatives.items():
        grown = []
        for partial in out:
            for v in values:
                grown.append(partial if isinstance(v, str) and v == "" else {**partial, key: v})
        out = grown
        if len(out) > MAX_BFCL_COMBINATIONS:
            raise BadTask(f"{where}: its alternatives make more than {MAX_BFCL_COMBINATIONS} objects")
    return out


class _Expected:
    """One expected call: name, argument alternatives, optional argument names."""

    def __init__(self, d: Any, index: int) -> None:
        d = _from_bfcl(d, index)
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise BadTask(f"expected call {index + 1} must be an object with a string 'name'")
        args = d.get("arguments", {})
        if not isinstance(args, dict):
            raise BadTask(f"expected call {index + 1} ({d['name']}): arguments must be an object")
        optional = d.get("optional", [])
        if not isinstance(optional, list) or not all(isinstance(o, str) for o in optional):
            raise BadTask(f"expected call {index + 1} ({d['name']}): optional must be a list of argument names")
        self.name: str = d["name"]
        self.args: dict[str, list[Any]] = {k: (v if isinstance(v, list) else [v]) for k, v in args.items()}
        self.optional = set(optional)


_PARSED: dict[int, tuple[Any, list[_Expected]]] = {}


def _expected_calls(answer: Any) -> list[_Expected]:
    """The task's expected calls, parsed once per answer object (a GRPO group shares one task)."""
    hit = _PARSED.get(id(answer))
    if hit is not None and hit[0] is answer:
        return hit[1]
    raw = answer if isinstance(answer, list) else [answer]
    parsed = [_Expected(d, i) for i, d in enumerate(raw)]
    if len(_PARSED) > 4096:
        _PARSED.clear()
    _PARSED[id(answer)] = (answer, parsed)  # holding the answer keeps its id from being reused
    return parsed


def _guesses(expected: list[_Expected], calls: list[ToolCall]) -> int:
    """Calls to an expected function beyond the number of expected calls to it."""
    wanted: dict[str, int] = {}
    for e in expected:
        wanted[e.name] = wanted.get(e.name, 0) + 1
    made: dict[str, int] = {}
    for c in calls:
        if c.name in wanted:
            made[c.name] = made.get(c.name, 0) + 1
    return sum(max(0, n - wanted[name]) for name, n in made.items())


class ToolCallVerifier(BaseVerifier):
    """The assistant calls the expected functions with acceptable arguments.

    answer: one expected call or a list of them (parallel calls; [] means "answer without calling a tool"):
    ``{"name": "get_weather", "arguments": {"city": ["Paris", "Paris, France"], "unit": "celsius"},
    "optional": ["unit"]}``. An argument's value is its accepted value, or a list of accepted values (so a
    list-valued argument is written inside a list: ``"ids": [[1, 2]]``). Names in ``optional`` may be left out;
    an argument left out that has a ``default`` in the tool's schema is compared as that default. BFCL's
    possible-answer form is taken too: ``{"get_weather": {"city": ["Paris"], "unit": ["celsius", ""]}}`` ("" marks
    an argument that may be left out; a dict argument's per-key alternatives are expanded).
    Calls are read from OpenAI ``tool_calls``, Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` or
    Python syntax ``get_weather(city="Paris")`` (keyword arguments) as servers' tool parsers read them, after the
    reasoning (text before the first ``</think>`` makes no call); ``task.tools`` (ToolSpecs) name the callable functions and their JSON Schemas:
    a call to an unknown function, or with arguments the schema rejects, fails.
    params: order (False: parallel calls may come in any order), allow_extra_args (False), allow_extra_calls
    (False; True allows calls to other functions than the expected ones, never more calls to one than expected),
    strings ("normalized": case and whitespace ignored in every string value, at any depth | "bfcl": BFCL's AST
    checker's rules, its string standardisation (spaces and , . / - _ * ^ dropped, case ignored) of an argument's
    strings and its list items' and object values' (deeper ones exact), a float is no integer (an array's items
    too), a left-out argument must be optional (a schema default does not stand in) | "exact"), scope ("last": the final assistant
    message | "all": every assistant message, for multi-turn episodes), reward ("all" | "fraction": matched
    calls / max(expected, made)). Unreadable call syntax is malformed.
    """

    name = "tool_call"
    # 2: names compare exactly (the Hermes parser no longer strips them); nested strings normalised; 3: a key given
    # twice in a call is malformed, and with allow_extra_calls more calls to an expected function than expected fail;
    # 4: a call in the reasoning (before the last </think>) is not made, a block parsers read two ways is malformed;
    # 5: the reasoning ends at the first </think>, as vLLM's reasoning parsers read it (one in an argument is content)
    # 6: OpenAI tool_calls whose arguments are not one JSON object (invalid, a list of pairs, a key twice, NaN) are
    # malformed, as in Hermes text (they raised building the Completion, or were read as some object)
    # 7: strings="bfcl" (BFCL's AST checker's rules) and answers in BFCL's possible-answer form; 8: a Python-syntax
    # name or keyword that NFKC changes (gｅt_weather) is malformed: Python's parser read it as get_weather; 9: a key
    # repeated in a Python-syntax dict argument is malformed, as in JSON (the last value was kept); 10: a Python-syntax
    # integer argument past int()'s 4,300 digits is malformed (it was an exception verdict); 11: arguments checked
    # against a schema with a pattern are checked in the worker pool, killed at the deadline: an argument that makes
    # the pattern backtrack is malformed (json_schema 5; "^(a+)+$" held the caller 4.6 s on 27 characters)
    # 12: strings="bfcl" reads a BFCL list of per-key alternatives objects as its list_dict_checker does (the right
    # list failed), and takes "" for an optional string argument, as BFCL's string checker does; 13: "format" in an
    # argument schema is an annotation on every path (json_schema 6): a schema with a keyword the small checker
    # leaves to jsonschema asserted it, the same schema without one did not
    # 14: true and false inside a list or object argument are no 1 and 0 (they were, by Python's ==, and not at the top
    # level); strings="bfcl" as BFCL's checker: strings standardised in an argument and one level inside it (deeper
    # ones compare exactly), an array argument's items of the schema's type (1.0 passed an integer array); the
    # argument schemas' uniqueItems takes 1 and 1.0 for one item, as JSON Schema does
    # 15: text is read as the servers' tool parsers make calls of it (vLLM's hermes and pythonic, SGLang's detectors;
    # bench/tool_parse_reference.py): a Hermes block with its JSON in a code fence, in an OpenAI function wrapper,
    # with 'parameters' or no 'arguments', or arguments that are a JSON string or null, and a Python call with a
    # positional argument, are malformed (the server makes no call of them, a call without the argument, or one
    # whose arguments are no object: they passed); Llama 4's <|python_start|> around Python calls is read
    version = "15"
    description = "expected function calls (OpenAI/Hermes/Python syntax), schema-checked, parallel in any order"

    def __init__(self, *, order: bool = False, allow_extra_args: bool = False, allow_extra_calls: bool = False,
                 strings: str = "normalized", scope: str = "last", reward: str = "all", **params: Any) -> None:
        super().__init__(**params)
        for k, v, ok in (("strings", strings, tuple(_NORMS)), ("scope", scope, ("last", "all")),
                         ("reward", reward, ("all", "fraction"))):
            if v not in ok:
                raise VerifierError(f"verifier 'tool_call': {k}={v!r} must be one of {', '.join(ok)} "
                                     f"(fix: {k}: {ok[0]}, the default)")
        self.order, self.allow_extra_args, self.allow_extra_calls = bool(order), bool(allow_extra_args), \
            bool(allow_extra_calls)
        self.strings, self.scope, self.reward = strings, scope, reward
        self._norm = _NORMS[strings]

    # ---------------------------------------------------------------- reading
    def calls(self, completion: Completion, tools: tuple[ToolSpec, ...]) -> list[ToolCall]:
        """The calls the completion makes (Malformed on unreadable syntax)."""
        msgs: list[Message] = list(completion.assistant_messages)
        if not msgs:
            raise Malformed("no assistant message")
        if self.scope == "last":
            msgs = msgs[-1:]
        out: list[ToolCall] = []
        for m in msgs:
            try:
                found = parse_tool_calls(m, tools, served=True)
            except MalformedToolCall as exc:
                raise Malformed(str(exc)) from None
            for i, c in enumerate(found):  # arguments ToolCall.from_dict could not read: malformed, as in Hermes text
                if c.error is not None:
                    raise Malformed(f"tool call {i + 1} ({c.name}): {c.error}")
            out.extend(found)
            if len(out) > MAX_CALLS:
                raise Malformed(f"more than {MAX_CALLS} tool calls")
        return out

    # ---------------------------------------------------------------- matching
    def _value_ok(self, got: Any, accepted: list[Any], schema: Any = None) -> bool:
        levels = _bfcl_string_levels(schema) if self.strings == "bfcl" else 100
        for a in accepted:
            t = type(a)
            if t is type(got) and t is not list and t is not dict and a == got:  # the common case, before any
                return True  # normalising (a list's == takes True for 1 inside it: json_equal compares those)
            norm = self._norm
            if norm is not None and isinstance(a, str) and isinstance(got, str):
                if norm(a) == norm(got):
                    return True
            elif json_equal(got, a):
                return True
            elif norm is not None and isinstance(a, (list, dict)) and type(a) is type(got) \
                    and json_equal(_norm_deep(got, norm, levels=levels), _norm_deep(a, norm, levels=levels)):
                return True
        return False

    def _args_match(self, exp: _Expected, call: ToolCall, spec: ToolSpec | None) -> str:
        """"" when ``call`` satisfies ``exp``, else why not."""
        if call.name != exp.name:
            if call.name.strip() == exp.name:
                return f"called {call.name!r}, expected {exp.name!r} (a name compares exactly: no spaces around it)"
            return f"called {call.name}, expected {exp.name}"
        props = (spec.parameters.get("properties") or {}) if spec else {}
        bfcl = self.strings == "bfcl"  # BFCL's rules: a float is no integer, and no schema default stands in
        for arg, accepted in exp.args.items():
            if arg in call.arguments:
                value = call.arguments[arg]
                if bfcl and type(value) is float and isinstance(props.get(arg), dict) \
                        and props[arg].get("type") == "integer":
                    return f"{exp.name}: {arg}={clip(repr(value), 40)} is a float where the tool takes an integer"
                if bfcl and not _bfcl_items_ok(value, props.get(arg), accepted, arg in exp.optional):
                    return (f"{exp.name}: {arg}={clip(repr(value), 40)} has items of another type than the tool's "
                            f"{props[arg]['items']['type']} (BFCL's rule: 1.0 is no integer, 1 no float)")
                if bfcl and arg in exp.optional and isinstance(value, str) and not _bfcl_str(value) \
                        and all(isinstance(a, str) for a in accepted):
                    continue  # BFCL's "" (may be left out) is one of its accepted strings: "" given is accepted
                if not self._value_ok(value, accepted, props.get(arg)):
                    return f"{exp.name}: {arg}={clip(repr(value), 40)} is not accepted"
            elif not bfcl and isinstance(props.get(arg), dict) and "default" in props[arg]:
                if not self._value_ok(props[arg]["default"], accepted) and arg not in exp.optional:
                    return f"{exp.name}: {arg} left at its default {props[arg]['default']!r}"
            elif arg not in exp.optional:
                return f"{exp.name}: missing argument {arg!r}"
        if not self.allow_extra_args:
            for arg, v in call.arguments.items():
                if arg in exp.args:
                    continue
                default = props.get(arg, {}).get("default", ...) if isinstance(props.get(arg), dict) else ...
                if default is ... or bfcl or not json_equal(v, default):
                    return f"{exp.name}: unexpected argument {arg!r}"
        return ""

    def _check_schema(self, call: ToolCall, specs: dict[str, ToolSpec]) -> str:
        if not specs:
            return ""
        spec = specs.get(call.name)
        if spec is None:
            if call.name.strip() in specs:
                return f"called unknown function {clip(call.name, 40)!r} (a name compares exactly: no spaces around it)"
            return f"called unknown function {clip(call.name, 40)!r}"
        err = validator(spec.parameters)(call.arguments)
        return f"{call.name}: {err}" if err else ""

    def _match(self, expected: list[_Expected], calls: list[ToolCall], specs: dict[str, ToolSpec]) \
            -> tuple[int, str]:
        """(matched expected calls, first mismatch) with a maximum bipartite matching (any order)."""
        if len(expected) == 1 and len(calls) == 1:  # the common case: one call expected, one made
            why1 = self._args_match(expected[0], calls[0], specs.get(calls[0].name))
            if why1 and calls[0].name != expected[0].name and calls[0].name.strip() != expected[0].name:
                why1 = f"no call to {expected[0].name}"
            return (0, why1) if why1 else (1, "")
        why: dict[tuple[int, int], str] = {}
        ok = [[not (why.setdefault((i, j), self._args_match(e, c, specs.get(c.name)))) for j, c in enumerate(calls)]
              for i, e in enumerate(expected)]
        if self.order:
            matched = 0
            for i in range(min(len(expected), len(calls))):
                if not ok[i][i]:
                    return matched, why[(i, i)]
                matched += 1
            return matched, ""
        owner: dict[int, int] = {}

        def augment(i: int, seen: set[int]) -> bool:
            for j in range(len(calls)):
                if ok[i][j] and j not in seen:
                    seen.add(j)
                    if j not in owner or augment(owner[j], seen):
                        owner[j] = i
                        return True
            return False

        matched = sum(augment(i, set()) for i in range(len(expected)))
        first = ""
        if matched < len(expected):
            done = set(owner.values())
            i = next(k for k in range(len(expected)) if k not in done)
            same = [j for j, c in enumerate(calls) if c.name == expected[i].name and j not in owner]
            first = why[(i, same[0])] if same else f"no call to {expected[i].name}"
        return matched, first

    def score(self, task: Task, completion: Completion) -> Verdict:
        expected = _expected_calls(task.answer)
        specs = {t.name: t for t in task.tools}
        for e in expected:
            if specs and e.name not in specs:
                raise BadTask(f"expected function {e.name!r} is not among task.tools")
        calls = self.calls(completion, task.tools)
        if not expected:
            ok = not calls
            return Verdict.ok(float(ok), reason="no call, as expected" if ok else f"unexpected call {calls[0].name}")
        if not calls:
            return Verdict.ok(0.0, reason="no tool call")
        for c in calls:
            err = self._check_schema(c, specs)
            if err:
                return Verdict.ok(0.0, components={"matched": 0.0}, reason=err)
        matched, why = self._match(expected, calls, specs)
        extra = len(calls) - matched
        denom = max(len(expected), len(calls))
        # allowed extra calls are calls to other functions: more calls to an expected function than expected are
        # guesses (``get_weather`` for 64 cities would find the one wanted), counted as extra calls still
        guesses = _guesses(expected, calls) if self.allow_extra_calls and extra else 0
        passed = matched == len(expected) and (extra == 0 or self.allow_extra_calls) and not guesses
        if matched == len(expected) and extra and not self.allow_extra_calls:
            why = f"{extra} extra call(s)"
        elif matched == len(expected) and guesses:
            why = f"{guesses} more call(s) to an expected function than expected (extra calls must call other ones)"
        frac = matched / (len(expected) + guesses if self.allow_extra_calls else denom)
        reward = float(passed) if self.reward == "all" else (1.0 if passed else frac)
        return Verdict.ok(reward, passed=passed, components={"matched": frac},
                          reason="all expected calls made" if passed else why)

    @classmethod
    def examples(cls) -> list[Example]:
        weather = {"name": "get_weather", "description": "Current weather",
                   "parameters": {"type": "object", "properties": {
                       "city": {"type": "string"},
                       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
                       "required": ["city"]}}
        time_ = {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                                     "required": ["tz"]}}
        tools = [weather, time_]
        one = {"name": "get_weather", "arguments": {"city": ["Paris", "Paris, France"], "unit": "celsius"}}
        both = [one, {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}]
        return [
            cls.example(one, '<tool_call>{"name": "get_weather", "arguments": {"city": "paris"}}</tool_call>',
                        "pass", "Hermes syntax; unit left at its schema default", tools=tools),
            cls.example(both, 'get_time(tz="Europe/Paris")\nget_weather(city="Paris, France", unit="celsius")',
                        "pass", "parallel calls in another order, Python syntax", tools=tools),
            cls.example(one, 'get_time(tz="Europe/Paris")', "fail", "wrong function", tools=tools),
            cls.example(one, 'get_weather(city="Paris", unit="kelvin")', "fail", "schema enum", tools=tools),
            cls.example(one, '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
                        "malformed", "broken JSON", tools=tools),
        ]
