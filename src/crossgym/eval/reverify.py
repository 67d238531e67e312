"""`crossgym reverify`: score stored rollouts again with today's verifiers and report what changed (drift); the
re-scoring itself is crossgym.scoring.drift."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.scoring.drift import MAX_LISTED, reverify
from crossgym.scoring.records import iter_numbered_records, rollout_from_record, why_not_a_rollout
from crossgym.text.visible import visible

__all__ = ["MAX_LISTED", "reverify", "run_reverify_command"]


def run_reverify_command(rollouts: Path, as_json: bool) -> dict[str, Any]:
    """Print the drift report (JSON or lines); exit 1 when any reward changed or a verifier is missing."""
    import typer

    _check_has_rollouts(rollouts)
    doc = reverify(rollouts)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        skipped = f"; {doc['skipped']} line(s) skipped, not rollouts (named above)" if doc["skipped"] else ""
        lines = [f"{doc['checked']} of {doc['n']} rollouts re-scored; {doc['changed']} changed{skipped}"]
        for name, g in doc["by_verifier"].items():
            ver = f"v{','.join(g['old_versions'])} -> v{g['current_version']}" if g["version_changed"] \
                else f"v{g['current_version']}"
            lines.append(f"  {name} ({ver}): {g['changed']}/{g['n']} changed, mean reward "
                         f"{g['mean_old']:.3f} -> {g['mean_new']:.3f}")
        for name, why in doc["unavailable"].items():
            lines.append(f"  {name}: not re-scored: {why}")
        for c in doc["changes"]:
            lines.append(f"  {c['task']} [{c['verifier']}]: {c['old']['reward']:g} -> {c['new']['reward']:g}"
                         + (f" ({c['new']['error']})" if c["new"]["error"] else ""))
        # task ids, verifier names and errors (which quote the program's output) are untrusted: one line each
        sys.stdout.write("\n".join(visible(line) for line in lines) + "\n")
    if not doc["ok"]:
        raise typer.Exit(1)
    return doc


def _check_has_rollouts(path: Path) -> None:
    """An empty input, or one with no rollout (a tasks file), is an error: "0 of 0 re-scored" is no success.
    ``path``: a file, a folder of shards or a glob (crossgym.scoring.records.input_files)."""
    from crossgym.config.files import check_user_encoding, read_user_text
    from crossgym.scoring.parquet import is_parquet
    from crossgym.scoring.records import input_files

    if not path.exists() and not any(c in str(path) for c in "*?["):
        read_user_text(path, what="rollout file", fix_missing="pass the rollouts.jsonl an eval wrote, a folder of "
                                                              "rollout shards or a glob")
    files = input_files(path)
    for f in files:
        if not is_parquet(f):  # Parquet is binary: its reader says when it is not Parquet
            check_user_encoding(f)
    records = 0
    bad: list[str] = []  # lines that are no JSON record at all: how many, and the first (said in the one line)
    first = ""  # why the first record is no rollout (a verdict's field of another type, say), said in the line
    doc: dict[str, Any] = {}

    def skipped(where: str, why: str) -> None:
        bad.append(f"{where}: {why}" if not bad else "")

    for where, doc in (wd for f in files for wd in iter_numbered_records(f, skipped=skipped)):
        records += 1
        try:
            rollout_from_record(doc)
            return
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            first = first or f"{where}: {why_not_a_rollout(doc, exc)}"
            continue
    if records == 0:
        what = f"none of its {len(bad)} lines is a JSON record ({bad[0]})" if bad else "the file is empty"
    else:
        held = "it holds tasks" if "prompt" in doc and "verifier" in doc else f"the first: {first}"
        what = f"none of its {records} records is a rollout ({held})"
    raise ConfigError(f"no rollouts to re-score: {what}", where=str(path),
                      fix="pass a rollouts.jsonl that crossgym eval or train wrote (records with task, completion "
                          "and verdict)")
