"""tool_call with strings="bfcl" judges as BFCL's own AST checker does, on BFCL's possible-answer format.

The differential tests run bfcl-eval's ``ast_checker`` itself (installed without its dependencies by the Makefile;
only its model table, which imports every provider SDK, is replaced by an empty one: the checker reads it only for
function names with a dot, which these cases do not use) on seeded, generated cases, simple and parallel.
"""

from __future__ import annotations

import json
import random
import sys
import types
from typing import Any

import pytest

from crossgym.api import load_verifier
from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.tool_call import _bfcl_str

#: BFCL's parameter types and the JSON Schema types of the same tools
JSON_TYPE = {"string": "string", "integer": "integer", "float": "number", "boolean": "boolean", "array": "array",
             "dict": "object"}
WORDS = ["Paris", "New York, NY", "San Francisco", "April 1, 2024", "celsius", "x-y_z", "a.b/c", "it's", "3.5",
         "Hello World"]


def judge(answer: Any, calls: list[dict[str, Any]], tools: list[dict[str, Any]], **params: Any):
    task = Task(id="t", prompt="q", answer=answer, tools=tools,
                verifier=VerifierSpec("tool_call", {"strings": "bfcl", **params}))
    text = "".join("<tool_call>" + json.dumps(c) + "</tool_call>\n" for c in calls)
    return load_verifier(task.verifier).verify(task, Completion.from_text(text))


WEATHER = [{"name": "get_weather", "description": "",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                            "days": {"type": "integer", "default": 1},
                                                            "unit": {"type": "string"}},
                           "required": ["city"]}}]


def test_strings_as_bfcl_standardises_them():
    assert _bfcl_str("April 1, 2024") == _bfcl_str("april 1 2024") == _bfcl_str("April1,2024") == "april12024"
    assert _bfcl_str("x-y_z.") == "xyz" and _bfcl_str("it's") == 'it"s'
    answer = {"get_weather": {"city": ["New York, NY"], "days": [3]}}
    assert judge(answer, [{"name": "get_weather", "arguments": {"city": "new york ny", "days": 3}}], WEATHER).passed
    assert not judge(answer, [{"name": "get_weather", "arguments": {"city": "Newark", "days": 3}}], WEATHER).passed


def test_bfcl_possible_answers_empty_string_marks_an_optional_argument():
    answer = {"get_weather": {"city": ["Paris"], "unit": ["celsius", ""]}}
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert judge(answer, [call], WEATHER).passed
    assert judge(answer, [{**call, "arguments": {"city": "Paris", "unit": "Celsius"}}], WEATHER).passed
    assert not judge(answer, [{**call, "arguments": {"city": "Paris", "unit": "kelvin"}}], WEATHER).passed
    assert not judge({"get_weather": {"city": ["Paris"], "unit": ["celsius"]}}, [call], WEATHER).passed


