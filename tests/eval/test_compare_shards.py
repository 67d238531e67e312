"""`crossgym compare` of rollout records (issue 27): a folder of shards, a glob and Parquet are one side, as for
verify-batch and reverify; training rollouts (no key) compare per task and per verifier; a repeated key counts once,
by its first record, as eval reads its own store; memory does not grow with the size of the records."""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crossgym.cli import main
from crossgym.eval.compare import MAX_FLIPS, compare_runs, load_run
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec
from crossgym.scoring import Provenance, append_records, rollout_record


def _task(tid: str, verifier: str = "test_first_letter") -> Task:
    return Task(id=tid, prompt=f"question {tid}", answer=None, verifier=VerifierSpec(verifier),
                metadata={"source": tid.split("-")[0]})


def _key(task: Task, sample: int, config_hash: str = "h1") -> str:
    """Eval's key of one rollout: task#sample@settings.digest of the task's content."""
    from crossgym.rollout.config import keyed_hash, rollout_key

    return rollout_key(task.id, sample, keyed_hash(config_hash, task))


def _records(results: dict[str, list[bool]], *, source: str = "eval", config_hash: str = "h1", model: str = "m",
             text: str = "", verifiers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """task id -> one boolean per sample; eval records carry eval's key (task#sample@settings), others none."""
    records = []
    for tid, samples in results.items():
        task = _task(tid, (verifiers or {}).get(tid.split("-")[0], "test_first_letter"))
        for j, ok in enumerate(samples):
            if source == "eval":
                prov = Provenance.new(task.verifier, source="eval", key=_key(task, j, config_hash), model=model,
                                      config_hash=config_hash, sample=j)
            else:
                prov = Provenance.new(task.verifier, source=source, backend="trl", model=model, step=j)
            verdict = Verdict.ok(1.0, reason="ok") if ok else Verdict.ok(0.0, reason=f"wrong {j}")
            records.append(rollout_record(task, Completion.from_text(f"{model} says {tid} {j}{text}"), verdict,
                                          provenance=prov))
    return records


def _parquet(records: list[dict[str, Any]], path: Path) -> Path:
    """The records as a Parquet file (task, verdict, provenance as JSON text; the completion a struct)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{k: (json.dumps(v) if k in ("task", "verdict", "provenance") else v) for k, v in r.items()
             if k in ("task", "completion", "verdict", "provenance")} for r in records]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


A = {"x-1": [True, True], "x-2": [False, False], "x-3": [True, False], "y-1": [False, False], "y-2": [True, True]}
B = {"x-1": [False, False], "x-2": [True, True], "x-3": [True, True], "y-1": [True, False], "y-2": [True, True]}


def _comparable(doc: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in doc.items() if k not in ("a", "b")}, sort_keys=True, default=str)


def test_a_folder_of_shards_a_glob_and_parquet_are_one_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_records(a, _records(A, model="before"))
    records = _records(B, model="after")
    append_records(b, records)
    shards = tmp_path / "shards"
    shards.mkdir()
    append_records(shards / "part-0.jsonl", records[:4])
    _parquet(records[4:], shards / "part-1.parquet")
    (shards / "notes.txt").write_text("not a shard\n")  # neither .jsonl nor .parquet: not read
    want = compare_runs(load_run(a), load_run(b))
    assert want["flips"] == {"pass_to_fail": 1, "fail_to_pass": 2}
    for side in (shards, shards / "part-*"):
        doc = compare_runs(load_run(a), load_run(side))
        assert doc["b"]["files"] == 2 and doc["b"]["n_rollouts"] == 10 and doc["b"]["sources"] == {"eval": 10}
        assert _comparable(doc) == _comparable(want)  # the same figures and flipped completions as the one file
    assert want["pass_to_fail"][0]["b"]["completion"] == "after says x-1 0"  # read again from the Parquet shard
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(shards / "part-*")])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "(after, 5 tasks, 2 files): 5 shared tasks" in out and "fail->pass 2, pass->fail 1" in out


def test_training_rollouts_compare_per_task_and_per_verifier(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Two training runs' records (no key, source train): every record is a sample, even two equal ones (a GRPO
    group may hold the same completion twice); the groups per verifier are in the document and the summary."""
    verifiers = {"y": "exact_match"}
    a, b = tmp_path / "run-a" / "rollouts.jsonl", tmp_path / "run-b" / "rollouts.jsonl"
    append_records(a, _records(A, source="train", verifiers=verifiers))
    append_records(b, _records(B, source="train", verifiers=verifiers))
    append_records(b, _records({"y-1": [True]}, source="train", verifiers=verifiers))  # y-1 now 2 of 3
    doc = compare_runs(load_run(a.parent), load_run(b))
    assert doc["a"]["sources"] == {"train": 10} and doc["b"]["n_rollouts"] == 11 and doc["b"]["duplicates"] == 0
    assert set(doc["by_verifier"]) == {"exact_match", "test_first_letter"}
    y = doc["by_verifier"]["exact_match"]
    assert y["n_tasks"] == 2 and y["pass_rate"]["delta"] == pytest.approx((2 / 3 + 0) / 2)
    assert doc["by_verifier"]["test_first_letter"]["pass_rate"]["delta"] == pytest.approx((-1 + 1 + 0.5) / 3)
    assert {t["task"]: t["verifier"] for t in doc["per_task"]}["y-1"] == "exact_match"
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a.parent), str(b.parent)])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "(m, 5 tasks, train rollouts)" in out and "verifier exact_match (2 tasks): pass rate" in out


