"""`crossgym verify-batch` (local mode) on rollout files: summary, re-scored output, changed verdicts, bad lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from crossgym.api import load_verifier
from crossgym.protocol import Rollout, Verdict
from crossgym.verifiers.batch import verify_many


def _write_rollouts(path: Path) -> list[Rollout]:
    rollouts = []
    for name in ("exact_match", "numeric", "json_answer"):
        for ex in load_verifier(name).examples():
            # a stored verdict that says "passed" for everything: the fails and malformed ones changed since
            stored = Verdict(reward=1.0, passed=True, reason="stored")
            rollouts.append(Rollout(task=ex.task, completion=ex.completion, verdict=stored,
                                    provenance={"key": f"{name}-{len(rollouts)}", "verifier": {"name": name}}))
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rollouts))
    return rollouts


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", *args], capture_output=True,
                          text=True, timeout=300)


def test_verify_batch_cli_scores_and_writes_rollouts(tmp_path: Path) -> None:
    src, out = tmp_path / "rollouts.jsonl", tmp_path / "rescored.jsonl"
    rollouts = _write_rollouts(src)
    proc = _cli(str(src), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    fresh = verify_many([(r.task, r.completion) for r in rollouts])
    assert doc["n"] == len(rollouts) and doc["mode"] == "local"
    assert doc["passed"] == sum(v.passed for v in fresh)
    unchanged = sum(v.passed and v.reward == 1.0 and v.error is None for v in fresh)
    assert doc["compared"] == len(rollouts) and doc["changed"] == len(rollouts) - unchanged > 0
    assert doc["errors"] == {"malformed": sum(v.error_kind == "malformed" for v in fresh)}
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    again = [Rollout.from_dict(x) for x in lines]
    assert [r.verdict for r in again] == fresh
    assert all(x["previous_verdict"]["reason"] == "stored" for x in lines)
    assert [x["previous_provenance"] for x in lines] == [r.provenance for r in rollouts]
    # today's verdicts under today's verifier: reverify of the output finds no drift
    assert {r.provenance["schema"] for r in again} == {2}
    assert [r.provenance["verifier"]["name"] for r in again] == [r.task.verifier.name for r in rollouts]
    from crossgym.eval.reverify import reverify

    drift = reverify(out)
    assert drift["ok"] and drift["checked"] == len(rollouts) and drift["changed"] == 0


def test_verify_batch_accepts_plain_task_completion_lines(tmp_path: Path) -> None:
    src = tmp_path / "pairs.jsonl"
    task = {"id": "t", "prompt": "p", "answer": "x", "verifier": "exact_match"}
    src.write_text(json.dumps({"task": task, "completion": "x"}) + "\n\n" +
                   json.dumps({"task": task, "completion": {"messages": [{"role": "assistant", "content": "y"}]}}) +
                   "\n")
    proc = _cli(str(src))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 records scored (local)") and "1 passed" in proc.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"task": {"id": "t", "prompt": "p", "verifier": "exact_match"}, "completion": "x"}\n{"oops": 1}\n')
    for args, needle in [((str(src),), f"{src}:2: a record needs 'task' and 'completion'"),
                         ((str(tmp_path / "missing.jsonl"),), "file not found"),
                         ((str(src), "--workers", "0"), "--workers: must be at least 1")]:
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
