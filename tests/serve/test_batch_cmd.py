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
    # scored again and again: every verdict stored before stays, oldest first, with the provenance it came with
    twice, thrice = tmp_path / "twice.jsonl", tmp_path / "thrice.jsonl"
    assert _cli(str(out), "--out", str(twice)).returncode == 0
    assert _cli(str(twice), "--out", str(thrice)).returncode == 0
    third = [json.loads(x) for x in thrice.read_text().splitlines()]
    assert [x["verdict_history"][0]["verdict"]["reason"] for x in third] == ["stored"] * len(rollouts)
    assert [x["verdict_history"][0]["provenance"] for x in third] == [r.provenance for r in rollouts]
    assert [x["verdict_history"][1]["verdict"] for x in third] == [x["verdict"] for x in lines]
    assert [x["previous_verdict"] for x in third] == [x["verdict"] for x in lines]  # what twice.jsonl held
    assert all(len(x["verdict_history"]) == 2 for x in third)


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
                         ((str(src), "--workers", "0"), "--workers: must be at least 1"),
                         ((str(src), "--ray", "--shard", "0"), "--shard: must be at least 1")]:
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


def test_an_out_that_is_a_fifo_is_refused_and_left_alone(tmp_path: Path) -> None:
    """verify-batch removed an empty --out ("nothing to resume") and replaced one it wrote: given /dev/null or a
    FIFO (size 0), it deleted it (as root, /dev/null itself)."""
    import os
    import stat

    src = tmp_path / "rollouts.jsonl"
    _write_rollouts(src)
    os.mkfifo(tmp_path / "fifo")
    folder = tmp_path / "shards"
    folder.mkdir()
    os.mkfifo(folder / "rollouts.jsonl")  # the file the folder form would write for this input
    for out in (tmp_path / "fifo", folder):
        proc = _cli(str(src), "--out", str(out))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "is a FIFO (named pipe), not a regular file" in proc.stderr
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode) and stat.S_ISFIFO(os.stat(folder / "rollouts.jsonl").st_mode)


def test_chunked_output_equals_one_chunk(tmp_path: Path) -> None:
    from crossgym.serve.batch_cmd import verify_batch

    src = tmp_path / "rollouts.jsonl"
    rollouts = _write_rollouts(src)
    assert len(rollouts) > 3
    whole = verify_batch(src, out=tmp_path / "whole.jsonl", chunk=10_000)
    chunked = verify_batch(src, out=tmp_path / "chunked.jsonl", chunk=3)  # several chunks, the last one short
    assert (tmp_path / "chunked.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    for key in ("n", "mean_reward", "passed", "errors", "compared", "changed"):
        assert chunked[key] == whole[key], key
    assert whole["n"] == len(rollouts) and whole["resumed"] == 0


def test_resume_after_a_torn_out_scores_the_rest_once(tmp_path: Path) -> None:
    from crossgym.serve.batch_cmd import verify_batch

    src, out = tmp_path / "rollouts.jsonl", tmp_path / "rescored.jsonl"
    _write_rollouts(src)
    full_doc = verify_batch(src, out=tmp_path / "full.jsonl", chunk=4)
    full = (tmp_path / "full.jsonl").read_bytes()
    lines = full.splitlines(keepends=True)
    keep = len(lines) // 2
    out.write_bytes(b"".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])  # killed mid-write
    proc = _cli(str(src), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert f"resumed: {keep} records already in {out}" in proc.stderr
    assert out.read_bytes() == full  # nothing lost, nothing twice
    doc = json.loads(proc.stdout)
    assert doc["resumed"] == keep
    for key in ("n", "mean_reward", "passed", "errors", "compared", "changed"):
        assert doc[key] == full_doc[key], key
    again = verify_batch(src, out=out)  # complete: nothing left to score, the file is left as it is
    assert again["resumed"] == again["n"] == len(lines) and out.read_bytes() == full
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[1:]))  # another input: refused
    half = tmp_path / "half.jsonl"
    half.write_bytes(b"".join(lines[:keep]))
    for args, needle in [((str(other), "--out", str(half)), "--out: --out's record 1 is not this input's record at"),
                         ((str(other), "--out", str(out)), "--out: --out's record 1 is not this input's record at"),
                         ((str(src), "--out", str(src)), "is also an input file")]:
        proc = _cli(*args)
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert half.read_bytes() == b"".join(lines[:keep]) and out.read_bytes() == full


