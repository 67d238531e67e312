"""json_schema: the completion's JSON validates against a JSON Schema, with compiled and cached validators.

Trusted schemas (the ``schema`` param, written by whoever wrote the config, or task schemas when
``trusted_answers=True``) are compiled by fastjsonschema, which generates and execs Python code: ~10-20x faster
than jsonschema, but a hostile schema could inject code, so schemas that arrive as task data use jsonschema's
validator (also compiled once and cached) unless trusted. jsonschema is the reference on both paths (Draft 2020-12
unless "$schema" names another draft): a trusted schema that uses a keyword fastjsonschema reads otherwise
(json_schema_keywords.py) is judged by jsonschema too. No path ever fetches a remote "$ref".
"""

from __future__ import annotations

import copy
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, OutOfTime, clip, time_left
from crossgym.verifiers.json_checks import _JsonBase
from crossgym.verifiers.json_schema_keywords import fastjsonschema_agrees
from crossgym.verifiers.schema_lite import json_key

#: compiled validators kept per process
CACHE_SIZE = 2048
#: the ``formats`` param: "format" an annotation (the drafts' and jsonschema's default) or an assertion
FORMATS = ("annotate", "assert")



class Check(Protocol):
    """A compiled schema: None when ``value`` is valid, else the first error message. ``finite`` says the caller
    knows no float in ``value`` is infinite (orjson read it: ``json_text.read_strict``), which spares a walk."""

    def __call__(self, value: Any, finite: bool = False, /) -> str | None: ...


#: a JSON number past 1.8e308 reads as infinity, on which some checks (multipleOf) raise: the completion fails
OUT_OF_RANGE = "a number out of range (JSON numbers past 1.8e308 read as infinity): "


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


def _refuse(uri: str) -> Any:
    raise ValueError(f"$ref {uri!r} is not inside the schema, and remote schemas are never fetched")


class _NoFetch(dict[str, Callable[[str], Any]]):
    """fastjsonschema's URI-scheme handlers: one for every scheme, refusing. Without a handler for a scheme it
    calls urlopen, so a "$ref" could make the verifier send requests (schemas using one never get here anyway)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Callable[[str], Any]:
        return _refuse


def _finite(value: Any) -> bool:
    """No float in ``value`` is infinite (JSON 1e400 reads as inf). jsonschema-rs takes inf for no type at all,
    so it said "valid" to 1e400 for "maximum": 150 and for "not": {"type": "number"}."""
    t = type(value)
    if t is dict or t is list:
        for x in value.values() if t is dict else value:
            tx = type(x)
            if (tx is float and x - x != 0.0) or ((tx is dict or tx is list) and not _finite(x)):
                return False
        return True
    return t is not float or value - value == 0.0


def _has_key(node: Any, keys: frozenset[str]) -> bool:
    """Some object in ``node`` (a schema) has one of ``keys`` (a property named so counts too: only a cost)."""
    if isinstance(node, dict):
        return any(k in keys for k in node) or any(_has_key(v, keys) for v in node.values())
    if isinstance(node, list):
        return any(_has_key(v, keys) for v in node)
    return False


def _fast(schema: dict[str, Any], formats: bool = False) -> Check:
    import fastjsonschema

    # a copy: fastjsonschema rewrites "$ref"s in place
    fn = _fastjsonschema_compile(copy.deepcopy(schema), formats)
    first = _rust_is_valid(schema)
    # only bounds, "not" and "oneOf" can turn its reading of inf into a wrong "valid"; other schemas skip the walk
    walk = first is not None and _has_key(schema, _INF_SENSITIVE)

    def check(value: Any, finite: bool = False, /) -> str | None:
        if first is not None:
            try:
                if first(value) and (finite or not walk or _finite(value)):
                    return None
            except Exception:  # noqa: BLE001 - a value jsonschema-rs cannot take: fastjsonschema decides
                pass
        try:
            fn(value)
            return None
        except fastjsonschema.JsonSchemaValueException as exc:
            return str(exc.message)
        except (OverflowError, ValueError) as exc:
            return OUT_OF_RANGE + str(exc)

    return check


def _fastjsonschema_compile(schema: dict[str, Any], formats: bool = False) -> Callable[[Any], Any]:
    """``fastjsonschema.compile(schema)`` as crossgym uses it (no defaults filled in, ``formats`` asserted or not,
    with ``_FORMATS`` where asserted, no remote "$ref" fetched), with exceptions that carry no copy of the schema: its generated code
    builds the failing rule's whole subschema as a literal on every raise (the object schema's, for an extra key),
    and only the message is read here. Its messages, names and rules are unchanged."""
    from fastjsonschema import _get_code_generator_class
    from fastjsonschema.ref_resolver import RefResolver

    base = _get_code_generator_class(schema)
    lean = _LEAN.get(base)
    if lean is None:
        lean = _LEAN[base] = type("Lean" + base.__name__, (base,), {"exc": _lean_exc})
    resolver = RefResolver.from_schema(schema, handlers=_NoFetch(), store={})
    gen = lean(schema, resolver=resolver, formats=_FORMATS, use_default=False, use_formats=formats,
               detailed_exceptions=True, fast_fail=True)
    state = gen.global_state
    exec(gen.func_code, state)  # noqa: S102 - as fastjsonschema.compile does, on a trusted schema
    fn = state[resolver.get_scope_name()]
    return functools.partial(fn, custom_formats=_FORMATS)


_LEAN: dict[type, type] = {}


def _lean_exc(self: Any, msg: str, *args: Any, append_to_msg: str | None = None, rule: str | None = None) -> None:
    """fastjsonschema's ``CodeGenerator.exc`` (fast-fail, detailed) with ``definition=None`` in the raise."""
    arg = '"' + msg + '"'
    if append_to_msg:
        arg += " + (" + append_to_msg + ")"
    definition = self._expand_refs(self._definition)
    rule_value = self.e(definition.get(rule) if isinstance(definition, dict) else None)
    self.l("raise JsonSchemaValueException(" + arg + ', value={variable}, name="{name}", definition=None, '
           "rule={rule})", *args, rule=repr(rule), definition_rule=rule_value)


