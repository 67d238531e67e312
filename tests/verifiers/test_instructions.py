"""instructions: IFEval-style constraints, alone and several per task."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.instructions import Instructions


def run(answer, text, **params):
    return Instructions(**params).verify(Instructions.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("constraint,good,bad", [
    ({"type": "word_count", "min": 3}, "one two three", "one two"),
    ({"type": "word_count", "max": 3}, "one two three", "one two three four"),
    ({"type": "word_count", "exactly": 3}, "don't stop", "do not stop now"),  # IFEval: don't is two words
    ({"type": "char_count", "max": 5}, "abcde", "abcdef"),
    ({"type": "sentence_count", "exactly": 2}, "Hi there. How are you?", "Hi. There. You?"),
    ({"type": "sentence_count", "min": 2}, "One. Two without a stop", "Just one"),
    ({"type": "paragraph_count", "exactly": 2}, "para one\n\npara two", "para one\npara one still"),
    ({"type": "paragraph_count", "exactly": 3, "separator": "***"}, "a\n***\nb\n***\nc", "a\n***\nb"),
    ({"type": "first_word_of_paragraph", "n": 2, "word": "However"}, "Intro.\n\nHowever, no.", "Intro.\n\nBut no."),
    ({"type": "keywords_include", "keywords": ["ocean", "blue"]}, "The Ocean is blue.", "The ocean is green."),
    ({"type": "keywords_exclude", "keywords": ["very"]}, "It is everything.", "It is VERY good."),
    ({"type": "keyword_frequency", "keyword": "cat", "min": 2}, "cat and cat", "cat and cats"),
    ({"type": "letter_frequency", "letter": "z", "max": 1}, "lazy", "jazz"),
    ({"type": "lowercase"}, "all lower, 123!", "Not lower"),
    ({"type": "uppercase"}, "ALL CAPS 123!", "ALL CAPS but one"),
    ({"type": "capital_word_frequency", "max": 1}, "I LOVE it", "I LOVE IT"),
    ({"type": "placeholders", "min": 2}, "Dear [name], at [address]", "Dear [name]"),
    ({"type": "bullet_count", "exactly": 2}, "* a\n- b", "* a\n* b\n* c"),
    ({"type": "numbered_count", "min": 2}, "1. a\n2) b", "1. a"),
    ({"type": "highlighted_sections", "min": 2}, "*one* and *two*", "*one* and two"),
    ({"type": "sections", "exactly": 2}, "SECTION 1\nx\nSECTION 2\ny", "SECTION 1\nx"),
    ({"type": "json_format"}, '```json\n{"a": 1}\n```', "{a: 1}"),
    ({"type": "starts_with", "prefix": "Dear"}, "dear sir", "Hello"),
    ({"type": "ends_with", "suffix": "Any other questions?"}, "Done. Any other questions?", "Any other questions? ok"),
    ({"type": "no_commas"}, "no commas here", "one, two"),
    ({"type": "quotation"}, '"wrapped"', "not wrapped"),
    ({"type": "title"}, "<<My Title>>\nbody", "My Title\nbody"),
    ({"type": "postscript", "marker": "P.S."}, "Body.\nP.S. bye", "Body. bye"),
    ({"type": "two_responses"}, "first\n******\nsecond", "first\n******\nfirst"),
    ({"type": "contains", "phrase": "thank you"}, "Thank you!", "thanks"),
])
def test_each_constraint(constraint, good, bad):
    assert run([constraint], good).passed, (constraint, good)
    v = run([constraint], bad)
    assert not v.passed and v.error is None, (constraint, bad, v)


def test_several_per_task_fraction_and_all():
    rules = [{"type": "lowercase"}, {"type": "no_commas"}, {"type": "word_count", "max": 5},
             {"type": "keywords_include", "keywords": ["sea"]}]
    v = run(rules, "The sea, calm")
    assert not v.passed and v.reward == pytest.approx(0.5)
    assert v.components == {"0:lowercase": 0.0, "1:no_commas": 0.0, "2:word_count": 1.0, "3:keywords_include": 1.0}
    assert run(rules, "The sea, calm", reward="all").reward == 0.0
    assert run(rules, "the sea is calm").reward == 1.0
    assert run({"type": "lowercase"}, "ok").passed  # one constraint as an object


def test_think_is_not_checked():
    assert run([{"type": "no_commas"}], "<think>a, b, c</think>no commas").passed
    assert not run([{"type": "no_commas"}], "<think>a, b, c</think>no commas", think=False).passed


def test_bad_constraints_are_task_errors():
    assert run([{"type": "rhymes"}], "x").error_kind == "exception"
    assert run([{"type": "word_count"}], "x").error_kind == "exception"  # no bound
    assert run([{"type": "word_count", "minimum": 3}], "x").error_kind == "exception"
    assert run([], "x").error_kind == "exception"
    assert run("lowercase", "x").error_kind == "exception"
    assert run([{"type": "letter_frequency", "letter": "ab", "min": 1}], "x").error_kind == "exception"
    with pytest.raises(VerifierError):
        Instructions(reward="most")


def test_blank_is_malformed():
    assert run([{"type": "lowercase"}], "  ").error_kind == "malformed"
