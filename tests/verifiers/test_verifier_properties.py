"""Property tests: no input makes any verifier raise; verdicts are well-formed and deterministic."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crossgym.api import load_verifier
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import ERROR_KINDS, Completion, Task, Verdict, VerifierSpec

TOOLS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

#: (name, params, answer): one realistic task per verifier
CASES = [
    ("exact_match", {}, "Paris"),
    ("numeric", {}, 42),
    ("multiple_choice", {}, {"answer": "B", "options": ["x", "y", "z", "w"]}),
    ("regex", {"mode": "extract", "pattern": r"answer:\s*(\w+)"}, "blue"),
    ("regex", {"timeout": 0.2}, r"^(a|aa)+$"),
    ("format_tags", {}, None),
    ("json_valid", {}, "object"),
    ("json_schema", {"partial": True}, SCHEMA),
    ("json_schema", {"schema": SCHEMA}, None),
    ("json_match", {"list_order": False, "reward": "fraction"}, {"a": [1, 2], "b": {"c": None}}),
    ("tool_call", {"reward": "fraction"}, {"name": "get_weather", "arguments": {"city": "Paris"}}),
    ("instructions", {}, [{"type": "word_count", "max": 50}, {"type": "no_commas"}, {"type": "json_format"},
                          {"type": "sections", "min": 1}, {"type": "keywords_include", "keywords": ["sea"]}]),
    ("length", {"max": 100, "mode": "linear"}, None),
    ("xml_valid", {}, None),
    ("yaml_valid", {}, None),
    ("string_similarity", {}, "Albert Einstein"),
    ("composite", {"components": [{"verifier": "format_tags", "answer": None}, {"verifier": "numeric"}]}, 42),
]
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]


def _task(name, params, answer):
    return Task(id="p", prompt="q", answer=answer, verifier=VerifierSpec(name, params), tools=TOOLS)


def _check(v: Verdict) -> None:
    assert isinstance(v, Verdict)
    assert math.isfinite(v.reward) and 0.0 <= v.reward <= 1.0 or v.error is not None
    assert v.error is None or v.error.split(":", 1)[0] in ERROR_KINDS
    assert v.error is None or not v.passed


any_char = st.characters(codec=None, categories=None)  # includes control characters and lone surrogates
texts = st.one_of(
    st.text(any_char, max_size=200),
    st.text(st.sampled_from("<>/{}[]()\\$:,.\"' \n*-#=|aA1"), max_size=300),
    st.builds(lambda a, b: f"<think>{a}</think><answer>{b}</answer>", st.text(max_size=50), st.text(max_size=50)),
    st.builds(lambda j: json.dumps(j), st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4), max_leaves=20)),
    st.builds(lambda a: f'<tool_call>{{"name": "get_weather", "arguments": {a}}}</tool_call>', st.text(max_size=40)),
    st.builds(lambda a: f"get_weather(city={a!r})", st.text(max_size=20)),
)
messages = st.lists(st.builds(
    Message, role=st.sampled_from(["assistant", "user", "tool"]), content=st.text(any_char, max_size=50),
    tool_calls=st.lists(st.builds(ToolCall, id=st.text(max_size=3), name=st.text(max_size=12),
                                  arguments=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5),
                                                            max_size=3)), max_size=2).map(tuple)),
    max_size=4).map(lambda ms: Completion(messages=tuple(ms)))


@pytest.mark.parametrize("name,params,answer", CASES, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_never_raises_on_text(name, params, answer, text):
    verifier = load_verifier(VerifierSpec(name, params))
    task = _task(name, params, answer)
    v1 = verifier.verify(task, Completion.from_text(text))
    _check(v1)
    assert verifier.verify(task, Completion.from_text(text)) == v1  # deterministic


@pytest.mark.parametrize("name,params,answer", CASES, ids=IDS)
@settings(max_examples=8, deadline=None)
@given(completion=messages)
def test_never_raises_on_message_lists(name, params, answer, completion):
    verifier = load_verifier(VerifierSpec(name, params))
    _check(verifier.verify(_task(name, params, answer), completion))


MB = 1_000_000
K = 100_000  # big enough for anything quadratic to show, small enough to keep the tier fast
ADVERSARIAL = {
    "1MB prose": ("the answer is 42, " * (MB // 18))[:MB],
    "over 1MB": "x" * (MB + 1),
    "redos a": "a" * K + "!",
    "parens": "(" * K,
    "brackets": "[" * K + "]" * K,
    "braces": '{"a":' * (K // 5) + "1" + "}" * (K // 5),
    "answer tags": "<answer>" * (K // 8),
    "boxed": "\\boxed{" * (K // 7),
    "tool calls": "<tool_call>" * (K // 11),
    "control chars": "".join(chr(i) for i in range(32)) * 1000,
    "surrogate": "ok \udc80 ok",
    "numbers": "1," * (K // 2),
    "newlines": "\n" * K,
    "spaces then marker": "answer" + " " * K + "x",
    "sections": "SECTION 1\n" * (K // 10),
    "yaml aliases": "a: &a x\n" + "b: " + ", ".join(["*a"] * 5000),
    "xml nest": "<a>" * (K // 3) + "</a>" * (K // 4),
    "python call": "get_weather(city=" + "[" * (K // 2) + "]" * (K // 2) + ")",
    "think": "<think>" + "x" * K,
    "empty": "",
}


@pytest.mark.parametrize("name,params,answer", CASES, ids=IDS)
def test_adversarial_inputs(name, params, answer):
    verifier = load_verifier(VerifierSpec(name, params))
    task = _task(name, params, answer)
    for label, text in ADVERSARIAL.items():
        v = verifier.verify(task, Completion.from_text(text))
        _check(v)
        if label in ("over 1MB", "surrogate"):
            assert v.error_kind == "malformed", (label, v)


def test_non_completion_inputs():
    for name, params, answer in CASES:
        verifier = load_verifier(VerifierSpec(name, params))
        for task, comp in [(None, None), (_task(name, params, answer), None), (_task(name, params, answer), "x"),
                           ("task", Completion.from_text("x")), (42, [])]:
            assert verifier.verify(task, comp).error_kind == "malformed"


def test_math_survives_adversarial_inputs():
    pytest.importorskip("math_verify")
    verifier = load_verifier(VerifierSpec("math", {"timeout": 1.0}))
    task = _task("math", {"timeout": 1.0}, "42")
    for label in ("over 1MB", "parens", "boxed", "control chars", "surrogate", "empty"):
        _check(verifier.verify(task, Completion.from_text(ADVERSARIAL[label])))
