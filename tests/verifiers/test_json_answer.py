"""json_answer: the demo's composite reward, rule by rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgym.api import load_verifier
from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.json_answer import JsonAnswer, score_parts, strict_value


def reward(text: str, target: object = 7, **params: object) -> float:
    t = Task(id="t", prompt="?", answer=target, verifier=VerifierSpec("json_answer", dict(params)))
    return load_verifier(t.verifier).verify(t, Completion.from_text(text)).reward


@pytest.mark.parametrize("text, expected", [
    ('{"answer": 7}', 2.0),                       # all three parts
    ('  {"answer":7}\n', 2.0),                    # whitespace around
    ('```json\n{"answer": 7}\n```', 2.0),         # json fence allowed
    ('```\n{"answer": 7}\n```', 2.0),             # bare fence allowed
    ('{ "answer" : 7 }', 2.0),
    ('The answer: {"answer": 7}', 1.5),           # lenient + right value, not only the object
    ('{"answer": 7} {"answer": 8}', 0.5),         # two different values: hedging earns no value credit
    ('{"answer": 8}', 1.0),                       # exact object, wrong value
    ('So {"answer": 8}.', 0.5),                   # lenient only
    ('{"answer": 7, "why": "sum"}', 0.0),         # other keys: neither pattern
    ('{"answer": "7"}', 0.0),                     # a string is not an int
    ('{"answer": 7.0}', 0.0),                     # nor a float
    ('{"answer": true}', 0.0),                    # nor a bool
    ('{"Answer": 7}', 0.0),
    ("7", 0.0),
    ('{"answer": -7}', 1.0),
])
def test_reward_rules(text: str, expected: float) -> None:
    assert reward(text) == expected


def test_passed_is_strict_and_right() -> None:
    t = Task(id="t", prompt="?", answer=7, verifier=VerifierSpec("json_answer"))
    v = load_verifier(t.verifier)
    assert v.verify(t, Completion.from_text('{"answer": 7}')).passed
    assert not v.verify(t, Completion.from_text('Sure: {"answer": 7}')).passed  # reward 1.5 but not strict
    assert not v.verify(t, Completion.from_text('{"answer": 6}')).passed        # reward 1.0 but wrong
    comps = v.verify(t, Completion.from_text('x {"answer": 7}')).components
    assert comps == {"lenient": 0.5, "strict": 0.0, "value": 1.0}


def test_weights_and_normalize() -> None:
    assert reward('{"answer": 7}', normalize=True) == 1.0
    assert reward('{"answer": 8}', normalize=True) == 0.5
    assert reward('{"answer": 7}', lenient_weight=0, strict_weight=0) == 1.0
    with pytest.raises(VerifierError):
        load_verifier(VerifierSpec("json_answer", {"value_weight": -1}))
    with pytest.raises(VerifierError):
        load_verifier(VerifierSpec("json_answer", {"lenient_weight": 0, "strict_weight": 0, "value_weight": 0,
                                                   "normalize": True}))


def test_answer_forms_and_bad_tasks() -> None:
    assert reward('{"answer": 12}', target="12") == 2.0
    t = Task(id="t", prompt="?", answer="twelve", verifier=VerifierSpec("json_answer"))
    assert load_verifier(t.verifier).verify(t, Completion.from_text('{"answer": 12}')).error_kind == "exception"


def test_empty_reply_is_malformed() -> None:
    t = Task(id="t", prompt="?", answer=1, verifier=VerifierSpec("json_answer"))
    assert load_verifier(t.verifier).verify(t, Completion.from_text(" \n")).error_kind == "malformed"


def test_examples_behave_as_declared() -> None:
    for ex in JsonAnswer.examples():
        assert ex.matches(load_verifier(ex.task.verifier).verify(ex.task, ex.completion)), ex.note


def test_strict_value_refuses_big_text() -> None:
    assert strict_value('{"answer": 1}' + " " * 500) == 1  # surrounding whitespace is stripped first
    assert strict_value("[" * 10000) is None
    assert score_parts('{"answer": ' + "9" * 40 + "}", 1)["lenient"] is False


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(-50, 50))
def test_never_raises_and_stays_in_range(text: str, target: int) -> None:
    t = Task(id="t", prompt="?", answer=target, verifier=VerifierSpec("json_answer"))
    v = load_verifier(t.verifier).verify(t, Completion.from_text(text))
    assert 0.0 <= v.reward <= 2.0


@pytest.mark.parametrize("digits", ["٧", "７", "߇"])
def test_unicode_digits_are_not_a_json_int(digits: str) -> None:
    """The lenient regex's \\d took Arabic-Indic, fullwidth and other digits and int() read them as 7, so
    '{"answer": ٧}' earned the lenient and the value credit (1.5) though json.loads, the strict reading, finds no
    JSON in it."""
    from crossgym.api import verify

    v = verify(JsonAnswer.task(7), f'{{"answer": {digits}}}')
    assert (v.reward, v.components["value"]) == (0.0, 0.0), v
    assert verify(JsonAnswer.task(7), 'so {"answer": 7}').reward == 1.5


@pytest.mark.parametrize("text,expected", [
    ('<think>{"answer": 7}</think>{"answer": 8}', 1.0),  # the reasoning's 7 earned the lenient 0.5 on an 8
    ('maybe {"answer": 7} or {"answer": 8}', 0.5),  # hedging earned the value's 1.0
    ('{"answer": 8, "answer": 7}', 0.0),  # a repeated key: parsers differ on which one counts
    ('<think>hmm, {"answer": 8}?</think>{"answer": 7}', 2.0),
    ('The sum is {"answer": 7}, so {"answer": 7}.', 1.5),
])
def test_reasoning_hedges_and_repeated_keys_earn_no_value(text: str, expected: float) -> None:
    assert reward(text) == expected


def test_spaces_inside_the_reply_are_read_in_linear_time():
    """The fence pattern's \\s*```$ was tried from each space of a run, each try to the run's end: 100,000 spaces
    inside a reply took 8.3 s; 60,000 here took ~3 s."""
    import time

    t0 = time.monotonic()
    assert reward('so {"answer": 7}' + " " * 60_000 + "done") == 1.5
    assert time.monotonic() - t0 < 0.5
    assert strict_value("```json\n" + " " * 60_000 + '{"answer": 7}\n  ```') == 7
    for text in ('```json {"answer": 7}```', '```{"answer": 7}', '{"answer": 7} ```', "```json\n```"):
        assert strict_value(text) == (None if text == "```json\n```" else 7), text
