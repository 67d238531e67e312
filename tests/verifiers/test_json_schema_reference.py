"""json_schema: one schema, one verdict, jsonschema's, whichever path (trusted fastjsonschema or task jsonschema) runs."""

from __future__ import annotations

import json
import socket
import urllib.request
from typing import Any

import pytest

pytest.importorskip("fastjsonschema")
jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

from crossgym.protocol.errors import VerifierError  # noqa: E402
from crossgym.protocol.task import Completion, Verdict  # noqa: E402
from crossgym.verifiers import json_schema as js  # noqa: E402
from crossgym.verifiers.json_schema import JsonSchema  # noqa: E402
from crossgym.verifiers.json_schema_keywords import fastjsonschema_agrees  # noqa: E402


def trusted(schema: Any, text: str, **params: Any) -> Verdict:
    """The schema as the (trusted) ``schema`` param."""
    return JsonSchema(schema=schema, **params).run_score(JsonSchema.task(None, params={"schema": schema}),
                                                         Completion.from_text(text))


def untrusted(schema: Any, text: str, **params: Any) -> Verdict:
    """The schema as the task's answer (jsonschema, unless trusted_answers)."""
    return JsonSchema(**params).run_score(JsonSchema.task(schema), Completion.from_text(text))


def reference(schema: Any, text: str) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return bool(cls(schema, registry=referencing.Registry()).is_valid(json.loads(text)))


INF_CASES = [
    ({"properties": {"age": {"minimum": 0, "maximum": 150}}, "required": ["age"]}, '{"age": 1e400}'),
    ({"properties": {"age": {"minimum": 0, "maximum": 150}}, "required": ["age"]}, '{"age": -1e999}'),
    ({"maximum": 10}, "1e400"),
    ({"minimum": -10}, "-1e400"),
    ({"exclusiveMaximum": 10}, "[1e400]"),
    ({"not": {"type": "number"}}, "1e400"),
    ({"oneOf": [{"type": "number"}, {"minimum": 0}]}, "1e400"),
    ({"type": "number"}, "1e400"),
    ({"type": "integer"}, "1e400"),
    ({"type": "array", "items": {"type": "number", "maximum": 5}}, "[1, 2, 1" + "0" * 400 + "]"),
]


@pytest.mark.parametrize("schema,text", INF_CASES)
def test_a_number_that_reads_as_infinity_gets_jsonschemas_verdict(schema: Any, text: str) -> None:
    """1e400 reads as inf; jsonschema-rs took inf for no type at all, so its "only says valid" pre-check passed
    it for "maximum": 150 and "not": {"type": "number"}."""
    want = float(reference(schema, text))
    for verdict in (trusted(schema, text), untrusted(schema, text), untrusted(schema, text, trusted_answers=True)):
        assert verdict.error is None and verdict.reward == want, (verdict, want)


@pytest.mark.parametrize("schema,text", [({"multipleOf": 0.5}, "1e400"), ({"type": "number", "multipleOf": 2}, "-1e400"),
                                         ({"items": {"multipleOf": 0.1}}, "[1e400]"), ({"multipleOf": 3}, "1e400")])
def test_a_check_that_cannot_take_infinity_fails_the_completion(schema: Any, text: str) -> None:
    """jsonschema raises OverflowError there: that was an `exception` verdict (a broken task)."""
    for verdict in (trusted(schema, text), untrusted(schema, text), untrusted(schema, text, trusted_answers=True),
                    trusted(schema, text, partial=True)):
        assert verdict.error is None and verdict.reward == 0.0 and not verdict.passed, verdict


KEYWORD_CASES = [
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, '{"a": 1, "b": 2}'),
    ({"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False}, '{"a": 1, "b": 2}'),
    ({"unevaluatedItems": False, "prefixItems": [{}]}, "[1, 2]"),
    ({"dependentRequired": {"a": ["b"]}}, '{"a": 1}'),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, '{"a": 1}'),
    ({"contains": {"type": "integer"}, "minContains": 2}, "[1]"),
    ({"contains": {"type": "integer"}, "maxContains": 1}, "[1, 2]"),
    ({"prefixItems": [{"type": "integer"}]}, '["x"]'),
    ({"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [{"type": "integer"}]}, '["x"]'),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": False}, "[1]"),
    ({"$defs": {"p": {"type": "integer"}}, "$ref": "#/$defs/p", "minimum": 5}, "3"),
    ({"dependencies": {"a": ["b"]}}, '{"a": 1}'),
    ({"type": "string", "pattern": "^a$"}, '"a\\n"'),
    ({"type": "string", "pattern": "^\\d+$"}, '"12\\n"'),
    ({"multipleOf": 0.1}, "0.3"), ({"multipleOf": 0.1}, "0.7"), ({"multipleOf": 0.01}, "19.99"),
    ({"multipleOf": 3}, "1e308"),
    ({"contentEncoding": "base64", "type": "string"}, '"not base64!"'),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}]}, '["x"]'),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, "1.0"),
    ({"$anchor": "r", "type": "object", "properties": {"x": {"$ref": "#r"}}}, '{"x": {}}'),
]
#: schemas fastjsonschema keeps: the two agree on them
AGREED_CASES = [
    ({"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}, "additionalProperties": False}},
      "$ref": "#/$defs/n"}, '{"c": {"c": {"d": 1}}}'),
    ({"type": "string", "pattern": "^[a-z]+"}, '"ab1"'),
    ({"definitions": {"p": {"type": "integer"}}, "properties": {"x": {"$ref": "#/definitions/p"}}}, '{"x": "a"}'),
]


