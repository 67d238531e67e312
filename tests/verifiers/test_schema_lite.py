"""schema_lite agrees with jsonschema on the keywords it handles, and hands everything else to jsonschema."""

from __future__ import annotations

import pytest

jsonschema = pytest.importorskip("jsonschema")

from crossgym.verifiers.schema_lite import compile_lite, supported, validator  # noqa: E402

SCHEMAS = [
    {"type": "object", "properties": {"city": {"type": "string", "minLength": 2, "maxLength": 20},
                                      "days": {"type": "integer", "minimum": 1, "maximum": 14},
                                      "unit": {"enum": ["c", "f"]}},
     "required": ["city"], "additionalProperties": False},
    {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 1, "maxItems": 3,
     "uniqueItems": True},
    {"type": ["string", "null"]},
    {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 10}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
    {"const": {"a": [1, True]}},
    {"type": "object", "additionalProperties": {"type": "boolean"}},
    {"type": "integer"},
    {"uniqueItems": True},
]
VALUES = [None, True, False, 0, 1, 1.0, 1.5, -2, 15, "", "x", "Paris", [], [1], [1, 1], [0.5, 2, 3], [1, 2, 3, 4],
          {}, {"city": "Paris"}, {"city": "P"}, {"city": "Paris", "days": 0}, {"city": "Paris", "days": 3.0},
          {"city": "Paris", "unit": "k"}, {"city": "Paris", "x": 1}, {"a": [1, True]}, {"a": [1, 1]},
          {"flag": True}, {"flag": 1}, {"days": 3},
          [1, 1.0], [{"a": 1}, {"a": 1.0}], [True, 1], [[1], [1.0]], [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [0, False]]
#: (uniqueItems took 1 and 1.0 for two items: it compared json.dumps texts, "1" and "1.0")


@pytest.mark.parametrize("schema", SCHEMAS)
def test_agrees_with_jsonschema(schema):
    assert supported(schema)
    ours = compile_lite(schema)
    ref = jsonschema.Draft202012Validator(schema)
    for v in VALUES:
        assert (ours(v) is None) == ref.is_valid(v), (schema, v, ours(v))


def test_errors_name_the_place():
    check = compile_lite(SCHEMAS[0])
    assert check({"city": "Paris", "days": 0}) == "days: 0 breaks minimum 1"
    assert check({}) == "missing required 'city'"
    assert check({"city": "Paris", "x": 1}) == "unexpected property 'x'"
    assert compile_lite(SCHEMAS[1])([1, -1]) == "[1]: -1 breaks exclusiveMinimum 0"


def test_fallbacks_and_caching():
    ref_schema = {"type": "string", "pattern": "^a+$"}  # pattern: not handled here
    assert not supported(ref_schema)
    check = validator(ref_schema)
    assert check("aaa") is None and check("b") is not None
    weird = {"type": "object", "required": "city"}  # wrong shape: jsonschema must judge the schema itself
    with pytest.raises(ValueError):
        validator(weird)
    a = {"type": "integer"}
    assert validator(a) is validator({"type": "integer"})
    assert validator({"type": "string"})("x") is None  # equal content shares, other content does not
    assert validator(True)(1) is None and validator(False)(1) is not None
