"""Tasks -> OpenRLHF's JSONL prompt dataset: ``prompt`` (chat messages) and ``label`` (the whole Task as JSON).

OpenRLHF's PromptDataset applies the tokenizer's chat template to ``prompt`` (``--data.apply_chat_template``) and
hands ``label`` untouched to the reward function or agent, which rebuild the Task, and so its verifier, from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from crossgym.adapters.kit.files import LineFile
from crossgym.adapters.kit.rows import cycled, prompt_messages, task_from_cell
from crossgym.protocol.task import Task

__all__ = ["INPUT_KEY", "LABEL_KEY", "cycled", "dataset_file", "dataset_jsonl", "dataset_lines", "prompt_messages",
           "task_from_label", "task_row"]

INPUT_KEY = "prompt"
LABEL_KEY = "label"


def task_row(task: Task) -> dict[str, Any]:
    """One dataset row."""
    return {INPUT_KEY: prompt_messages(task), LABEL_KEY: task.to_json(), "datasource": task.verifier.name}


def dataset_lines(tasks: Sequence[Task], *, rows: int | None = None, seed: int = 0) -> Iterator[str]:
    """The prompt dataset's JSONL lines (``rows`` rows cycled from ``tasks``; all tasks once when None). A row
    depends on its task only, and a blend repeats its pooled Task objects: each object's line is built once."""
    chosen = list(tasks) if rows is None else cycled(tasks, rows, seed=seed)
    lines: dict[int, tuple[Task, str]] = {}  # entries hold their Task: an id is not reused while cached
    for t in chosen:
        hit = lines.get(id(t))
        if hit is None or hit[0] is not t:
            hit = lines[id(t)] = (t, json.dumps(task_row(t), ensure_ascii=False) + "\n")
        yield hit[1]


def dataset_file(tasks: Sequence[Task], *, rows: int | None = None, seed: int = 0) -> LineFile:
    """The prompt dataset as a LineFile: written in chunks, described from its first lines, never held whole."""
    count = len(tasks) if rows is None else (rows if tasks else 0)
    return LineFile(lines=lambda: dataset_lines(tasks, rows=rows, seed=seed), rows=count)


def dataset_jsonl(tasks: Sequence[Task], *, rows: int | None = None, seed: int = 0) -> str:
    """The JSONL text of the prompt dataset (``rows`` rows cycled from ``tasks``; all tasks once when None)."""
    return "".join(dataset_lines(tasks, rows=rows, seed=seed))


def task_from_label(label: Any) -> Task:
    """The Task a dataset label carries (a JSON string; a dict when a loader already parsed it)."""
    if not isinstance(label, (str, bytes, bytearray, dict)):
        raise ValueError(f"an OpenRLHF label must be the Task JSON, got {type(label).__name__}")
    return task_from_cell(label)
