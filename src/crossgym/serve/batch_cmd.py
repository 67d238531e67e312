"""`crossgym verify-batch ROLLOUTS.jsonl [--ray] [--address ...]`: score a file of rollouts, locally or on Ray.

Input lines are rollout records (what `crossgym eval` writes: ``task``, ``completion``, ``verdict``, provenance...)
or bare ``{"task", "completion"}`` records (a completion may be plain text). ``--out`` writes every record back
with the new ``verdict`` (the stored one, if any, kept as ``previous_verdict``, and one kept from an earlier
scoring appended to ``verdict_history``, oldest first: scoring a file again loses nothing); the summary counts rewards,
passes, errors and verdicts that changed.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.scoring.records import input_files  # (a file, a folder of shards or a glob)

log = logging.getLogger(__name__)

#: records read, scored and appended to --out at a time: memory is bounded by this, not by the file's size
CHUNK = 2048
#: the most local --workers (or 8 per CPU, if more): each may be a verifier process (math-verify's is ~100 MB)
MAX_LOCAL_WORKERS = 64


#: write errors that name no file (a full disk, a quota, a failing disk): reported with --out's path
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _parse(raw: bytes | dict[str, Any], where: str) -> tuple[dict[str, Any], tuple[Task, Completion]]:
    from crossgym.config.files import decode_user_line

    if isinstance(raw, dict):  # a Parquet row, already a record
        doc: Any = raw
    else:
        line = decode_user_line(raw, where)
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"not JSON ({exc})", where=where, fix="one JSON object per line") from None
        except RecursionError:
            raise ConfigError("not readable JSON: it nests too deeply", where=where,
                              fix="one JSON object per line, nested a few hundred levels at most") from None
    if not isinstance(doc, dict) or "task" not in doc or "completion" not in doc:
        raise ConfigError("a record needs 'task' and 'completion'", where=where,
                          fix="write rollouts (crossgym eval) or {\"task\": ..., \"completion\": ...} lines")
    if not isinstance(doc["task"], dict):
        raise ConfigError(f"'task' must be a JSON object (a Task), got {_type_name(doc['task'])}", where=where,
                          fix="see `crossgym tasks` for the Task form")
    comp = doc["completion"]
    if not isinstance(comp, (str, dict)):
        raise ConfigError(f"'completion' must be text or an object with 'messages', got {_type_name(comp)}",
                          where=where, fix='write "completion": "the text" or {"messages": [{"role": '
                                           '"assistant", "content": "..."}]}')
    try:
        task = Task.from_dict(doc["task"])
        completion = Completion.from_text(comp) if isinstance(comp, str) else Completion.from_dict(comp)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ConfigError(f"not a task/completion record: {exc}", where=where,
                          fix="see `crossgym tasks` for the Task form") from None
    return doc, (task, completion)


def _type_name(value: Any) -> str:
    return "null" if value is None else {"list": "a list", "int": "a number", "float": "a number", "str": "text",
                                         "bool": "true/false"}.get(type(value).__name__, type(value).__name__)


def iter_chunks(paths: list[Path], *, size: int = CHUNK, skip: int = 0,
                done: _Checkpoints | None = None,
                ) -> Iterator[tuple[list[dict[str, Any]], list[tuple[Task, Completion]]]]:
    """The records of the files, in order, ``size`` at a time with their (Task, Completion) pairs, after the
    first ``skip`` records (already scored by an interrupted run; ``done``, what that run wrote, must hold the
    same tasks and completions: see ``_Checkpoints``). A bad line is one ConfigError naming file:line."""
    from crossgym.text.chunks import chunked

    for raws in chunked(iter_raw(paths, size=size, skip=skip, done=done), size):
        yield _parse_all(raws)


def _parse_all(raws: list[tuple[str, bytes | dict[str, Any]]],
               ) -> tuple[list[dict[str, Any]], list[tuple[Task, Completion]]]:
    """The records of ``raws`` and their (Task, Completion) pairs; a bad line is its ConfigError."""
    records: list[dict[str, Any]] = []
    pairs: list[tuple[Task, Completion]] = []
    for where, raw in raws:
        doc, pair = _parse(raw, where)
        records.append(doc)
        pairs.append(pair)
    return records, pairs


def iter_raw(paths: list[Path], *, size: int = CHUNK, skip: int = 0,
             done: _Checkpoints | None = None,
             ) -> Iterator[tuple[str, bytes | dict[str, Any]]]:
    """(where, raw line or Parquet row) of every record of the files, in order, after the first ``skip`` (see
    ``iter_chunks``: each skipped record is checked against ``done``, never scored). ``--ray`` ships these to its
    actors."""
    skipped = 0
    seen = _Checkpoints() if done is not None else None
    for path in paths:
        for where, raw in _raw_records(path, size):
            if skipped < skip:
                if done is not None and seen is not None:
                    _check_continues(raw, done, seen, where, skipped)
                skipped += 1
                continue
            yield where, raw
    if done is not None and seen is not None and skipped == skip and seen.digest() != done.digest():
        raise ConfigError(f"--out's {skip} records are not this input's first {skip}: one of them differs (the input "
                          "or --out was edited since the first run), and resuming would mix the two", where="--out",
                          fix="remove it (or pass another --out) to score afresh")
    skip -= skipped
    if skip:
        raise ConfigError(f"--out holds {skip} more records than the input has", where="--out",
                          fix="remove it (or pass another --out) to score afresh")


def _raw_records(path: Path, size: int) -> Iterator[tuple[str, bytes | dict[str, Any]]]:
    """(where, the record's raw line or Parquet row) for each record of one input file; blank lines skipped, and
    a torn last line (no newline and not JSON: a writer killed mid-line) skipped with a warning naming it."""
    from crossgym.scoring.parquet import is_parquet, iter_parquet_rows

    if is_parquet(path):
        yield from iter_parquet_rows(path, batch_size=size)
        return
    from crossgym.config.files import check_user_encoding

    check_user_encoding(path)
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            if not raw.endswith(b"\n") and _torn(raw):
                log.warning("%s:%d: skipping a torn last line (an interrupted write)", path, n)
                return
            yield f"{path}:{n}", raw


def _torn(raw: bytes) -> bool:
    """Whether a last line without its newline is a cut record rather than a whole one (many editors and tools
    write no final newline): it does not parse as JSON."""
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return True
    return False


def _check_continues(raw: bytes | dict[str, Any], done: _Checkpoints, seen: _Checkpoints, where: str,
                     at: int) -> None:
    """Note the skipped input record ``raw`` (at ``where``, position ``at``) in ``seen``, and refuse to resume when
    --out's record there (one ``done`` kept) holds another task or completion: --out was written from another
    input, or one of the two changed since."""
    try:
        doc = raw if isinstance(raw, dict) else json.loads(raw)
    except (ValueError, RecursionError):
        doc = None
    seen.add(at, doc if isinstance(doc, dict) else {})
    if at in done.kept and seen.kept[at] != done.kept[at]:
        raise ConfigError(f"--out's record {at + 1} is not this input's record at {where}: --out holds the output "
                          "of another input (or the input or --out was edited since), and resuming would mix the "
                          "two", where="--out", fix="remove it (or pass another --out) to score afresh")


def _pair_text(doc: dict[str, Any]) -> str:
    """A record's task and completion as canonical JSON text, NaN as null (as --out writes it): what must be
    equal between an input record and its output record."""
    from crossgym.scoring.records import _nan_to_none

    pair = [doc.get("task"), doc.get("completion")]
    try:
        text = json.dumps(pair, sort_keys=True, default=str, allow_nan=False)
    except ValueError:  # NaN (or an infinity) somewhere: --out holds null there
        text = json.dumps(_nan_to_none(pair), sort_keys=True, default=str)
    except RecursionError:
        text = "<nested too deeply>"
    return text


class _Checkpoints:
    """The tasks and completions of a run of records (--out's, or the input's records a resume skips): a digest
    of them all, in order, and the text of a few, evenly spaced (the first and the last always). A resume refuses
    an input whose skipped records differ from --out's (another file, reordered, edited: results would be mixed);
    the kept ones name where, the digest catches a change between them. Memory is bounded: when more than
    2 x ``most`` are kept, every other one is dropped and the spacing doubles."""

    def __init__(self, most: int = 64) -> None:
        import hashlib

        self.most = most
        self.every = 1
        self.kept: dict[int, str] = {}
        self._hash = hashlib.blake2b(digest_size=16)
        self._last: tuple[int, str] | None = None

    def add(self, at: int, doc: dict[str, Any]) -> None:
        """Note the record at position ``at`` (0-based, each position once, in order)."""
        text = _pair_text(doc)
        self._hash.update(text.encode("utf-8", "surrogatepass") + b"\n")
        if self._last is not None and self._last[0] % self.every:
            del self.kept[self._last[0]]  # the last one was kept only for being the last
        self._last = (at, text)
        self.kept[at] = text
        if len(self.kept) > 2 * self.most:
            self.every *= 2
            self.kept = {k: v for k, v in self.kept.items() if k % self.every == 0 or k == at}

    def digest(self) -> bytes:
        return self._hash.digest()


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[tuple[Task, Completion]]]:
    """The JSON records of a JSONL file (or folder/glob of them) and their (Task, Completion) pairs, all in
    memory (verify-batch itself streams: see ``iter_chunks``); a bad line is one ConfigError."""
    records: list[dict[str, Any]] = []
    pairs: list[tuple[Task, Completion]] = []
    for r, p in iter_chunks(input_files(path)):
        records += r
        pairs += p
    if not pairs:
        raise ConfigError("no records", where=str(path), fix="pass a non-empty JSONL file")
    return records, pairs


def _same(a: Verdict, b: Verdict) -> bool:
    from crossgym.scoring.rule import same_verdict

    return same_verdict(a, b)


class _Tally:
    """The summary's counts, kept as chunks are scored (and for a resumed run, from what --out already holds)."""

    def __init__(self) -> None:
        self.n = self.passed = self.compared = self.changed = self.finite = 0
        self.reward_sum = 0.0
        self.errors: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()

    def add(self, old: Any, v: Verdict) -> None:
        from crossgym.scoring.failure import fault

        self.n += 1
        self.faults[fault(v)] += 1
        if v.error_kind:
            self.errors[v.error_kind] += 1
        if v.passed:
            self.passed += 1
        if math.isfinite(v.reward):
            self.finite += 1
            self.reward_sum += v.reward
        if isinstance(old, dict) and "reward" in old:
            self.compared += 1
            try:
                if not _same(Verdict.from_dict(old), v):
                    self.changed += 1
            except (ValueError, TypeError):
                self.changed += 1

    def merge(self, other: _Tally) -> None:
        """Add the counts of ``other`` (a shard's tally, from a Ray actor)."""
        for name in ("n", "passed", "compared", "changed", "finite", "reward_sum"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.update(other.errors)
        self.faults.update(other.faults)


def score_raw(raws: list[tuple[str, bytes | dict[str, Any]]], *, write: bool, built: dict[str, Any],
              workers: int | None = None) -> tuple[str, _Tally]:
    """One shard of ``--ray``, scored where it lands (a Ray actor): the records parsed, scored with
    ``verify_many``, counted, and (``write``) rendered as --out's lines, exactly as the local path writes them.
    ``built``: verifiers by spec key, the actor's own across shards. A bad line is its ConfigError."""
    from crossgym.scoring.records import dumps_record
    from crossgym.verifiers.batch import verify_many

    records, pairs = _parse_all(raws)
    verdicts = verify_many(pairs, workers=workers)
    tally = _Tally()
    for doc, v in zip(records, verdicts, strict=True):
        tally.add(doc.get("verdict"), v)
    text = "".join(dumps_record(d) for d in _rescored(records, pairs, verdicts, built)) if write else ""
    return text, tally


def _resume(out: Path, tally: _Tally, built: dict[str, Any]) -> tuple[Any, int, _Checkpoints]:
    """Open ``out`` for appending (a torn last line cut off); the records it already holds are counted into
    ``tally``. Returns the store, how many records to skip in the input and its records' ``_Checkpoints`` (the
    input's skipped records must be the same). An ``out``
    with a damaged line, a record verify-batch did not write (no verdict, or another writer's provenance: a copy of
    the input or of an eval's rollouts, whose stored verdicts would pass for today's), or scored by another
    version of a verifier than today's (``built``: verifiers by spec key), is one ConfigError: resuming would
    count wrong or mix two versions' verdicts in one file."""
    from crossgym.rollout.store import RolloutStore
    from crossgym.scoring.records import iter_records

    def damaged(where: str, why: str) -> None:
        if "torn last line" not in why:  # a kill mid-write: open() cuts it off, and its record is scored again
            raise ConfigError(f"--out holds {why} at {where}, so where to resume is unknown", where="--out",
                              fix="remove it (or pass another --out) to score afresh")

    with out.open("rb") as f:
        if f.read(1) != b"{":  # every line verify-batch writes is a JSON object: this file is something else
            raise ConfigError(f"{out} is not the output of verify-batch (it does not start with a JSON record)",
                              where="--out", fix="pass a new --out path (or remove this file)")
    done = 0
    marks = _Checkpoints()
    checked: set[str] = set()
    tallied = _Tally()
    for doc in iter_records(out, skipped=damaged):  # all checked before open() cuts anything off the file
        marks.add(done, doc)
        done += 1
        _check_version(doc, built, checked, f"{out}:{done}")
        if "verdict" not in doc:  # e.g. a copy of the input: its records were never scored here
            raise ConfigError(f"{out} is not the output of verify-batch (no verdict at line {done}); nothing was "
                              "scored", where="--out", fix="pass a new --out path (or remove this file)")
        prov = doc.get("provenance")
        if not isinstance(prov, dict) or prov.get("source") != "verify-batch":  # e.g. a copy of eval's rollouts
            raise ConfigError(f"{out} is not the output of verify-batch (line {done} holds a verdict that it did not "
                              "write: its provenance names no verify-batch), so its records would be kept as if "
                              "scored today", where="--out", fix="pass a new --out path (or remove this file)")
        try:
            v = Verdict.from_dict(doc["verdict"])
        except (KeyError, ValueError, TypeError, AttributeError, RecursionError):
            raise ConfigError(f"--out holds an unreadable verdict at {out}:{done}, so its records cannot be "
                              "counted", where="--out", fix="remove it (or pass another --out) to score afresh") \
                from None
        tallied.add(doc.get("previous_verdict"), v)
    store = RolloutStore(out).open()  # the writer's lock; a torn last line cut off
    tally.merge(tallied)
    return store, done, marks


def _check_version(doc: dict[str, Any], built: dict[str, Any], checked: set[str], where: str) -> None:
    """Refuse a record of --out whose verifier version (its provenance) is not today's version of that verifier."""
    from crossgym.scoring.provenance import Provenance, VerifierRef
    from crossgym.verifiers.safe import build_verifier

    prov = doc.get("provenance")
    ref = prov.get("verifier") if isinstance(prov, dict) and prov.get("source") == "verify-batch" else None
    if not isinstance(ref, dict):
        return
    seen = repr(sorted(ref.items()))
    if seen in checked:
        return
    try:
        old = Provenance.from_dict(prov).verifier
    except (KeyError, TypeError, ValueError, AttributeError):
        return
    if old is None:
        return
    spec = old.spec
    key = spec.key()
    if key not in built:
        built[key] = build_verifier(spec)
    now = VerifierRef.of(spec, None if isinstance(built[key], Verdict) else built[key]).version
    if old.version != now:
        raise ConfigError(f"--out was scored by {spec.name} version {old.version}, today's is version {now} (at "
                          f"{where}): resuming would mix two versions' verdicts", where="--out",
                          fix="remove it (or pass another --out) to score everything with today's verifiers")
    checked.add(seen)


def _read_back(source: Path, target: Path) -> bool:
    """Whether the input ``source`` (a folder or a glob) would read ``target`` as one of its files on a rerun."""
    from crossgym.scoring.parquet import is_parquet

    if source.is_dir():
        return target.resolve().parent == source.resolve() and (target.suffix.lower() == ".jsonl"
                                                                  or is_parquet(target))
    text = str(source)
    if source.exists() or not any(c in text for c in "*?["):
        return False
    return Path(os.path.abspath(target)).match(os.path.abspath(text))


def _inode(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of an existing file, None for a path that is not there: a hard link to an input is that
    input under another name, which ``resolve()`` does not see."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def output_groups(files: list[Path], out: Path | None, source: Path | None = None,
                  ) -> list[tuple[list[Path], Path | None]]:
    """Which input files go to which output: all to ``out`` (a file, or None), or, when ``out`` is an existing
    directory, each input file to its own ``out/<name>.jsonl`` (the output sharded like the input). An output
    that ``source`` (the input folder or glob) would read back on a rerun is refused: the resume could not run."""
    from crossgym.config.files import check_output_file
    from crossgym.scoring.parquet import is_parquet

    if out is not None and out.is_dir():
        outs = [out / (f.stem + ".jsonl") for f in files]
        seen: dict[Path, Path] = {}
        for f, o in zip(files, outs, strict=True):
            if o in seen:
                raise ConfigError(f"{seen[o].name} and {f.name} would both be written to {o}", where="--out",
                                  fix="give the input files distinct names (before their suffix)")
            seen[o] = f
        groups: list[tuple[list[Path], Path | None]] = [([f], o) for f, o in zip(files, outs, strict=True)]
    else:
        if out is not None and is_parquet(out):
            raise ConfigError("--out is written as JSONL (one record a line, appended as chunks finish)",
                              where="--out", fix="name it .jsonl, or an existing folder for one file per input")
        groups = [(files, out)]
    inputs = {f.resolve() for f in files}
    inodes = {_inode(f) for f in files} - {None}
    for _, target in groups:
        check_output_file(target, "--out")  # (a device or FIFO is never replaced, nor removed as "empty")
        if target is not None and (target.resolve() in inputs or _inode(target) in inodes):
            raise ConfigError(f"{target} is also an input file", where="--out",
                              fix="write the re-scored records elsewhere")
        if target is not None and source is not None and _read_back(source, target):
            raise ConfigError(f"{target} would be read as an input by {source} when the command is run again (to "
                              "resume it)", where="--out", fix=f"write the re-scored records outside {source}")
    return groups


def verify_batch(path: Path, *, use_ray: bool = False, address: str | None = None, workers: int | None = None,
                 out: Path | None = None, chunk: int = CHUNK, shard: int | None = None,
                 progress: bool | None = None, pin_cpus: bool = False) -> dict[str, Any]:
    """Score every record, ``chunk`` at a time; append each chunk's records to ``out`` (fsync'd) before reading
    the next. An ``out`` left by an interrupted run is resumed: its records are skipped in the input, not scored
    again. ``out`` an existing directory: one output file per input file (``output_groups``), each resumed on its
    own. With Ray, the raw records go out in shards of ``shard`` (``ray_scale.SHARD``) through a ``ShardStream``
    (bounded in flight, a lost actor's shard redone on a fresh one) and come back as --out's text, in order.
    ``progress``: one progress line on stderr (redrawn on a terminal, else printed every PROGRESS_EVERY_S;
    False: none). ``pin_cpus``: each Ray actor pinned to its own core (``ray_scale.get_workers``; one-node
    clusters, e.g. to simulate more workers than cores). The summary document."""
    from crossgym.rollout.store import RolloutStore

    files = input_files(path)
    groups = output_groups(files, out, path)
    tally = _Tally()
    skip = 0
    startup = 0.0
    elapsed = 0.0
    built: dict[str, Any] = {}
    ray = None
    ours = False
    stream = None
    bar = _Progress(progress)
    try:
        if use_ray or address:
            from crossgym.serve.ray_scale import SHARD, ShardStream, _ray, init_ray, shutdown_workers

            started = time.perf_counter()
            ray = _ray()
            ours = not ray.is_initialized()
            if ours:
                init_ray(address)
            n_actors = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            stream = ShardStream(n_actors, pin_cpus=pin_cpus)
            stream.warm(_sample(files), "score_shard", False)
            startup = time.perf_counter() - started  # Ray and its actors; scoring is timed apart
            shard_size = max(1, shard or SHARD)
            mode = "ray"
            bar.mode = f"ray, {n_actors} actor{'s' if n_actors > 1 else ''}"
        else:
            from crossgym.verifiers.batch import verify_many

            def score(pairs: list[tuple[Task, Completion]]) -> list[Verdict]:
                return verify_many(pairs, workers=workers)

            mode = "local"
        for group_files, group_out in groups:
            store, done, marks = None, 0, None
            if group_out is not None and group_out.exists() and group_out.stat().st_size:
                store, done, marks = _resume(group_out, tally, built)
                sys.stderr.write(f"resumed: {done} records already in {group_out}\n")
            elif group_out is not None and group_out.exists():
                group_out.unlink()  # an empty file: nothing to resume
            skip += done
            bar.start(tally.n)
            try:
                if stream is not None:
                    if group_out is not None and store is None:
                        store = RolloutStore(group_out).open()
                    started = time.perf_counter()
                    _stream_group(stream, iter_raw(group_files, size=max(1, chunk), skip=done, done=marks),
                                  shard_size, max(1, chunk), store, tally, bar)
                    elapsed += time.perf_counter() - started
                    continue
                for records, pairs in iter_chunks(group_files, size=max(1, chunk), skip=done, done=marks):
                    started = time.perf_counter()
                    verdicts = score(pairs)
                    elapsed += time.perf_counter() - started
                    for doc, v in zip(records, verdicts, strict=True):
                        tally.add(doc.get("verdict"), v)
                    if group_out is not None:
                        if store is None:
                            store = RolloutStore(group_out).open()
                        store.append_docs(_rescored(records, pairs, verdicts, built))
                    bar.show(tally.n)
            except OSError as exc:
                if group_out is None or exc.filename is not None or exc.errno not in _WRITE_ERRNOS:
                    raise
                # write() on a full disk names no file: this names --out (its records so far are kept)
                raise ConfigError(f"cannot write: {exc.strerror}", where=str(group_out),
                                  fix="free some space or pass another --out; rerun with this --out to resume") \
                    from None
            finally:
                if store is not None:
                    store.close()
        bar.end(tally.n)
    finally:
        if ray is not None:
            shutdown_workers()
            if ours:
                ray.shutdown()
    if tally.n == 0:
        raise ConfigError("no records", where=str(path), fix="pass a non-empty JSONL file")
    if skip and tally.n == skip:
        sys.stderr.write(f"nothing left to score: {out} already holds every record\n")
    scored = tally.n - skip
    return {"path": str(path), "n": tally.n, "mode": mode, "workers": workers,
            "mean_reward": tally.reward_sum / tally.finite if tally.finite else None,
            "passed": tally.passed, "errors": dict(sorted(tally.errors.items())),
            "faults": {k: tally.faults.get(k, 0) for k in ("infra", "model", "none")},
            "compared": tally.compared, "changed": tally.changed, "seconds": round(elapsed, 3),
            "startup_seconds": round(startup, 3),
            "per_second": round(scored / elapsed, 1) if elapsed > 0 else None,
            "resumed": skip, "files": len(files), "out": None if out is None else str(out),
            **({"ray": {"actors": len(stream.actors), "shard": shard_size, **stream.stats}} if stream else {})}


def _sample(files: list[Path], look: int = 512) -> list[tuple[str, bytes | dict[str, Any]]]:
    """One raw record per verifier among the first ``look`` records: what a Ray actor scores once to warm up."""
    seen: dict[str, tuple[str, bytes | dict[str, Any]]] = {}
    try:
        for k, (where, raw) in enumerate(iter_raw(files)):
            if k >= look:
                break
            try:
                doc = raw if isinstance(raw, dict) else json.loads(raw)
                name = json.dumps(doc["task"]["verifier"], sort_keys=True)
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
            seen.setdefault(name, (where, raw))
    except CrossgymError:  # an unreadable file: the stream says so, in order
        pass
    return list(seen.values())


def _stream_group(stream: Any, raws: Iterator[tuple[str, bytes | dict[str, Any]]], shard: int, chunk: int,
                  store: Any, tally: _Tally, bar: _Progress) -> None:
    """One output's records through Ray: shards of ``shard`` raw records out, their text and counts back in input
    order; the text appended to ``store`` (fsync'd) every ``chunk`` records, so --out is a prefix of the input's
    output at every moment and resumes like the local path's."""
    from crossgym.text.chunks import tapered

    texts: list[str] = []
    held = 0
    try:  # the last shards of each output taper, so no actor idles while another scores a whole last shard
        shards = tapered(raws, shard, len(stream.actors))
        for text, part in stream.run(shards, "score_shard", store is not None):
            tally.merge(part)
            if store is not None:
                texts.append(text)
                held += part.n
                if held >= chunk:
                    store.append_text("".join(texts))
                    texts, held = [], 0
            bar.show(tally.n, stream.stats)
    finally:  # a failed shard (a bad line, a shard lost too often): the shards before it are kept, for a resume
        if store is not None and texts:
            store.append_text("".join(texts))


#: seconds between progress lines when stderr is not a terminal (a terminal gets one line, redrawn)
PROGRESS_EVERY_S = 30.0


class _Progress:
    """verify-batch's one progress line on stderr: records, rate, mode (and Ray's retries). On a terminal it is
    redrawn in place (at most 4 times a second) and ended with a newline; elsewhere it is printed every
    PROGRESS_EVERY_S; ``enabled=False``: nothing."""

    def __init__(self, enabled: bool | None) -> None:
        self.enabled = True if enabled is None else enabled
        self.tty = sys.stderr.isatty()
        self.every = 0.25 if self.tty else PROGRESS_EVERY_S
        self.stats: dict[str, Any] | None = None
        self.mode = "local"
        self.t0 = time.monotonic()
        self.last = self.t0
        self.first = 0
        self.shown = False

    def start(self, n: int) -> None:
        if not self.shown:
            self.first, self.t0 = n, time.monotonic()
            self.last = self.t0

    def _line(self, n: int, stats: dict[str, Any] | None) -> str:
        secs = time.monotonic() - self.t0
        rate = (n - self.first) / secs if secs > 0 else 0.0
        extra = f", {stats['retries']} shard(s) retried" if stats and stats.get("retries") else ""
        return f"verify-batch: {n:,} records ({self.mode}), {rate:,.0f}/s, {secs:,.0f} s{extra}"

    def show(self, n: int, stats: dict[str, Any] | None = None) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < self.every:
            return
        self.last = now
        self.stats = stats
        line = self._line(n, stats)
        sys.stderr.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        sys.stderr.flush()
        self.shown = True

    def end(self, n: int) -> None:
        if not self.enabled or not self.shown:
            return
        if self.tty:
            sys.stderr.write(f"\r{self._line(n, self.stats)}\x1b[K\n")
        sys.stderr.flush()


def _rescored(records: list[dict[str, Any]], pairs: list[tuple[Task, Completion]], verdicts: list[Verdict],
              built: dict[str, Any]) -> list[dict[str, Any]]:
    """The records with today's verdicts (the old ones kept as previous_*) and schema-2 provenance naming today's
    verifier, so `crossgym reverify` of this file checks what it holds. ``built``: verifiers by spec key, kept
    across chunks."""
    from crossgym.scoring import Provenance
    from crossgym.verifiers.safe import build_verifier

    docs = []
    for doc, (task, _), v in zip(records, pairs, verdicts, strict=True):
        rec = dict(doc)
        if "previous_verdict" in rec or "previous_provenance" in rec:  # scored again: the older ones move on
            older = {k: rec.pop(f"previous_{k}") for k in ("verdict", "provenance") if f"previous_{k}" in rec}
            history = rec.get("verdict_history")
            rec["verdict_history"] = [*(history if isinstance(history, list) else []), older]
        if "verdict" in rec:
            rec["previous_verdict"] = rec["verdict"]
        if isinstance(rec.get("provenance"), dict):
            rec["previous_provenance"] = rec["provenance"]
        rec["verdict"] = v.to_dict()
        if isinstance(task, Task):
            key = task.verifier.key()
            if key not in built:
                built[key] = build_verifier(task.verifier)
            verifier = None if isinstance(built[key], Verdict) else built[key]
            prov = Provenance.new(task.verifier, verifier, source="verify-batch").to_dict()
            prov.pop("created")  # the same input gives the same output, wherever it is scored (Ray or here)
            rec["provenance"] = prov
        docs.append(rec)
    return docs


def _say_interrupted(out: Path | None) -> None:
    """The line a Ctrl-C ends with: what is kept (every chunk appended to --out before it) and how to go on. Typer
    turns a KeyboardInterrupt into a silent exit 130, which told a user of a long run neither."""
    lead = "\n" if sys.stderr.isatty() else ""  # (the progress line on a terminal has no newline yet)
    if out is None:
        sys.stderr.write(f"{lead}crossgym verify-batch: interrupted; nothing was written (no --out): pass --out FILE "
                         "to keep the records as they are scored, and resume a stopped run\n")
    else:
        sys.stderr.write(f"{lead}crossgym verify-batch: interrupted; the records scored so far are kept in {out}: run "
                         "the same command again to resume (it scores only the rest)\n")


def run_verify_batch_command(rollouts: Path, use_ray: bool, address: str | None, workers: int | None,
                             out: Path | None, as_json: bool, progress: bool = True,
                             shard: int | None = None) -> dict[str, Any]:
    """Print the summary (JSON or one line each)."""
    if workers is not None and workers < 1:
        raise ConfigError(f"must be at least 1, got {workers}", where="--workers", fix="pass --workers N, N >= 1")
    if shard is not None and shard < 1:
        raise ConfigError(f"must be at least 1, got {shard}", where="--shard", fix="pass --shard N, N >= 1")
    most = max(MAX_LOCAL_WORKERS, 8 * (os.cpu_count() or 1))
    if workers is not None and workers > most and not (use_ray or address):
        raise ConfigError(f"{workers} local workers would start up to that many verifier processes on this "
                          f"{os.cpu_count()}-CPU machine (at most {most})", where="--workers",
                          fix=f"pass --workers N, N <= {most} (one per CPU is the fastest), or --ray for a cluster")
    from crossgym.config.files import check_output_file

    if out is None or not out.is_dir():  # an existing folder: one output file per input file
        check_output_file(out, "--out")
    try:
        doc = verify_batch(rollouts, use_ray=use_ray, address=address, workers=workers, out=out, progress=progress,
                           shard=shard)
    except KeyboardInterrupt:
        _say_interrupted(out)
        raise SystemExit(130) from None
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return doc
    mean = "n/a" if doc["mean_reward"] is None else f"{doc['mean_reward']:.3f}"
    startup = f" (+{doc['startup_seconds']:.1f} s starting Ray)" if doc["startup_seconds"] else ""
    lines = [f"{doc['n']} records scored ({doc['mode']}) in {doc['seconds']:.2f} s{startup}: mean reward {mean}, "
             f"{doc['passed']} passed"]
    if doc.get("ray"):
        r = doc["ray"]
        lines.append(f"{r['shards']} shards of up to {r['shard']} records on {r['actors']} Ray actors; "
                     f"{r['retries']} redone after a lost actor ({r['replaced']} actors replaced)")
    if doc["errors"]:
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in doc["errors"].items()))
    if doc["faults"]["infra"]:
        lines.append(f"{doc['faults']['infra']} infrastructure failures (verifier, sandbox or environment: "
                     "\"fault\": \"infra\", mask them) apart from the model's own")
    if doc["compared"]:
        lines.append(f"{doc['changed']} of {doc['compared']} stored verdicts changed")
    if doc["out"]:
        lines.append(f"wrote {doc['out']}")
    sys.stdout.write("\n".join(lines) + "\n")
    return doc