def test_directory_and_glob_inputs_read_in_sorted_order(tmp_path: Path) -> None:
    from crossgym.serve.batch_cmd import verify_batch

    src = tmp_path / "one.jsonl"
    _write_rollouts(src)
    lines = src.read_bytes().splitlines(keepends=True)
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-1.jsonl").write_bytes(b"".join(lines[len(lines) // 2:]))
    (shards / "part-0.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))
    (shards / "notes.txt").write_text("not a shard")
    one = verify_batch(src, out=tmp_path / "one.out")
    by_dir = verify_batch(shards, out=tmp_path / "dir.out", chunk=5)
    by_glob = verify_batch(shards / "part-*.jsonl", out=tmp_path / "glob.out")
    assert by_dir["files"] == by_glob["files"] == 2 and by_dir["n"] == one["n"]
    assert (tmp_path / "dir.out").read_bytes() == (tmp_path / "one.out").read_bytes()
    assert (tmp_path / "glob.out").read_bytes() == (tmp_path / "one.out").read_bytes()
    bad = tmp_path / "shards" / "part-2.jsonl"
    bad.write_text('{"oops": 1}\n')
    proc = _cli(str(shards))
    assert proc.returncode == 2 and f"{bad}:1: a record needs" in proc.stderr


def test_out_records_and_the_summary_carry_the_fault(tmp_path: Path) -> None:
    from crossgym.protocol import Completion, Task, VerifierSpec
    from crossgym.serve.batch_cmd import verify_batch

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    task = Task(id="a", prompt="Capital of France?", answer="Paris", verifier=VerifierSpec("exact_match"))
    broken = Task(id="b", prompt="q", answer=7, verifier=VerifierSpec("tool_call"))  # the verifier cannot score it
    pairs = [(task, "Paris"), (task, "Rome"), (task, ""), (broken, "x")]
    src.write_text("".join(json.dumps({"task": t.to_dict(), "completion": Completion.from_text(c).to_dict()}) + "\n"
                           for t, c in pairs))
    doc = verify_batch(src, out=out)
    assert doc["faults"] == {"infra": 1, "model": 2, "none": 1}
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["verdict"]["fault"] for r in written] == ["none", "model", "model", "infra"]
    proc = _cli(str(src))
    assert proc.returncode == 0 and "1 infrastructure failures" in proc.stdout, proc.stderr


def test_reverify_and_compare_read_the_out_of_text_completions(tmp_path: Path) -> None:
    """verify-batch takes a completion given as text and writes its record back with the text as it came; reverify
    and compare skipped every such record ("not a rollout: 'str' object has no attribute 'get'"), so the output of
    `verify-batch pairs.jsonl --out` could be neither re-scored nor compared."""
    from crossgym.eval.compare import compare_runs, load_run
    from crossgym.eval.reverify import reverify
    from crossgym.serve.batch_cmd import verify_batch

    src, out = tmp_path / "pairs.jsonl", tmp_path / "scored.jsonl"
    tasks = [{"id": f"t{i}", "prompt": "p", "answer": "x", "verifier": "exact_match"} for i in range(2)]
    src.write_text("".join(json.dumps({"task": t, "completion": c}) + "\n" for t in tasks for c in ("x", "y")))
    assert verify_batch(src, out=out)["n"] == 4
    assert all(isinstance(json.loads(line)["completion"], str) for line in out.read_text().splitlines())
    drift = reverify(out)
    assert (drift["n"], drift["checked"], drift["skipped"], drift["changed"]) == (4, 4, 0, 0) and drift["ok"]
    run = load_run(out)
    assert run.skipped == 0 and sorted(run.tasks) == ["t0", "t1"] and [t.passes for t in run.tasks.values()] == [1, 1]
    assert compare_runs(run, load_run(out))["shared_tasks"] == 2
