"""Parquet inputs to verify-batch and reverify: the same records as the JSONL they were written from, struct or
JSON-string columns, shards mixed with JSONL, resume, and one clear line for what cannot be read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from crossgym.api import load_verifier  # noqa: E402
from crossgym.protocol import Rollout, Task, Verdict  # noqa: E402
from crossgym.serve.batch_cmd import verify_batch  # noqa: E402


def records(structs: bool = False) -> list[dict]:
    """Rollout records. Three verifiers' examples (answers of several types: only JSON-string columns hold them);
    with ``structs``, exact_match tasks whose params differ per row (a struct column fills the missing ones with
    null), which Parquet can store as structs."""
    out = []
    stored = Verdict(reward=1.0, passed=True, reason="stored")
    if structs:
        from crossgym.protocol import Completion, VerifierSpec

        for i, (gold, said) in enumerate([("Paris", "paris"), ("Paris", "Paris"), ("Rome", "Lyon"), ("Oslo", "OSLO"),
                                          ("Bern", "<answer>Bern</answer>"), ("Rome", ""), ("Vienna", "vienna")]):
            params = {"case_sensitive": True} if i % 2 else {}
            task = Task(id=f"t{i}", prompt="capital?", answer=gold, verifier=VerifierSpec("exact_match", params))
            prov = {"key": f"k{i}", "verifier": {"name": "exact_match"}} | ({"run": "a"} if i % 3 else {})
            out.append(Rollout(task=task, completion=Completion.from_text(said), verdict=stored,
                               provenance=prov).to_dict())
        return out
    for name in ("exact_match", "numeric", "json_answer"):
        for ex in load_verifier(name).examples():
            out.append(Rollout(task=ex.task, completion=ex.completion, verdict=stored,
                               provenance={"key": f"{name}-{len(out)}", "verifier": {"name": name}}).to_dict())
    return out


def write_jsonl(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def no_empty(value):
    """What a struct writer stores: Parquet has no struct without fields, so empty objects are left out."""
    if isinstance(value, dict):
        return {k: no_empty(v) for k, v in value.items() if v != {}}
    if isinstance(value, list):
        return [no_empty(v) for v in value]
    return value


def write_parquet(path: Path, recs: list[dict], *, as_json: bool, row_group_size: int = 4) -> Path:
    if as_json:
        recs = [{**r, "task": json.dumps(r["task"]), "verdict": json.dumps(r["verdict"]),
                 "provenance": json.dumps(r["provenance"])} for r in recs]
    recs = [no_empty(r) for r in recs]
    pq.write_table(pa.Table.from_pylist(recs), path, row_group_size=row_group_size)
    return path


def verdicts(path: Path) -> list[dict]:
    return [json.loads(x)["verdict"] for x in path.read_text().splitlines()]


@pytest.mark.parametrize("as_json", [False, True])
def test_parquet_scores_like_the_jsonl_it_came_from(tmp_path: Path, as_json: bool) -> None:
    recs = records(structs=not as_json)
    src = write_jsonl(tmp_path / "r.jsonl", recs)
    par = write_parquet(tmp_path / "r.parquet", recs, as_json=as_json)
    a = verify_batch(src, out=tmp_path / "a.jsonl")
    b = verify_batch(par, out=tmp_path / "b.jsonl", chunk=3)  # chunks across row groups of 4
    for key in ("n", "mean_reward", "passed", "errors", "compared", "changed"):
        assert a[key] == b[key], key
    assert b["n"] == len(recs) > 6 and b["changed"] > 0
    assert verdicts(tmp_path / "a.jsonl") == verdicts(tmp_path / "b.jsonl")
    got = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    # struct nulls read as absent (no case_sensitive=None in the rows that lack it): the same tasks
    assert [Task.from_dict(g["task"]) for g in got] == [Task.from_dict(r["task"]) for r in recs]
    assert [g["previous_verdict"]["reason"] for g in got] == ["stored"] * len(recs)


def test_shards_mix_jsonl_and_parquet_and_resume(tmp_path: Path) -> None:
    recs = records()
    half = len(recs) // 2
    shards = tmp_path / "shards"
    shards.mkdir()
    write_parquet(shards / "part-0.parquet", recs[:half], as_json=True)
    write_jsonl(shards / "part-1.jsonl", recs[half:])
    one = verify_batch(write_jsonl(tmp_path / "one.jsonl", recs), out=tmp_path / "one.out.jsonl")
    full = verify_batch(shards, out=tmp_path / "full.jsonl", chunk=4)
    assert full["files"] == 2 and full["n"] == one["n"]
    assert verdicts(tmp_path / "full.jsonl") == verdicts(tmp_path / "one.out.jsonl")
    lines = (tmp_path / "full.jsonl").read_bytes().splitlines(keepends=True)
    out = tmp_path / "resumed.jsonl"
    keep = half - 2  # killed inside the Parquet shard
    out.write_bytes(b"".join(lines[:keep]) + lines[keep][:10])
    again = verify_batch(shards, out=out, chunk=4)
    assert again["resumed"] == keep and again["n"] == full["n"]
    assert out.read_bytes() == (tmp_path / "full.jsonl").read_bytes()  # nothing lost, nothing twice


def test_reverify_reads_parquet(tmp_path: Path) -> None:
    from crossgym.eval.reverify import reverify

    verify_batch(write_jsonl(tmp_path / "r.jsonl", records()), out=tmp_path / "scored.jsonl")
    scored = [json.loads(x) for x in (tmp_path / "scored.jsonl").read_text().splitlines()]
    par = write_parquet(tmp_path / "scored.parquet", scored, as_json=True)
    a, b = reverify(tmp_path / "scored.jsonl"), reverify(par)
    assert b["ok"] and b["checked"] == a["checked"] == len(scored) and b["changed"] == a["changed"] == 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", *args], capture_output=True,
                          text=True, timeout=300)


def test_unreadable_parquet_is_one_line_and_exit_2(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 this is not parquet")
    bad_json = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([{"task": "{not json", "completion": "x"}]), bad_json)
    ok = write_parquet(tmp_path / "ok.parquet", records()[:2], as_json=True)
    for args, needle in [((str(garbage),), "not a readable Parquet file"),
                         ((str(bad_json),), f"{bad_json}:row 1: column 'task' is not JSON"),
                         ((str(ok), "--out", str(tmp_path / "o.parquet")), "--out is written as JSONL")]:
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


def test_out_folder_shards_the_output_like_the_input_and_resumes_each(tmp_path: Path) -> None:
    recs = records()
    third = len(recs) // 3
    shards = tmp_path / "shards"
    shards.mkdir()
    write_jsonl(shards / "a.jsonl", recs[:third])
    write_parquet(shards / "b.parquet", recs[third: 2 * third], as_json=True)
    write_jsonl(shards / "c.jsonl", recs[2 * third:])
    one = verify_batch(write_jsonl(tmp_path / "one.jsonl", recs), out=tmp_path / "one.out.jsonl")
    outdir = tmp_path / "rescored"
    outdir.mkdir()
    doc = verify_batch(shards, out=outdir, chunk=3)
    assert sorted(p.name for p in outdir.iterdir()) == ["a.jsonl", "b.jsonl", "c.jsonl"]
    for key in ("n", "mean_reward", "passed", "errors", "compared", "changed"):
        assert doc[key] == one[key], key
    joined = b"".join((outdir / n).read_bytes() for n in ("a.jsonl", "b.jsonl", "c.jsonl"))
    split = [json.loads(x) for x in joined.splitlines()]  # the same records, split where the input was
    assert [x["verdict"] for x in split] == verdicts(tmp_path / "one.out.jsonl")
    assert [len((outdir / n).read_bytes().splitlines()) for n in ("a.jsonl", "b.jsonl", "c.jsonl")] == \
        [third, third, len(recs) - 2 * third]
    # killed while b was half written and c not begun: a is skipped whole, b resumed, c scored
    b_lines = (outdir / "b.jsonl").read_bytes().splitlines(keepends=True)
    (outdir / "b.jsonl").write_bytes(b"".join(b_lines[:2]) + b_lines[2][:7])
    (outdir / "c.jsonl").unlink()
    again = verify_batch(shards, out=outdir, chunk=3)
    assert again["resumed"] == third + 2 and again["n"] == one["n"]
    assert b"".join((outdir / n).read_bytes() for n in ("a.jsonl", "b.jsonl", "c.jsonl")) == joined
    proc = _cli(str(shards), "--out", str(outdir), "--json")  # the CLI takes the folder too; all done already
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["resumed"] == len(recs) and "nothing left to score" in proc.stderr
    write_jsonl(shards / "a.parquet", recs[:1])  # a.jsonl and a.parquet would share a.jsonl: refused
    proc = _cli(str(shards), "--out", str(outdir))
    assert proc.returncode == 2 and "would both be written to" in proc.stderr, proc.stderr
