"""Tasks -> OpenRLHF's JSONL prompt dataset: ``prompt`` (chat messages) and ``label`` (the whole Task as JSON).

OpenRLHF's PromptDataset applies the tokenizer's chat template to ``prompt`` (``--data.apply_chat_template``) and
hands ``label`` untouched to the reward function or agent, which rebuild the Task, and so its verifier, from it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from crossgym.protocol.task import Task

INPUT_KEY = "prompt"
LABEL_KEY = "label"


def prompt_messages(task: Task) -> list[dict[str, Any]]:
    """The task's prompt as role/content pairs (one Arrow schema for every row). Prompts with tool calls or tools go
    through the agent, which renders them from the Task itself."""
    return [{"role": m.role, "content": m.content} for m in task.prompt]


def task_row(task: Task) -> dict[str, Any]:
    """One dataset row."""
    return {INPUT_KEY: prompt_messages(task), LABEL_KEY: task.to_json(), "datasource": task.verifier.name}


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


def dataset_jsonl(tasks: Sequence[Task], *, rows: int | None = None, seed: int = 0) -> str:
    """The JSONL text of the prompt dataset (``rows`` rows cycled from ``tasks``; all tasks once when None)."""
    chosen = list(tasks) if rows is None else cycled(tasks, rows, seed=seed)
    return "".join(json.dumps(task_row(t), ensure_ascii=False) + "\n" for t in chosen)


def task_from_label(label: Any) -> Task:
    """The Task a dataset label carries (a JSON string; a dict when a loader already parsed it)."""
    if isinstance(label, (bytes, bytearray)):
        label = label.decode("utf-8")
    if isinstance(label, str):
        from crossgym.rollout.tasks import task_from_json

        return task_from_json(label)  # cached: the same rows come back every step
    if isinstance(label, dict):
        return Task.from_dict(label)
    raise ValueError(f"an OpenRLHF label must be the Task JSON, got {type(label).__name__}")
