"""The /verify/batch fast path takes exactly what BatchRequest takes, builds the same pairs, and refuses the rest
with the model's own 422 (location included)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("fastapi")

from crossgym.serve import batch_body  # noqa: E402
from crossgym.serve import models as m  # noqa: E402
from crossgym.serve.errors import ApiError  # noqa: E402

TASK = {"id": "t", "prompt": "2+2?", "answer": "4", "verifier": "numeric"}
TASK2 = {"id": "u", "prompt": [{"role": "user", "content": "say hi"}], "answer": "hi",
         "verifier": {"name": "exact_match", "params": {}}, "metadata": {"k": [1, 2]}}
COMPLETION = {"messages": [{"role": "assistant", "content": "4"}], "token_ids": [1, 2], "logprobs": [-0.5, -0.1]}

ACCEPTED: list[Any] = [
    {"items": [{"task": TASK, "completion": "4"}]},
    {"tasks": [TASK, TASK2], "items": [{"task": 1, "completion": "hi"}, {"task": 0, "completion": COMPLETION},
                                       {"task": TASK2, "completion": "x", "verifier": "exact_match"},
                                       {"task": 0, "completion": "4", "verifier": {"name": "numeric"}},
                                       {"task": 0, "completion": "", "verifier": None}]},
]
REFUSED: list[Any] = [
    [], {"items": []}, {"items": {}}, {"items": [{"task": True, "completion": "4"}], "tasks": [TASK, TASK]},
    {"items": [{"task": 0.0, "completion": "4"}], "tasks": [TASK]}, {"items": [{"task": TASK}]},
    {"items": [{"task": TASK, "completion": 4}]}, {"items": [{"task": TASK, "completion": "4", "extra": 1}]},
    {"items": [{"task": TASK, "completion": "4"}], "other": 1},
    {"items": [{"task": {**TASK, "bogus": 1}, "completion": "4"}]},
    {"items": [{"task": 0, "completion": "4"}], "tasks": [{"id": "t"}]},
    {"items": [{"task": TASK, "completion": {"messages": [{"role": "robot", "content": "x"}]}}]},
    {"items": [{"task": TASK, "completion": "4", "verifier": {"name": ""}}]},
    {"items": [{"task": TASK, "completion": "4", "verifier": 3}]},
    {"items": [{"task": TASK, "completion": "4"}] * 4097},
    {"items": [{"task": 5, "completion": "4"}, {"task": TASK, "completion": 7}], "tasks": [TASK]},
]


def _model_path(doc: Any, max_batch: int = 4096) -> Any:
    try:
        return ("ok", batch_body._by_model(doc, m.TaskCache(), max_batch))
    except ApiError as exc:
        return ("error", exc.status, exc.body())


def _fast_path(doc: Any, max_batch: int = 4096) -> Any:
    try:
        return ("ok", batch_body.parse_batch(json.dumps(doc).encode(), m.TaskCache(), max_batch))
    except ApiError as exc:
        return ("error", exc.status, exc.body())


@pytest.mark.parametrize("doc", ACCEPTED)
def test_accepted_bodies_give_the_models_pairs(doc: Any) -> None:
    fast = _fast_path(doc)
    assert fast[0] == "ok" and fast == _model_path(doc)
    cache = m.TaskCache()  # again through one cache: tasks seen before are the same objects
    first = batch_body.parse_batch(json.dumps(doc).encode(), cache, 4096)
    assert batch_body.parse_batch(json.dumps(doc).encode(), cache, 4096) == first


@pytest.mark.parametrize("doc", REFUSED)
def test_refused_bodies_give_the_models_422(doc: Any) -> None:
    fast = _fast_path(doc)
    assert fast[0] == "error" and fast[1] == 422
    assert fast == _model_path(doc)
    assert fast[2]["error"]["where"].startswith("body")


def test_bad_index_is_reported_after_the_items_are_known_well_formed() -> None:
    doc = {"items": [{"task": 0, "completion": "4"}, {"task": 2, "completion": "4"}], "tasks": [TASK]}
    fast = _fast_path(doc)
    assert fast == _model_path(doc) and fast[2]["error"]["where"] == "body.items[1].task"


def test_too_many_items_for_this_server_is_a_413_and_bad_json_a_422() -> None:
    doc = {"items": [{"task": TASK, "completion": "4"}] * 5}
    assert _fast_path(doc, max_batch=4)[:2] == _model_path(doc, max_batch=4)[:2] == ("error", 413)
    with pytest.raises(ApiError) as info:
        batch_body.parse_batch(b"{not json", m.TaskCache(), 8)
    assert info.value.status == 422 and info.value.body()["error"]["fix"].startswith("send one valid JSON")


def test_a_task_seen_before_is_reused_but_nan_and_null_are_told_apart() -> None:
    cache = m.TaskCache()
    doc = b'{"items": [{"task": 0, "completion": "4"}, {"task": 1, "completion": "4"}], "tasks": [%s, %s]}'
    first = batch_body.parse_batch(doc % (json.dumps(TASK).encode(), json.dumps(TASK).encode()), cache, 8)
    assert first[0][0] is first[1][0]  # the same JSON: the same Task object (its verifier caches hit too)
    nan, null = (json.dumps({**TASK, "answer": None}).replace("null", v).encode() for v in ("NaN", "null"))
    pairs = batch_body.parse_batch(doc % (nan, null), cache, 8)
    assert pairs[0][0].answer != pairs[0][0].answer and pairs[1][0].answer is None
