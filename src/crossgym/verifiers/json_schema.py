"""json_schema: the completion's JSON validates against a JSON Schema, with compiled and cached validators.

Trusted schemas (the ``schema`` param, written by whoever wrote the config, or task schemas when
``trusted_answers=True``) are compiled by fastjsonschema, which generates and execs Python code: ~10-20x faster
than jsonschema, but a hostile schema could inject code, so schemas that arrive as task data use jsonschema's
validator (also compiled once and cached) unless trusted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, clip
from crossgym.verifiers.json_checks import _JsonBase

#: compiled validators kept per process
CACHE_SIZE = 2048

Check = Callable[[Any], "str | None"]  # returns None when valid, else the first error message


class _LRU:
    def __init__(self, size: int) -> None:
        self.size, self.data, self.lock = size, OrderedDict[str, Any](), threading.Lock()

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = make()
        with self.lock:
            self.data[key] = value
            if len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


_CACHE = _LRU(CACHE_SIZE)


def _fast(schema: dict[str, Any]) -> Check:
    import fastjsonschema

    fn = fastjsonschema.compile(schema, use_default=False, use_formats=True)
    first = _rust_is_valid(schema)

    def check(value: Any) -> str | None:
        if first is not None:
            try:
                if first(value):
                    return None
            except Exception:  # noqa: BLE001 - a value jsonschema-rs cannot take: fastjsonschema decides
                pass
        try:
            fn(value)
            return None
        except fastjsonschema.JsonSchemaValueException as exc:
            return str(exc.message)

    return check


# jsonschema-rs (Rust, ~7x fastjsonschema here) answers first for schemas written only with keywords on which the two
# agree: it may only say "valid" where fastjsonschema says so too, and every "invalid" is fastjsonschema's to judge
# and word. Left to fastjsonschema alone: format and pattern (different regex and format rules), multipleOf (float
# arithmetic), uniqueItems (Python equality), $ref and $id (resolution), conditionals, tuple items, other drafts, and
# numbers in the schema at or past 2**53 (jsonschema-rs may compare them as doubles).
_DRAFT7 = ("http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema")
_TYPES = frozenset(("string", "integer", "number", "object", "array", "boolean", "null"))
_ANNOTATIONS = frozenset(("title", "description", "$comment", "default", "examples", "readOnly", "writeOnly",
                          "definitions", "$defs"))  # no $ref may reach definitions: unused by both validators
_SUBSCHEMA = frozenset(("additionalProperties", "items", "contains", "not", "propertyNames"))
_SUBSCHEMAS = frozenset(("anyOf", "allOf", "oneOf"))
_COUNTS = frozenset(("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"))
_BOUNDS = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
_EXACT = 2**53


def _rust_is_valid(schema: Any) -> Callable[[Any], bool] | None:
    """jsonschema-rs's ``is_valid`` for ``schema`` when installed and the schema is in the agreed subset, else None."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    if not isinstance(schema, dict) or schema.get("$schema", _DRAFT7[0]) not in _DRAFT7:
        return None
    if not _agreed({k: v for k, v in schema.items() if k != "$schema"}):
        return None
    try:
        return jsonschema_rs.Draft7Validator(schema).is_valid
    except Exception:  # noqa: BLE001 - a schema it refuses: fastjsonschema alone, as before
        return None


