"""crossgym Tasks -> veRL dataset rows (the parquet schema RLHFDataset reads).

Each row: ``prompt`` (chat messages), ``data_source`` ("crossgym/<verifier>", veRL groups metrics by it),
``ability``, ``reward_model`` {style: "rule", ground_truth}, ``extra_info`` {index, split, task id, the Task JSON,
the VerifierSpec JSON, environment name/params/seed (the episode driver's group seed)/explicit max_turns, and
tools_kwargs for veRL's BaseTool route} and, for multi-turn runs, ``agent_name`` naming crossgym's agent loop. Values whose shape varies per task (the Task, the
verifier params, the environment params) are JSON strings: parquet stores one struct type per column, and a union
of every task's keys would hand verifiers params they never had.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.verl.reward import TASK_KEY
from crossgym.protocol.task import Task
from crossgym.rollout.driver import episode_seed

if TYPE_CHECKING:
    from crossgym.config import RunConfig

#: The name crossgym's agent loop is registered under in veRL (agent_name column, agent_loop_config_path YAML).
AGENT_NAME = "crossgym_agent"
def ground_truth(task: Task) -> str:
    """The task's answer as veRL's string ground_truth (JSON for non-strings); informational for our scorer."""
    return task.answer if isinstance(task.answer, str) else json.dumps(task.answer, ensure_ascii=False)


def _prompt(task: Task) -> list[dict[str, Any]]:
    # role + content only: a uniform struct. Multi-turn prompts (tool calls, tool results) are rebuilt from the
    # Task by crossgym's agent loop, which every run with such tasks uses.
    return [{"role": m.role, "content": m.content} for m in task.prompt]


def task_row(task: Task, index: int, run: RunConfig, *, split: str = "train", episodes: bool = False,
             tool_names: Sequence[str] = ()) -> dict[str, Any]:
    """One veRL row for ``task`` (see the module docstring)."""
    from crossgym.rollout.tasks import task_env, task_env_params, task_max_turns
    from crossgym.scoring.parts import part_of

    env = task_env(task, run)
    task_json = task.to_json()
    extra: dict[str, Any] = {
        "index": index,
        "split": split,
        "task_id": task.id,
        TASK_KEY: task_json,
        "verifier": json.dumps(task.verifier.to_dict(), sort_keys=True),
        "env": env,
        "env_params": json.dumps(task_env_params(task, run), sort_keys=True),
        "env_seed": episode_seed(run.seed, task.id),
        "max_turns": task_max_turns(task, run),  # None: the environment decides (under the driver's MAX_TURNS)
    }
    if tool_names:
        # veRL's ToolAgentLoop hands create_kwargs to BaseTool.create; every row lists every tool so the struct
        # has one shape (a tool the task lacks says so when called)
        extra["tools_kwargs"] = {name: {"create_kwargs": {TASK_KEY: task_json}} for name in tool_names}
    row: dict[str, Any] = {
        "data_source": part_of(task) or f"crossgym/{task.verifier.name}",  # a blend's part: veRL's metrics per part
        "prompt": _prompt(task),
        "ability": str(task.metadata.get("ability", task.verifier.name)),
        "reward_model": {"style": "rule", "ground_truth": ground_truth(task)},
        "extra_info": extra,
    }
    if episodes:
        row["agent_name"] = AGENT_NAME
    return row


def tool_names(tasks: Sequence[Task]) -> list[str]:
    """Every tool name the tasks declare, in first-seen order."""
    seen: dict[str, None] = {}
    for t in tasks:
        for spec in t.tools:
            seen.setdefault(spec.name, None)
    return list(seen)


def task_rows(tasks: Sequence[Task], run: RunConfig, *, split: str = "train", episodes: bool = False
              ) -> list[dict[str, Any]]:
    """veRL rows for ``tasks``, indexed in order."""
    names = tool_names(tasks)
    return [task_row(t, i, run, split=split, episodes=episodes, tool_names=names) for i, t in enumerate(tasks)]


def write_parquet(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as a parquet file (pyarrow, which veRL installs); returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(list(rows)), out)
    return out


def describe(rows: Sequence[dict[str, Any]]) -> str:
    """A short text standing for a parquet file in a Plan (which holds text): its size, columns and first row."""
    if not rows:
        return "(parquet) 0 rows\n"
    cols = ", ".join(rows[0])
    first = json.dumps(rows[0], ensure_ascii=False, indent=2)
    return f"(parquet) {len(rows)} rows; columns: {cols}\n# first row:\n{first}\n"
