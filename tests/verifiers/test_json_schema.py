"""json_schema: fastjsonschema for trusted schemas, jsonschema for task-supplied ones; partial credit."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastjsonschema")
pytest.importorskip("jsonschema")

from crossgym.protocol.errors import VerifierError  # noqa: E402
from crossgym.protocol.task import Completion  # noqa: E402
from crossgym.verifiers.json_schema import JsonSchema, compile_schema  # noqa: E402

PERSON = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                          "age": {"type": "integer", "minimum": 0},
                                          "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
                                          "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": False}


def run(answer, text, **params):
    return JsonSchema(**params).verify(JsonSchema.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("trusted", [False, True])
@pytest.mark.parametrize("text,ok", [
    ('{"name": "Ada", "age": 36}', True),
    ('{"name": "Ada", "age": 36, "email": "ada@example.org", "tags": ["math"]}', True),
    ('```json\n{"name": "Ada", "age": 36}\n```', True),
    ('{"name": "", "age": 36}', False),
    ('{"name": "Ada", "age": -1}', False),
    ('{"name": "Ada", "age": 36.5}', False),
    ('{"name": "Ada", "age": "36"}', False),
    ('{"name": "Ada", "age": true}', False),
    ('{"name": "Ada"}', False),
    ('{"name": "Ada", "age": 36, "admin": true}', False),
    ('{"name": "Ada", "age": 36, "email": "nope"}', False),
    ('{"name": "Ada", "age": 36, "tags": ["a", "b", "c", "d"]}', False),
    ("[]", False),
])
def test_validation_same_on_both_engines(text, ok, trusted):
    v = run(PERSON, text, trusted_answers=trusted)
    assert v.passed is ok and v.error is None, v


def test_schema_from_params_and_errors_reported():
    v = run(None, '{"name": "Ada", "age": -5}', schema=PERSON)
    assert not v.passed and "minimum" in v.reason or "0" in v.reason
    assert run(None, "{}", schema=True).passed
    assert not run(None, "{}", schema=False).passed


def test_partial_credit():
    v = run(PERSON, '{"name": "Ada", "age": "36"}', partial=True)
    assert not v.passed and v.components["prop:name"] == 1.0 and v.components["prop:age"] == 0.0
    assert 0 < v.reward < 1
    v = run(PERSON, '{"name": "Ada", "age": 36, "x": 1}', partial=True)
    assert not v.passed and v.components["no_extra_keys"] == 0.0 and v.reward == pytest.approx(2 / 4)
    assert run(PERSON, '{"name": "Ada", "age": 36}', partial=True).reward == 1.0
    assert run(PERSON, "[1]", partial=True).reward == 0.0


@pytest.mark.parametrize("schema,text", [
    ({"type": "object", "required": ["id", "name"], "properties": {"name": {"type": "string"}}}, '{"name": "x"}'),
    ({"type": "object", "properties": {"email": {"type": "string"}, "phone": {"type": "string"}},
      "anyOf": [{"required": ["email"]}, {"required": ["phone"]}]}, "{}"),
    ({"type": "object", "minProperties": 1, "properties": {"a": {"type": "integer"}}}, "{}"),
    ({"type": "object", "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}},
      "dependentRequired": {"card": ["cvv"]}}, '{"card": "4111"}'),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
     '{"a": 1, "b": "x"}'),
])
def test_partial_credit_never_pays_an_invalid_document_as_a_valid_one(schema, text):
    """Partial credit counted the properties only: each of these invalid documents earned 1.0."""
    v = run(schema, text, partial=True)
    assert not v.passed and v.error is None and v.reward < 1.0, v


def test_partial_credit_gives_nothing_for_optional_properties_left_out():
    """{} earned 0.75 (three optional properties "met" by their absence) where an honest try with three wrong
    fields earned 0.25."""
    schema = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}}
    empty = run(schema, "{}", partial=True).reward
    tried = run(schema, '{"name": "x", "a": "1", "b": "2", "c": "3"}', partial=True).reward
    assert empty == 0.0 and tried > empty


def test_partial_credit_resolves_local_refs():
    schema = {"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "object",
              "properties": {"n": {"$ref": "#/$defs/pos"}, "s": {"type": "string"}}, "required": ["n", "s"]}
    v = run(schema, '{"n": 0, "s": "x"}', partial=True)
    assert v.components == {"prop:n": 0.0, "prop:s": 1.0, "valid": 0.0}


def test_junk_and_malformed():
    assert run(PERSON, 'Here it is: {"name": "Ada", "age": 36}').error_kind == "malformed"
    assert run(PERSON, '{"name": "Ada", "age": 36} extra').error_kind == "malformed"
    assert run(PERSON, '{"name": "Ada", "name": "Bob", "age": 36}').error_kind == "malformed"
    assert run(PERSON, "").error_kind == "malformed"
    assert run(PERSON, 'Here it is: {"name": "Ada", "age": 36}', allow_surrounding=True).passed


def test_bad_schemas():
    assert run({"type": "nonsense"}, "{}").error_kind == "exception"
    assert run("not a schema", "{}").error_kind == "exception"
    assert run(None, "{}").error_kind == "exception"
    with pytest.raises(VerifierError):
        JsonSchema(schema={"type": 5})


def test_validators_are_cached():
    a = compile_schema(PERSON, True)
    b = compile_schema(json.loads(json.dumps(PERSON)), True)  # an equal schema in another object
    assert a is b
    assert compile_schema(PERSON, False) is not a


@pytest.mark.parametrize("fmt,bad,good", [("date-time", "not a date", "2024-05-17T10:00:00Z"),
                                          ("uri", "::nope", "https://example.org/a"),
                                          ("hostname", "-bad-", "example.com"), ("time", "25:99", "10:00:00Z"),
                                          ("email", "nope", "ada@example.org")])
def test_a_task_schemas_format_is_checked_as_a_trusted_one_is(fmt: str, bad: str, good: str) -> None:
    """Task schemas go through jsonschema, whose format checker checks date-time, uri, hostname, time... only when
    an optional package is installed: here "not a date" passed format date-time as a task schema and failed as
    the schema param. With formats="assert" both paths check fastjsonschema's formats, on any machine; by default
    "format" is an annotation on both (json_schema 6), as the drafts and jsonschema read it."""
    from crossgym.api import verify
    from crossgym.verifiers.json_schema import JsonSchema

    schema = {"type": "object", "properties": {"x": {"type": "string", "format": fmt}}}
    for params, answer in (({}, schema), ({"schema": schema}, None), ({"trusted_answers": True}, schema)):
        asserted = {**params, "formats": "assert"}
        assert verify(JsonSchema.task(answer, params=asserted), f'{{"x": "{bad}"}}').reward == 0.0, params
        assert verify(JsonSchema.task(answer, params=asserted), f'{{"x": "{good}"}}').reward == 1.0, params
        for text in (f'{{"x": "{bad}"}}', f'{{"x": "{good}"}}'):
            assert verify(JsonSchema.task(answer, params=params), text).reward == 1.0, (params, text)
        assert verify(JsonSchema.task(answer, params=params), '{"x": 5}').reward == 0.0  # (the type still counts)


# JSON-Schema-Test-Suite (github.com/json-schema-org/JSON-Schema-Test-Suite, MIT), tests/draft2020-12/format.json
# and tests/draft2019-09/format.json: "invalid <format> string is only an annotation by default" (valid), for each
# of these formats; crossgym refused all 18 (2020-12) before json_schema 6
SUITE_INVALID = {"email": "2962", "idn-email": "2962", "regex": "^(abc]", "ipv4": "127.0.0.0.1",
                 "ipv6": "12345::", "idn-hostname": "〮실례.테스트", "hostname": "-a-host-name-that-starts-with--",
                 "date": "06/19/1963", "date-time": "1990-02-31T15:59:60.123-08:00", "time": "08:30:06 PST",
                 "json-pointer": "/foo/bar~", "relative-json-pointer": "/foo/bar", "iri-reference": "\\\\WINDOWS\\filëßåré",
                 "uri": "//foo.bar/?baz=qux#quux", "uri-reference": "\\\\WINDOWS\\fileshare",
                 "uri-template": "http://example.com/dictionary/{term:1}/{term", "uuid": "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
                 "duration": "PT1D"}


@pytest.mark.parametrize("draft", ["https://json-schema.org/draft/2020-12/schema",
                                   "https://json-schema.org/draft/2019-09/schema", None])
@pytest.mark.parametrize("fmt", sorted(SUITE_INVALID))
def test_format_is_only_an_annotation_by_default_as_the_test_suite_says(draft, fmt) -> None:
    from crossgym.api import verify
    from crossgym.verifiers.json_schema import JsonSchema

    schema = {"format": fmt} if draft is None else {"$schema": draft, "format": fmt}
    text = json.dumps(SUITE_INVALID[fmt])
    for params, answer in (({}, schema), ({"schema": schema}, None), ({"trusted_answers": True}, schema)):
        v = verify(JsonSchema.task(answer, params=params), text)
        assert v.passed and v.error is None, (params, v)
    if fmt in ("email", "ipv4", "date", "uuid", "regex"):  # (fastjsonschema's own formats refuse these when asserted)
        assert verify(JsonSchema.task(schema, params={"formats": "assert"}), text).reward == 0.0


def test_a_formats_param_it_does_not_know_is_a_config_error() -> None:
    from crossgym.verifiers.json_schema import JsonSchema

    with pytest.raises(VerifierError, match="param formats must be one of annotate, assert"):
        JsonSchema(formats="strict")


@pytest.mark.parametrize("items", [
    [1, 1.0], [True, 1], [False, 0], [[1], [1.0]], [[True], [1]], [{"a": 1}, {"a": 1.0}], [{"a": [1, 2]}, {"a": [2, 1]}],
    ["1", 1], [None, None], [None, False], [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [[], {}], ["x", 0, {"s": 1}, [0]],
    [1e400, 1e400], [2**60, float(2**60)], [{"a": {"b": True}}, {"a": {"b": 1}}],
])
def test_unique_items_agrees_with_jsonschemas_own(items):
    """Untrusted schemas judge uniqueItems in linear time (jsonschema compares every pair of objects: 4,000 took
    22 s), with jsonschema's verdict and words."""
    import jsonschema

    schema = {"type": "array", "uniqueItems": True}
    theirs = jsonschema.Draft202012Validator(schema).is_valid(items)
    assert (compile_schema(schema, trusted=False)(items) is None) == theirs, items
    many = [{"s": i} for i in range(4000)]
    assert compile_schema(schema, trusted=False)(many) is None
    assert "has non-unique elements" in compile_schema(schema, trusted=False)(many + [{"s": 3}])


