"""Tasks as a framework's dataset rows: the prompt as chat messages, the whole Task carried as JSON in one column,
and a run's rows cycled from its tasks. What every launched backend's dataset needs (OpenRLHF's label, SkyRL's
env_extras); the column names and the file format stay the backend's own."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from crossgym.protocol.task import Task
from crossgym.text.chunks import chunked as _chunked

T = TypeVar("T")

#: Rows per chunk when a backend's dataset file is written (parquet row groups, JSONL writes, Arrow batches):
#: memory stays bounded by a chunk, whatever the number of rows.
CHUNK_ROWS = 10_000


def prompt_messages(task: Task) -> list[dict[str, Any]]:
    """The task's prompt as role/content pairs (one Arrow schema for every row, as dataset loaders need). Prompts
    with tool calls or tools are rendered from the Task itself by the backend's episode shim."""
    return [{"role": m.role, "content": m.content} for m in task.prompt]


class TaskJSON:
    """Each task's JSON, serialised once per Task object. A blend's rows repeat its parts' pooled Task objects
    (epochs; crossgym.rollout.blend), so a row builder over a million rows asks for the same few tasks' JSON again
    and again. Entries hold their Task, so an object's id is not reused while it is cached; one instance per build
    (its memory is one JSON per distinct task)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Task, str]] = {}

    def __call__(self, task: Task) -> str:
        hit = self._by_id.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        text = task.to_json()
        self._by_id[id(task)] = (task, text)
        return text


def chunked(items: Iterable[T], size: int = CHUNK_ROWS) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size`` (the last one shorter): ``crossgym.text.chunks.chunked`` (the one
    batching loop, at the bottom layer so scoring and rollout use it too) with kit's default of CHUNK_ROWS."""
    return _chunked(items, size)


def cycled(tasks: Sequence[Task], rows: int, *, seed: int) -> list[Task]:
    """``rows`` tasks: passes over ``tasks``, each pass in a fresh order drawn from ``seed`` (epochs, as TRL sees)."""
    if not tasks:
        return []
    rng = random.Random(seed)
    out: list[Task] = []
    while len(out) < rows:
        order = list(tasks)
        rng.shuffle(order)
        out.extend(order[:rows - len(out)])
    return out


def task_from_cell(value: Any) -> Task:
    """The Task a dataset cell carries: its JSON (str or bytes), or the dict a loader already parsed it into."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        from crossgym.rollout.tasks import task_from_json

        return task_from_json(value)  # cached: the same rows come back every step
    if isinstance(value, dict):
        return Task.from_dict(value)
    raise ValueError(f"a task column must hold the Task JSON, got {type(value).__name__}")
