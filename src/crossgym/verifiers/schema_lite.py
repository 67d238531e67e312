"""A small, safe JSON Schema checker for the subset tool schemas use; anything else falls back to jsonschema.

Tool parameter schemas come with task data, so they must not be compiled to code (fastjsonschema); jsonschema
is safe but ~10-20k objects/s. This compiles the common keywords (type, enum, const, properties, required,
additionalProperties, items, min/max, lengths, uniqueItems, nullable, anyOf/oneOf of those) into plain closures,
never into code, and checks a value in a few µs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

SUPPORTED = {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "minimum",
             "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
             "anyOf", "oneOf", "description", "title", "default", "examples", "$schema", "format", "nullable",
             "uniqueItems"}

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


Check = Callable[[Any], "str | None"]


def _ok(_v: Any) -> None:
    return None


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def compile_lite(schema: Any) -> Check:
    """A checker closure for a ``supported`` schema (keywords read once, not per value); ValueError when a
    keyword's value has the wrong shape."""
    if schema is True or schema == {}:
        return _ok
    if schema is False:
        return lambda v: "not allowed"
    if not isinstance(schema, dict):
        raise ValueError("a schema must be an object or boolean")
    checks: list[Check] = []
    t = schema.get("type")
    if t is not None:
        names = [t] if isinstance(t, str) else list(t)
        preds = tuple(_TYPES[x] for x in names)
        want = "/".join(names)
        checks.append(lambda v: None if any(p(v) for p in preds)
                      else f"expected {want}, got {type(v).__name__}")
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list):
            raise ValueError("enum must be a list")
        shown = json.dumps(enum)[:80]
        checks.append(lambda v: None if any(_same(v, e) for e in enum) else f"{json.dumps(v)[:40]} is not one of {shown}")
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: None if _same(v, const) else f"must equal {json.dumps(const)[:40]}")
    bounds: list[tuple[str, Any, Callable[[Any, Any], bool]]] = []
    for k, bad in (("minimum", lambda v, b: v < b), ("maximum", lambda v, b: v > b),
                   ("exclusiveMinimum", lambda v, b: v <= b), ("exclusiveMaximum", lambda v, b: v >= b)):
        if k in schema:
            if not _num(schema[k]):
                raise ValueError(f"{k} must be a number")
            bounds.append((k, schema[k], bad))
    if bounds:
        def num_bounds(v: Any) -> str | None:
            if _num(v):
                for k, b, bad in bounds:
                    if bad(v, b):
                        return f"{v} breaks {k} {b}"
            return None
        checks.append(num_bounds)
    sizes = []
    for k, kind, cmp in (("minLength", str, -1), ("maxLength", str, 1), ("minItems", list, -1),
                         ("maxItems", list, 1)):
        if k in schema:
            if not isinstance(schema[k], int) or isinstance(schema[k], bool):
                raise ValueError(f"{k} must be an integer")
            sizes.append((k, kind, cmp, schema[k]))
    if sizes:
        def size_bounds(v: Any) -> str | None:
            for k, kind, cmp, n in sizes:
                if isinstance(v, kind) and (len(v) - n) * cmp > 0:
                    return f"length {len(v)} breaks {k} {n}"
            return None
        checks.append(size_bounds)
    if schema.get("uniqueItems"):  # (JSON Schema's equality: 1 and 1.0 are one item, true and 1 two)
        checks.append(lambda v: "items are not unique" if isinstance(v, list) and
                      len({json_key(x) for x in v}) != len(v) else None)
    if "items" in schema:
        item = compile_lite(schema["items"])

        def items(v: Any) -> str | None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    err = item(x)
                    if err:
                        return f"[{i}]: {err}"
            return None
        checks.append(items)
    props_schema = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props_schema, dict) or not isinstance(required, list) \
            or not all(isinstance(r, str) for r in required):
        raise ValueError("properties must be an object and required a list of names")
    if props_schema or required or "additionalProperties" in schema:
        props = {k: compile_lite(v) for k, v in props_schema.items()}
        extra_schema = schema.get("additionalProperties", True)
        extra = None if extra_schema is True else compile_lite(extra_schema)

        def obj(v: Any) -> str | None:
            if not isinstance(v, dict):
                return None
            for r in required:
                if r not in v:
                    return f"missing required {r!r}"
            for k, x in v.items():
                sub = props.get(k)
                if sub is None:
                    if extra is None:
                        continue
                    if extra_schema is False:
                        return f"unexpected property {k!r}"
                    sub = extra
                err = sub(x)
                if err:
                    return f"{k}: {err}"
            return None
        checks.append(obj)
    for k in ("anyOf", "oneOf"):
        if k in schema:
            if not isinstance(schema[k], list) or not schema[k]:
                raise ValueError(f"{k} must be a non-empty list")
            subs = [compile_lite(x) for x in schema[k]]
            if k == "anyOf":
                def any_of(v: Any, subs: list[Check] = subs) -> str | None:
                    return None if any(c(v) is None for c in subs) else "matches none of anyOf"

                checks.append(any_of)
            else:
                def one_of(v: Any, subs: list[Check] = subs) -> str | None:
                    return None if sum(c(v) is None for c in subs) == 1 else "must match exactly one of oneOf"

                checks.append(one_of)
    nullable = bool(schema.get("nullable"))

    def run(v: Any) -> str | None:
        if nullable and v is None:
            return None
        for c in checks:
            err = c(v)
            if err:
                return err
        return None

    return run if checks else _ok


