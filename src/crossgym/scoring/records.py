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
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import json_kind
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


#: nesting kept by ``_jsonable`` (deeper values, and cycles, become a marker string)
_MAX_NESTING = 100


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A copy json.dumps always encodes: NaN as null, keys as text, an int past Python's digit limit and anything
    nested deeper than _MAX_NESTING (a cycle) as a marker string. For records the plain dump refuses."""
    if depth > _MAX_NESTING:
        return "<nested too deeply>"
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:
            return f"<an integer of {value.bit_length()} bits>"
        return value
    if isinstance(value, Mapping):
        return {(k if isinstance(k, str) else str(k)): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
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
    except (ValueError, TypeError, RecursionError):  # NaN or an infinity somewhere: the walk, exactly as before
        try:
            doc = _nan_to_none(dict(record))
            if isinstance(doc.get("verdict"), dict):
                doc["verdict"] = with_fault(doc["verdict"])
            text = json.dumps(doc, ensure_ascii=False, default=str)
        except (ValueError, TypeError, RecursionError):  # a key that is not text, a huge int, a cycle: still a line
            doc = _jsonable(dict(record))
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
def iter_records(path: str | Path, *, skipped: Callable[[str, str], None] | None = None,
                 ) -> Iterator[dict[str, Any]]:
    """The JSON object on each complete line; a torn last line (an interrupted write), a line that is not JSON (or
    nests too deeply to read) and a JSON value that is not an object are skipped with a warning naming
    ``file:line``, or passed to ``skipped(where, why)`` instead when given (to count, report or refuse them). A
    .parquet file gives its rows (crossgym.scoring.parquet)."""
    for _, doc in _numbered_records(path, skipped):
        yield doc


def iter_numbered_records(path: str | Path, *, skipped: Callable[[str, str], None] | None = None,
                          ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for each record of ``iter_records``, for a reader that names a record it cannot use (a
    record that is no rollout, and why); ``where`` is "file:line" (Parquet: "file:row N")."""
    yield from _numbered_records(path, skipped)


