"""`crossgym compare A B`: two sets of rollouts of the same tasks (two evals: before and after training, two models,
two settings; or two sets of rollout records: two training runs, a verifier's output before and after a change),
paired per task: the change of pass rate and mean reward with a paired bootstrap interval, overall, per task source
and per verifier; the tasks that flipped (pass -> fail, fail -> pass) with both completions side by side; the tasks
only one side has.

A side is an eval output directory (its rollouts.jsonl, and metrics.json naming the settings it reports), or
rollout records in any shape crossgym writes (eval, train, serve, verify-batch): a JSONL or Parquet file, a folder
of them (its shards, in name order) or a quoted glob, read as one input (crossgym.scoring.records.input_files).

Records are streamed in one pass and summarised per task for each settings hash the input holds (counts, reward
sums, a digest of the task and the positions of its first passing and first failing rollout): no rollout is kept,
so memory grows with the number of tasks, not with the number or size of the records. The few completions shown
side by side (at most MAX_FLIPS per direction) are read again by position in a second pass that stops at the last
one. A key (``provenance["key"]``: eval's task#sample@settings) that repeats counts once, by its first record, as
eval reads its own store; the repeats are counted and the first named. Records without a key (training,
verify-batch) each count: two equal completions in a GRPO group are two samples.

A task is its id and its content (prompt, answer and verifier: a 16-byte digest). Records that share an id but not
the content (datasets merged with per-split index ids, whose training records name several tasks "0") are
different tasks, each summarised apart and named ``ID#DIGEST``; the two sides are paired by id and content, in one
pass over each side's tasks (linear however many records share an id).
"""

from __future__ import annotations

import hashlib
import html as _html
import json
import logging
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.eval import stats
from crossgym.eval.metrics import task_source
from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError
from crossgym.scoring.provenance import Provenance
from crossgym.scoring.records import HOLDS_A_TASK, NOT_A_ROLLOUT, iter_numbered_rollouts, provenance_of
from crossgym.text.visible import visible

log = logging.getLogger(__name__)

#: a task counts as solved in a run when at least this share of its samples passed
SOLVED = 0.5
#: flips listed per direction (all are counted)
MAX_FLIPS = 50
EXCERPT = 1500
METHOD = (f"paired percentile bootstrap over the shared tasks ({stats.RESAMPLES} resamples with replacement, "
          f"seed {stats.SEED}; above {stats.EXACT_DRAWS:,} task draws, drawn as multinomial counts of the tasks' "
          "distinct differences, the same distribution): the mean of per-task differences B - A")
INPUTS = ("pass the --output-dir of a `crossgym eval`, or rollout records: a JSONL or Parquet file, a folder of "
          "them or a quoted glob")


