"""composite: weighted sum, min and all of real component verifiers; errors and answer routing."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.composite import Composite

FMT = {"verifier": {"name": "format_tags"}, "weight": 0.2, "answer": None, "label": "format"}
NUM = {"verifier": {"name": "numeric"}, "weight": 0.8, "label": "correct"}


def run(answer, text, **params):
    return Composite(**params).verify(Composite.task(answer, params=params), Completion.from_text(text))


def test_weighted_sum():
    v = run(42, "<think>6*7</think><answer>42</answer>", components=[FMT, NUM])
    assert v.passed and v.reward == pytest.approx(1.0) and v.components == {"format": 1.0, "correct": 1.0}
    v = run(42, "<answer>42</answer>", components=[FMT, NUM])
    assert not v.passed and v.reward == pytest.approx(0.8)
    v = run(42, "<think>x</think><answer>41</answer>", components=[FMT, NUM])
    assert not v.passed and v.reward == pytest.approx(0.2)
    v = run(42, "<answer>42</answer>", components=[FMT, NUM], normalize=False, threshold=0.5)
    assert v.passed and v.reward == pytest.approx(0.8)


def test_min_and_all():
    assert run(42, "<answer>42</answer>", components=[FMT, NUM], mode="min").reward == 0.0
    assert run(42, "<think>a</think><answer>42</answer>", components=[FMT, NUM], mode="all").reward == 1.0
    assert run(42, "<answer>42</answer>", components=[FMT, NUM], mode="all").reward == 0.0


def test_malformed_component_scores_zero_but_is_reported():
    v = run(42, "<think>x</think><answer>none</answer>", components=[FMT, NUM])
    assert v.error is None and v.components == {"format": 1.0, "correct": 0.0}
    assert "malformed" in v.reason
    assert run(42, "", components=[FMT, NUM]).error_kind == "malformed"


def test_answer_keys_and_duplicate_labels():
    parts = [{"verifier": {"name": "exact_match"}, "answer_key": "city"},
             {"verifier": {"name": "numeric", "params": {"extract": "full"}}, "answer_key": "pop"}]
    v = run({"city": "Paris", "pop": 2}, "<answer>Paris</answer>", components=parts[:1])
    assert v.passed
    v = run({"city": "Paris"}, "x", components=parts)
    assert v.error_kind == "exception" and "pop" in v.reason
    twice = [{"verifier": "exact_match"}, {"verifier": "exact_match"}]
    assert set(run("a", "a", components=twice).components) == {"exact_match#0", "exact_match#1"}


def test_error_propagation():
    broken = {"verifier": "numeric", "answer": "not a number"}  # a bad task: an exception verdict
    v = run("x", "Answer: 3", components=[broken, {"verifier": "length", "answer": {"max": 5}}])
    assert v.error_kind == "exception", v
    v = run("x", "Answer: 3", components=[broken, {"verifier": "length", "answer": {"max": 500}}], on_error="zero")
    assert v.error is None and v.reward == pytest.approx(0.5)
    # a completion that makes a part's pattern backtrack fails that part (regex 2), it is no error to propagate
    slow = {"verifier": {"name": "regex", "params": {"timeout": 0.2}}, "answer": r"^(a|aa)+$"}
    v = run("x", "a" * 60 + "!", components=[slow, {"verifier": "length", "answer": {"max": 500}}])
    assert v.error is None and v.reward == pytest.approx(0.5), v


def test_nested_composite():
    inner = {"verifier": {"name": "composite", "params": {"components": [FMT, NUM]}}, "label": "inner"}
    v = run(42, "<think>t</think><answer>42</answer>", components=[inner, {"verifier": "length",
                                                                        "answer": {"max": 100}}])
    assert v.passed


@pytest.mark.parametrize("bad", [
    {}, {"components": []}, {"components": [{"weight": 1}]}, {"components": [{"verifier": {"name": "nope"}}]},
    {"components": [{"verifier": "exact_match", "weight": -1}]}, {"components": [NUM], "mode": "max"},
    {"components": [{"verifier": "exact_match", "weight": 0}]}, {"components": [NUM], "on_error": "ignore"},
    {"components": [{"verifier": {"name": "numeric", "params": {"bogus": 1}}}]},
])
def test_bad_params(bad):
    with pytest.raises(VerifierError):
        Composite(**bad)


def test_weights_too_large_to_sum_are_a_config_error():
    """Two weights of 1e308 summed to infinity: the right answer got "non-finite reward nan"."""
    spec = {"verifier": {"name": "exact_match", "params": {}}, "weight": 1e308}
    with pytest.raises(VerifierError, match="weight must be a number from 0 to"):
        Composite(components=[spec, spec])


def test_a_component_reward_outside_0_1_is_that_components_error() -> None:
    """Composite 2: json_answer's default 2.0 outweighed the other component (a right value passed threshold 0.75
    with format_tags failing), and under min its 1.0 of 2 read as full marks."""
    from crossgym.api import load_verifier
    from crossgym.protocol.task import Completion, Task, VerifierSpec

    params = {"threshold": 0.75, "components": [
        {"verifier": "json_answer", "label": "value"},
        {"verifier": {"name": "format_tags", "params": {"tags": ["think"]}}, "answer": None, "label": "format"}]}
    task = Task(id="t", prompt="q", answer=7, verifier=VerifierSpec("composite", params))
    v = load_verifier({"name": "composite", "params": params}).verify(task, Completion.from_text('{"answer": 7}'))
    assert not v.passed and v.reward == 0.0 and v.error and "outside 0..1" in v.error and "normalize" in v.error
    zero = {**params, "on_error": "zero"}
    v = load_verifier({"name": "composite", "params": zero}).verify(task, Completion.from_text('{"answer": 7}'))
    assert not v.passed and v.reward == 0.0 and v.components == {"value": 0.0, "format": 0.0}
    ok = {**params, "components": [{"verifier": {"name": "json_answer", "params": {"normalize": True}}}]}
    v = load_verifier({"name": "composite", "params": ok}).verify(task, Completion.from_text('{"answer": 7}'))
    assert v.passed and v.reward == 1.0
