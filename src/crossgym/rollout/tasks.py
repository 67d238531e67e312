"""The tasks a run trains or evaluates on, whichever backend runs it: loading them from a RunConfig's tasks section
(a registered source and/or JSONL files), the environment each task runs in, and whether a run needs episodes.

Nothing here is adapter-specific: every backend, `crossgym train` and the gate read tasks through these functions.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task
from crossgym.scoring.parts import ENV_KEY

if TYPE_CHECKING:
    from crossgym.config import RunConfig, TasksConfig
    from crossgym.config.run import BlendConfig


def load_run_tasks(section: TasksConfig | BlendConfig, *, where: str = "tasks", seed: int = 0) -> list[Task]:
    """The tasks a tasks section names: a registered source (with params) and/or JSONL files of Task objects, or a
    blend of named parts (crossgym.rollout.blend, sampled from ``seed``: pass the run's)."""
    from crossgym.api import load_tasks
    from crossgym.rollout.blend import is_blend, resolve_blend

    if is_blend(section):
        return resolve_blend(section, seed=seed, where=where).tasks
    section = typing.cast("TasksConfig", section)
    tasks: list[Task] = []
    if section.source:
        try:
            tasks.extend(load_tasks(section.source, **section.params))
        except ConfigError as exc:  # the source's own one line, placed in the config (tasks.params / a part's)
            if exc.where is not None:
                raise
            raise ConfigError(exc.message, where=f"{where}.params", fix=exc.fix) from None
    for f in section.files:
        tasks.extend(read_task_file(f))
    if not tasks:
        raise ConfigError("no tasks were produced", where=where, fix="check the source params (n) or the files")
    return tasks


def run_tasks(run: RunConfig) -> list[Task]:
    """A run's training tasks (a blend sampled from the run's seed)."""
    return load_run_tasks(run.tasks, seed=run.seed)


def run_eval_tasks(run: RunConfig) -> list[Task] | None:
    """A run's held-out tasks, or None when it names none."""
    return None if run.eval_tasks is None else load_run_tasks(run.eval_tasks, where="eval_tasks", seed=run.seed)


def read_task_file(path: str | Path) -> list[Task]:
    """Tasks from a JSONL file (one Task JSON object per line); a bad line is one ConfigError naming it."""
    from crossgym.config.files import load_user_json, read_user_text, task_from_user_dict

    p = Path(path).expanduser()
    text = read_user_text(p, what="task file", fix_missing="check the path in tasks.files")
    out = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): JSON text may hold a raw U+2028 or \x85
        if not line.strip():
            continue
        doc = load_user_json(line, f"{p}:{n}", fix="each line must be a Task JSON object (see `crossgym tasks`)")
        out.append(task_from_user_dict(doc, f"{p}:{n}"))
    return out


@functools.lru_cache(maxsize=65536)
def task_from_json(text: str) -> Task:
    """A Task rebuilt from its JSON (cached: the same rows come back every epoch)."""
    return Task.from_json(text)


def _part_env(task: Task) -> dict[str, Any]:
    settings = task.metadata.get(ENV_KEY) if isinstance(task.metadata, dict) else None
    return settings if isinstance(settings, dict) else {}


def episode_settings(task: Task, *, env: str | None = None, params: dict[str, Any] | None = None,
                     max_turns: int | None = None) -> tuple[str, dict[str, Any], int | None]:
    """(environment, its params, explicit max_turns) for a task, given the run's explicit settings (None: unset):
    a blend part's settings win over the run's, which win over the task's own environment. For code that holds
    the run's settings but not the RunConfig (a generated agent file)."""
    part = _part_env(task)
    name = task.env if part.get("explicit_name") or env is None else env
    kw = dict(part["params"]) if "params" in part else dict(params or {})
    turns = int(part["max_turns"]) if "max_turns" in part else max_turns
    return name, kw, turns


def _run_episode_settings(task: Task, run: RunConfig) -> tuple[str, dict[str, Any], int | None]:
    """episode_settings with the run's explicit environment settings (name and max_turns only when set)."""
    env = run.environment
    fields = env.model_fields_set
    return episode_settings(task, env=env.name if "name" in fields else None, params=dict(env.params),
                            max_turns=int(env.max_turns) if "max_turns" in fields else None)


def task_env(task: Task, run: RunConfig) -> str:
    """The environment a task runs in: its blend part's when the part names one, else the config's when set
    explicitly, else the task's own."""
    return _run_episode_settings(task, run)[0]


def task_env_params(task: Task, run: RunConfig) -> dict[str, Any]:
    """The environment's constructor params for a task: its blend part's when the part sets them, else the run's."""
    return _run_episode_settings(task, run)[1]


def task_max_turns(task: Task, run: RunConfig) -> int | None:
    """A task's explicit turn limit: its blend part's environment.max_turns, else the run's when set explicitly,
    else None (the environment decides)."""
    return _run_episode_settings(task, run)[2]


def needs_episodes(tasks: Sequence[Task], run: RunConfig) -> bool:
    """Whether the run needs an environment loop: more than one turn, an environment other than single_turn
    (the config's, or some task's), tools, or tool messages in a prompt."""
    env = run.environment
    if env.max_turns > 1 or ("name" in env.model_fields_set and env.name != "single_turn"):
        return True
    seen: set[int] = set()
    for t in tasks:
        if id(t) in seen:  # a blend's rows repeat its pooled Task objects
            continue
        seen.add(id(t))
        if task_env(t, run) != "single_turn" or t.tools or (task_max_turns(t, run) or 1) > 1:
            return True
        if any(m.tool_calls or m.role == "tool" for m in t.prompt):
            return True
    return False