def _task_digest(r: Rollout) -> bytes:
    """What makes two records the same task (its prompt, answer and verifier), in 16 bytes."""
    d = r.task.to_dict()
    text = json.dumps([d.get("prompt"), d.get("answer"), d.get("verifier")], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _quick_key(r: Rollout) -> int | None:
    """A cheap hash of what ``_task_digest`` digests (~1 us against ~9): a record whose key equals its task's first
    record's is that task without the digest (the common case: every sample of a task); None when a part is not
    hashable (a list answer, list params), and then the digest decides."""
    t = r.task
    try:
        return hash((t.prompt, t.answer, t.verifier.name, tuple(sorted(t.verifier.params.items()))))
    except TypeError:
        return None


class TaskResult:
    """One task's samples in one run, summarised as they stream by: counts, reward sums, the task's digest, source
    and verifier, and of its rollouts only the positions (in the input's stream of rollouts) of the first that
    passed and the first that failed (what a comparison shows, read again when listed), so memory is a few numbers
    per task, whatever the number or size of its records."""

    __slots__ = ("digest", "first_fail_at", "first_pass_at", "n", "passes", "quick", "reward_sum", "rewarded",
                 "source", "task_id", "verifier")

    def __init__(self, r: Rollout, digest: bytes | None = None) -> None:
        self.n = self.passes = self.rewarded = 0
        self.reward_sum = 0.0
        self.first_pass_at = self.first_fail_at = -1
        self.task_id = r.task.id
        self.digest = _task_digest(r) if digest is None else digest
        self.quick = _quick_key(r)
        self.source = sys.intern(task_source(r))
        self.verifier = sys.intern(r.task.verifier.name)

    def add(self, r: Rollout, at: int) -> None:
        self.n += 1
        passed = bool(r.verdict.passed)
        self.passes += passed
        if not math.isnan(r.verdict.reward):
            self.reward_sum += r.verdict.reward
            self.rewarded += 1
        if passed and self.first_pass_at < 0:
            self.first_pass_at = at
        elif not passed and self.first_fail_at < 0:
            self.first_fail_at = at

    @property
    def pass_rate(self) -> float:
        return self.passes / self.n

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.rewarded if self.rewarded else None

    @property
    def solved(self) -> bool:
        return self.pass_rate >= SOLVED

    def pick(self, passed: bool) -> int:
        """The position of the first sample that passed (or failed), else of the first."""
        at = self.first_pass_at if passed else self.first_fail_at
        return at if at >= 0 else max(self.first_pass_at, self.first_fail_at)


@dataclass
class EvalRun:
    """One side of a comparison: the per-task summaries of the settings compared, and how the input was read."""

    path: Path
    files: list[Path]
    tasks: dict[str, TaskResult]
    model: str | None
    config_hash: str | None
    #: rollouts per writer (eval, train, serve, verify-batch...), all settings
    sources: dict[str, int] = field(default_factory=dict)
    #: records whose key was read before (left out), and where the first was
    duplicates: int = 0
    first_duplicate: str | None = None
    #: lines that hold no rollout (each warned about with its file:line)
    skipped: int = 0
    #: ids that name more than one task (different prompt, answer or verifier: each summarised apart, as
    #: ``ID#DIGEST``), and where a record first named a second task by an id read before
    shared_ids: int = 0
    first_shared_id: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "files": len(self.files), "model": self.model,
                "config_hash": self.config_hash, "sources": dict(sorted(self.sources.items())),
                "n_tasks": len(self.tasks), "n_rollouts": sum(t.n for t in self.tasks.values()),
                "duplicates": self.duplicates, "first_duplicate": self.first_duplicate, "skipped": self.skipped,
                "shared_ids": self.shared_ids, "first_shared_id": self.first_shared_id}

    def _stream(self) -> Iterator[tuple[str, Rollout]]:
        for f in self.files:  # (the lines that hold no rollout were warned about on the first pass)
            yield from iter_numbered_rollouts(f, skipped=lambda where, why: None)

    def rollouts_at(self, positions: set[int]) -> dict[int, Rollout]:
        """The rollouts at these positions of the input's stream (what ``TaskResult`` keeps), read again in one
        pass that stops at the last; a position no longer there (the input changed since) is left out."""
        found: dict[int, Rollout] = {}
        if not positions:
            return found
        last = max(positions)
        try:
            for at, (_, r) in enumerate(self._stream()):
                if at in positions:
                    found[at] = r
                if at >= last:
                    break
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("%s: cannot read the rollouts shown side by side again: %s", self.path, exc)
        return found


def _config_hash(prov: Provenance) -> str | None:
    h = prov.extra.get("config_hash")
    if h:
        return str(h)
    return prov.key.rsplit("@", 1)[1].split(".")[0] if prov.key and "@" in prov.key else None  # (.task digest)


def _files(p: Path) -> tuple[list[Path], Path | None]:
    """The files a side names, and the metrics.json that may name its settings; ConfigError when there are none."""
    from crossgym.eval.run import METRICS_FILE, ROLLOUTS_FILE
    from crossgym.scoring.records import input_files

    if p.is_dir() and (p / ROLLOUTS_FILE).is_file():
        return [p / ROLLOUTS_FILE], p / METRICS_FILE
    if p.is_dir():
        try:
            return input_files(p), None
        except ConfigError:
            raise ConfigError(f"not an eval run or a folder of rollout shards: no {ROLLOUTS_FILE}, *.jsonl or "
                              "*.parquet in it", where=str(p), fix=INPUTS) from None
    if p.is_file():
        return [p], p.parent / METRICS_FILE
    if any(c in str(p) for c in "*?["):
        return input_files(p), None  # (no match: one line naming the pattern)
    raise ConfigError("no such eval run or rollout file", where=str(p), fix=INPUTS)