def _small(value: Any) -> bool:
    """Every number in ``value`` (a JSON value from a schema) is below 2**53 in size: doubles hold it exactly."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, (int, float)):
        return abs(value) < _EXACT
    if isinstance(value, list):
        return all(_small(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _small(v) for k, v in value.items())
    return False


def _agreed(schema: Any, depth: int = 0) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 32:
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = value if isinstance(value, list) else [value]
            ok = bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)
        elif key == "properties":
            ok = isinstance(value, dict) and all(_agreed(v, depth + 1) for v in value.values())
        elif key == "required":
            ok = isinstance(value, list) and all(isinstance(n, str) for n in value)
        elif key in _SUBSCHEMA:
            ok = _agreed(value, depth + 1)
        elif key in _SUBSCHEMAS:
            ok = isinstance(value, list) and bool(value) and all(_agreed(v, depth + 1) for v in value)
        elif key in _COUNTS:
            ok = type(value) is int and 0 <= value < _EXACT
        elif key in _BOUNDS:
            ok = type(value) in (int, float) and abs(value) < _EXACT
        elif key in ("enum", "const"):
            ok = (key == "const" or (isinstance(value, list) and bool(value))) and _small(value)
        else:
            ok = False
        if not ok:
            return False
    return True


def format_checker(schema: Any) -> Any:
    """A jsonschema FormatChecker that checks what fastjsonschema checks for ``schema``: its format regexes (and
    "regex"), matched as it matches them. jsonschema's own checker checks a format only when an optional package is
    installed (date-time needs rfc3339-validator, uri rfc3987, hostname fqdn, ...), so an untrusted schema's
    "format" decided a verdict by what the machine had installed, and otherwise than the trusted path did."""
    import re

    import fastjsonschema
    import jsonschema
    from fastjsonschema.draft2019 import CodeGeneratorDraft2019

    pick = getattr(fastjsonschema, "_get_code_generator_class", None)
    gen = pick(schema) if callable(pick) else CodeGeneratorDraft2019
    checker = jsonschema.FormatChecker(formats=())
    for name, regex in getattr(gen, "FORMAT_REGEXS", {}).items():
        match = re.compile(regex).match
        checker.checks(name)(lambda value, match=match: not isinstance(value, str) or match(value) is not None)

    def is_regex(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        try:
            re.compile(value)
        except Exception:  # noqa: BLE001 - as fastjsonschema's generated check
            return False
        return True

    checker.checks("regex")(is_regex)
    return checker


def _slow(schema: dict[str, Any]) -> Check:
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    v = cls(schema, format_checker=format_checker(schema))

    def check(value: Any) -> str | None:
        err = jsonschema.exceptions.best_match(v.iter_errors(value))
        if err is None:
            return None
        path = "/".join(str(p) for p in err.absolute_path)
        return f"{path or '<root>'}: {err.message}"

    return check


_BY_ID: OrderedDict[tuple[int, bool], tuple[Any, Check]] = OrderedDict()
_BY_ID_LOCK = threading.Lock()


def compile_schema(schema: Any, trusted: bool) -> Check:
    """A cached validator for ``schema``: fastjsonschema when trusted, jsonschema otherwise. Raises ValueError.
    The same schema object (a task reused across a GRPO group) is found by identity without re-serialising it."""
    hit = _BY_ID.get((id(schema), trusted))
    if hit is not None and hit[0] is schema:
        return hit[1]
    check = _compile_schema(schema, trusted)
    with _BY_ID_LOCK:
        _BY_ID[(id(schema), trusted)] = (schema, check)  # holding the schema keeps its id from being reused
        if len(_BY_ID) > CACHE_SIZE:
            _BY_ID.popitem(last=False)
    return check


def _compile_schema(schema: Any, trusted: bool) -> Check:
    if not isinstance(schema, (dict, bool)):
        raise ValueError(f"a JSON Schema must be an object or boolean, got {type(schema).__name__}")
    if isinstance(schema, bool):
        return (lambda v: None) if schema else (lambda v: "the schema false rejects everything")
    key = ("F" if trusted else "S") + repr(schema)  # unambiguous for JSON data, far cheaper than json.dumps

    def make() -> Check:
        try:
            return _fast(schema) if trusted else _slow(schema)
        except ImportError as exc:
            raise VerifierError(f"verifier 'json_schema' needs {exc.name} (fix: pip install "
                                "'crossgym[verifiers]')") from None
        except VerifierError:
            raise
        except Exception as exc:  # SchemaError, JsonSchemaDefinitionException, ...
            raise ValueError(f"invalid JSON Schema: {clip(str(exc), 200)}") from None

    return _CACHE.get(key, make)  # type: ignore[no-any-return]


def _sub_schema(root: dict[str, Any], sub: Any) -> Any:
    """A property's subschema made standalone: root definitions carried along so local $refs still resolve."""
    if not isinstance(sub, dict):
        return sub
    extra = {k: root[k] for k in ("$defs", "definitions") if k in root and k not in sub}
    return {**sub, **extra} if extra else sub