# jsonschema-rs (Rust, ~7x fastjsonschema here) answers first for schemas written only with keywords on which the two
# agree: it may only say "valid" where fastjsonschema says so too, and every "invalid" is fastjsonschema's to judge
# and word. Left to fastjsonschema alone (or to jsonschema, json_schema_keywords.py): format and pattern (different
# regex and format rules), multipleOf (float arithmetic), uniqueItems (Python equality), $ref and $id (resolution),
# conditionals, tuple items, other drafts, and numbers in the schema at or past 2**53 (jsonschema-rs may compare
# them as doubles). It reads an infinite float (JSON 1e400) as no type at all: _finite keeps its "valid" from those.
_DRAFT7 = ("http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema")
_TYPES = frozenset(("string", "integer", "number", "object", "array", "boolean", "null"))
_ANNOTATIONS = frozenset(("title", "description", "$comment", "default", "examples", "readOnly", "writeOnly",
                          "definitions", "$defs"))  # no $ref may reach definitions: unused by both validators
_SUBSCHEMA = frozenset(("additionalProperties", "items", "contains", "not", "propertyNames"))
_SUBSCHEMAS = frozenset(("anyOf", "allOf", "oneOf"))
_COUNTS = frozenset(("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"))
_BOUNDS = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
_EXACT = 2**53
_INF_SENSITIVE = _BOUNDS | {"not", "oneOf"}


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


def email_ok(value: str) -> bool:
    """fastjsonschema's "email" format, ``^(?!.*\\.\\..*@)[^@.][^@]*(?<!\\.)@[^@]+\\.[^@]+\\Z``, in linear time: the
    regex backtracks quadratically (40 KB of "a.." took 3.5 s in an inline verifier). The same answers: one "@", a
    local part that neither starts nor ends with ".", a domain with a "." inside it, and no ".." before the "@" on
    the first line (the look-ahead's "." matches no newline); tests/verifiers/test_json_schema.py compares the two."""
    if value.count("@") != 1:
        return False
    local, domain = value.split("@")
    if not local or local[0] == "." or local[-1] == "." or "." not in domain[1:-1]:
        return False
    line = value.split("\n", 1)[0]
    at = line.find("@")
    return at < 0 or ".." not in line[:at]


#: formats checked by crossgym's code instead of fastjsonschema's regex (on both paths)
_FORMATS = {"email": email_ok}