def load_run(path: str | Path) -> EvalRun:
    """One side from an eval's output directory, or rollout records (a JSONL or Parquet file, a folder of shards or
    a glob), streamed; ConfigError (one line) when it holds no rollout."""
    from crossgym.config.files import check_user_encoding
    from crossgym.scoring.parquet import is_parquet

    p = Path(path)
    files, metrics_file = _files(p)
    for f in files:
        if not is_parquet(f):  # (Parquet is binary: its reader says when it is not Parquet)
            check_user_encoding(f)  # UTF-16 has no newline bytes to split on: one line naming the encoding
    by_hash: dict[str | None, dict[str, TaskResult]] = {}  # per settings: their rollouts summarised per task id
    # per settings: the other tasks of an id already read (another content), by id, then content digest
    others: dict[str | None, dict[str, dict[bytes, TaskResult]]] = {}
    first_shared: dict[str | None, str] = {}
    models: dict[str | None, str | None] = {}
    sources: Counter[str] = Counter()
    seen: set[str] = set()  # the keys read (eval's task#sample@settings): a repeat counts once
    duplicates = 0
    first_duplicate: str | None = None
    skip = _Skips()
    last: str | None = None
    at = -1

    for file in files:
        try:
            for where, r in iter_numbered_rollouts(file, skipped=skip):
                at += 1
                if at == 0:
                    skip.start()  # it holds rollouts: the lines held back before this one are warned about now
                key = r.provenance.get("key")
                if isinstance(key, str) and key:
                    if key in seen:
                        duplicates += 1
                        first_duplicate = first_duplicate or f"{where} (key {key[:200]!r})"
                        continue
                    seen.add(key)
                prov = provenance_of(r)
                last = _config_hash(prov)
                tasks = by_hash.setdefault(last, {})
                res = tasks.get(r.task.id)
                if res is None:
                    res = tasks[r.task.id] = TaskResult(r)
                elif res.quick is None or _quick_key(r) != res.quick:  # (the same: its id's first task)
                    digest = _task_digest(r)
                    if digest != res.digest:  # another task under an id read before: a task of its own
                        contents = others.setdefault(last, {}).setdefault(r.task.id, {})
                        res = contents.get(digest)
                        if res is None:
                            res = contents[digest] = TaskResult(r, digest)
                            first_shared.setdefault(last, f"{where} (id {r.task.id[:200]!r})")
                res.add(r, at)
                models[last] = models.get(last) or prov.model
                sources[prov.source] += 1
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read rollouts: {exc}", where=str(file)) from None
    seen.clear()
    if not by_hash:
        raise ConfigError(f"no rollout records in it: {skip.none_read()}", where=str(p),
                          fix="pass the rollouts.jsonl a `crossgym eval` wrote, or records with task, completion "
                              "and verdict (eval, train, verify-batch)")
    if duplicates:
        log.warning("%s: %d rollout records repeat a key read before, the first at %s: each key counts once, by "
                    "its first record (as eval reads its store)", p, duplicates, first_duplicate)
    wanted: str | None = None
    if metrics_file is not None and metrics_file.is_file():
        try:
            wanted = (json.loads(metrics_file.read_text(encoding="utf-8")).get("run") or {}).get("config_hash")
        except (OSError, ValueError, AttributeError, RecursionError):
            wanted = None
    if not isinstance(wanted, str) or wanted not in by_hash:
        wanted = last  # no metrics.json (or a stale or broken one): the settings of the latest rollouts
    tasks = by_hash[wanted]
    shared_ids = others.get(wanted, {})
    for tid, contents in shared_ids.items():  # each task of a shared id named by its id and content
        for res in (tasks.pop(tid), *contents.values()):
            tasks[_label(res)] = res
    if shared_ids:
        log.warning("%s: %d task ids each name more than one task (another prompt, answer or verifier), the first at "
                    "%s: each task is compared on its own, as ID#DIGEST", p, len(shared_ids), first_shared[wanted])
    return EvalRun(path=p, files=files, tasks=tasks, model=models[wanted], config_hash=wanted,
                   sources=dict(sources), duplicates=duplicates, first_duplicate=first_duplicate, skipped=skip.n,
                   shared_ids=len(shared_ids), first_shared_id=first_shared.get(wanted) if shared_ids else None)


