"""Rollout records from Parquet (what veRL and pandas pipelines write), a batch of rows at a time.

A Parquet input holds the same records as a rollouts JSONL, one row each: ``task`` and ``completion`` columns (and
``verdict``, ``provenance`` or anything else, carried along). Object columns may be JSON strings (lossless: what
crossgym reads best) or structs. A struct column has one field list for every row, so Parquet writes the keys a
row lacks as nulls; crossgym reads such a null as "absent" (a task whose verifier params are ``{"think": null}``
in one row only because another row has ``think`` would otherwise pass ``think=None``), except inside a task's
``answer``, kept as written. A ``completion`` string is the completion's text, as in JSONL.

pyarrow (``crossgym[tasks]``) reads it; ``iter_batches`` holds one batch (at most one row group's rows) at a time,
so memory is bounded by ``batch_size``, not by the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import ConfigError

#: file suffixes read as Parquet
PARQUET_SUFFIXES = (".parquet", ".pq")
#: columns whose string values are JSON objects (a completion string is text)
JSON_COLUMNS = ("task", "verdict", "provenance", "previous_verdict", "previous_provenance", "verdict_history")


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def _open(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("reading Parquet needs pyarrow", where=str(path),
                          fix="pip install 'crossgym[tasks]' (or pyarrow), or pass JSONL") from None
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid (not Parquet, truncated) is a ValueError
        raise _unreadable(path, exc) from None


def _unreadable(path: Path, exc: Exception) -> ConfigError:
    detail = " ".join(str(exc).split())[:200]  # pyarrow's messages may end in a newline: one line
    return ConfigError(f"not a readable Parquet file ({detail})", where=str(path),
                       fix="pass a Parquet file of rollout records, or JSONL")


def _absent_nulls(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """A struct row's dicts without the null fields Parquet filled in (the keys in ``keep`` are kept whole)."""
    if isinstance(value, dict):
        return {k: (v if k in keep else _absent_nulls(v)) for k, v in value.items() if v is not None or k in keep}
    if isinstance(value, list):
        return [_absent_nulls(v) for v in value]
    return value


def record_from_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    """One Parquet row as a rollout record (see the module docstring); ConfigError for a JSON column that is not
    JSON."""
    doc: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, str) and key in JSON_COLUMNS:
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ConfigError(f"column {key!r} is not JSON ({exc})", where=where,
                                  fix="write object columns as JSON strings or structs") from None
        elif isinstance(value, dict):
            value = _absent_nulls(value, frozenset({"answer"}) if key == "task" else frozenset())
        doc[key] = value
    return doc


def iter_parquet_rows(path: str | Path, batch_size: int = 2048) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for every row, in order, ``batch_size`` rows read at a time; ``where`` is "path:row N"."""
    p = Path(path)
    batches = _open(p).iter_batches(batch_size=max(1, batch_size))
    n = 0
    while True:
        try:
            batch = next(batches, None)
            rows = [] if batch is None else batch.to_pylist()
        except (OSError, ValueError) as exc:  # a corrupt row group further in
            raise _unreadable(p, exc) from None
        if batch is None:
            return
        for row in rows:
            n += 1
            where = f"{p}:row {n}"
            yield where, record_from_row(row, where)


def iter_parquet_records(path: str | Path, batch_size: int = 2048) -> Iterator[dict[str, Any]]:
    """The rollout records of a Parquet file, ``batch_size`` rows at a time."""
    for _, doc in iter_parquet_rows(path, batch_size):
        yield doc
