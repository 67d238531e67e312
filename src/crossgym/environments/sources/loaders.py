"""File loaders: JSONL, Parquet and local Hugging Face datasets (``load_from_disk``) with column mapping.

Rows that are whole Tasks (``id``, ``prompt``, ``verifier``) load as they are, except for what a param overrides:
``verifier`` and ``env`` replace the row's own, ``system_prompt`` is added where the prompt has no system message
(re-score a task file with another verifier: ``--params '{"path": "t.jsonl", "verifier": "exact_match"}'``).
Other rows map through ``columns`` (task field -> source column; defaults: prompt <- "prompt", answer <- "answer",
id <- "id", verifier <- "verifier"), take the verifier from the ``verifier`` param (a name or ``{"name",
"params"}``) unless the verifier column holds one, and keep their remaining columns in ``metadata``.
``prompt_template`` ("Q: {question}") builds the prompt from several columns. A ``verifier`` param naming no
registered verifier, or ``columns`` that is no object of column names, is one ConfigError before any row is read.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from crossgym.config.files import iter_user_jsonl, task_from_user_dict
from crossgym.protocol.errors import BackendUnavailable, ConfigError, UnknownNameError
from crossgym.protocol.messages import Message, ToolSpec, messages_from
from crossgym.protocol.messages import json_kind as _kind
from crossgym.protocol.task import Task, VerifierSpec, task_id_text

log = logging.getLogger(__name__)

DEFAULT_COLUMNS = {"prompt": "prompt", "answer": "answer", "id": "id", "verifier": "verifier"}
FIELDS = ("prompt", "answer", "id", "system", "tools", "env", "verifier", "metadata")


def _jsonable(value: Any) -> Any:
    from crossgym.verifiers.reasoning_gym import jsonable

    return jsonable(value)


class RowMapper:
    """Turns source rows into Tasks according to the loader params."""

    def __init__(self, source: str, *, columns: Mapping[str, str] | None = None,
                 verifier: str | Mapping[str, Any] | None = None, env: str | None = None,
                 system_prompt: str | None = None, prompt_template: str | None = None,
                 id_prefix: str | None = None, keep_columns: bool = True) -> None:
        self.source = source
        _check_columns(source, columns)
        unknown = [k for k in (columns or {}) if k not in FIELDS]
        if unknown:
            raise ConfigError(f"task source {source!r}: unknown task field {unknown[0]!r} in columns",
                              fix=f"map these fields: {', '.join(FIELDS)}")
        self.columns = {**DEFAULT_COLUMNS, **dict(columns or {})}
        self.explicit = set(columns or {})
        self.verifier = _verifier_param(source, verifier)
        self.env = env
        self.system_prompt = system_prompt
        self.prompt_template = prompt_template
        self.id_prefix = id_prefix
        self.keep_columns = keep_columns

    def __call__(self, row: Any, index: int, where: str) -> Task:
        if not isinstance(row, Mapping):
            raise ConfigError(f"{where}: a row must be a JSON object, got {_kind(row)}",
                              fix="write one object per line")
        if not self.explicit and not self.prompt_template and {"id", "prompt", "verifier"} <= set(row):
            return self._override(task_from_user_dict(row, where))
        return self._map(row, index, where)

    def _override(self, task: Task) -> Task:
        """A whole-Task row with the params that override it (verifier, env) or add to it (system_prompt)."""
        if self.verifier is None and self.env is None and self.system_prompt is None:
            return task
        d = task.to_dict()
        if self.verifier is not None:
            d["verifier"] = self.verifier.to_dict()
        if self.env is not None:
            d["env"] = self.env
        if self.system_prompt is not None and not any(m["role"] == "system" for m in d["prompt"]):
            d["prompt"] = [{"role": "system", "content": self.system_prompt}, *d["prompt"]]
        return Task.from_dict(d)

    def _get(self, row: Mapping[str, Any], field: str, where: str, required: bool = False) -> Any:
        col = self.columns.get(field)
        if col is None or col not in row:
            if required:
                have = ", ".join(list(row)[:12])
                raise ConfigError(f"{where}: no column {col!r} for the task's {field} (columns: {have})",
                                  fix=f"pass columns={{'{field}': '<column>'}}")
            return None
        return row[col]

    @staticmethod
    def _tools(value: Any, where: str) -> tuple[ToolSpec, ...]:
        """A tools column: a list of tool specs (none when empty); anything else is one ConfigError naming the row."""
        if not value:
            return ()
        try:
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"must be a list of tool specs, got {_kind(value)}")
            return tuple(ToolSpec.from_dict(t) for t in value)
        except ValueError as exc:
            raise ConfigError(f"{where}: the tools column: {exc}",
                              fix="map 'tools' to a column of [{'name': ..., 'parameters': {...}}] lists") from None

    def _map(self, row: Mapping[str, Any], index: int, where: str) -> Task:
        used: set[str] = set()
        if self.prompt_template is not None:
            try:
                prompt_value: Any = self.prompt_template.format(**row)
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"{where}: prompt_template cannot be filled: {exc}",
                                  fix="use {column} names the rows have") from None
        else:
            prompt_value = self._get(row, "prompt", where, required=True)
            used.add(self.columns["prompt"])
        try:
            prompt = list(messages_from(prompt_value if not isinstance(prompt_value, (int, float)) else str(prompt_value)))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{where}: the prompt is neither text nor a list of messages ({exc})",
                              fix="map 'prompt' to a text column or a column of chat messages") from None
        system = self._get(row, "system", where)
        system = system if system is not None else self.system_prompt
        if system and not any(m.role == "system" for m in prompt):
            prompt.insert(0, Message(role="system", content=str(system)))
        vspec = self._get(row, "verifier", where)
        if vspec is not None:
            try:
                spec = VerifierSpec.from_dict(vspec)
            except (ValueError, TypeError, AttributeError) as exc:
                raise ConfigError(f"{where}: bad verifier column: {exc}", fix="use a name or {'name', 'params'}") \
                    from None
        elif self.verifier is not None:
            spec = self.verifier
        else:
            raise ConfigError(f"{where}: rows name no verifier",
                              fix="pass verifier='exact_match' (or {'name': ..., 'params': {...}})")
        raw_id = self._get(row, "id", where)
        prefix = self.id_prefix or self.source
        task_id = _row_id(raw_id, where) or f"{prefix}-{index}"
        tools = self._tools(self._get(row, "tools", where), where)
        env = self._get(row, "env", where) or self.env or "single_turn"
        metadata: dict[str, Any] = {}
        meta_col = self._get(row, "metadata", where)
        if isinstance(meta_col, Mapping):
            metadata.update(meta_col)
        for field in ("answer", "id", "system", "tools", "env", "verifier", "metadata"):
            if self.columns.get(field) in row:
                used.add(self.columns[field])
        if self.keep_columns:
            for k, v in row.items():
                if k not in used and k not in metadata:
                    metadata[k] = v
        metadata.setdefault("source", self.source)
        return Task(id=task_id, prompt=tuple(prompt), answer=_jsonable(self._get(row, "answer", where)),
                    verifier=spec, env=str(env), tools=tools, metadata=_jsonable(metadata))


def _row_id(raw: Any, where: str) -> str | None:
    """A row's id column as text; None where the row has none (null, or NaN: a pandas column's missing value),
    which gets the source's own "<prefix>-<index>". true/false and containers are a ConfigError: they became ids
    such as "True" or "[1]", shared by many rows."""
    if raw is None or (isinstance(raw, float) and raw != raw):
        return None
    try:
        return task_id_text(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}", fix="give each row a text or integer id, or leave the id column out "
                                                 "to number the rows") from None


def _check_columns(source: str, columns: Any) -> None:
    """``columns`` is an object of task field -> column name (or absent): anything else is one ConfigError naming
    the param and the type it takes, not Python's "'int' object is not iterable" from reading it."""
    if columns is None:
        return
    example = """e.g. "columns": {"prompt": "question", "answer": "solution"}"""
    if not isinstance(columns, Mapping):
        raise ConfigError(f"must be an object of task field -> column name, got {_kind(columns)}",
                          where=f"task source {source!r}: columns", fix=example)
    for field, col in columns.items():
        if not isinstance(col, str):
            raise ConfigError(f"the column for {field!r} must be a column name (text), got {_kind(col)}",
                              where=f"task source {source!r}: columns", fix=example)