class _Skips:
    """The lines of one side that hold no rollout. Once the side has shown a rollout, each is warned about with its
    file:line (as reverify does); before that they are held back (the first HELD of them, and counted), so that an
    input holding none (a tasks file of 3,000 lines) is the one error line of ``none_read``, not 3,000 warnings
    before it. A rollout after them warns about the held lines then: a damaged line is never passed over in silence."""

    HELD = 20

    def __init__(self) -> None:
        self.n = 0  # lines skipped, all kinds
        self.records = 0  # of them, JSON records that are no rollout
        self.tasks = 0  # of those, tasks
        self.first: str | None = None
        self.held: list[tuple[str, str]] = []
        self.live = False

    def __call__(self, where: str, why: str) -> None:
        self.n += 1
        if why.startswith(NOT_A_ROLLOUT):
            self.records += 1
            self.tasks += HOLDS_A_TASK in why
        self.first = self.first or f"{where}: {why}"
        if self.live:
            log.warning("%s: skipping %s", where, why)
        elif len(self.held) < self.HELD:
            self.held.append((where, why))

    def start(self) -> None:
        """The side holds rollouts: warn about the lines held back, and about every later one as it comes."""
        self.live = True
        for where, why in self.held:
            log.warning("%s: skipping %s", where, why)
        if self.n > len(self.held):
            log.warning("... and %d more lines before the first rollout that hold none (skipped)",
                        self.n - len(self.held))
        self.held = []

    def none_read(self) -> str:
        """What the side held, when it held no rollout at all (as reverify says it), and the first line skipped."""
        if not self.n:
            return "it is empty"
        lines = self.n - self.records
        first = f"the first: {self.first}" if self.n > 1 else str(self.first)
        if not self.records:
            return f"none of its {lines} lines is a JSON record ({first})"
        what = f"none of its {self.records} records is a rollout" if self.records > 1 else "its one record is no rollout"
        what += " (it holds tasks)" if self.tasks == self.records else f" ({first})"
        return what + (f", and {lines} line{'s are' if lines > 1 else ' is'} no JSON record" if lines else "")


def _label(res: TaskResult) -> str:
    """A task's name where its id names more than one task: the id and its content digest's first 8 hex digits."""
    return f"{res.task_id}#{res.digest.hex()[:8]}"


def _pair(a: EvalRun, b: EvalRun) -> tuple[dict[str, TaskResult], dict[str, TaskResult], list[str]]:
    """The tasks both runs hold, paired by id and content (one pass over each side's tasks) and named by their id
    (``ID#DIGEST`` where either side's id names more than one task), in A's order; and the ids both runs hold
    whose content differs (a task of that id on one side that the other lacks)."""
    in_b = {(t.task_id, t.digest): (name, t) for name, t in b.tasks.items()}
    ids_a = {t.task_id for t in a.tasks.values()}
    ids_b = {t.task_id for t in b.tasks.values()}
    paired_a: dict[str, TaskResult] = {}
    paired_b: dict[str, TaskResult] = {}
    matched: set[tuple[str, bytes]] = set()
    differing: set[str] = set()
    for name, ta in a.tasks.items():
        found = in_b.get((ta.task_id, ta.digest))
        if found is None:
            if ta.task_id in ids_b:
                differing.add(ta.task_id)
            continue
        name_b, tb = found
        label = name if name == name_b else _label(ta)
        paired_a[label], paired_b[label] = ta, tb
        matched.add((ta.task_id, ta.digest))
    differing.update(t.task_id for t in b.tasks.values()
                     if t.task_id in ids_a and (t.task_id, t.digest) not in matched)
    return paired_a, paired_b, sorted(differing)


def _delta(values_a: Sequence[float | None], values_b: Sequence[float | None]) -> dict[str, Any]:
    pairs = [(a, b) for a, b in zip(values_a, values_b, strict=True) if a is not None and b is not None]
    if not pairs:
        return {"a": None, "b": None, "delta": None, "low": None, "high": None, "n_tasks": 0}
    diffs: list[float | None] = [b - a for a, b in pairs]
    bounds = stats.bootstrap(len(diffs), {"d": stats.mean_stat(diffs)})["d"]
    mean_a = sum(a for a, _ in pairs) / len(pairs)
    mean_b = sum(b for _, b in pairs) / len(pairs)
    low, high = bounds if bounds is not None else (None, None)
    doc: dict[str, Any] = {"a": mean_a, "b": mean_b, "delta": mean_b - mean_a, "low": low, "high": high, "n_tasks": len(pairs),
                           "significant": low is not None and high is not None and (low > 0 or high < 0)}
    if getattr(bounds, "method", stats.BOOTSTRAP) == stats.NORMAL:  # too many distinct differences to resample
        doc["method"] = stats.NORMAL_METHOD
    return doc


