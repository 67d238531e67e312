"""Evaluation as a library call: an engine, tasks and a RolloutConfig in; rollouts, metrics and a report out."""

from __future__ import annotations

import itertools
import json
import logging
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from crossgym.protocol.episode import Rollout, SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.interfaces import InferenceEngine
from crossgym.protocol.task import Task
from crossgym.rollout.config import RolloutConfig, keyed_hash
from crossgym.rollout.runner import Progress, RolloutRunner
from crossgym.rollout.store import RolloutStore
from crossgym.scoring.records import stored_key

log = logging.getLogger(__name__)

ROLLOUTS_FILE = "rollouts.jsonl"
METRICS_FILE = "metrics.json"


class StoredRollouts(Sequence[Rollout]):
    """The rollouts of ``tasks`` x ``n`` under ``config_hash`` in an eval store, read lazily: in task then sample
    order (the order ``RolloutRunner.run`` returns), the first record of each key, other settings' records skipped.

    Building it scans the file once for the byte offset of each wanted record (an array of 8-byte offsets: no
    Rollout, no record is kept); iterating reads and parses one record at a time, so a pass over a million rollouts
    holds one. Indexing reads one record; a slice reads its records into a list. The store must not be rewritten
    while this is in use (appending is fine: offsets stay valid)."""

    def __init__(self, path: str | Path, tasks: Sequence[Task], n: int, config_hash: str) -> None:
        self.path = Path(path)
        index = {t.id: i for i, t in enumerate(tasks)}
        hashes = [keyed_hash(config_hash, t) for t in tasks]  # (a task edited under its id is keyed apart)
        slots = array("q", [-1]) * (len(tasks) * n)
        with self.path.open("rb") as f:
            pos = 0
            for raw in f:
                start, pos = pos, pos + len(raw)
                if not raw.endswith(b"\n"):  # a torn last line: not a record
                    break
                key = _record_key(raw)
                if key is None:
                    continue
                rest, _, hash_ = key.rpartition("@")
                tid, _, sample = rest.rpartition("#")
                i = index.get(tid)
                if i is None or hash_ != hashes[i] or not sample.isdigit() or int(sample) >= n:
                    continue
                slot = i * n + int(sample)
                if slots[slot] < 0:
                    slots[slot] = start
        self._offsets = array("q", (o for o in slots if o >= 0))

    def __len__(self) -> int:
        return len(self._offsets)

    def _read(self, f: Any, offset: int) -> Rollout:
        f.seek(offset)
        return Rollout.from_dict(json.loads(f.readline()))

    def __iter__(self) -> Iterator[Rollout]:
        with self.path.open("rb") as f:
            for offset in self._offsets:
                yield self._read(f, offset)

    @overload
    def __getitem__(self, i: int) -> Rollout: ...

    @overload
    def __getitem__(self, i: slice) -> list[Rollout]: ...

    def __getitem__(self, i: int | slice) -> Rollout | list[Rollout]:
        with self.path.open("rb") as f:
            if isinstance(i, slice):
                return [self._read(f, o) for o in self._offsets[i]]
            return self._read(f, self._offsets[i])


