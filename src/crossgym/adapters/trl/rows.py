"""TRL dataset rows: the prompt column TRL generates from, and the task column crossgym's reward functions
rebuild each Task (and its verifier) from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossgym.protocol.task import Task

#: Dataset column holding each task's JSON; reward functions rebuild the Task (and its verifier) from it.
TASK_COLUMN = "task"
#: Extra column a multi-turn rollout adds: the whole Completion (assistant turns and tool results) as JSON.
COMPLETION_COLUMN = "crossgym_completion"
#: Key carried by each prompt message in episode rows so a rollout function can find its task.
TASK_INDEX_KEY = "crossgym_task"


def task_rows(tasks: Sequence[Task], *, episodes: bool = False) -> list[dict[str, Any]]:
    """Dataset rows: ``prompt`` (chat messages) and ``task`` (the Task JSON that reward functions rebuild).

    With ``episodes``, each prompt message also carries the task's index under TASK_INDEX_KEY, because TRL hands a
    rollout function only the prompts.
    """
    rows = []
    for i, t in enumerate(tasks):
        prompt: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in t.prompt]
        if episodes:
            prompt = [{**m, TASK_INDEX_KEY: i} for m in prompt]
        rows.append({"prompt": prompt, TASK_COLUMN: t.to_json()})
    return rows
