"""TRL dataset rows: the prompt column TRL generates from, and the task column crossgym's reward functions
rebuild each Task (and its verifier) from."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.kit.rows import CHUNK_ROWS, TaskJSON
from crossgym.protocol.task import Task

#: Dataset column holding each task's JSON; reward functions rebuild the Task (and its verifier) from it.
TASK_COLUMN = "task"
#: Extra column a multi-turn rollout adds: the whole Completion (assistant turns and tool results) as JSON.
COMPLETION_COLUMN = "crossgym_completion"
#: The Arrow file (under the run's DATASET_DIR) a training Dataset memory-maps.
DATASET_DIR = "crossgym_dataset"
DATASET_FILE = "train.arrow"
#: Key carried by each prompt message in episode rows so a rollout function can find its task.
TASK_INDEX_KEY = "crossgym_task"


def iter_task_rows(tasks: Sequence[Task], *, episodes: bool = False) -> Iterator[dict[str, Any]]:
    """Dataset rows one at a time: ``prompt`` (chat messages) and ``task`` (the Task JSON that reward functions
    rebuild), each task's JSON serialised once however often a blend repeats it.

    With ``episodes``, each prompt message also carries the task's index under TASK_INDEX_KEY, because TRL hands a
    rollout function only the prompts.
    """
    as_json = TaskJSON()
    for i, t in enumerate(tasks):
        prompt: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in t.prompt]
        if episodes:
            prompt = [{**m, TASK_INDEX_KEY: i} for m in prompt]
        yield {"prompt": prompt, TASK_COLUMN: as_json(t)}


def task_rows(tasks: Sequence[Task], *, episodes: bool = False) -> list[dict[str, Any]]:
    """Dataset rows: ``prompt`` (chat messages) and ``task`` (the Task JSON that reward functions rebuild); see
    iter_task_rows."""
    return list(iter_task_rows(tasks, episodes=episodes))


def features(*, episodes: bool = False) -> Any:
    """The rows' datasets.Features (one schema for every chunk of a large dataset)."""
    from datasets import Features, List, Value

    message = {"role": Value("string"), "content": Value("string")}
    if episodes:
        message[TASK_INDEX_KEY] = Value("int64")
    return Features({"prompt": List(message), TASK_COLUMN: Value("string")})


def task_dataset(tasks: Sequence[Task], *, episodes: bool = False, cache_dir: str | Path | None = None,
                 chunk_rows: int = CHUNK_ROWS) -> Any:
    """The training ``datasets.Dataset`` of ``tasks``' rows. With ``cache_dir``, the rows are written there as one
    Arrow file in batches of ``chunk_rows`` and the Dataset memory-maps it: memory stays bounded by a batch for a
    blend of a million rows. Without it, the Dataset is built in memory (small runs, tests). Same rows either way."""
    from datasets import Dataset

    feats = features(episodes=episodes)
    if cache_dir is None:
        return Dataset.from_list(task_rows(tasks, episodes=episodes), features=feats)
    from datasets.arrow_writer import ArrowWriter

    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / DATASET_FILE
    partial = path.with_name(path.name + ".partial")
    with ArrowWriter(features=feats, path=str(partial), writer_batch_size=chunk_rows) as writer:
        for row in iter_task_rows(tasks, episodes=episodes):
            writer.write(row)
        writer.finalize()
    os.replace(partial, path)  # a new file: a Dataset still mapping the previous one keeps reading it
    return Dataset.from_file(str(path))