def test_bfcl_rules_a_float_is_no_integer_and_a_default_does_not_stand_in():
    answer = {"get_weather": {"city": ["Paris"], "days": [1]}}
    assert judge(answer, [{"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}], WEATHER).passed
    r = judge(answer, [{"name": "get_weather", "arguments": {"city": "Paris", "days": 1.0}}], WEATHER)
    assert not r.passed and "float" in r.reason
    # days left out: its schema default is 1, but BFCL wants an argument without "" given
    assert not judge(answer, [{"name": "get_weather", "arguments": {"city": "Paris"}}], WEATHER).passed
    default_ok = {"name": "get_weather", "arguments": {"city": ["Paris"], "days": [1]}}  # crossgym's own form
    assert judge(default_ok, [{"name": "get_weather", "arguments": {"city": "Paris"}}], WEATHER,
                 strings="normalized").passed


def test_dict_arguments_take_per_key_alternatives_and_a_bad_spec_is_one_verdict():
    tools = [{"name": "book", "parameters": {"type": "object", "properties": {"who": {"type": "object"}}}}]
    answer = {"book": {"who": [{"name": ["Ada", "Ada L."], "age": [36, ""]}]}}
    for who, ok in (({"name": "ada", "age": 36}, True), ({"name": "Ada L."}, True), ({"name": "Bob"}, False),
                    ({"name": "Ada", "age": 37}, False), ({"name": "Ada", "x": 1}, False)):
        assert judge(answer, [{"name": "book", "arguments": {"who": who}}], tools).passed is ok, who
    huge = {"book": {"who": [{f"k{i}": [1, 2, 3] for i in range(8)}]}}  # 3**8 objects
    r = judge(huge, [{"name": "book", "arguments": {"who": {}}}], tools)
    assert r.error_kind == "exception" and "1024" in r.reason
    with pytest.raises(VerifierError, match="bfcl"):
        load_verifier(VerifierSpec("tool_call", {"strings": "BFCL"}))


ORDER = [{"name": "order", "description": "", "parameters": {
    "type": "object", "required": ["items"],
    "properties": {"items": {"type": "array", "items": {"type": "object"}}}}}]
#: BFCL's live_multiple_63: a list of objects, each key's accepted values in a list
ORDER_ANSWER = {"order": {"items": [[{"item": ["burgers", "burger"], "quantity": [5]},
                                     {"item": ["chicken wings"], "quantity": [6], "note": ["", "spicy"]}]]}}
ORDER_CASES = [
    ([{"item": "burgers", "quantity": 5}, {"item": "chicken wings", "quantity": 6}], True),
    ([{"item": "Burger", "quantity": 5}, {"item": "Chicken Wings", "quantity": 6, "note": "spicy"}], True),
    ([{"item": "chicken wings", "quantity": 6}, {"item": "burgers", "quantity": 5}], False),  # another order
    ([{"item": "burgers", "quantity": 5}], False),
    ([{"item": "burgers", "quantity": 7}, {"item": "chicken wings", "quantity": 6}], False),
    ([{"item": "burgers", "quantity": 5, "x": 1}, {"item": "chicken wings", "quantity": 6}], False),
    ([{"item": ["burgers"], "quantity": [5]}, {"item": ["chicken wings"], "quantity": [6]}], False),  # as written
]


@pytest.mark.parametrize(("items", "ok"), ORDER_CASES)
def test_a_list_of_per_key_alternatives_objects_is_read_object_by_object(items, ok):
    """Version 12: BFCL reads a list of per-key alternatives objects with its list_dict_checker (as many objects, in
    order, each one accepted by its alternatives); crossgym compared the list as written, so the right call failed
    (7 of BFCL's answers, in simple, multiple and live_multiple, are written so)."""
    assert judge(ORDER_ANSWER, [{"name": "order", "arguments": {"items": items}}], ORDER).passed is ok


def test_a_list_of_alternatives_making_too_many_lists_is_a_bad_task():
    element = {f"k{i}": [1, 2] for i in range(5)}  # 32 objects each: 32 ** 3 lists
    r = judge({"order": {"items": [[element, element, element]]}}, [{"name": "order", "arguments": {"items": []}}],
              ORDER)
    assert r.error_kind == "exception" and "1024" in r.reason


@pytest.mark.parametrize(("unit", "ok"), [("", True), (" ", True), ("-", True), ("celsius", True), ("kelvin", False)])
def test_an_optional_string_given_empty_is_accepted_as_bfcl_accepts_it(unit, ok):
    """BFCL marks an argument that may be left out with "" among its accepted values, and its string checker
    compares the standardised string with them: "" (or " ", "-") given for it passes there (version 12)."""
    answer = {"get_weather": {"city": ["Paris"], "unit": ["celsius", ""]}}
    assert judge(answer, [{"name": "get_weather", "arguments": {"city": "Paris", "unit": unit}}], WEATHER).passed is ok
    required = {"get_weather": {"city": ["Paris"], "unit": ["celsius"]}}  # not optional: "" is a wrong value
    assert not judge(required, [{"name": "get_weather", "arguments": {"city": "Paris", "unit": ""}}], WEATHER).passed
    days = {"get_weather": {"city": ["Paris"], "days": [1, ""]}}  # an integer argument: "" is the wrong type
    assert not judge(days, [{"name": "get_weather", "arguments": {"city": "Paris", "days": ""}}], WEATHER).passed


# ----------------------------------------------------------------------------- against BFCL's own checker
@pytest.fixture(scope="module")
def ast_checker():
    pytest.importorskip("bfcl_eval")
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
    saved = sys.modules.get("bfcl_eval.constants.model_config")
    sys.modules["bfcl_eval.constants.model_config"] = stub
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker as check
    finally:
        if saved is None:
            sys.modules.pop("bfcl_eval.constants.model_config", None)
        else:
            sys.modules["bfcl_eval.constants.model_config"] = saved
    return lambda fds, outs, answers, category: check(fds, outs, answers, Language.PYTHON, category, "model")["valid"]


#: array arguments by their items' BFCL type: "array" holds strings
ARRAYS = {"array": "string", "array_int": "integer", "array_float": "float", "array_nested": "array",
          "array_dict": "dict"}


def _value(t: str, rng: random.Random) -> Any:
    return {"string": lambda: rng.choice(WORDS), "integer": lambda: rng.randint(-3, 20),
            "float": lambda: rng.choice([0.5, 2.0, 3.25, 10.0]), "boolean": lambda: rng.random() < 0.5,
            "array": lambda: [rng.choice(WORDS) for _ in range(rng.randint(1, 3))],
            "array_int": lambda: [rng.randint(0, 9) for _ in range(rng.randint(1, 3))],
            "array_float": lambda: [rng.choice([0.5, 2.0, 3.25]) for _ in range(rng.randint(1, 3))],
            "array_nested": lambda: [[rng.choice(WORDS) for _ in range(rng.randint(1, 2))]
                                     for _ in range(rng.randint(1, 2))],
            "array_dict": lambda: [{"k": rng.choice(WORDS), "n": rng.randint(0, 5)} for _ in range(rng.randint(1, 2))],
            "dict": lambda: {"k": rng.choice(WORDS), "n": rng.randint(0, 5)}}[t]()


def _variant(v: Any, t: str, rng: random.Random, change: float) -> Any:
    """What a model might send for ``v``: itself, or (``change`` of the time) another case or spacing or
    punctuation, another type, a neighbour."""
    if rng.random() >= change:
        return v
    if t == "string":
        return rng.choice([v, v.upper(), v.replace(" ", ""), v.replace(",", ""), v + ".", " " + v,
                           v.replace("'", '"'), "Rome"])
    if t == "integer":
        return rng.choice([v, v + 1, float(v), str(v)])
    if t == "float":
        return rng.choice([v, int(v) if v == int(v) else v, v + 1, str(v)])
    if t == "boolean":
        return rng.choice([v, not v, int(v), str(v).lower()])
    if t == "array":
        return rng.choice([v, [s.upper() for s in v], list(reversed(v)), v[:1], v + ["Rome"]])
    if t == "array_int":
        return rng.choice([v, [float(x) for x in v], [x + 1 for x in v], v[:1]])
    if t == "array_float":
        return rng.choice([v, [int(x) for x in v], [x + 1 for x in v], [str(x) for x in v]])
    if t == "array_nested":
        return rng.choice([v, [[s.upper() for s in inner] for inner in v], [[s + "." for s in inner] for inner in v],
                           [" ".join(inner) for inner in v], v[:1]])
    if t == "array_dict":
        return rng.choice([v, [{**d, "k": d["k"].upper()} for d in v], [{**d, "n": d["n"] + 1} for d in v],
                           [{**d, "k": d["k"].replace(" ", "")} for d in v], list(reversed(v))])
    return rng.choice([v, {**v, "k": v["k"].upper()}, {"k": v["k"]}, {**v, "z": 1}])


def _case(name: str, rng: random.Random, change: float = 1.0) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(BFCL function description, possible answer, model output, crossgym ToolSpec) for one function."""
    props, required, answer, out = {}, [], {}, {}
    for i in range(rng.randint(1, 4)):
        p, t = f"p{i}", rng.choice([*JSON_TYPE, *ARRAYS])
        props[p] = {"type": "array", "items": {"type": ARRAYS[t]}} if t in ARRAYS else {"type": t}
        optional = rng.random() < 0.3
        if not optional:
            required.append(p)
        accepted = [_value(t, rng) for _ in range(1 if t in ("dict", "array_dict") else rng.randint(1, 2))]
        if t == "dict":
            answer[p] = [{k: [x] for k, x in accepted[0].items()}]
        elif t == "array_dict":  # a list of per-key alternatives objects, as BFCL writes one
            answer[p] = [[{k: [x] for k, x in d.items()} for d in accepted[0]]]
        else:
            answer[p] = list(accepted)
        answer[p] += [""] if optional else []
        if not (optional and rng.random() < 0.3):
            out[p] = _variant(rng.choice(accepted), t, rng, change)
    if rng.random() < 0.1:
        out["extra"] = 1
    if required and rng.random() < 0.05:
        out.pop(required[0], None)
    fd = {"name": name, "description": "", "parameters": {"type": "dict", "properties": props, "required": required}}
    def json_type(d: dict[str, Any]) -> dict[str, Any]:
        if d["type"] == "array":
            inner = d["items"]["type"]
            return {"type": "array", "items": {"type": JSON_TYPE.get(inner, "array")}}
        return {"type": JSON_TYPE[d["type"]]}

    spec = {"name": name, "description": "", "parameters": {
        "type": "object", "required": required, "properties": {p: json_type(d) for p, d in props.items()}}}
    return fd, {name: answer}, {name: out}, spec


def test_verdicts_equal_bfcl_ast_checker_on_single_calls(ast_checker):
    rng, passed = random.Random(20), 0
    for _ in range(400):
        fd, answer, out, spec = _case("f", rng)
        ours = judge(answer, [{"name": "f", "arguments": out["f"]}], [spec])
        assert ours.passed == ast_checker([fd], [out], [answer], "simple"), (answer, out, ours.reason)
        passed += ours.passed
    assert 40 < passed < 360  # both outcomes well represented


def test_verdicts_equal_bfcl_ast_checker_on_parallel_calls(ast_checker):
    rng, passed = random.Random(21), 0
    for _ in range(200):
        cases = [_case(name, rng, 0.3) for name in ["f", "g", "h"][:rng.randint(2, 3)]]
        outs = [c[2] for c in cases]
        if rng.random() < 0.1:
            outs = outs[:-1]
        if rng.random() < 0.1:
            outs = outs + [outs[0]]
        rng.shuffle(outs)
        calls = [{"name": next(iter(o)), "arguments": next(iter(o.values()))} for o in outs]
        ours = judge([c[1] for c in cases], calls, [c[3] for c in cases])
        theirs = ast_checker([c[0] for c in cases], outs, [c[1] for c in cases], "parallel")
        assert ours.passed == theirs, ([c[1] for c in cases], outs, ours.reason)
        passed += ours.passed
    assert 10 < passed < 190


def test_lists_of_alternatives_objects_and_empty_optional_strings_as_bfcl_judges_them(ast_checker):
    fd = [{"name": "order", "description": "", "parameters": {
        "type": "dict", "required": ["items"], "properties": {"items": {"type": "array", "items": {"type": "dict"}}}}}]
    for items, ok in ORDER_CASES:
        assert ast_checker(fd, [{"order": {"items": items}}], [ORDER_ANSWER], "simple") is ok, items
    weather = [{"name": "get_weather", "description": "", "parameters": {
        "type": "dict", "required": ["city"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string"}}}}]
    answer = {"get_weather": {"city": ["Paris"], "unit": ["celsius", ""], "days": [1, ""]}}
    for args, ok in (({"city": "Paris", "unit": ""}, True), ({"city": "Paris", "unit": " - "}, True),
                     ({"city": "Paris", "days": ""}, False), ({"city": "Paris", "unit": "kelvin"}, False)):
        assert ast_checker(weather, [{"get_weather": args}], [answer], "simple") is ok, args
        assert judge(answer, [{"name": "get_weather", "arguments": args}], WEATHER).passed is ok, args


@pytest.mark.parametrize("strings", ["normalized", "exact", "bfcl"])
def test_true_and_false_inside_an_argument_are_no_1_and_0(strings):
    """Python's == took True for 1 inside a list or object argument (never at the top level): a model answering
    flags with booleans passed an answer of numbers. (Each argument's value is a list of accepted values.)"""
    for accepted, wrong in (({"flags": {"debug": 1, "retries": 0}}, {"flags": {"debug": True, "retries": False}}),
                            ({"ids": [1, 0]}, {"ids": [True, False]}), ({"on": 1}, {"on": True})):
        task = Task(id="t", prompt="q", verifier=VerifierSpec("tool_call", {"strings": strings}),
                    answer={"name": "set_flags", "arguments": {k: [v] for k, v in accepted.items()}})
        for args, ok in ((wrong, False), (accepted, True)):
            call = '<tool_call>{"name": "set_flags", "arguments": ' + json.dumps(args) + "}</tool_call>"
            v = load_verifier(task.verifier).verify(task, Completion.from_text(call))
            assert v.passed is ok and v.error is None, (strings, args, v)


ARRAYS_TOOL = [{"name": "f", "description": "", "parameters": {"type": "object", "required": ["ids", "m"], "properties": {
    "ids": {"type": "array", "items": {"type": "integer"}},
    "m": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}}]


def test_bfcl_array_items_are_of_the_schemas_type_and_deeper_strings_compare_as_written(ast_checker):
    """BFCL's checker: 1.0 is no integer inside an array either, and strings are standardised in an argument and
    one level inside it, not deeper ("newyork" is not "New York" in a list of lists). strings="normalized" reads
    every depth."""
    fd = [{"name": "f", "description": "", "parameters": {"type": "dict", "required": ["ids", "m"], "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}}, "m": {"type": "array", "items": {"type": "array"}}}}}]
    answer = {"f": {"ids": [[1, 2]], "m": [[["New York", "LA"]]]}}
    for args, ok in (({"ids": [1, 2], "m": [["New York", "LA"]]}, True),
                     ({"ids": [1.0, 2.0], "m": [["New York", "LA"]]}, False),
                     ({"ids": [1, 2], "m": [["newyork", "l.a."]]}, False),
                     ({"ids": [1, 2], "m": [["New York", "LA"]], "x": 1}, False)):
        assert ast_checker(fd, [{"f": args}], [answer], "simple") is ok, args
        assert judge(answer, [{"name": "f", "arguments": args}], ARRAYS_TOOL).passed is ok, args
    task = Task(id="t", prompt="q", tools=ARRAYS_TOOL, verifier=VerifierSpec("tool_call", {}),
                answer={"name": "f", "arguments": {"ids": [[1, 2]], "m": [[["New York", "LA"]]]}})
    call = '<tool_call>{"name": "f", "arguments": {"ids": [1, 2], "m": [["new  york", "la"]]}}</tool_call>'
    assert load_verifier(task.verifier).verify(task, Completion.from_text(call)).passed


def test_bfcl_a_boolean_in_an_integer_array_fails_by_the_schema(ast_checker):
    """Where crossgym is stricter than BFCL on purpose: the argument's JSON Schema check fails true in an integer
    array (JSON Schema: a boolean is no integer); BFCL's list comparison takes True for 1 when the argument is
    optional (its item type check is skipped then)."""
    fd = [{"name": "f", "description": "", "parameters": {"type": "dict", "required": [], "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}}}}}]
    answer = {"f": {"ids": [[1, 0], ""]}}
    assert ast_checker(fd, [{"f": {"ids": [True, False]}}], [answer], "simple") is True
    tool = [{"name": "f", "description": "", "parameters": {"type": "object", "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}}}}}]
    v = judge(answer, [{"name": "f", "arguments": {"ids": [True, False]}}], tool)
    assert not v.passed and "expected integer, got bool" in v.reason, v
