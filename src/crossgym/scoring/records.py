"""The rollout record: one JSON object a line (task, completion, verdict, turns, timings, provenance), written the
same way by eval, every training backend and serve, and read back by `crossgym reverify`, whatever wrote it.

Writing is one ``os.write`` of whole lines on an O_APPEND descriptor, so concurrent writers (OpenRLHF's vLLM actors,
TRL's reward threads) never interleave a line. Text from untrusted code (a lone surrogate in an exception message)
never breaks a record: such a line is written with JSON escapes instead, which reads back to the same string.
Every record's verdict carries its ``fault`` (``infra``: mask it; ``model``; ``none``: passed), from
crossgym.scoring.failure, whichever command wrote it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.scoring.failure import with_fault
from crossgym.scoring.provenance import Provenance
from crossgym.scoring.rule import Scored

log = logging.getLogger(__name__)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def dumps_record(record: Mapping[str, Any]) -> str:
    """One JSON line (with its newline) that always encodes to UTF-8: NaN becomes null; a string that is not
    valid Unicode (a lone surrogate) is written as JSON escapes, which json.loads reads back unchanged. The
    verdict gains its ``fault`` (infra / model / none)."""
    doc = dict(record)
    if isinstance(doc.get("verdict"), dict):
        doc["verdict"] = with_fault(doc["verdict"])
    try:  # nearly every record holds no NaN: one pass, without first copying every value to look for one
        text = json.dumps(doc, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # NaN or an infinity somewhere (or a cycle): the walk, exactly as before
        doc = _nan_to_none(dict(record))
        if isinstance(doc.get("verdict"), dict):
            doc["verdict"] = with_fault(doc["verdict"])
        text = json.dumps(doc, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, ensure_ascii=True, default=str)
    return text + "\n"


def rollout_record(task: Task, completion: Completion, outcome: Scored | Verdict, *, provenance: Provenance,
                   turns: int | None = None, timings: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The record of one scored rollout. With a Scored, ``reward_seen`` is what the trainer received."""
    verdict = outcome.verdict if isinstance(outcome, Scored) else outcome
    if isinstance(outcome, Scored) and provenance.reward_seen is None and outcome.reward is not None:
        from dataclasses import replace

        provenance = replace(provenance, reward_seen=outcome.reward)
    n_turns = turns if turns is not None else max(1, len(completion.assistant_messages))
    return Rollout(task=task, completion=completion, verdict=verdict, turns=n_turns, timings=dict(timings or {}),
                   provenance=provenance.to_dict()).to_dict()


def append_records(path: str | Path, records: Iterable[Mapping[str, Any]], *, fsync: bool = False) -> int:
    """Append records as JSON lines in one write; returns how many. Raises OSError (callers that record for
    convenience catch it: a reward is never lost over a log)."""
    data = "".join(dumps_record(r) for r in records)
    if not data:
        return 0
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        buf = memoryview(data.encode("utf-8"))
        while buf:
            buf = buf[os.write(fd, buf):]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return data.count("\n")


class RecordWriter:
    """Appends training rollouts to a JSONL file (thread-safe), with provenance for `crossgym reverify`."""

    def __init__(self, path: str | Path, *, backend: str, model: str = "",
                 step: Callable[[], int | None] | None = None, fields: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.backend = backend
        self.model = model
        self.step = step or (lambda: None)
        #: provenance fields every record carries (a resumed training run's ``segment``)
        self.fields = dict(fields or {})
        self._lock = threading.Lock()

    def record(self, task: Task, completion: Completion, scored: Scored, verifier: Any = None, *,
               turns: int | None = None, **fields: Any) -> dict[str, Any]:
        """The record of one training sample (not written yet)."""
        prov = Provenance.new(task.verifier, verifier, source="train", backend=self.backend,
                              model=self.model or None, step=self.step(), **{**self.fields, **fields})
        return rollout_record(task, completion, scored, provenance=prov, turns=turns)

    def write(self, records: Iterable[Mapping[str, Any]]) -> None:
        records = list(records)
        if not records:
            return
        with self._lock:
            try:
                append_records(self.path, records)
            except OSError as exc:  # recording is a convenience: never lose a reward over it
                log.warning("could not record rollouts to %s: %s", self.path, exc)


# ---------------------------------------------------------------------- reading
def iter_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The JSON object on each complete line; a torn last line (an interrupted write) and lines that are not JSON
    objects are skipped with a warning. A .parquet file gives its rows (crossgym.scoring.parquet)."""
    p = Path(path)
    if not p.is_file():
        return
    from crossgym.scoring.parquet import is_parquet, iter_parquet_records

    if is_parquet(p):
        yield from iter_parquet_records(p)
        return
    with p.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                log.warning("%s:%d: ignoring a torn last line (an interrupted write)", p, lineno)
                return
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                log.warning("%s:%d: ignoring a line that is not JSON", p, lineno)
                continue
            if isinstance(doc, dict):
                yield doc


def rollout_from_record(doc: Mapping[str, Any]) -> Rollout:
    """A Rollout from any record crossgym wrote, as written (read its provenance with ``provenance_of``)."""
    return Rollout.from_dict(doc)


def provenance_of(rollout: Rollout) -> Provenance:
    """A rollout's provenance in schema 2, whatever shape its writer used (0.1 shapes included)."""
    return Provenance.from_dict(rollout.provenance, default=rollout.task.verifier)


def iter_rollouts(path: str | Path) -> Iterator[Rollout]:
    """Every complete rollout in a file, in order (records that are not rollouts are skipped with a warning)."""
    for lineno, doc in enumerate(iter_records(path), 1):
        try:
            yield rollout_from_record(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: skipping record %d, which is not a rollout: %s", path, lineno, exc)


def read_rollouts(path: str | Path) -> list[Rollout]:
    """Every complete rollout in a file (eval's store, a training rollouts.jsonl, serve's records), in order."""
    return list(iter_rollouts(path))
