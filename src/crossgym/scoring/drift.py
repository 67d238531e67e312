"""Drift: stored rollouts re-scored with today's verifiers (what `crossgym reverify` reports and the compat suite's
records check relies on). Reads every rollout file any crossgym command writes, 0.1 shapes included."""

from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Verdict, VerifierSpec
from crossgym.scoring.provenance import Provenance
from crossgym.scoring.records import input_files, iter_rollouts
from crossgym.scoring.rule import safe_verify, same_verdict
from crossgym.text.chunks import chunked

log = logging.getLogger(__name__)

#: changed rollouts listed one by one in the report
MAX_LISTED = 20
#: rollouts read and re-scored at a time: memory is bounded by this, not by the file's size
CHUNK = 2048


def _same(a: Verdict, b: Verdict) -> bool:
    return same_verdict(a, b)


def _provenance(r: Rollout) -> Provenance:
    return Provenance.from_dict(r.provenance, default=r.task.verifier)


def _spec(r: Rollout) -> VerifierSpec:
    return _provenance(r).spec(r.task.verifier)


def reverify(path: str | Path, *, workers: int = 4, chunk: int = CHUNK) -> dict[str, Any]:
    """The drift report: per verifier how many rewards changed, old and new versions, and the changed rollouts
    (the first MAX_LISTED); ``skipped`` counts the lines that hold no rollout (not JSON, torn, not a rollout
    record), the first MAX_LISTED named in ``skipped_lines`` ("file:line: why"). ``path`` is a JSONL or Parquet
    file, a folder of them (its shards, in name order) or a glob, read ``chunk`` rollouts at a time."""
    from crossgym.api import load_verifier

    p = Path(path)
    files = input_files(p)  # a file, a folder of shards or a glob: one input, read in order
    verifiers: dict[str, Any] = {}
    unavailable: dict[str, str] = {}

    def load(r: Rollout) -> None:
        spec = _spec(r)
        key = spec.key()
        if key in verifiers or spec.name in unavailable:
            return
        try:
            verifiers[key] = load_verifier(spec)
        except CrossgymError as exc:
            unavailable[spec.name] = str(exc)

    def check(r: Rollout) -> tuple[Rollout, Verdict] | None:
        v = verifiers.get(_spec(r).key())
        if v is None:
            return None
        return r, safe_verify(v, r.task, r.completion)  # a verifier that raises is drift too

    by_verifier: dict[str, dict[str, Any]] = {}
    changes: list[dict[str, Any]] = []
    n = checked = 0
    skipped: list[str] = []  # lines that hold no rollout (each warned about with its file:line): the first few
    n_skipped = [0]  # and how many

    def skip(where: str, why: str) -> None:
        log.warning("%s: skipping %s", where, why)
        n_skipped[0] += 1
        if len(skipped) < MAX_LISTED:
            skipped.append(f"{where}: {why}")

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="crossgym-reverify") as pool:
        stream = (r for f in files for r in iter_rollouts(f, skipped=skip))
        for rollouts in chunked(stream, max(1, chunk)):  # memory: a chunk, not the file
            n += len(rollouts)
            for r in rollouts:
                load(r)
            for x in pool.map(check, rollouts):
                if x is None:
                    continue
                checked += 1
                _tally(*x, verifiers, by_verifier, changes)
    for g in by_verifier.values():
        g["old_versions"] = sorted(g["old_versions"])
        g["mean_old"] = g.pop("old_sum") / g["n"]
        g["mean_new"] = g.pop("new_sum") / g["n"]
        g["version_changed"] = g["old_versions"] != [str(g["current_version"])]
    changed = sum(g["changed"] for g in by_verifier.values())
    return {"path": str(p), "n": n, "checked": checked, "changed": changed, "skipped": n_skipped[0],
            "skipped_lines": skipped,
            "unavailable": unavailable, "by_verifier": dict(sorted(by_verifier.items())), "changes": changes,
            "ok": changed == 0 and not unavailable}


def _tally(r: Rollout, new: Verdict, verifiers: dict[str, Any], by_verifier: dict[str, dict[str, Any]],
           changes: list[dict[str, Any]]) -> None:
    """One re-scored rollout into the per-verifier aggregates (and the first MAX_LISTED changes)."""
    spec = _spec(r)
    ref = _provenance(r).verifier
    old_version = None if ref is None else ref.version
    new_version = str(getattr(verifiers[spec.key()], "version", "") or "") or None
    g = by_verifier.setdefault(spec.name, {"n": 0, "changed": 0, "old_versions": set(),
                                           "current_version": new_version, "old_sum": 0.0, "new_sum": 0.0})
    g["n"] += 1
    g["old_versions"].add(str(old_version))
    g["old_sum"] += 0.0 if math.isnan(r.verdict.reward) else r.verdict.reward
    g["new_sum"] += 0.0 if math.isnan(new.reward) else new.reward
    if not _same(r.verdict, new):
        g["changed"] += 1
        if len(changes) < MAX_LISTED:
            changes.append({"key": r.provenance.get("key"), "task": r.task.id, "verifier": spec.name,
                            "old_version": old_version, "new_version": new_version,
                            "old": {"reward": r.verdict.reward, "passed": r.verdict.passed,
                                    "error": r.verdict.error},
                            "new": {"reward": new.reward, "passed": new.passed, "error": new.error}})