class JsonSchema(_JsonBase):
    """The completion is JSON that validates against a JSON Schema.

    answer: the schema (an object), or null to use the ``schema`` param.
    params: schema (the schema when tasks do not carry one; always trusted), trusted_answers (False: schemas from
    task answers go through jsonschema; True compiles them with fastjsonschema too), partial (False: True gives
    credit per top-level property of an object schema: required present, present values valid, no forbidden
    extra keys), plus json_valid's fenced / allow_surrounding / think. Text that is not JSON is malformed;
    JSON that breaks the schema fails with the first error as the reason.
    """

    name = "json_schema"
    version = "2"  # 2: task schemas check "format" as trusted ones do, whatever optional packages are installed
    description = "JSON validates against a JSON Schema (fastjsonschema when trusted, cached; partial credit)"

    def __init__(self, *, schema: dict[str, Any] | bool | None = None, trusted_answers: bool = False,
                 partial: bool = False, **params: Any) -> None:
        super().__init__(**params)
        if schema is not None:
            try:
                compile_schema(schema, True)
            except ValueError as exc:
                raise VerifierError(f"verifier 'json_schema': param schema: {exc}") from None
        self.schema, self.trusted_answers, self.partial = schema, bool(trusted_answers), bool(partial)

    def _schema(self, task: Task) -> tuple[Any, bool]:
        if task.answer is not None:
            return task.answer, self.trusted_answers
        if self.schema is None:
            raise BadTask("no schema: give one as the task answer or the schema param")
        return self.schema, True

    def score(self, task: Task, completion: Completion) -> Verdict:
        schema, trusted = self._schema(task)
        try:
            check = compile_schema(schema, trusted)
        except ValueError as exc:
            raise BadTask(str(exc)) from None
        value = self.parse(completion)
        err = check(value)
        if err is None:
            return Verdict.ok(1.0, components={"valid": 1.0} if self.partial else {}, reason="valid")
        if not self.partial:
            return Verdict.ok(0.0, reason=clip(err, 200))
        frac, comps = self._partial(schema, value, trusted)
        comps["valid"] = 0.0
        return Verdict.ok(frac, passed=False, components=comps, reason=clip(err, 200))

    def _partial(self, schema: Any, value: Any, trusted: bool) -> tuple[float, dict[str, float]]:
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(value, dict) or not isinstance(props, dict) or not props:
            return 0.0, {}
        required = set(schema.get("required") or ())
        comps: dict[str, float] = {}
        for name, sub in props.items():
            if name not in value:
                comps[f"prop:{name}"] = 0.0 if name in required else 1.0
                continue
            try:
                ok = compile_schema(_sub_schema(schema, sub), trusted)(value[name]) is None
            except ValueError:
                ok = False
            comps[f"prop:{name}"] = float(ok)
        if schema.get("additionalProperties") is False:
            comps["no_extra_keys"] = float(all(k in props for k in value))
        return sum(comps.values()) / len(comps), comps

    @classmethod
    def examples(cls) -> list[Example]:
        person = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                                   "age": {"type": "integer", "minimum": 0}},
                  "required": ["name", "age"], "additionalProperties": False}
        return [
            cls.example(person, '{"name": "Ada", "age": 36}', "pass"),
            cls.example(None, '```json\n{"name": "Ada", "age": 36}\n```', "pass", "schema from params, fenced",
                        params={"schema": person}),
            cls.example(person, '{"name": "Ada", "age": -1}', "fail", "minimum"),
            cls.example(person, '{"name": "Ada", "age": 36, "admin": true}', "fail", "extra key"),
            cls.example(person, '{"name": "Ada", "age": "36"}', "fail", "partial credit 0.5",
                        params={"partial": True}),
            cls.example(person, "name: Ada, age: 36", "malformed", "not JSON"),
        ]