def test_the_email_format_gives_fastjsonschemas_answers_in_linear_time():
    """fastjsonschema's email regex backtracks quadratically (40 KB took 3.5 s); crossgym's check gives its answers,
    compared here on every string of up to 7 characters over the characters that matter."""
    import itertools
    import re

    from fastjsonschema.draft2019 import CodeGeneratorDraft2019

    from crossgym.verifiers.json_schema import email_ok

    regex = re.compile(CodeGeneratorDraft2019.FORMAT_REGEXS["email"])
    for n in range(8):
        for chars in itertools.product("a.@\n", repeat=n):
            text = "".join(chars)
            assert email_ok(text) == (regex.match(text) is not None), repr(text)
    schema = {"type": "string", "format": "email"}
    for trusted in (True, False):
        check = compile_schema(schema, trusted, formats=True)
        assert check("ada@example.org") is None and check("a..b@example.org") is not None
        assert check("a" + ".." * 20000) is not None and check("a@" + "a." * 20000 + "@") is not None


def _backtracking_verdict_is_the_completions(v, took: float, timeout: float) -> None:
    """On time, reward 0, and malformed (the completion made the pattern backtrack), or a timeout only where a
    loaded machine gave the worker under half its time (the pool's rule for every killed job)."""
    import os

    assert took < timeout + 1.0, (took, v)
    assert v.reward == 0.0 and not v.passed, v
    loaded = os.getloadavg()[0] >= (os.cpu_count() or 1)
    assert v.error_kind == "malformed" or (loaded and v.error == "timeout"), v