def check(value: Any, schema: Any) -> str | None:
    """None when ``value`` satisfies a ``supported`` schema, else the first problem (compiles on every call: use
    ``validator`` for repeated checks)."""
    return compile_lite(schema)(value)


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


_CACHE: dict[str, Callable[[Any], str | None]] = {}
_BY_ID: dict[int, tuple[Any, Callable[[Any], str | None]]] = {}


def validator(schema: Any) -> Callable[[Any], str | None]:
    """A cached checker for a (possibly untrusted) schema: this module's when it suffices, else jsonschema.
    Found by identity first (one ToolSpec shared by many tasks), then by ``repr`` (unambiguous for JSON data and
    ~20x cheaper than json.dumps), so equal schemas in different task objects share one checker. Schemas are
    treated as immutable once used (Task and ToolSpec are frozen; do not edit their dicts in place)."""
    hit = _BY_ID.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    key = repr(schema)
    fn = _CACHE.get(key)
    if fn is None:
        fn = None
        if supported(schema):
            try:
                fn = compile_lite(json.loads(json.dumps(schema)))  # a private copy: later edits cannot reach it
            except (ValueError, TypeError, KeyError):
                fn = None  # odd keyword values: jsonschema reports them properly
        if fn is None:
            from crossgym.verifiers.json_schema import compile_schema

            fn = compile_schema(schema, trusted=False)
        if len(_CACHE) > 4096:
            _CACHE.clear()
        _CACHE[key] = fn
    if len(_BY_ID) > 4096:
        _BY_ID.clear()
    _BY_ID[id(schema)] = (schema, fn)  # holding the schema keeps its id from being reused
    return fn


def json_key(value: Any) -> Any:
    """A hashable key equal for two JSON values exactly when jsonschema's ``equal`` says they are: booleans equal
    only booleans, 1 equals 1.0, arrays by their items in order, objects by their members in any order."""
    t = type(value)
    if t is bool:
        return ("b", value)
    if t is int or t is float:
        return ("n", value)
    if t is str:
        return ("s", value)
    if t is list or t is tuple:
        return ("l", tuple(json_key(v) for v in value))
    if t is dict:
        return ("d", frozenset((k, json_key(v)) for k, v in value.items()))
    if value is None:
        return ("z",)
    return ("o", id(value))  # (no other type comes from JSON)
