"""A small, safe JSON Schema checker for the subset tool schemas use; anything else falls back to jsonschema.

Tool parameter schemas come with task data, so they must not be compiled to code (fastjsonschema); jsonschema
is safe but ~20k objects/s. This interprets the common keywords directly (type, enum, const, properties,
required, additionalProperties, items, min/max, lengths, anyOf/oneOf of those) at a few µs per call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

SUPPORTED = {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "minimum",
             "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
             "anyOf", "oneOf", "description", "title", "default", "examples", "$schema", "format", "nullable",
             "uniqueItems"}
_ANNOTATIONS = {"description", "title", "default", "examples", "$schema", "format"}

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def supported(schema: Any, depth: int = 0) -> bool:
    """Whether ``schema`` uses only keywords this module interprets."""
    if depth > 32:
        return False
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= SUPPORTED:
        return False
    t = schema.get("type")
    if t is not None and not all(x in _TYPES for x in ([t] if isinstance(t, str) else t if isinstance(t, list)
                                                       else [None])):
        return False
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(supported(s, depth + 1) for s in props.values()):
        return False
    for k in ("items", "additionalProperties"):
        if k in schema and not supported(schema[k], depth + 1):
            return False
    for k in ("anyOf", "oneOf"):
        if k in schema and not (isinstance(schema[k], list) and all(supported(s, depth + 1) for s in schema[k])):
            return False
    return True


def check(value: Any, schema: Any, path: str = "") -> str | None:
    """None when ``value`` satisfies a ``supported`` schema, else the first problem."""
    if schema is True or schema == {}:
        return None
    if schema is False:
        return f"{path or '<root>'}: not allowed"
    where = path or "<root>"
    if value is None and schema.get("nullable"):
        return None
    t = schema.get("type")
    if t is not None:
        types = [t] if isinstance(t, str) else t
        if not any(_TYPES[x](value) for x in types):
            return f"{where}: expected {'/'.join(types)}, got {type(value).__name__}"
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        return f"{where}: {json.dumps(value)[:40]} is not one of {json.dumps(schema['enum'])[:80]}"
    if "const" in schema and not _same(value, schema["const"]):
        return f"{where}: must equal {json.dumps(schema['const'])[:40]}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for k, bad in (("minimum", lambda v, b: v < b), ("maximum", lambda v, b: v > b),
                       ("exclusiveMinimum", lambda v, b: v <= b), ("exclusiveMaximum", lambda v, b: v >= b)):
            if isinstance(schema.get(k), (int, float)) and not isinstance(schema.get(k), bool) \
                    and bad(value, schema[k]):
                return f"{where}: {value} breaks {k} {schema[k]}"
    if isinstance(value, str):
        if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
            return f"{where}: shorter than {schema['minLength']}"
        if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
            return f"{where}: longer than {schema['maxLength']}"
    if isinstance(value, list):
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            return f"{where}: fewer than {schema['minItems']} items"
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            return f"{where}: more than {schema['maxItems']} items"
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            return f"{where}: items are not unique"
        if "items" in schema:
            for i, v in enumerate(value):
                err = check(v, schema["items"], f"{path}[{i}]")
                if err:
                    return err
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for r in schema.get("required") or ():
            if r not in value:
                return f"{where}: missing required {r!r}"
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            sub = props.get(k, extra)
            if sub is False:
                return f"{where}: unexpected property {k!r}"
            if sub is not True:
                err = check(v, sub, f"{path}.{k}" if path else k)
                if err:
                    return err
    if "anyOf" in schema and all(check(value, s, path) for s in schema["anyOf"]):
        return f"{where}: matches none of anyOf"
    if "oneOf" in schema and sum(check(value, s, path) is None for s in schema["oneOf"]) != 1:
        return f"{where}: must match exactly one of oneOf"
    return None


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


json_equal = _same


@functools.lru_cache(maxsize=4096)
def _validator_for(key: str) -> Callable[[Any], str | None]:
    schema = json.loads(key)
    if supported(schema):
        return lambda v: check(v, schema)
    from crossgym.verifiers.json_schema import compile_schema

    return compile_schema(schema, trusted=False)


def validator(schema: Any) -> Callable[[Any], str | None]:
    """A cached checker for a (possibly untrusted) schema: this module's when it suffices, else jsonschema."""
    return _validator_for(json.dumps(schema, sort_keys=True, separators=(",", ":")))
