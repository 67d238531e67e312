"""`crossgym verify-batch ROLLOUTS.jsonl [--ray] [--address ...]`: score a file of rollouts, locally or on Ray.

Input lines are rollout records (what `crossgym eval` writes: ``task``, ``completion``, ``verdict``, provenance...)
or bare ``{"task", "completion"}`` records (a completion may be plain text). ``--out`` writes every record back
with the new ``verdict`` (the stored one, if any, kept as ``previous_verdict``); the summary counts rewards,
passes, errors and verdicts that changed.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task, Verdict


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[tuple[Task, Completion]]]:
    """The JSON records of a JSONL file and their (Task, Completion) pairs; a bad line is one ConfigError."""
    if not path.is_file():
        raise ConfigError("file not found", where=str(path), fix="pass a JSONL of rollouts (e.g. an eval's "
                                                                "rollouts.jsonl)")
    from crossgym.config.files import check_user_encoding, decode_user_line

    check_user_encoding(path)
    records, pairs = [], []
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            where = f"{path}:{n}"
            line = decode_user_line(raw, where)
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"not JSON ({exc})", where=where, fix="one JSON object per line") from None
            if not isinstance(doc, dict) or "task" not in doc or "completion" not in doc:
                raise ConfigError("a record needs 'task' and 'completion'", where=where,
                                  fix="write rollouts (crossgym eval) or {\"task\": ..., \"completion\": ...} lines")
            try:
                task = Task.from_dict(doc["task"])
                comp = doc["completion"]
                completion = Completion.from_text(comp) if isinstance(comp, str) else Completion.from_dict(comp)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ConfigError(f"not a task/completion record: {exc}", where=where,
                                  fix="see `crossgym tasks` for the Task form") from None
            records.append(doc)
            pairs.append((task, completion))
    if not pairs:
        raise ConfigError("no records", where=str(path), fix="pass a non-empty JSONL file")
    return records, pairs


def _same(a: Verdict, b: Verdict) -> bool:
    from crossgym.scoring.rule import same_verdict

    return same_verdict(a, b)


def verify_batch(path: Path, *, use_ray: bool = False, address: str | None = None, workers: int | None = None,
                 out: Path | None = None) -> dict[str, Any]:
    """Score every record; write them to ``out`` when given; the summary document."""
    records, pairs = read_records(path)
    startup = 0.0
    started = time.perf_counter()
    if use_ray or address:
        from crossgym.serve.ray_scale import _ray, get_workers, init_ray, shutdown_workers, verify_many_ray

        ray = _ray()
        ours = not ray.is_initialized()
        try:
            if ours:
                init_ray(address)
            get_workers(workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
            startup = time.perf_counter() - started  # Ray and its actors; scoring is timed apart
            started = time.perf_counter()
            verdicts = verify_many_ray(pairs, num_workers=workers, address=address)
        finally:
            shutdown_workers()
            if ours:
                ray.shutdown()
        mode = "ray"
    else:
        from crossgym.verifiers.batch import verify_many

        verdicts = verify_many(pairs, workers=workers)
        mode = "local"
    elapsed = time.perf_counter() - started
    errors = Counter(v.error_kind for v in verdicts if v.error_kind)
    changed = 0
    compared = 0
    for doc, v in zip(records, verdicts, strict=True):
        old = doc.get("verdict")
        if isinstance(old, dict) and "reward" in old:
            compared += 1
            try:
                if not _same(Verdict.from_dict(old), v):
                    changed += 1
            except (ValueError, TypeError):
                changed += 1
    if out is not None:
        _write_rescored(out, records, pairs, verdicts)
    rewards = [v.reward for v in verdicts if math.isfinite(v.reward)]
    return {"path": str(path), "n": len(verdicts), "mode": mode, "workers": workers,
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "passed": sum(1 for v in verdicts if v.passed), "errors": dict(sorted(errors.items())),
            "compared": compared, "changed": changed, "seconds": round(elapsed, 3), "startup_seconds": round(startup, 3),
            "per_second": round(len(verdicts) / elapsed, 1) if elapsed > 0 else None,
            "out": None if out is None else str(out)}


def _write_rescored(out: Path, records: list[dict[str, Any]], pairs: list[tuple[Task, Completion]],
                    verdicts: list[Verdict]) -> None:
    """The records with today's verdicts (the old ones kept as previous_*) and schema-2 provenance naming today's
    verifier, so `crossgym reverify` of this file checks what it holds."""
    from crossgym.scoring import Provenance, dumps_record
    from crossgym.verifiers.safe import build_verifier

    built: dict[str, Any] = {}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for doc, (task, _), v in zip(records, pairs, verdicts, strict=True):
            rec = dict(doc)
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
            f.write(dumps_record(rec))


def run_verify_batch_command(rollouts: Path, use_ray: bool, address: str | None, workers: int | None,
                             out: Path | None, as_json: bool) -> dict[str, Any]:
    """Print the summary (JSON or one line each)."""
    if workers is not None and workers < 1:
        raise ConfigError(f"must be at least 1, got {workers}", where="--workers", fix="pass --workers N, N >= 1")
    from crossgym.config.files import check_output_file

    check_output_file(out, "--out")
    doc = verify_batch(rollouts, use_ray=use_ray, address=address, workers=workers, out=out)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return doc
    mean = "n/a" if doc["mean_reward"] is None else f"{doc['mean_reward']:.3f}"
    startup = f" (+{doc['startup_seconds']:.1f} s starting Ray)" if doc["startup_seconds"] else ""
    lines = [f"{doc['n']} records scored ({doc['mode']}) in {doc['seconds']:.2f} s{startup}: mean reward {mean}, "
             f"{doc['passed']} passed"]
    if doc["errors"]:
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in doc["errors"].items()))
    if doc["compared"]:
        lines.append(f"{doc['changed']} of {doc['compared']} stored verdicts changed")
    if doc["out"]:
        lines.append(f"wrote {doc['out']}")
    sys.stdout.write("\n".join(lines) + "\n")
    return doc
