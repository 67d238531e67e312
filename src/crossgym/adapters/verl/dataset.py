"""crossgym Tasks -> veRL dataset rows (the parquet schema RLHFDataset reads).

Each row: ``prompt`` (chat messages), ``data_source`` ("crossgym/<verifier>", veRL groups metrics by it),
``ability``, ``reward_model`` {style: "rule", ground_truth}, ``extra_info`` {index, split, task id, the Task JSON,
the VerifierSpec JSON, environment name/params/seed (the episode driver's group seed)/explicit max_turns, and
tools_kwargs for veRL's BaseTool route} and, for multi-turn runs, ``agent_name`` naming crossgym's agent loop. Values whose shape varies per task (the Task, the
verifier params, the environment params) are JSON strings: parquet stores one struct type per column, and a union
of every task's keys would hand verifiers params they never had.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit.rows import CHUNK_ROWS, TaskJSON, chunked
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
             tool_names: Sequence[str] = (), task_json: str | None = None) -> dict[str, Any]:
    """One veRL row for ``task`` (see the module docstring); ``task_json``: its JSON when the caller has it."""
    from crossgym.rollout.tasks import task_env, task_env_params, task_max_turns
    from crossgym.scoring.parts import part_of

    env = task_env(task, run)
    if task_json is None:
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


def iter_task_rows(tasks: Sequence[Task], run: RunConfig, *, split: str = "train", episodes: bool = False,
                   tools: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """veRL rows for ``tasks`` one at a time, indexed in order. A blend repeats its pooled Task objects, so each
    object's row (less its index and tools_kwargs) is built once and every repeat is a copy of it with its own index
    and tools_kwargs, made per row: that struct lists every tool, too big to keep per task (the prompt and
    reward_model values are shared between a task's rows: treat rows as read-only)."""
    names = tool_names(tasks) if tools is None else tools
    as_json = TaskJSON()
    built: dict[int, tuple[Task, dict[str, Any]]] = {}
    for i, t in enumerate(tasks):
        hit = built.get(id(t))
        if hit is None or hit[0] is not t:
            hit = built[id(t)] = (t, task_row(t, 0, run, split=split, episodes=episodes, task_json=as_json(t)))
        row = dict(hit[1])
        extra = row["extra_info"] = {**row["extra_info"], "index": i}
        if names:  # as task_row adds it: last in extra_info
            extra["tools_kwargs"] = {name: {"create_kwargs": {TASK_KEY: extra[TASK_KEY]}} for name in names}
        yield row


def task_rows(tasks: Sequence[Task], run: RunConfig, *, split: str = "train", episodes: bool = False
              ) -> list[dict[str, Any]]:
    """veRL rows for ``tasks``, indexed in order."""
    return list(iter_task_rows(tasks, run, split=split, episodes=episodes))


@dataclass(frozen=True)
class Rows:
    """A parquet file's rows, built when iterated (write_parquet streams them in row groups; describe reads the
    first): a run's million rows are never held as dicts at once."""

    tasks: Sequence[Task]
    run: RunConfig
    split: str = "train"
    episodes: bool = False

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter_task_rows(self.tasks, self.run, split=self.split, episodes=self.episodes)


def row_schema(tools: Sequence[str] = (), *, episodes: bool = False) -> Any:
    """The rows' Arrow schema, fixed so every row group of a large file has the same one (a chunk whose rows all
    lack a value would otherwise infer a null column)."""
    import pyarrow as pa

    string, int64 = pa.string(), pa.int64()
    extra = [("index", int64), ("split", string), ("task_id", string), (TASK_KEY, string), ("verifier", string),
             ("env", string), ("env_params", string), ("env_seed", int64), ("max_turns", int64)]
    if tools:
        kwargs = pa.struct([("create_kwargs", pa.struct([(TASK_KEY, string)]))])
        extra.append(("tools_kwargs", pa.struct([(name, kwargs) for name in tools])))
    fields = [("data_source", string),
              ("prompt", pa.list_(pa.struct([("role", string), ("content", string)]))),
              ("ability", string),
              ("reward_model", pa.struct([("style", string), ("ground_truth", string)])),
              ("extra_info", pa.struct(extra))]
    if episodes:
        fields.append(("agent_name", string))
    return pa.schema(fields)


def write_parquet(rows: Iterable[dict[str, Any]], path: str | Path, *, chunk_rows: int | None = None) -> Path:
    """Write rows as a parquet file (pyarrow, which veRL installs), streamed in row groups of ``chunk_rows`` rows:
    memory stays bounded by a row group whatever the number of rows. Default: CHUNK_ROWS, divided by the number
    of tools when rows carry tools_kwargs (each row holds its Task JSON once per tool). Returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    it = iter(rows)
    head = next(it, None)
    if head is None:
        pq.write_table(pa.Table.from_pylist([]), out)
        return out
    tools = list(head["extra_info"].get("tools_kwargs") or ())
    schema = row_schema(tools, episodes="agent_name" in head)
    extra_names = [f.name for f in schema.field("extra_info").type]
    if list(head) != schema.names or list(head["extra_info"]) != extra_names:  # a column added to task_row
        raise ValueError(f"veRL rows do not match row_schema: {list(head)} / {list(head['extra_info'])}")
    size = chunk_rows or max(500, CHUNK_ROWS // (1 + len(tools)))
    partial = out.with_name(out.name + ".partial")
    with pq.ParquetWriter(partial, schema) as writer:
        for chunk in chunked(itertools.chain([head], it), size):
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema), row_group_size=size)
    partial.replace(out)
    return out


def describe(rows: Sequence[dict[str, Any]] | Rows) -> str:
    """A short text standing for a parquet file in a Plan (which holds text): its size, columns and first row
    (only the first row is built)."""
    head = next(iter(rows), None)
    if head is None:
        return "(parquet) 0 rows\n"
    cols = ", ".join(head)
    first = json.dumps(head, ensure_ascii=False, indent=2)
    return f"(parquet) {len(rows)} rows; columns: {cols}\n# first row:\n{first}\n"