def _side(r: Rollout | None) -> dict[str, Any]:
    if r is None:
        return {"completion": "(this rollout is no longer in the input: it changed since it was read)",
                "reward": None, "passed": None, "reason": "", "error": None}
    text = r.completion.text
    return {"completion": text[:EXCERPT] + (f"... [{len(text) - EXCERPT} more chars]" if len(text) > EXCERPT else ""),
            "reward": None if math.isnan(r.verdict.reward) else r.verdict.reward, "passed": r.verdict.passed,
            "reason": r.verdict.reason[:300], "error": r.verdict.error}


def compare_runs(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    """The comparison document (`crossgym compare --json`); tasks are paired by id and content (``_pair``)."""
    at, bt, differing = _pair(a, b)
    shared = list(at)
    if not shared:
        raise ConfigError("the two runs share no tasks" + (f" ({len(differing)} ids match but their prompts, "
                                                           "answers or verifiers differ)" if differing else ""),
                          where=f"{a.path} vs {b.path}", fix="compare two evals of the same task list")
    source = {tid: bt[tid].source for tid in shared}

    def block(ids: list[str]) -> dict[str, Any]:
        return {"n_tasks": len(ids),
                "pass_rate": _delta([at[t].pass_rate for t in ids], [bt[t].pass_rate for t in ids]),
                "mean_reward": _delta([at[t].mean_reward for t in ids], [bt[t].mean_reward for t in ids]),
                "improved": sum(1 for t in ids if bt[t].pass_rate > at[t].pass_rate),
                "worsened": sum(1 for t in ids if bt[t].pass_rate < at[t].pass_rate)}

    by_source: dict[str, list[str]] = defaultdict(list)
    by_verifier: dict[str, list[str]] = defaultdict(list)
    for tid in shared:
        by_source[source[tid]].append(tid)
        by_verifier[bt[tid].verifier].append(tid)
    flipped: dict[str, list[str]] = {"pass_to_fail": [], "fail_to_pass": []}
    for tid in shared:
        ta, tb = at[tid], bt[tid]
        if ta.solved != tb.solved:
            flipped["pass_to_fail" if ta.solved else "fail_to_pass"].append(tid)
    listed = {d: ids[:MAX_FLIPS] for d, ids in flipped.items()}  # read again: the completions side by side
    got_a = a.rollouts_at({at[t].pick(at[t].solved) for ids in listed.values() for t in ids})
    got_b = b.rollouts_at({bt[t].pick(bt[t].solved) for ids in listed.values() for t in ids})
    flips = {d: [{"task": t, "source": source[t], "pass_rate_a": at[t].pass_rate,
                  "pass_rate_b": bt[t].pass_rate,
                  "a": _side(got_a.get(at[t].pick(at[t].solved))),
                  "b": _side(got_b.get(bt[t].pick(bt[t].solved)))} for t in ids]
             for d, ids in listed.items()}
    overall = block(shared)

    def sub(ids: list[str]) -> dict[str, Any]:  # a group of all the shared tasks: the overall figures, not redone
        return overall if len(ids) == len(shared) else block(ids)

    per_task = [{"task": t, "source": source[t], "verifier": bt[t].verifier, "n_a": at[t].n,
                 "n_b": bt[t].n, "pass_rate_a": at[t].pass_rate, "pass_rate_b": bt[t].pass_rate,
                 "mean_reward_a": at[t].mean_reward, "mean_reward_b": bt[t].mean_reward} for t in shared]
    return {
        "a": a.describe(), "b": b.describe(),
        "shared_tasks": len(shared),
        "only_in_a": sorted({t.task_id for t in a.tasks.values()} - {t.task_id for t in b.tasks.values()}),
        "only_in_b": sorted({t.task_id for t in b.tasks.values()} - {t.task_id for t in a.tasks.values()}),
        "differing_tasks": differing,
        "method": METHOD, "confidence": stats.CONFIDENCE, "solved_threshold": SOLVED,
        "overall": overall,
        "by_source": {s: sub(ids) for s, ids in sorted(by_source.items())},
        "by_verifier": {v: sub(ids) for v, ids in sorted(by_verifier.items())},
        "flips": {"pass_to_fail": len(flipped["pass_to_fail"]), "fail_to_pass": len(flipped["fail_to_pass"])},
        "pass_to_fail": flips["pass_to_fail"], "fail_to_pass": flips["fail_to_pass"],
        "per_task": per_task,
    }


# ---------------------------------------------------------------- output
def _f(v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _delta_text(d: dict[str, Any]) -> str:
    if d["delta"] is None:
        return "-"
    mark = "" if d["significant"] else ", within noise"
    return f"{_f(d['a'])} -> {_f(d['b'])}  delta {_f(d['delta'], True)} [{_f(d['low'], True)}, {_f(d['high'], True)}{mark}]"


def _what(side: dict[str, Any]) -> str:
    """'m, 5 tasks' (and the writers of its rollouts when not only eval, its files when more than one)."""
    sources = side.get("sources") or {}
    kinds = "" if set(sources) <= {"eval"} else f", {'+'.join(sources)} rollouts"
    files = f", {side['files']} files" if side.get("files", 1) > 1 else ""
    return f"{side['model'] or '?'}, {side['n_tasks']} tasks{kinds}{files}"


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The comparison in lines for a terminal. Task ids, sources, verifier names and reasons are text a dataset or
    a policy wrote: each line is made ``visible`` (an escape sequence prints as text, a newline forges no line)."""
    a, b, o = doc["a"], doc["b"], doc["overall"]
    lines = [f"A {a['path']} ({_what(a)})  vs  B {b['path']} ({_what(b)}): {doc['shared_tasks']} shared tasks",
             f"  pass rate   {_delta_text(o['pass_rate'])}",
             f"  mean reward {_delta_text(o['mean_reward'])}",
             f"  (95% {doc['method']})",
             f"  flipped fail->pass {doc['flips']['fail_to_pass']}, pass->fail {doc['flips']['pass_to_fail']} "
             f"(solved: at least {doc['solved_threshold']:.0%} of a task's samples passed); "
             f"improved {o['improved']}, worsened {o['worsened']}"]
    for group, label in (("by_source", "source"), ("by_verifier", "verifier")):
        if len(doc.get(group) or {}) > (1 if group == "by_verifier" else 0):  # one verifier: the overall figures
            for name, g in doc[group].items():
                lines.append(f"  {label} {name} ({g['n_tasks']} tasks): pass rate {_delta_text(g['pass_rate'])}")
    for side, label in (("a", "A"), ("b", "B")):
        if doc[side].get("duplicates"):
            lines.append(f"  {label}: {doc[side]['duplicates']} records repeat a key read before (the first at "
                         f"{doc[side]['first_duplicate']}): each key counted once, by its first record")
        if doc[side].get("shared_ids"):
            lines.append(f"  {label}: {doc[side]['shared_ids']} task ids each name more than one task (the first at "
                         f"{doc[side]['first_shared_id']}): each task compared on its own, as ID#DIGEST")
    for direction, label in (("pass_to_fail", "pass->fail"), ("fail_to_pass", "fail->pass")):
        for fl in doc[direction][:5]:
            lines.append(f"  {label} {fl['task']} [{fl['source']}]: A {fl['a']['completion'][:60]!r} | "
                         f"B {fl['b']['completion'][:60]!r}" + (f" ({fl['b']['reason'][:80]})"
                                                                  if fl["b"]["reason"] else ""))
    for key, label in (("only_in_a", "only in A"), ("only_in_b", "only in B"), ("differing_tasks", "differ")):
        if doc[key]:
            more = f" (+{len(doc[key]) - 10} more)" if len(doc[key]) > 10 else ""
            lines.append(f"  {label}: {len(doc[key])} tasks: {', '.join(doc[key][:10])}{more}")
    return [visible(line) for line in lines]


def write_html(doc: dict[str, Any], path: str | Path) -> Path:
    """The comparison as one HTML page: deltas with intervals, per source, flips side by side."""
    e = _html.escape

    def drow(label: str, d: dict[str, Any]) -> str:
        return (f"<tr><td>{e(label)}</td><td>{_f(d['a'])}</td><td>{_f(d['b'])}</td><td><b>{_f(d['delta'], True)}"
                f"</b></td><td>[{_f(d['low'], True)}, {_f(d['high'], True)}]</td>"
                f"<td>{'yes' if d.get('significant') else 'no (within noise)'}</td></tr>")

    head = ("<tr><th></th><th>A</th><th>B</th><th>B - A</th><th>95% interval</th><th>beyond noise</th></tr>")
    rows = drow("pass rate", doc["overall"]["pass_rate"]) + drow("mean reward", doc["overall"]["mean_reward"])
    src_rows = "".join(drow(f"{name} ({g['n_tasks']} tasks): pass rate", g["pass_rate"])
                       + drow(f"{name}: mean reward", g["mean_reward"]) for name, g in doc["by_source"].items())
    ver_rows = "".join(drow(f"{name} ({g['n_tasks']} tasks): pass rate", g["pass_rate"])
                       + drow(f"{name}: mean reward", g["mean_reward"])
                       for name, g in (doc.get("by_verifier") or {}).items())

    def side(s: dict[str, Any]) -> str:
        status = "pass" if s["passed"] else e(s["error"] or "fail")
        return (f"<p>reward {_f(s['reward'])} &middot; {status}</p><pre>{e(s['completion'])}</pre>"
                f"<p><small>{e(s['reason'])}</small></p>")

    flip_parts = []
    for direction, label in (("pass_to_fail", "pass &rarr; fail"), ("fail_to_pass", "fail &rarr; pass")):
        items = "".join(f"<tr><td>{e(fl['task'])}<br><small>{e(fl['source'])}<br>pass rate {fl['pass_rate_a']:.2f} "
                        f"&rarr; {fl['pass_rate_b']:.2f}</small></td><td>{side(fl['a'])}</td><td>{side(fl['b'])}</td>"
                        f"</tr>" for fl in doc[direction])
        flip_parts.append(f"<h2>{label}: {doc['flips'][direction]} tasks</h2>"
                          + (f"<table><tr><th>task</th><th>A</th><th>B</th></tr>{items}</table>" if items else ""))
    only = "".join(f"<p><b>{label}</b> ({len(doc[key])}): {e(', '.join(doc[key]))}</p>"
                   for key, label in (("only_in_a", "Only in A"), ("only_in_b", "Only in B"),
                                      ("differing_tasks", "Same id, different task")) if doc[key])
    a, b = doc["a"], doc["b"]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>crossgym compare</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}pre{{background:#f6f6f6;
padding:6px;white-space:pre-wrap;max-width:520px}}</style></head><body>
<h1>crossgym compare</h1>
<p><b>A</b> {e(a['path'])} ({e(_what(a))}) &nbsp; <b>B</b> {e(b['path'])} ({e(_what(b))}):
{doc['shared_tasks']} shared tasks.</p>
<p>95% intervals: {e(doc['method'])}. A task is solved when at least {doc['solved_threshold']:.0%} of its samples
passed; a flip is a task solved in one run and not the other.</p>
<h2>Overall</h2><table>{head}{rows}</table>
<h2>By task source</h2><table>{head}{src_rows}</table>
<h2>By verifier</h2><table>{head}{ver_rows}</table>
{''.join(flip_parts)}
{only}
</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8", errors="backslashreplace")  # a lone surrogate: its escape, no crash
    return out


def run_compare_command(run_a: Path, run_b: Path, as_json: bool = False, html: Path | None = None) -> dict[str, Any]:
    """Compare two eval runs (or sets of rollout records); print the summary (or JSON) and write the HTML page
    when asked."""
    from crossgym.config.files import check_output_file

    check_output_file(html, "--html")  # before reading both runs (issue 24)
    doc = compare_runs(load_run(run_a), load_run(run_b))
    if html is not None:
        write_html(doc, html)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        lines = summary_lines(doc)
        if html is not None:
            lines.append(visible(f"  wrote {html}"))
        sys.stdout.write("\n".join(lines) + "\n")
    return doc