def test_a_repeated_key_counts_once_by_its_first_record_as_the_eval_store_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """A shard appended twice or a copied record: the later records of a key are left out, counted, and the first
    named by file:line; the pass rates are those eval itself reads back from the same store (StoredRollouts)."""
    from crossgym.eval.run import StoredRollouts

    run = tmp_path / "a.jsonl"
    append_records(run, _records({"x-1": [True, True], "x-2": [False]}))
    append_records(run, _records({"x-1": [False, False]}))  # the same keys again, other verdicts
    with caplog.at_level(logging.WARNING):
        loaded = load_run(run)
    assert loaded.duplicates == 2 and loaded.first_duplicate == f"{run}:4 (key {_key(_task('x-1'), 0)!r})"
    assert f"2 rollout records repeat a key read before, the first at {run}:4" in caplog.text
    res = loaded.tasks["x-1"]
    assert (res.n, res.passes) == (2, 2)
    stored = StoredRollouts(run, [_task("x-1"), _task("x-2")], 2, "h1")
    assert [r.verdict.passed for r in stored] == [True, True, False]  # eval's own rule: the first of each key
    other = tmp_path / "b.jsonl"
    append_records(other, _records({"x-1": [False, False], "x-2": [True]}))
    with pytest.raises(SystemExit) as e:
        main(["compare", str(run), str(other), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert e.value.code == 0 and doc["a"]["duplicates"] == 2 and doc["b"]["duplicates"] == 0
    assert doc["overall"]["pass_rate"]["a"] == pytest.approx(0.5)  # x-1 1.0 (first records), x-2 0.0
    with pytest.raises(SystemExit) as e:
        main(["compare", str(run), str(other)])
    out = capsys.readouterr().out
    assert e.value.code == 0 and f"A: 2 records repeat a key read before (the first at {run}:4" in out


class _Counting:
    """The real record reader, counting the Rollouts it has handed out that are still alive (the way
    tests/eval/test_streaming.py counts StoredRollouts')."""

    def __init__(self) -> None:
        from crossgym.scoring import records

        self.real = records.iter_numbered_rollouts
        self.alive = self.most_alive = self.read = 0

    def _gone(self) -> None:
        self.alive -= 1

    def __call__(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Rollout]]:
        for where, r in self.real(*args, **kwargs):
            weakref.finalize(r, self._gone)
            self.alive += 1
            self.read += 1
            self.most_alive = max(self.most_alive, self.alive)
            yield where, r
            del r


def test_20k_rollouts_are_streamed_and_no_rollout_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20k rollouts of 2000 tasks with 2,000-character completions (a 50 MB file): reading holds one rollout at a
    time and keeps none (before: up to three per task, ~4000 here), whatever the size of the records; the flipped
    completions shown are read again by position, in one pass that reads nothing more."""
    from crossgym.eval import compare

    results = {f"x-{t}": [(j < 8) if t % 2 == 0 else (j < 2) for j in range(10)] for t in range(2000)}
    big = tmp_path / "big.jsonl"
    with big.open("w") as f:  # (json.dumps: a faster writer than the records' own, for a test input)
        f.writelines(json.dumps(r) + "\n" for r in _records(results, text=" " + "z" * 2000))
    assert big.stat().st_size > 40_000_000
    other = tmp_path / "other.jsonl"
    append_records(other, _records({tid: [t % 2 == 1] for t, tid in enumerate(results)}))
    counting = _Counting()
    monkeypatch.setattr(compare, "iter_numbered_rollouts", counting)
    run = load_run(big)
    assert counting.read == 20_000 and counting.most_alive <= 2, counting.most_alive
    assert counting.alive == 0  # the summaries keep numbers, not rollouts
    assert sum(t.n for t in run.tasks.values()) == 20_000 and len(run.tasks) == 2000
    doc = compare_runs(run, load_run(other))
    assert doc["flips"] == {"pass_to_fail": 1000, "fail_to_pass": 1000}
    shown = doc["pass_to_fail"] + doc["fail_to_pass"]
    assert len(shown) == 2 * MAX_FLIPS  # and only those are read again: one from each side per flip shown
    assert counting.most_alive <= 2 * len(shown) + 2, counting.most_alive
    assert all(f["a"]["completion"].startswith(f"m says {f['task']} ") for f in shown)
    assert all(f["a"]["completion"].endswith(" more chars]") for f in shown)  # the 2,000-character ones, cut
    assert all(f["a"]["passed"] for f in doc["pass_to_fail"]) and not any(f["a"]["passed"]
                                                                           for f in doc["fail_to_pass"])
    # the second pass stops after the last task listed (the first MAX_FLIPS of each direction, in task order)
    assert counting.read < 20_000 + 2000 + 20_000 * 0.2


def _merged(passes: dict[str, bool], n: int) -> list[dict[str, Any]]:
    """Training records of tasks of two datasets merged with per-split index ids: every one is task "0", told
    apart only by its prompt (answer -> whether its samples pass)."""
    records = []
    for prompt, ok in passes.items():
        task = Task(id="0", prompt=prompt, answer=None, verifier=VerifierSpec("test_first_letter"))
        prov = Provenance.new(task.verifier, source="train", backend="trl", model="m")
        records += [rollout_record(task, Completion.from_text("x"), Verdict.ok(float(ok)), provenance=prov)] * n
    return records


def test_tasks_sharing_an_id_are_told_apart_by_their_content(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """Records are grouped by task id and content: two tasks of one id were one task of pass rate 0.5 on both
    sides (delta 0, no flip), though each of them flipped; now each is a task of its own, named ID#DIGEST,
    paired across the sides by id and content, and the id is named in a warning and in the summary."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    append_records(a, _merged({"split one": True, "split two": False}, 1500))
    append_records(b, _merged({"split two": True, "split one": False}, 1500))
    append_records(c, _merged({"split one": False}, 3))
    with caplog.at_level(logging.WARNING):
        run_a = load_run(a)
    assert "1 task ids each name more than one task" in caplog.text and f"{a}:1501 (id '0')" in caplog.text
    assert len(run_a.tasks) == 2 and all(name.startswith("0#") for name in run_a.tasks)
    assert [t.n for t in run_a.tasks.values()] == [1500, 1500] and run_a.shared_ids == 1
    doc = compare_runs(run_a, load_run(b))
    assert doc["shared_tasks"] == 2 and doc["differing_tasks"] == [] and doc["only_in_a"] == []
    assert doc["flips"] == {"pass_to_fail": 1, "fail_to_pass": 1}
    assert doc["overall"]["improved"] == doc["overall"]["worsened"] == 1
    # a side where id "0" names one task: paired with A's task of the same content, the other is "differing"
    doc = compare_runs(run_a, load_run(c))
    assert doc["shared_tasks"] == 1 and doc["differing_tasks"] == ["0"] and doc["flips"]["pass_to_fail"] == 1
    assert [t["task"] for t in doc["per_task"]] == [name for name, t in run_a.tasks.items() if t.passes]
