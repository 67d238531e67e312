"""Deprecations from TRL and transformers on crossgym's training path, listed instead of ignored.

A fresh interpreter imports TRL and transformers and builds (and steps once) a GRPOTrainer through crossgym's TRL
backend on the tiny model, with every DeprecationWarning, PendingDeprecationWarning and FutureWarning shown. Each
one is printed; one that tests/deprecations_allowed.txt does not list fails the test, saying where it came from. A
fresh process because a library warns at import and Python shows a warning once per place: in the suite's own
process what this test sees would depend on which tests ran first.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ALLOWLIST = Path(__file__).with_name("deprecations_allowed.txt")

PROBE = r"""
import json, sys, traceback, warnings

seen = {}

def record(message, category, filename, lineno, file=None, line=None):
    text = " ".join(str(message).split())
    path = filename.replace("\\", "/")
    package = (path.split("/site-packages/", 1)[1].split("/", 1)[0] if "/site-packages/" in path
               else "crossgym" if "/src/crossgym/" in path else path.rsplit("/", 1)[-1])
    # the first frame outside the warning's own package: the call that uses the deprecated API
    caller = next((f"{f.filename}:{f.lineno}" for f in reversed(traceback.extract_stack()[:-1])
                   if "/warnings.py" not in f.filename and f"/{package}/" not in f.filename.replace("\\", "/")), "")
    key = (category.__name__, package, text)
    if key not in seen:
        seen[key] = {"category": category.__name__, "package": package, "message": text,
                     "where": f"{path}:{lineno}", "caller": caller}

warnings.showwarning = record
for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
    warnings.simplefilter("always", category)

import transformers, trl  # noqa: E401,F401
from crossgym.adapters.trl.backend import TRLBackend
from crossgym.api import load_tasks
from crossgym.config import parse_run_config

model, out = sys.argv[1], sys.argv[2]
run = parse_run_config({"model": model, "tasks": {"source": "json_addition"}, "output_dir": out, "seed": 0,
                        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2,
                                 "max_completion_length": 8, "max_steps": 1}})
trainer = TRLBackend().build_trainer(run, tasks=list(load_tasks("json_addition", n=2, seed=0)),
                                     record_rollouts=False)
trainer.train()
print("CROSSGYM-DEPRECATIONS " + json.dumps(list(seen.values())))
"""


def _allowlist() -> list[tuple[str, str, str]]:
    """(category, package, message glob) per line of the allowlist; '#' starts a comment."""
    rows = []
    for line in ALLOWLIST.read_text(encoding="utf-8").splitlines():
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line:
            category, package, message = (part.strip() for part in line.split("|", 2))
            rows.append((category, package, message))
    return rows


def _allowed(w: dict[str, str], rows: list[tuple[str, str, str]]) -> bool:
    return any(w["category"] == c and w["package"] == p and fnmatch.fnmatchcase(w["message"], m) for c, p, m in rows)


def test_allowlist_lines_parse() -> None:
    rows = _allowlist()
    assert rows and all(c.endswith("Warning") and p and m for c, p, m in rows), rows


def test_no_new_deprecation_on_the_trl_training_path(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("trl")
    env = {**os.environ, "PYTHONWARNINGS": ""}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tiny_model_dir), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("CROSSGYM-DEPRECATIONS ")), None)
    assert proc.returncode == 0 and line is not None, proc.stderr[-3000:]
    seen = json.loads(line.split(" ", 1)[1])
    rows = _allowlist()
    for w in seen:
        print(f"{w['category']} | {w['package']} | {w['message']}\n    at {w['where']}, called from {w['caller']}")
    new = [w for w in seen if not _allowed(w, rows)]
    assert not new, (
        "new deprecation warnings on the TRL training path (fix the call, or add a line to "
        f"{ALLOWLIST.name} with the reason):\n" + "\n".join(
            f"  {w['category']} | {w['package']} | {w['message']}\n    at {w['where']}, called from {w['caller']}"
            for w in new))
    stale = [r for r in rows if not any(_allowed(w, [r]) for w in seen)]
    if stale:
        print("allowlisted but not seen this run (remove once gone for good):", stale)