@pytest.mark.parametrize("schema,text", KEYWORD_CASES + AGREED_CASES)
def test_keywords_fastjsonschema_reads_otherwise_get_jsonschemas_verdict(schema: Any, text: str) -> None:
    """The trusted path ignored 2019-09/2020-12 keywords, applied `dependencies`, rewrote `$` in `pattern` and
    passed 0.3 for multipleOf 0.1, where the task path (jsonschema 2020-12) decided otherwise."""
    want = float(reference(schema, text))
    for verdict in (trusted(schema, text), untrusted(schema, text), untrusted(schema, text, trusted_answers=True)):
        assert verdict.error is None and verdict.reward == want, (verdict, want)


def test_a_schema_invalid_in_2020_12_is_refused_on_every_path() -> None:
    """Tuple `items` is Draft 7; with no `$schema` the default draft is 2020-12 on both paths."""
    schema = {"type": "array", "items": [{"type": "integer"}]}
    with pytest.raises(VerifierError, match="invalid JSON Schema"):
        JsonSchema(schema=schema)
    for params in ({}, {"trusted_answers": True}):
        assert "invalid JSON Schema" in (untrusted(schema, "[1]", **params).error or ""), params


def test_schemas_with_only_common_keywords_keep_the_fast_path() -> None:
    common = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "title": "t",
              "$defs": {"pos": {"type": "integer", "minimum": 1}},
              "properties": {"n": {"$ref": "#/$defs/pos"}, "s": {"type": "string", "pattern": "^[a-z]+", "format": "email"},
                             "t": {"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": True, "maxItems": 3},
                             "u": {"anyOf": [{"type": "null"}, {"if": {"type": "string"}, "then": {"minLength": 1}}]}},
              "required": ["n"], "additionalProperties": False}
    assert fastjsonschema_agrees(common) and all(fastjsonschema_agrees(s) for s, _ in AGREED_CASES)
    for schema, _ in KEYWORD_CASES:
        if "$schema" not in schema:
            assert not fastjsonschema_agrees(schema), schema


def test_a_schema_fastjsonschema_refuses_but_jsonschema_accepts_is_judged() -> None:
    schema = {"required": ["x"], "additionalProperties": False}
    assert trusted(schema, "5").reward == 1.0 and trusted(schema, "{}").reward == 0.0
    task = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"],
            "additionalProperties": False}
    verdict = untrusted(task, '{"a": 1}', trusted_answers=True)
    assert verdict.error is None and verdict.reward == 0.0, verdict


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Any attempt to reach the network is recorded and refused before it leaves the process."""
    calls: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        raise AssertionError(f"network attempt: {args!r}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return calls


def test_embedded_ids_resolve_without_fetching_and_the_schema_is_left_as_given(no_network: list[Any]) -> None:
    """fastjsonschema fetched http://e.x/a while compiling, and rewrote the caller's "$ref" in place."""
    schema = {"$id": "http://e.x/s", "$defs": {"a": {"$id": "a", "type": "integer"}}, "$ref": "a"}
    before = json.dumps(schema)
    for run in (trusted, untrusted):
        assert run(schema, "1").reward == 1.0 and run(schema, '"x"').reward == 0.0
    assert json.dumps(schema) == before and no_network == []


def test_fastjsonschema_is_compiled_on_a_copy(no_network: list[Any]) -> None:
    schema = {"$id": "http://e.x/s", "$defs": {"p": {"type": "integer"}}, "$ref": "#/$defs/p"}
    before = json.dumps(schema)
    check = js._fast(schema)
    assert check(1) is None and check("x") is not None
    assert json.dumps(schema) == before and no_network == []


@pytest.mark.parametrize("ref", ["http://e.x/b", "https://e.x/b#/x", "file:///etc/passwd", "gopher://e.x/b", "b.json"])
def test_remote_refs_are_never_fetched(no_network: list[Any], ref: str) -> None:
    schema = {"properties": {"a": {"$ref": ref}}}
    for verdict in (trusted(schema, '{"a": 1}'), untrusted(schema, '{"a": 1}'),
                    untrusted(schema, '{"a": 1}', trusted_answers=True)):
        assert verdict.error is not None and "is not inside the schema" in verdict.error, verdict
    assert trusted(schema, "{}").reward == 1.0
    with pytest.raises(Exception, match="not inside the schema"):  # fastjsonschema itself refuses every scheme
        js._fast({"$ref": ref})
    assert no_network == []