def _verifier_param(source: str, verifier: Any) -> VerifierSpec | None:
    """The ``verifier`` param as a spec, its name checked against the registry now: an unknown name (a typo) is one
    ConfigError with a did-you-mean before any row is read, instead of every task failing to score later."""
    if verifier is None:
        return None
    from crossgym.plugins.manager import registry

    where = f"task source {source!r}: verifier"
    try:
        spec = VerifierSpec.from_dict(verifier)
    except ValueError as exc:
        fix = """pass a name ("exact_match") or {"name": ..., "params": {...}}"""
        raise ConfigError(str(exc), where=where, fix=fix) from None
    try:
        registry("verifiers").entry(spec.name)
    except UnknownNameError as exc:
        raise ConfigError(exc.message, where=where, fix=exc.fix) from None
    return spec


def _finish(tasks: Iterable[Task], limit: int | None, shuffle: bool, seed: int) -> Iterator[Task]:
    if shuffle:
        items = list(tasks)
        random.Random(seed).shuffle(items)
        tasks = items
    for i, t in enumerate(tasks):
        if limit is not None and i >= limit:
            return
        yield t


def _path(path: str | Path, source: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(f"task source {source!r}: {p} does not exist", fix="check the path")
    return p


def jsonl(path: str, *, columns: Mapping[str, str] | None = None, verifier: str | Mapping[str, Any] | None = None,
          env: str | None = None, system_prompt: str | None = None, prompt_template: str | None = None,
          id_prefix: str | None = None, keep_columns: bool = True, limit: int | None = None,
          shuffle: bool = False, seed: int = 0, n: int | None = None) -> Iterator[Task]:
    """Tasks from a JSONL file (Task objects, or rows with a column mapping). ``n`` is an alias of ``limit``."""
    p = _path(path, "jsonl")
    mapper = RowMapper("jsonl", columns=columns, verifier=verifier, env=env, system_prompt=system_prompt,
                       prompt_template=prompt_template, id_prefix=id_prefix or p.stem, keep_columns=keep_columns)

    def rows() -> Iterator[Task]:
        for index, (where, row) in enumerate(iter_user_jsonl(p)):
            yield mapper(row, index, where)

    return _finish(rows(), limit if limit is not None else n, shuffle, seed)


def parquet(path: str, *, columns: Mapping[str, str] | None = None, verifier: str | Mapping[str, Any] | None = None,
            env: str | None = None, system_prompt: str | None = None, prompt_template: str | None = None,
            id_prefix: str | None = None, keep_columns: bool = True, limit: int | None = None,
            shuffle: bool = False, seed: int = 0, n: int | None = None) -> Iterator[Task]:
    """Tasks from a Parquet file (or a folder of them), rows mapped as for JSONL."""
    p = _path(path, "parquet")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BackendUnavailable("parquet", "pyarrow is not installed", "pip install 'crossgym[tasks]'") from None
    files = sorted(p.glob("*.parquet")) if p.is_dir() else [p]
    mapper = RowMapper("parquet", columns=columns, verifier=verifier, env=env, system_prompt=system_prompt,
                       prompt_template=prompt_template, id_prefix=id_prefix or p.stem, keep_columns=keep_columns)

    def rows() -> Iterator[Task]:
        index = 0
        for f in files:
            for batch in _parquet_batches(pq, f):
                for row in batch:
                    yield mapper(row, index, f"{f} row {index}")
                    index += 1

    return _finish(rows(), limit if limit is not None else n, shuffle, seed)


def _parquet_batches(pq: Any, f: Path) -> Iterator[list[dict[str, Any]]]:
    """The rows of one Parquet file, 1024 at a time; not Parquet or corrupt (pyarrow's ArrowInvalid is a ValueError,
    its IO errors OSErrors), at the start or in a later row group, is one ConfigError naming the file."""
    try:
        batches = pq.ParquetFile(f).iter_batches(batch_size=1024)
        while (batch := next(batches, None)) is not None:
            rows: list[dict[str, Any]] = batch.to_pylist()
            yield rows
    except (OSError, ValueError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise ConfigError(f"task source 'parquet': not a readable Parquet file ({detail})", where=str(f),
                          fix="pass a Parquet file of task rows (or use the jsonl source)") from None


def hf_dataset(path: str, *, split: str | None = None, columns: Mapping[str, str] | None = None,
               verifier: str | Mapping[str, Any] | None = None, env: str | None = None,
               system_prompt: str | None = None, prompt_template: str | None = None, id_prefix: str | None = None,
               keep_columns: bool = True, limit: int | None = None, shuffle: bool = False, seed: int = 0,
               n: int | None = None) -> Iterator[Task]:
    """Tasks from a Hugging Face dataset saved with ``save_to_disk`` (local only; no hub access)."""
    p = _path(path, "hf_dataset")
    try:
        import datasets
    except ImportError:
        raise BackendUnavailable("hf_dataset", "the datasets package is not installed", "pip install datasets") \
            from None
    ds = datasets.load_from_disk(str(p))
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            if len(ds) != 1:
                raise ConfigError(f"task source 'hf_dataset': {p} has splits {', '.join(ds)}",
                                  fix="pass split='<name>'")
            split = next(iter(ds))
        if split not in ds:
            raise ConfigError(f"task source 'hf_dataset': {p} has no split {split!r} (has {', '.join(ds)})",
                              fix="pass one of those as split")
        ds = ds[split]
    elif split is not None:
        log.debug("hf_dataset %s holds one split; ignoring split=%r", p, split)
    mapper = RowMapper("hf_dataset", columns=columns, verifier=verifier, env=env, system_prompt=system_prompt,
                       prompt_template=prompt_template, id_prefix=id_prefix or p.name, keep_columns=keep_columns)

    def rows() -> Iterator[Task]:
        for index, row in enumerate(ds):
            yield mapper(row, index, f"{p} row {index}")

    return _finish(rows(), limit if limit is not None else n, shuffle, seed)
