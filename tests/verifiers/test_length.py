"""length: budgets and linear penalties in words, characters and tokens."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.length import Length


def run(text, answer=None, token_ids=None, **params):
    comp = Completion.from_text(text)
    if token_ids is not None:
        comp = Completion(messages=comp.messages, token_ids=token_ids)
    return Length(**params).verify(Length.task(answer, params=params), comp)


def test_budget():
    assert run("one two three", max=3).passed
    assert not run("one two three four", max=3).passed
    assert run("abc", unit="chars", min=3, max=3).passed
    assert not run("ab", unit="chars", min=3).passed
    v = run("x", token_ids=[1, 2, 3], unit="tokens", max=2)
    assert not v.passed and v.components == {"tokens": 3.0}


def test_linear_penalty():
    assert run("w " * 15, max=10, mode="linear").reward == pytest.approx(0.0)  # 15 >= 10 * 1.5
    assert run("w " * 12, max=10, mode="linear").reward == pytest.approx(0.6)
    assert run("w " * 10, max=10, mode="linear").reward == 1.0
    assert run("w " * 8, min=10, mode="linear", slack=0.4).reward == pytest.approx(0.5)


def test_think_counting():
    text = "<think>" + "w " * 50 + "</think> short answer"
    assert not run(text, max=10).passed
    assert run(text, max=10, count_think=False).passed


def test_per_task_bounds_and_errors():
    assert run("a b c", answer={"min": 2, "max": 4}).passed
    assert run("a b c", answer={"min": 5, "max": 4}).error_kind == "exception"
    assert run("a b c").error_kind == "exception"  # no bound anywhere
    assert run("a", answer="short").error_kind == "exception"
    assert run("a", unit="tokens", max=3).error_kind == "malformed"
    for bad in ({"max": -1}, {"unit": "bytes"}, {"mode": "cosine"}, {"slack": 0}, {"min": 1.5}):
        with pytest.raises(VerifierError):
            Length(**bad)


@pytest.mark.parametrize("joiner", ["_", "\u02bc", "\uff3f", "\u3164"])
def test_joined_words_are_still_counted(joiner):
    v = run(joiner.join(["word"] * 200), max=3)
    assert not v.passed and v.components == {"words": 200.0}, v.reason
    assert run("don't stop", max=3).passed and run("𝐡𝐞𝐥𝐥𝐨 𝐰𝐨𝐫𝐥𝐝", min=2, max=2).passed


@pytest.mark.parametrize("joiner", ["\u16c1", "\u0b83", "\u0eb0", "\u2d42", "\u0e50", "\u0966"])
def test_another_scripts_letters_join_no_words(joiner):
    v = run(joiner.join(["word"] * 200), max=3)
    assert not v.passed and v.components == {"words": 200.0}, v.reason
    negative = " ".join("".join(chr(0x1F150 + ord(c) - 97) for c in w) for w in ["some", "words"] * 45)
    assert run(negative, max=5).components == {"words": 90.0}


def test_invisible_padding_does_not_reach_a_character_minimum():
    from crossgym.verifiers.constraints import char_count

    padded = "short" + "\u200b" * 200
    assert not char_count(padded, min=100)[0]
    assert char_count("x" * 100, min=100)[0]
    assert not run(padded, min=100, unit="chars").passed
    assert run("x" * 100, min=100, unit="chars").passed


def test_text_growing_past_the_nfkc_cap_is_malformed():
    """1 MB of U+FDFA is 18 MB in NFKC: counting its words took 8.5 s."""
    for unit in ("words", "chars"):
        v = run("\ufdfa" * 120_000, max=5, unit=unit)
        assert v.error_kind == "malformed" and "NFKC" in v.reason, (unit, v)
    assert run("\ufdfa \ufdfa", max=8).components == {"words": 8.0}


def test_combining_marks_do_not_multiply_words():
    """A mark NFKC cannot compose away ended a word at every letter: "q\u0301" x 300 was 300 words."""
    assert not run("q\u0301" * 300, unit="words", min=100).passed
    assert run(" ".join(["wo\u0301rd"] * 120), unit="words", min=100).passed