def _matches(pattern: Any) -> Callable[[str], bool]:
    return lambda value: pattern.match(value) is not None


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
        match: Callable[[str], bool] = _FORMATS.get(name) or _matches(re.compile(regex))
        checker.checks(name)(lambda value, match=match: not isinstance(value, str) or match(value))

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


def _reference(schema: dict[str, Any]) -> Any:
    """jsonschema's validator class for ``schema``, the one draft both paths judge by: the draft "$schema" names,
    else 2020-12. Raises SchemaError for a schema that draft's metaschema refuses."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls


#: drafts whose reading of fastjsonschema's agreed keywords is 2020-12's (its generator has no 2020-12 of its own)
_FAST_DRAFTS = frozenset(("Draft202012Validator", "Draft201909Validator", "Draft7Validator"))


def _trusted(schema: dict[str, Any], formats: bool = False) -> Check:
    """fastjsonschema where it gives jsonschema's verdicts, else jsonschema (also compiled once)."""
    cls = _reference(schema)
    if cls.__name__ in _FAST_DRAFTS and fastjsonschema_agrees(schema):
        try:
            return _fast(schema, formats)
        except ImportError:
            raise
        except Exception:  # noqa: BLE001 - it refuses some valid schemas: jsonschema judges those
            pass  # e.g. {"required": ["x"], "additionalProperties": false}: "x" is required but not allowed
    return _slow(schema, cls, formats)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
    """jsonschema's uniqueItems, in linear time: its own falls back to comparing every pair when the items cannot
    be sorted together (objects, or numbers beside strings), so 4,000 objects took 22 s in an inline verifier."""
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array") and len({json_key(v) for v in instance}) != len(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")  # (its words)


@functools.lru_cache(maxsize=16)
def _linear_unique(cls: Any) -> Any:
    """``cls`` (a jsonschema validator class) with :func:`_unique_items` as its uniqueItems."""
    import jsonschema

    if "uniqueItems" not in getattr(cls, "VALIDATORS", {}):
        return cls
    return jsonschema.validators.extend(cls, {"uniqueItems": _unique_items})


def _slow(schema: dict[str, Any], cls: Any = None, formats: bool = False) -> Check:
    import jsonschema
    import referencing
    import referencing.exceptions

    cls = _linear_unique(cls or _reference(schema))
    # an empty registry retrieves nothing (jsonschema's default fetches remote "$ref"s, with a warning); the
    # metaschemas stay resolvable, jsonschema adds them to any registry
    v = cls(schema, format_checker=format_checker(schema) if formats else None, registry=referencing.Registry())

    def check(value: Any, finite: bool = False, /) -> str | None:
        try:
            err = jsonschema.exceptions.best_match(v.iter_errors(value))
        except referencing.exceptions.Unresolvable as exc:
            raise BadTask(f"$ref {clip(str(getattr(exc, 'ref', exc)), 100)!r} is not inside the schema "
                          "(remote schemas are never fetched)") from None
        except (OverflowError, ValueError) as exc:  # Fraction(inf) in multipleOf
            return OUT_OF_RANGE + str(exc)
        if err is None:
            return None
        path = "/".join(str(p) for p in err.absolute_path)
        return f"{path or '<root>'}: {err.message}"

    return check


_BY_ID: OrderedDict[tuple[int, bool, bool], tuple[Any, Check]] = OrderedDict()
_BY_ID_LOCK = threading.Lock()


def compile_schema(schema: Any, trusted: bool, formats: bool = False) -> Check:
    """A cached validator for ``schema``: fastjsonschema when trusted and it agrees, jsonschema otherwise. Raises
    ValueError for a schema jsonschema refuses. ``formats``: "format" is an assertion (fastjsonschema's formats);
    by default it is an annotation, as the JSON Schema drafts and jsonschema read it.
    The same schema object (a task reused across a GRPO group) is found by identity without re-serialising it."""
    hit = _BY_ID.get((id(schema), trusted, formats))
    if hit is not None and hit[0] is schema:
        return hit[1]
    check = _compile_schema(schema, trusted, formats)
    with _BY_ID_LOCK:
        _BY_ID[(id(schema), trusted, formats)] = (schema, check)  # holding the schema keeps its id from being reused
        if len(_BY_ID) > CACHE_SIZE:
            _BY_ID.popitem(last=False)
    return check


