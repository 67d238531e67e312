"""json_schema's jsonschema-rs first pass never changes a verdict: on generated schemas in the agreed subset and
generated values, the compiled check says what fastjsonschema alone says (valid, or the same first error)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from crossgym.verifiers import json_schema as js

fastjsonschema = pytest.importorskip("fastjsonschema")
pytest.importorskip("jsonschema_rs")


def fjs_only(schema: Any, value: Any) -> str | None:
    fn = fastjsonschema.compile(schema, use_default=False, use_formats=True)
    try:
        fn(value)
        return None
    except fastjsonschema.JsonSchemaValueException as exc:
        return str(exc.message)


NUMBERS = [0, 1, -1, 2, 1.0, 1.5, -0.0, 10, 2**53 - 1, 2**53, 2**53 + 1, 2**63, 2**64, 10**30, 1e20, 1e308,
           9007199254740992.0, True, False]


def _value(rng: random.Random, depth: int = 0) -> Any:
    k = rng.randrange(8 if depth < 3 else 5)
    if k == 0:
        return rng.choice(NUMBERS)
    if k == 1:
        return rng.choice(["", "a", "ab", "é", "😀", "e\u0301", "abc", "x" * 5])
    if k == 2:
        return rng.choice([None, True, False])
    if k in (3, 4):
        return rng.choice([0, 1, "a", 1.0])
    if k in (5, 6):
        return {rng.choice("abcd"): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


TYPES = ["string", "integer", "number", "object", "array", "boolean", "null"]


def _schema(rng: random.Random, depth: int = 0) -> Any:
    if depth > 2 or rng.random() < 0.15:
        return rng.choice([True, False, {}])
    s: dict[str, Any] = {}
    for _ in range(rng.randrange(1, 4)):
        key = rng.choice(["type", "type", "properties", "required", "additionalProperties", "items", "contains",
                          "not", "anyOf", "allOf", "oneOf", "minItems", "maxItems", "minLength", "maxLength",
                          "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const",
                          "minProperties", "maxProperties", "propertyNames", "title"])
        if key == "type":
            s[key] = rng.choice(TYPES) if rng.random() < 0.7 else rng.sample(TYPES, 2)
        elif key == "properties":
            s[key] = {rng.choice("abcd"): _schema(rng, depth + 1) for _ in range(rng.randrange(1, 3))}
        elif key == "required":
            s[key] = rng.sample(list("abcd"), rng.randrange(1, 3))
        elif key in ("additionalProperties", "items", "contains", "not", "propertyNames"):
            s[key] = _schema(rng, depth + 1)
        elif key in ("anyOf", "allOf", "oneOf"):
            s[key] = [_schema(rng, depth + 1) for _ in range(rng.randrange(1, 3))]
        elif key.startswith(("min", "max")) and not key.endswith(("imum",)):
            s[key] = rng.randrange(0, 4)
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            s[key] = rng.choice([0, 1, -1, 1.5, 2**53 - 1, 9007199254740991.0, 10])
        elif key == "enum":
            s[key] = [_value(rng, 2) for _ in range(rng.randrange(1, 4))]
        elif key == "const":
            s[key] = _value(rng, 2)
        else:
            s[key] = "t"
    return s


def test_generated_schemas_and_values_get_fastjsonschemas_verdict() -> None:
    rng = random.Random(7)
    pairs = used = 0
    for _ in range(400):
        schema = _schema(rng)
        if not isinstance(schema, dict):
            continue
        try:
            check = js._fast(schema)
        except Exception:  # noqa: BLE001 - a schema fastjsonschema refuses is refused before either runs
            continue
        used += js._rust_is_valid(schema) is not None
        for _ in range(25):
            value = _value(rng)
            assert check(value) == fjs_only(schema, value), (schema, value)
            pairs += 1
    assert pairs > 5000 and used > 200  # most generated schemas took the jsonschema-rs pass


@pytest.mark.parametrize("schema", [
    {"type": "string", "format": "email"}, {"type": "string", "pattern": "^a"}, {"multipleOf": 0.1},
    {"uniqueItems": True}, {"$ref": "#/definitions/a", "definitions": {"a": {}}}, {"items": [{"type": "integer"}]},
    {"if": {"type": "string"}, "then": {"minLength": 1}}, {"patternProperties": {"^a": {}}},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}, {"maximum": 2**53},
    {"enum": [9007199254740993]}, {"properties": {"a": {"format": "date"}}}, {"dependencies": {"a": ["b"]}},
])
def test_keywords_the_two_read_differently_stay_with_fastjsonschema(schema: dict[str, Any]) -> None:
    assert js._rust_is_valid(schema) is None


def test_the_common_tool_call_schema_takes_the_fast_pass() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"name": {"type": "string", "minLength": 1}, "args": {"type": "object"},
                             "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
              "required": ["name", "args"], "additionalProperties": False}
    assert js._rust_is_valid(schema) is not None
    check = js._fast(schema)
    assert check({"name": "f", "args": {}}) is None
    assert check({"name": "f", "args": {}, "x": 1}) == fjs_only(schema, {"name": "f", "args": {}, "x": 1})


def fjs_stock(schema: Any, value: Any) -> str | None:
    """fastjsonschema.compile as json_schema used it before its lean exceptions: formats, handlers and all."""
    fn = fastjsonschema.compile(schema, handlers=js._NoFetch(), use_default=False, use_formats=True,
                                formats=js._FORMATS)
    try:
        fn(value)
        return None
    except fastjsonschema.JsonSchemaValueException as exc:
        return str(exc.message)


@pytest.mark.parametrize("schema", [
    {"type": "string", "format": "email"}, {"type": "string", "pattern": "^a"}, {"multipleOf": 0.5},
    {"uniqueItems": True}, {"$ref": "#/definitions/a", "definitions": {"a": {"type": "integer", "maximum": 3}}},
    {"items": [{"type": "integer"}], "additionalItems": False}, {"if": {"type": "string"}, "then": {"minLength": 2}},
    {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
    {"dependencies": {"a": ["b"]}}, {"const": {"a": [1, 2]}}, {"enum": [[1], {"a": 1}, "x"]},
    {"oneOf": [{"type": "integer"}, {"minimum": 0}]}, {"required": ["a", "b", "c"]},
    {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": True},
    {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object", "minProperties": 2},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {
        "b": {"type": "string", "maxLength": 1}}, "additionalProperties": False}, "contains": {"type": "object"}}}},
])
def test_lean_exceptions_word_every_error_as_fastjsonschema_does(schema: dict[str, Any]) -> None:
    """The schema json_schema compiles raises without a copy of the schema in the exception (a literal of the
    failing rule's subschema was built on every raise); the messages are fastjsonschema's own, on every keyword."""
    lean = js._fastjsonschema_compile(schema, True)  # (formats asserted, as fjs_stock)
    rng = random.Random(3)
    values = [_value(rng) for _ in range(300)] + [
        "a@b.c", "a..b@c", "abc", "b", [1, 2], [1, 1], [1, "x"], {"a": 1}, {"a": "x", "z": 1}, {"a": 1, "b": 2},
        {"a": [{"b": "xy"}]}, {"a": [{"b": "x", "c": 1}]}, 2, 3, 3.5, 4, -1, {"a": [1, 2]}]
    for value in values:
        try:
            lean(value)
            got = None
        except fastjsonschema.JsonSchemaValueException as exc:
            assert exc.definition is None  # (what makes it lean)
            got = str(exc.message)
        assert got == fjs_stock(schema, value), (schema, value)


def test_a_value_read_by_orjson_is_known_finite_and_one_read_by_json_is_not() -> None:
    """The finite hint spares the walk for inf only where no float can be infinite: orjson refuses any number
    that overflows a double, json reads 1e400 as inf. A wrong hint would let jsonschema-rs pass inf."""
    from crossgym.text import json_text, read_json_text

    assert read_json_text('{"age": 36}', unique_keys=True) == ({"age": 36}, True)
    for text in ('{"age": 1e400}', '[-1e999]', "1" * 400, '{"a": 1' + "0" * 400 + ".5}"):
        value, finite = read_json_text(text, unique_keys=True)
        assert finite is False, text
    assert json_text.read_strict("1.5") == (1.5, True)
    check = js.compile_schema({"properties": {"age": {"maximum": 150}}}, True)
    assert check({"age": float("inf")}) is not None  # no hint: walked, and failed