@pytest.mark.parametrize("trusted", [True, False])
@pytest.mark.parametrize("schema,document", [
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}, {"s": "a" * 40 + "!"}),
    ({"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}}, {"a" * 60 + "!": 1}),
    ({"type": "array", "items": {"type": "string", "pattern": "(x+x+)+y"}}, ["xxy", "x" * 40]),
])
def test_a_document_that_makes_a_pattern_backtrack_fails_on_time(schema, document, trusted):
    """The schema's regular expressions ran on Python's re in the caller's thread, where no deadline reaches C:
    "^(a+)+$" took 4.6 s on 27 characters and doubles with each "a" (a 40-character string: hours). Such schemas are
    checked in the worker pool, killed at the deadline; honest documents keep re's verdicts."""
    import time

    params = {"timeout": 1.0, "trusted_answers": trusted}
    assert run(schema, json.dumps({"s": "aaa"} if "properties" in schema else
                                  {"aa": 1} if "patternProperties" in schema else ["xxy"]), **params).passed
    t0 = time.monotonic()
    v = run(schema, json.dumps(document), **params)
    _backtracking_verdict_is_the_completions(v, time.monotonic() - t0, 1.0)


def test_patterns_keep_their_verdicts_in_the_pool():
    """re's own reading of a pattern, in the worker, both paths: a match, a miss, a Unicode class, a case flag."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
                                               "w": {"type": "string", "pattern": "^\\w+$"},
                                               "c": {"type": "string", "pattern": "(?i)^abc$"}}}
    for trusted in (True, False):
        assert run(schema, '{"id": "AB-123", "w": "héllo", "c": "ABC"}', trusted_answers=trusted).passed
        for bad in ('{"id": "AB-12"}', '{"w": "a b"}', '{"c": "abd"}', '{"id": "ab-123"}'):
            v = run(schema, bad, trusted_answers=trusted)
            assert not v.passed and v.error is None and ("does not match" in v.reason or "must match" in v.reason), v