def _compile_schema(schema: Any, trusted: bool, formats: bool) -> Check:
    if not isinstance(schema, (dict, bool)):
        raise ValueError(f"a JSON Schema must be an object or boolean, got {type(schema).__name__}")
    if isinstance(schema, bool):
        return (lambda v, finite=False, /: None) if schema else \
            (lambda v, finite=False, /: "the schema false rejects everything")
    key = ("F" if trusted else "S") + ("A" if formats else "N") + repr(schema)  # unambiguous, cheaper than json.dumps

    def make() -> Check:
        try:
            check = _build(schema, trusted, formats)  # (also where a pooled schema is refused: in the caller, at once)
        except ImportError as exc:
            raise VerifierError(f"verifier 'json_schema' needs {exc.name} (fix: pip install "
                                "'crossgym[verifiers]')") from None
        except VerifierError:
            raise
        except Exception as exc:  # SchemaError, JsonSchemaDefinitionException, ...
            raise ValueError(f"invalid JSON Schema: {clip(str(exc), 200)}") from None
        return _pooled(schema, trusted, formats) if _runs_regex(schema, formats) else check

    return _CACHE.get(key, make)  # type: ignore[no-any-return]


# A schema's "pattern" and "patternProperties" (and "format": "regex", which compiles the document's string) run
# Python's re on text the completion wrote, in C that no deadline reaches: "^(a+)+$" took 4.6 s on a 27-character
# string, doubling with each more "a" (tool_call's argument schemas reach it too). Those schemas are checked in
# crossgym's worker-process pool, killed at the caller's deadline, with re's own semantics (the regex package's
# timeouts would read some patterns otherwise); the rest, nearly all, stay inline.
_REGEX_KEYS = frozenset(("pattern", "patternProperties"))
#: seconds a pooled check may take when no verifier's deadline is running (a direct compile_schema caller)
POOLED_TIMEOUT = 10.0


def _runs_regex(schema: Any, formats: bool) -> bool:
    """Whether checking a document against ``schema`` may run one of its regular expressions on the document's
    text (a property named "pattern", or a "format" string elsewhere, counts too: only a cost)."""
    return _has_key(schema, _REGEX_KEYS) or (formats and "'format': 'regex'" in repr(schema))


def _build(schema: dict[str, Any], trusted: bool, formats: bool) -> Check:
    """``schema``'s check in this process: fastjsonschema where it agrees (trusted), else jsonschema."""
    return _trusted(schema, formats) if trusted else _slow(schema, None, formats)


def _pooled(schema: Any, trusted: bool, formats: bool) -> Check:
    """A check that runs ``schema``'s in a pool worker, killed at the current verifier call's deadline: past it,
    OutOfTime, whose Verdict is the pool's rule for a killed job (``base.timed_out``: malformed when the worker was
    busy with the document, as a pattern made to backtrack keeps it). In a pool worker, the check itself."""

    def check(value: Any, finite: bool = False, /) -> str | None:
        from crossgym.verifiers.pool import PoolError, PoolTimeout, get_pool, in_worker

        if in_worker():
            return _check_in_worker(schema, trusted, value, finite, formats)
        timeout = max(0.05, time_left(POOLED_TIMEOUT) - 0.05)
        pool = get_pool()
        pool.require(__name__)
        try:
            return pool.call(_check_in_worker, (schema, trusted, value, finite, formats),  # type: ignore[no-any-return]
                             timeout)
        except PoolTimeout as exc:
            raise OutOfTime(timeout, exc.cpu_s) from None
        except PoolError as exc:
            raise RuntimeError(f"the schema check could not run in a worker: {exc}") from None

    return check