def _record_key(raw: bytes) -> str | None:
    """The resume key of a stored line that reads back as a rollout (the store's own rule: stored_key)."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return stored_key(doc) if isinstance(doc, dict) else None


@dataclass
class EvalResult:
    """What an eval produced: its rollouts (resumed ones included), metrics, and where files went.

    ``rollouts`` is a plain list for an in-process eval without ``output_dir``; with one (the CLI's path) it is a
    StoredRollouts, the store read back lazily, so no eval holds its rollouts in memory: iterate it (each pass
    reads the file), index it, or ``list()`` it when a list is really wanted."""

    rollouts: Sequence[Rollout]
    metrics: dict[str, Any]
    output_dir: Path | None = None
    report: Path | None = None
    #: rollouts found in the store from an earlier run with the same settings (resumed, not generated again)
    reused: int = 0


def build_engine(engine: str | None = None, *, model: str | None = None, endpoint: str | None = None,
                 **params: Any) -> InferenceEngine:
    """An engine from CLI-style settings: ``hf``/``vllm`` take a model directory, servers an endpoint URL."""
    from crossgym.api import get_engine

    name = engine or ("openai" if endpoint else "hf")
    kw: dict[str, Any] = dict(params)
    if name == "hf":
        if not model:
            raise ConfigError("the hf engine needs a model directory", where="--model",
                              fix="pass --model DIR, or --endpoint URL with --engine openai|sglang|vllm")
        kw["model"] = model
    elif name == "vllm":
        if endpoint:
            kw.update(base_url=endpoint, model=model)
        elif model:
            kw["model"] = model
        else:
            raise ConfigError("the vllm engine needs a model or a server", where="--model/--endpoint",
                              fix="pass --model DIR (in process) or --endpoint http://HOST:PORT/v1 (vllm serve)")
    elif name in ("openai", "sglang"):
        if not endpoint:
            raise ConfigError(f"the {name} engine needs a server URL", where="--endpoint",
                              fix="pass --endpoint http://HOST:PORT (see docs/engines.md)")
        kw["base_url"] = endpoint
        if model:
            kw["model"] = model
    else:  # a plugin engine: hand it what was given
        kw.update({k: v for k, v in (("model", model), ("base_url", endpoint)) if v})
    built: InferenceEngine = get_engine(name, **kw)
    built.check()
    return built


def engine_model_name(engine: InferenceEngine, fallback: str) -> str:
    try:
        return str(getattr(engine, "model_name", None) or fallback)
    except Exception:  # asking a server may fail; provenance falls back to what the user gave
        return fallback


def run_eval(engine: InferenceEngine, tasks: Sequence[Task], config: RolloutConfig, *,
             output_dir: str | Path | None = None, report: bool = True, progress: Progress | None = None,
             batch_size: int = 32, verify_workers: int = 4) -> EvalResult:
    """Roll out ``tasks`` x ``config.n``, compute metrics, and (with ``output_dir``) write rollouts.jsonl,
    metrics.json and report.html there. An interrupted eval in the same directory resumes. With ``output_dir``
    the rollouts are appended to the store as they are verified and never held: metrics and the report are
    computed in streaming passes over the store (EvalResult.rollouts reads it lazily)."""
    from crossgym import __version__
    from crossgym.eval.metrics import compute_metrics

    if not tasks:
        raise ConfigError("no tasks to evaluate", fix="check the task source, its params and --limit")
    out = Path(output_dir) if output_dir is not None else None
    store = RolloutStore(out / ROLLOUTS_FILE) if out is not None else None
    runner = RolloutRunner(engine, config, store=store, batch_size=batch_size, verify_workers=verify_workers,
                           progress=progress)
    rollouts: Sequence[Rollout]
    try:
        if store is None:
            rollouts = runner.run(tasks)
        else:  # appended to the store as they finish; metrics and report stream them back from it
            runner.generate(tasks)
    finally:
        if store is not None:
            store.close()
    reused = runner.resumed  # (the runner read the store's keys once: no second scan here)
    if store is not None:
        rollouts = StoredRollouts(store.path, tasks, config.n, runner.config_hash)
    metrics = compute_metrics(rollouts)
    metrics["run"] = {"model": config.model, "engine": config.engine, "n": config.n,
                      "sampling": config.sampling.to_dict(), "environment": config.environment,
                      "config_hash": runner.config_hash, "crossgym_version": __version__}
    html = None
    if out is not None:
        (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2, default=str) + "\n", encoding="utf-8")
        if report:
            from crossgym.eval.report import write_report

            html = write_report(out, metrics, rollouts, run_info=metrics["run"])
    return EvalResult(rollouts=rollouts, metrics=metrics, output_dir=out, report=html, reused=reused)


def sampling_from_run(run: Any) -> SamplingParams:
    """A RunConfig's GRPO sampling settings as SamplingParams (what training would sample with)."""
    g = run.grpo
    return SamplingParams(temperature=g.temperature, top_p=g.top_p, max_tokens=g.max_completion_length,
                          seed=run.seed)


def environment_from_run(run: Any) -> tuple[str | None, dict[str, Any]]:
    """The environment a RunConfig sets explicitly (None: each task's own) and its params."""
    if "environment" not in run.model_fields_set:
        return None, {}
    env = run.environment
    params = dict(env.params)
    if "max_turns" in env.model_fields_set:
        params["max_turns"] = env.max_turns
    return env.name, params


def load_task_list(source: str | None = None, *, params: dict[str, Any] | None = None,
                   files: Sequence[str] = (), limit: int | None = None) -> list[Task]:
    """Tasks from a registered source (with params) and/or JSONL task files; with ``limit``, only the first
    ``limit`` are read (the sources stream: ``--limit 1`` on a million tasks reads one)."""
    from crossgym.api import iter_tasks
    from crossgym.environments.sources.common import MAX_TASKS

    if source:
        from crossgym.config.files import is_user_file

        if Path(source).suffix in (".jsonl", ".json") or is_user_file(source):  # a long text: no file, no OSError
            files = [source, *files]
            source = None
    for f in files:
        if not Path(f).is_file():
            raise ConfigError("task file not found", where=str(f), fix="check the path")

    def every() -> Iterator[tuple[str, int, Task]]:
        if source:
            for n, task in enumerate(iter_tasks(source, **(params or {})), 1):
                yield f"task source {source!r}", n, task
        for f in files:
            for n, task in enumerate(iter_tasks("jsonl", path=str(f)), 1):
                yield str(f), n, task

    bound = MAX_TASKS if limit is None else min(limit, MAX_TASKS)
    tagged = list(itertools.islice(every(), bound + 1))
    if limit is not None:
        tagged = tagged[:limit]
    elif len(tagged) > MAX_TASKS:
        raise ConfigError(f"more than {MAX_TASKS} tasks, the most one eval loads", where=str(source or files[0]),
                          fix=f"pass --limit N (N <= {MAX_TASKS}) or fewer tasks")
    _check_unique_ids(tagged)
    return [task for _, _, task in tagged]


def _check_unique_ids(tagged: Sequence[tuple[str, int, Task]]) -> None:
    """Refuse two tasks with one id, naming both (file or source, and which task of it): an eval keys its rollouts
    by task id, so the second would be taken for the first's, resumed and counted as it. The runner refuses them
    too, but it no longer knows where each task came from."""
    first: dict[str, tuple[str, int]] = {}
    for origin, n, task in tagged:
        if task.id in first:
            where, m = first[task.id]
            at = f"tasks {m} and {n} of {where}" if where == origin else f"task {m} of {where} and task {n} of {origin}"
            raise ConfigError(f"task id {task.id!r} is used twice ({at}, counting non-blank lines): an eval keys its "
                              "rollouts by task id", where=origin,
                              fix="give each task its own id, or drop the repeated one")
        first[task.id] = (origin, n)