def _numbered_records(path: str | Path, skipped: Callable[[str, str], None] | None = None,
                      ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for each record of ``iter_records``; ``where`` is "file:line" (Parquet: "file:row N")."""
    p = Path(path)
    if not p.is_file():
        return
    from crossgym.scoring.parquet import is_parquet, iter_parquet_rows

    if is_parquet(p):
        yield from iter_parquet_rows(p)
        return

    def skip(where: str, why: str) -> None:
        if skipped is not None:  # the caller reports it (or refuses the file)
            skipped(where, why)
        else:
            log.warning("%s: ignoring %s", where, why)

    with p.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{p}:{lineno}"
            if not raw.endswith(b"\n"):
                skip(where, "a torn last line (an interrupted write)")
                return
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                skip(where, "a line that is not JSON")
                continue
            except RecursionError:
                skip(where, "a line that nests too deeply to read")
                continue
            if isinstance(doc, dict):
                yield where, doc
            else:
                skip(where, f"a line that is not a JSON object ({json_kind(doc)})")


def rollout_from_record(doc: Mapping[str, Any]) -> Rollout:
    """A Rollout from any record crossgym wrote, as written (read its provenance with ``provenance_of``). Its
    provenance is read here too, so a damaged one (a schema that is no number, verifier params that are no object)
    makes the record "not a rollout", skipped and named like any other damage, rather than a crash later in
    reverify or compare. A ``completion`` that is a string is the completion's text, as verify-batch reads its input
    (and as a Parquet column holds it): verify-batch writes such a record back with its text as it came, so
    reverify and compare read what it wrote instead of skipping every record as "not a rollout"."""
    completion = doc.get("completion")
    if isinstance(completion, str):
        doc = {**doc, "completion": Completion.from_text(completion).to_dict()}
    rollout = Rollout.from_dict(doc)
    provenance_of(rollout)
    return rollout


def provenance_of(rollout: Rollout) -> Provenance:
    """A rollout's provenance in schema 2, whatever shape its writer used (0.1 shapes included)."""
    return Provenance.from_dict(rollout.provenance, default=rollout.task.verifier)


def iter_rollouts(path: str | Path, *, skipped: Callable[[str, str], None] | None = None) -> Iterator[Rollout]:
    """Every complete rollout in a file, in order; records that are not rollouts (and the lines ``iter_records``
    skips) are skipped with a warning naming ``file:line``, or passed to ``skipped(where, why)`` instead."""
    for _, rollout in iter_numbered_rollouts(path, skipped=skipped):
        yield rollout


def iter_numbered_rollouts(path: str | Path, *, skipped: Callable[[str, str], None] | None = None,
                           ) -> Iterator[tuple[str, Rollout]]:
    """(where, rollout) for each rollout of ``iter_rollouts``; ``where`` is "file:line" (Parquet: "file:row N"),
    for a reader that names a record (a repeated key, say)."""
    for where, doc in _numbered_records(path, skipped):
        try:
            yield where, rollout_from_record(doc)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            why = why_not_a_rollout(doc, exc)
            if skipped is not None:
                skipped(where, why)
            else:
                log.warning("%s: skipping %s", where, why)


#: how every skipped record that is no rollout is described (readers count these apart from lines not JSON)
NOT_A_ROLLOUT = "a record that is not a rollout"
#: said of such a record when it is a task (a tasks file passed where rollouts go)
HOLDS_A_TASK = "it holds a task, not a rollout of one"
#: the fields a rollout record has, with what each must be
_ROLLOUT_FIELDS = (("task", (Mapping,), "an object (a Task)"), ("completion", (Mapping, str), "text or an object"),
                   ("verdict", (Mapping,), "an object"))


def why_not_a_rollout(doc: Mapping[str, Any], exc: BaseException) -> str:
    """Why ``doc`` did not read as a rollout, in the record's own terms (a missing field, a field of the wrong
    type, crossgym's own message for a bad task), never Python's ("KeyError: 'task'") which names no fix."""
    missing = [k for k, _, _ in _ROLLOUT_FIELDS if k not in doc]
    if missing:
        names = ", ".join(repr(k) for k in missing)
        held = f"; {HOLDS_A_TASK}" if "prompt" in doc and "verifier" in doc else ""
        return f"{NOT_A_ROLLOUT} (no {names} field{'s' if len(missing) > 1 else ''}{held})"
    for key, kinds, what in _ROLLOUT_FIELDS:
        if not isinstance(doc[key], kinds):
            return f"{NOT_A_ROLLOUT} ('{key}' must be {what}, got {json_kind(doc[key])})"
    if isinstance(exc, RecursionError):
        return f"{NOT_A_ROLLOUT} (it nests too deeply to read)"
    if isinstance(exc, KeyError):
        return f"{NOT_A_ROLLOUT} (a required field is missing: {exc.args[0] if exc.args else '?'!r})"
    if isinstance(exc, ValueError):  # crossgym's own words for a bad task, completion or verdict field
        return f"{NOT_A_ROLLOUT} ({exc})"
    return f"{NOT_A_ROLLOUT} (a field of its task, completion, verdict or provenance has the wrong type)"


def stored_key(doc: Mapping[str, Any]) -> str | None:
    """The resume key (``provenance["key"]``) of a record that reads back as a rollout; None for a record without
    one, or one that is no longer a rollout (an edited or damaged line: its rollout is not done, so a resumed run
    makes it again, instead of counting it done and then failing to read it)."""
    prov = doc.get("provenance")
    key = prov.get("key") if isinstance(prov, dict) else None
    if not isinstance(key, str) or not key:
        return None
    try:
        rollout_from_record(doc)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return None
    return key


def input_files(path: Path) -> list[Path]:
    """The files an input names: a JSONL or Parquet file, a directory (its ``*.jsonl`` and ``*.parquet``, sorted)
    or a glob (sorted)."""
    from crossgym.scoring.parquet import is_parquet

    text = str(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and (p.suffix.lower() == ".jsonl" or is_parquet(p)))
        if not files:
            raise ConfigError("no .jsonl or .parquet files in this directory", where=text,
                              fix="pass a JSONL or Parquet file or a folder of them")
        return files
    if not path.exists() and any(c in text for c in "*?["):
        import glob

        files = sorted(Path(p) for p in glob.glob(text) if Path(p).is_file())
        if not files:
            raise ConfigError("no file matches this pattern", where=text, fix="quote the pattern and check it")
        return files
    if not path.is_file():
        raise ConfigError("file not found", where=text, fix="pass a JSONL (or Parquet) of rollouts (e.g. an eval's "
                                                           "rollouts.jsonl), a folder of them or a glob")
    return [path]


def stored_keys(path: str | Path, quiet: bool = False) -> set[str]:
    """The resume keys of every complete rollout in a store file (see ``stored_key``); a keyed record that is not
    a rollout is named in a warning (its rollout will be made again), unless ``quiet`` (a count taken before the
    run that will read the store again and warn)."""
    keys: set[str] = set()
    for where, doc in _numbered_records(path, (lambda where, why: None) if quiet else None):
        key = stored_key(doc)
        if key is not None:
            keys.add(key)
        elif not quiet and isinstance(doc.get("provenance"), dict) and doc["provenance"].get("key"):
            log.warning("%s: record %r is not a readable rollout: it counts as not done", where,
                        str(doc["provenance"]["key"])[:200])
    return keys


def read_rollouts(path: str | Path) -> list[Rollout]:
    """Every complete rollout in a file (eval's store, a training rollouts.jsonl, serve's records), in order."""
    return list(iter_rollouts(path))