def _check_in_worker(schema: Any, trusted: bool, value: Any, finite: bool, formats: bool = False) -> str | None:
    """``_pooled``'s job: ``schema``'s check in this process (cached apart from the pooled one), on ``value``."""
    local: Check = _CACHE.get(("LF" if trusted else "LS") + ("A" if formats else "N") + repr(schema),
                              lambda: _build(schema, trusted, formats))
    return local(value, finite)


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
    task answers go through jsonschema; True compiles them with fastjsonschema too, where it agrees), formats
    ("annotate": "format" is an annotation, as every JSON Schema draft and jsonschema read it by default; "assert":
    it is checked, with fastjsonschema's formats), partial (False: True gives
    credit per top-level property of an object schema: each required one present, each present value valid, no
    forbidden extra keys, and the whole document valid as one more share), plus json_valid's fenced / allow_surrounding / think. Text that is not JSON is malformed;
    JSON that breaks the schema fails with the first error as the reason.
    """

    name = "json_schema"
    # 2: task schemas check "format" as trusted ones do, whatever optional packages are installed; 3: one verdict per
    # schema, jsonschema's (2020-12 unless "$schema" names a draft): trusted schemas with keywords fastjsonschema
    # reads otherwise (unevaluated*, dependent*, prefixItems, $ref siblings, multipleOf, "$" in pattern...) go to
    # jsonschema, 1e400 (inf) no longer passes numeric bounds, raising checks on it fail, no "$ref" is ever fetched
    # 4: partial credit never reaches a valid document's (the document's validity is a share of its own: an invalid
    # one scored 1.0 where the schema asked for more than its properties), and an optional property left out
    # earns nothing; 5: a schema whose check runs one of its regular expressions on the document (pattern,
    # patternProperties, format "regex") is checked in the worker pool, killed at the deadline: a document that makes a
    # pattern backtrack is malformed ("^(a+)+$" held the caller 4.6 s on a 27-character string, doubling per "a");
    # 6: "format" is an annotation unless formats="assert", as in every draft's own test suite and in jsonschema:
    # an invalid email string failed {"format": "email"}, which JSON-Schema-Test-Suite's draft2020-12 format.json
    # (18 cases) and jsonschema call valid, and fastjsonschema's formats refused valid international hostnames
    version = "6"
    description = "JSON validates against a JSON Schema (fastjsonschema when trusted, cached; partial credit)"

    def __init__(self, *, schema: dict[str, Any] | bool | None = None, trusted_answers: bool = False,
                 partial: bool = False, formats: str = "annotate", **params: Any) -> None:
        super().__init__(**params)
        if formats not in FORMATS:
            raise VerifierError(f"verifier 'json_schema': param formats must be one of {', '.join(FORMATS)}, got "
                                f"{clip(repr(formats), 60)} (fix: formats: assert to check \"format\", as "
                                "fastjsonschema does)")
        self.formats = formats == "assert"
        if schema is not None:
            try:
                compile_schema(schema, True, self.formats)
            except ValueError as exc:
                raise VerifierError(f"verifier 'json_schema': param schema: {exc} (fix: pass a valid JSON Schema "
                                    "object, or none and give each task's schema as its answer)") from None
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
            check = compile_schema(schema, trusted, self.formats)
        except ValueError as exc:
            raise BadTask(str(exc)) from None
        value, finite = self.read(completion)
        err = check(value, finite)
        if not self.partial:
            return Verdict.ok(1.0, reason="valid") if err is None else Verdict.ok(0.0, reason=clip(err, 200))
        if err is None:
            return Verdict.ok(1.0, components={"valid": 1.0}, reason="valid")
        comps = self._partial(schema, value, trusted)
        comps["valid"] = 0.0  # (one share of its own: an invalid document never earns what a valid one does)
        return Verdict.ok(sum(comps.values()) / len(comps), passed=False, components=comps, reason=clip(err, 200))

    def _partial(self, schema: Any, value: Any, trusted: bool) -> dict[str, float]:
        """A share per required property and per property the document has (present values valid, required ones
        present), and whether it has no forbidden extra keys. An optional property it leaves out earns nothing:
        it counted as met, so ``{}`` earned 0.75 where an honest try with three wrong fields earned 0.25."""
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(value, dict) or not isinstance(props, dict) or not props:
            return {}
        required = set(schema.get("required") or ())
        comps: dict[str, float] = {}
        for name, sub in props.items():
            if name not in value:
                if name in required:
                    comps[f"prop:{name}"] = 0.0
                continue
            try:
                ok = compile_schema(_sub_schema(schema, sub), trusted, self.formats)(value[name]) is None
            except ValueError:
                ok = False
            comps[f"prop:{name}"] = float(ok)
        if schema.get("additionalProperties") is False:
            comps["no_extra_keys"] = float(all(k in props for k in value))
        return comps

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
