"""POST /verify/batch bodies read without validating every item through pydantic, and the route's OpenAPI body.

A batch is thousands of small items: a bare-text completion and a task index need no model, and a task seen before
(the same JSON) was validated then. Everything else (inline tasks, Completion objects, verifier overrides) goes
through the same strict models as ``BatchRequest``; a body this fast path does not take is validated by
``BatchRequest`` itself, so what is accepted and every 422 are exactly the model's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.serve import jsonio
from crossgym.serve import models as m
from crossgym.serve.errors import ApiError, error_body, validation_error

_TOP = frozenset({"items", "tasks"})
_ITEM = frozenset({"task", "completion", "verifier"})
#: the schema's bound on items and tasks (BatchRequest's max_length)
SCHEMA_MAX = 4096


class _Slow(Exception):
    """This body needs the model: validate it whole."""


class BodyError(ApiError):
    """A 422 whose body is a full validation report (problems listed)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        err = doc["error"]
        super().__init__(422, err["code"], err["what"], where=err["where"], fix=err["fix"])
        self.doc = doc

    def body(self) -> dict[str, Any]:
        return self.doc


def _text_or_model(raw: Any, from_text: Callable[[str], Any], model: type[BaseModel],
                   convert: Callable[[Any], Any]) -> Any:
    """A bare string, or a JSON object validated by ``model`` (strict) and converted; else the model path."""
    if type(raw) is str:
        return from_text(raw)
    if isinstance(raw, dict):
        return convert(model.model_validate(raw))
    raise _Slow


def _spec(raw: Any) -> VerifierSpec:
    return _text_or_model(raw, m.to_spec, m.VerifierSpecIn, m.to_spec)  # type: ignore[no-any-return]


def _completion(raw: Any) -> Completion:
    return _text_or_model(raw, Completion.from_text, m.CompletionIn, m.to_completion)  # type: ignore[no-any-return]


def _task(raw: Any, cache: m.TaskCache) -> Task:
    if not isinstance(raw, dict):
        raise _Slow
    return cache.from_json(raw)


def _fast(doc: Any, cache: m.TaskCache, max_batch: int) -> list[tuple[Task, Completion]]:
    if not isinstance(doc, dict) or not doc.keys() <= _TOP:
        raise _Slow
    items, raw_tasks = doc.get("items"), doc.get("tasks", [])
    if type(items) is not list or type(raw_tasks) is not list or not items or len(items) > SCHEMA_MAX \
            or len(raw_tasks) > SCHEMA_MAX:
        raise _Slow
    if len(items) > max_batch:
        raise ApiError(413, "batch_too_large", f"{len(items)} items is over this server's {max_batch}",
                       where="body.items", fix=f"send at most {max_batch} items per request")
    shared = [_task(t, cache) for t in raw_tasks]
    pairs = []
    bad_index: ApiError | None = None  # raised once every item is known to be well formed (as the model does)
    for i, it in enumerate(items):
        if not isinstance(it, dict) or not it.keys() <= _ITEM or "task" not in it or "completion" not in it:
            raise _Slow
        ref = it["task"]
        completion = _completion(it["completion"])
        override = it.get("verifier")
        spec = None if override is None else _spec(override)
        if type(ref) is not int:
            task = _task(ref, cache)
        elif 0 <= ref < len(shared):
            task = shared[ref]
        else:
            bad_index = bad_index or ApiError(
                422, "invalid_request", f"task index {ref} is not in tasks (0..{len(shared) - 1})",
                where=f"body.items[{i}].task", fix="send the task inline, or list it in the batch's 'tasks'")
            continue
        pairs.append((task if spec is None else dataclasses.replace(task, verifier=spec), completion))
    if bad_index is not None:
        raise bad_index
    return pairs


def to_pair(item: m.VerifyRequest | m.BatchItem, shared: list[Task] | None = None,
            where: str = "body.task", cache: m.TaskCache | None = None, raw: Any = None) -> tuple[Task, Completion]:
    """(Task, Completion) of one item; ``raw`` is the item's own JSON (for the task cache)."""
    if isinstance(item.task, int):
        if not shared or not 0 <= item.task < len(shared):
            raise ApiError(422, "invalid_request", f"task index {item.task} is not in tasks "
                           f"(0..{len(shared or []) - 1})", where=where,
                           fix="send the task inline, or list it in the batch's 'tasks'")
        task = shared[item.task]
    elif cache is not None and isinstance(raw, dict):
        task = cache.task(raw.get("task"), item.task)
    else:
        task = m.to_task(item.task)
    if item.verifier is not None:
        task = dataclasses.replace(task, verifier=m.to_spec(item.verifier))
    return task, m.to_completion(item.completion)


def parse_batch(body: bytes, cache: m.TaskCache, max_batch: int) -> list[tuple[Task, Completion]]:
    """The (Task, Completion) pairs of a /verify/batch body; ApiError 413/422 (structured) when it is refused."""
    try:
        doc = jsonio.loads(body)
    except ValueError as exc:
        raise BodyError(error_body(422, "invalid_request", f"the body is not valid JSON ({exc})", where="body",
                                   fix="send one valid JSON document with Content-Type: application/json")) from None
    try:
        return _fast(doc, cache, max_batch)
    except (_Slow, ValidationError):
        return _by_model(doc, cache, max_batch)


def _by_model(doc: Any, cache: m.TaskCache, max_batch: int) -> list[tuple[Task, Completion]]:
    """The pairs by validating the whole body with BatchRequest (the model's own errors and their locations)."""
    try:
        model = m.BatchRequest.model_validate(doc)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e.get("loc", ()))} for e in exc.errors()]
        raise BodyError(validation_error(errors)) from None
    if len(model.items) > max_batch:
        raise ApiError(413, "batch_too_large", f"{len(model.items)} items is over this server's {max_batch}",
                       where="body.items", fix=f"send at most {max_batch} items per request")
    shared = [cache.task(r, t) for r, t in zip(doc.get("tasks") or (), model.tasks, strict=True)]
    return [to_pair(it, shared, f"body.items[{i}].task", cache, r)
            for i, (it, r) in enumerate(zip(model.items, doc["items"], strict=True))]


def add_request_body(doc: dict[str, Any], path: str, model: type[Any]) -> None:
    """Document ``model`` as the JSON body of POST ``path`` in an OpenAPI document (its schemas in components)."""
    from pydantic.json_schema import models_json_schema

    _, top = models_json_schema([(model, "validation")], ref_template="#/components/schemas/{model}")
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in top.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    doc["paths"][path]["post"]["requestBody"] = {
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        "required": True}
