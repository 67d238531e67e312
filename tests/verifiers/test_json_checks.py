"""json_valid and json_match: fences, junk around the JSON, duplicate keys, deep nesting, structural options."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.json_checks import JsonMatch, JsonValid


def valid(text, answer=None, **params):
    return JsonValid(**params).verify(JsonValid.task(answer, params=params), Completion.from_text(text))


def match(answer, text, **params):
    return JsonMatch(**params).verify(JsonMatch.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("text", [
    '{"a": 1}', ' {"a": [1, 2, {"b": null}]} \n', "[]", '"just a string"', "3.5", "true", "null",
    '```json\n{"a": 1}\n```', "```\n[1, 2]\n```", '<think>let me write it</think>{"a": 1}',
    '{"emoji": "\\ud83d\\ude00", "unicode": "é"}',
])
def test_valid(text):
    v = valid(text)
    assert v.passed, (text, v)


@pytest.mark.parametrize("text", [
    '{"a": 1,}', "{'a': 1}", '{"a": NaN}', '{"a": Infinity}', "Here: {\"a\": 1}", '{"a": 1} trailing',
    '{"a": 1}{"b": 2}', '{"a": 1, "a": 2}', "```json\n{\"a\": 1}\n```\nand more prose", "undefined",
    '```python\n{"a": 1}\n```',
])
def test_invalid_fails(text):
    v = valid(text)
    assert not v.passed and v.error is None, (text, v)


def test_valid_options_and_types():
    assert valid('Sure! {"a": 1} Hope that helps.', allow_surrounding=True).passed
    assert valid('Sure!\n```json\n{"a": 1}\n```\ndone', fenced="require").passed
    assert not valid('{"a": 1}', fenced="require").passed
    assert not valid('```json\n{"a": 1}\n```', fenced="forbid").passed
    assert valid('{"a": 1}', "object").passed
    assert not valid("[1]", "object").passed
    assert valid("3", "number").passed and valid("3", "integer").passed and not valid("3.5", "integer").passed
    assert valid("x", "tuple").error_kind == "exception"
    with pytest.raises(VerifierError):
        JsonValid(fenced="maybe")


def test_malformed_inputs():
    assert valid("").error_kind == "malformed"
    assert valid("[" * 100_000 + "]" * 100_000).error_kind == "malformed"
    assert valid('{"a":' * 5000 + "1" + "}" * 5000).error_kind == "malformed"


EXP = {"name": "Ada", "langs": ["en", "fr"], "born": 1815, "meta": {"active": True, "score": 9.5}}


def test_match_exact_and_key_order():
    assert match(EXP, '{"meta": {"score": 9.5, "active": true}, "born": 1815, "langs": ["en", "fr"], "name": "Ada"}'
                 ).passed
    assert not match(EXP, '{"name": "Ada", "langs": ["fr", "en"], "born": 1815, "meta": {"active": true, '
                     '"score": 9.5}}').passed
    assert match(EXP, '{"name": "Ada", "langs": ["fr", "en"], "born": 1815, "meta": {"active": true, '
                 '"score": 9.5}}', list_order=False).passed
    v = match({"a": 1, "b": 2}, '{"b": 2, "a": 1}', key_order=True)
    assert not v.passed and "order" in v.reason
    assert match({"a": 1, "b": 2}, '{"a": 1, "b": 2}', key_order=True).passed


def test_match_types_are_strict():
    assert not match({"a": True}, '{"a": 1}').passed
    assert not match({"a": 1}, '{"a": true}').passed
    assert match({"a": 1}, '{"a": 1.0}').passed
    assert not match({"a": None}, '{"a": 0}').passed
    assert not match({"a": "1"}, '{"a": 1}').passed
    assert not match([1, 2], '{"0": 1, "1": 2}').passed


def test_match_subset_tolerance_case_and_partial():
    assert not match({"a": 1}, '{"a": 1, "junk": "x"}').passed
    assert match({"a": 1}, '{"a": 1, "junk": "x"}', subset=True).passed
    assert match({"x": 0.1}, '{"x": 0.1000001}', rel_tol=1e-5).passed
    assert not match({"x": 0.1}, '{"x": 0.1000001}').passed
    assert match({"s": "Paris"}, '{"s": "paris"}', case_sensitive=False).passed
    v = match({"a": 1, "b": 2, "c": 3, "d": 4}, '{"a": 1, "b": 2, "c": 0, "d": 0}', reward="fraction")
    assert not v.passed and v.reward == pytest.approx(0.5)
    v = match([1, 2, 3], "[1, 2]", reward="fraction")
    assert not v.passed and v.reward == pytest.approx(2 / 3)
    assert match([], "[]").passed and match({}, "{}").passed and not match({}, "[]").passed
    assert not match([1, 1, 2], "[1, 2, 2]", list_order=False).passed  # multisets, not sets


def test_match_malformed_and_hacks():
    assert match(EXP, "The name is Ada").error_kind == "malformed"
    assert match({"a": 1}, '{"a": 2, "a": 1}').error_kind == "malformed"  # duplicate keys never sneak through
    assert match({"a": 1}, '{"a": 1} {"a": 1}').error_kind == "malformed"
    assert match({"a": 1}, 'Answer: {"a": 1}', allow_surrounding=True).passed
    with pytest.raises(VerifierError):
        JsonMatch(rel_tol=-1)


@pytest.mark.parametrize("key", ["blank", "deeper", "too deeply", "b"])
def test_a_duplicate_key_fails_whatever_its_name(key: str) -> None:
    """json_valid told unreadable JSON (malformed) from invalid JSON (fail) by words in the error message, which
    quotes the completion: a duplicate key named "blank" was malformed, any other key failed."""
    v = valid(f'{{"{key}": 1, "{key}": 2}}')
    assert (v.reward, v.passed, v.error) == (0.0, False, None), v
    assert valid("[" * 300 + "]" * 300).error_kind == "malformed"  # nesting past the limit stays unreadable
    assert valid("  ").error_kind == "malformed"
