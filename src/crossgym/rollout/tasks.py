"""The tasks a run trains or evaluates on, whichever backend runs it: loading them from a RunConfig's tasks section
(a registered source and/or JSONL files), the environment each task runs in, and whether a run needs episodes.

Nothing here is adapter-specific: every backend, `crossgym train` and the gate read tasks through these functions.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task

if TYPE_CHECKING:
    from crossgym.config import RunConfig, TasksConfig


def load_run_tasks(section: TasksConfig, *, where: str = "tasks") -> list[Task]:
    """The tasks a TasksConfig names: a registered source (with params) and/or JSONL files of Task objects."""
    from crossgym.api import load_tasks

    tasks: list[Task] = []
    if section.source:
        tasks.extend(load_tasks(section.source, **section.params))
    for f in section.files:
        tasks.extend(read_task_file(f))
    if not tasks:
        raise ConfigError("no tasks were produced", where=where, fix="check the source params (n) or the files")
    return tasks


def read_task_file(path: str | Path) -> list[Task]:
    """Tasks from a JSONL file (one Task JSON object per line); a bad line is one ConfigError naming it."""
    from crossgym.config.files import read_user_text, task_from_user_dict

    p = Path(path).expanduser()
    text = read_user_text(p, what="task file", fix_missing="check the path in tasks.files")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"not JSON ({exc})", where=f"{p}:{n}",
                              fix="each line must be a Task JSON object (see `crossgym tasks`)") from None
        out.append(task_from_user_dict(doc, f"{p}:{n}"))
    return out


@functools.lru_cache(maxsize=65536)
def task_from_json(text: str) -> Task:
    """A Task rebuilt from its JSON (cached: the same rows come back every epoch)."""
    return Task.from_json(text)


def task_env(task: Task, run: RunConfig) -> str:
    """The environment a task runs in: the config's when set explicitly, else the task's own."""
    if "name" in run.environment.model_fields_set:
        return run.environment.name
    return task.env


def needs_episodes(tasks: Sequence[Task], run: RunConfig) -> bool:
    """Whether the run needs an environment loop: more than one turn, an environment other than single_turn
    (the config's, or some task's), tools, or tool messages in a prompt."""
    env = run.environment
    if env.max_turns > 1 or ("name" in env.model_fields_set and env.name != "single_turn"):
        return True
    for t in tasks:
        if task_env(t, run) != "single_turn" or t.tools:
            return True
        if any(m.tool_calls or m.role == "tool" for m in t.prompt):
            return True
    return False
