"""format_tags: exactly one of each tag, in order, not nested, nothing outside (R1-style format rewards)."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.format import FormatTags


def run(text, answer=None, **params):
    return FormatTags(**params).verify(FormatTags.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("text", [
    "<think>2+2=4</think><answer>4</answer>",
    "<think>\nmulti\nline\n</think>\n\n<answer>\n4\n</answer>\n",
    "  <think>a < b and b > c</think> <answer>x</answer>  ",
    "<think>I will write the <answer tag later</think><answer>4</answer>",
])
def test_passes(text):
    v = run(text)
    assert v.passed and v.reward == 1.0, v


@pytest.mark.parametrize("text,broken", [
    ("<answer>4</answer><think>x</think>", "order"),
    ("<think>x</think>", "one_answer"),
    ("<think>x</think><answer>4</answer><answer>5</answer>", "one_answer"),
    ("<think>x</think><think>y</think><answer>4</answer>", "one_think"),
    ("Sure! <think>x</think><answer>4</answer>", "nothing_outside"),
    ("<think>x</think><answer>4</answer> Hope this helps!", "nothing_outside"),
    ("<think><answer>4</answer></think>", "not_nested"),
    ("<think>x</think><answer>  </answer>", "nonempty"),
    ("<think>x</answer><answer>4</think>", "not_nested"),
    ("<think>x<answer>4</answer>", "one_think"),
])
def test_fails(text, broken):
    v = run(text)
    assert not v.passed and v.error is None and v.components[broken] == 0.0, v


def test_options():
    assert run("<answer>4</answer><think>x</think>", order=False).passed
    assert run("Sure! <think>x</think><answer>4</answer>", strict=False).passed
    assert run("<think></think><answer>4</answer>", nonempty=False).passed
    v = run("Sure! <think>x</think><answer>4</answer>", reward="fraction")
    assert not v.passed and 0.5 < v.reward < 1.0
    assert run("<reasoning>r</reasoning><final>f</final>", tags=["reasoning", "final"]).passed
    assert run("<a>1</a>", answer=["a"]).passed  # per-task tags
    assert run("<a>1</a>", answer="a").error_kind == "exception"
    assert run("<ANSWER>1</ANSWER>", tags=["answer"]).passed is False  # tag names are case-sensitive


def test_malformed_and_params():
    assert run("").error_kind == "malformed"
    assert run(" \n ").error_kind == "malformed"
    for bad in ({"tags": []}, {"tags": "think"}, {"tags": ["a b"]}, {"tags": ["x", "x"]}, {"reward": "any"}):
        with pytest.raises(VerifierError):
            FormatTags(**bad)


@pytest.mark.parametrize("blank", ["\u200b", "\u200b\u200d\ufeff", "\u2060 \u00a0", "\u3164", "\u2800", "\u0301", " \t"])
def test_a_block_of_invisible_characters_is_empty(blank):
    """nonempty used str.strip(), which keeps zero-width characters: "<answer>\\u200b</answer>" had content."""
    v = run(f"<think>{blank}</think><answer>{blank}</answer>")
    assert v.reward == 0.0, v
    assert run(f"<think>ok{blank}</think><answer>é{blank}</answer>").reward == 1.0
