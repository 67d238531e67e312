"""Which trusted schemas fastjsonschema may judge: those written only with keywords it reads as jsonschema does.

jsonschema is the reference (Draft 2020-12 unless "$schema" names another draft). fastjsonschema implements Draft
4-7 and part of 2019-09: it lacks unevaluated*, dependent*, min/maxContains and prefixItems, ignores the siblings of
"$ref", still reads "dependencies", tuple "items", "additionalItems" and "contentEncoding", rewrites "$" in "pattern"
to "\\Z" (so "a\\n" fails "^a$"), checks "multipleOf" with other float arithmetic (0.3 passed "multipleOf": 0.1), and
resolves "$id"s and non-local "$ref"s its own way (fetching them over the network). A schema with anything outside
the lists below goes to jsonschema instead, so it has one verdict whichever path judges it.
"""

from __future__ import annotations

from typing import Any

ANNOTATIONS = frozenset(("title", "description", "$comment", "default", "examples", "readOnly", "writeOnly",
                         "deprecated"))
#: keywords whose value holds no subschema and that both read alike (fuzzed against jsonschema: docs/verifiers.md)
PLAIN = frozenset(("type", "required", "enum", "const", "uniqueItems", "format", "minimum", "maximum",
                   "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
                   "minProperties", "maxProperties"))
ONE = frozenset(("additionalProperties", "items", "contains", "not", "propertyNames", "if", "then", "else"))
MANY = frozenset(("anyOf", "allOf", "oneOf"))
MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions"))
REF_SIBLINGS = ANNOTATIONS | {"$ref", "$defs", "definitions"}  # what may stand next to "$ref": no assertions
MAX_DEPTH = 64


def fastjsonschema_agrees(schema: Any) -> bool:
    """True when fastjsonschema gives ``schema`` jsonschema's verdicts. The caller has checked the draft
    ("$schema" absent, 2020-12, 2019-09 or draft-07) and the schema against its metaschema."""
    return _agrees(schema, schema, 0, set())


def _agrees(node: Any, root: Any, depth: int, seen: set[int]) -> bool:
    if isinstance(node, bool):
        return True
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return False
    for key, value in node.items():
        if key in ANNOTATIONS or key in PLAIN or (key == "$schema" and depth == 0):
            continue
        if key == "pattern":
            ok = isinstance(value, str) and "$" not in value
        elif key in ONE:
            ok = (key != "items" or isinstance(value, (dict, bool))) and _agrees(value, root, depth + 1, seen)
        elif key in MANY:
            ok = isinstance(value, list) and all(_agrees(v, root, depth + 1, seen) for v in value)
        elif key in MAPS:
            ok = isinstance(value, dict) and all(_agrees(v, root, depth + 1, seen) for v in value.values())
        elif key == "$ref":
            ok = (all(k in REF_SIBLINGS or (k == "$schema" and depth == 0) for k in node)
                  and _local_ref(value, root, depth, seen))
        else:
            ok = False
        if not ok:
            return False
    return True


def _local_ref(ref: Any, root: Any, depth: int, seen: set[int]) -> bool:
    """``ref`` is a plain JSON pointer into this schema ("#", "#/$defs/a") whose target agrees too."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")) or "~" in ref or "%" in ref:
        return False
    target = root
    for part in ref[2:].split("/") if ref != "#" else ():
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isascii() and part.isdigit() and str(int(part)) == part \
                and int(part) < len(target):
            target = target[int(part)]
        else:
            return False  # jsonschema raises when it gets there, fastjsonschema when it compiles: jsonschema's call
    if id(target) in seen:  # a recursive schema: that target is being (or was) walked
        return True
    seen.add(id(target))
    return _agrees(target, root, depth + 1, seen)
