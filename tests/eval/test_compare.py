"""`crossgym compare`: two constructed eval runs with known flips; paired deltas and intervals; tasks only in one
run; bad inputs are one line and exit 2."""

from __future__ import annotations

import json

import pytest

from crossgym.cli import main
from crossgym.eval.compare import TaskResult, compare_runs, load_run
from crossgym.eval.stats import bootstrap, mean_stat
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec
from crossgym.scoring import Provenance, append_records, rollout_record


def _task(tid: str, prompt: str = "p") -> Task:
    return Task(id=tid, prompt=prompt, answer=None, verifier=VerifierSpec("test_first_letter"),
                metadata={"source": tid.split("-")[0]})


def _write_run(directory, results, *, model="m", config_hash="h1", source="eval", prompts=None):  # type: ignore[no-untyped-def]
    """results: task id -> list of booleans (one per sample); a run directory with rollouts.jsonl and metrics.json."""
    directory.mkdir(parents=True, exist_ok=True)
    records = []
    for tid, samples in results.items():
        task = _task(tid, (prompts or {}).get(tid, "p"))
        for j, ok in enumerate(samples):
            prov = Provenance.new(task.verifier, source=source, key=f"{tid}#{j}@{config_hash}", model=model,
                                  config_hash=config_hash, sample=j)
            verdict = Verdict.ok(1.0, reason="ok") if ok else Verdict.ok(0.0, reason=f"wrong letter {j}")
            records.append(rollout_record(task, Completion.from_text(f"{model} says {tid} {j}"), verdict,
                                          provenance=prov))
    append_records(directory / "rollouts.jsonl", records)
    (directory / "metrics.json").write_text(json.dumps({"run": {"config_hash": config_hash}}))
    return directory


A = {"x-1": [True, True], "x-2": [False, False], "x-3": [True, False], "y-1": [False, False], "y-2": [True, True],
     "only-a": [True, True]}
B = {"x-1": [False, False], "x-2": [True, True], "x-3": [True, True], "y-1": [True, False], "y-2": [True, True],
     "only-b": [False, False]}


def test_paired_deltas_flips_and_one_sided_tasks(tmp_path):
    doc = compare_runs(load_run(_write_run(tmp_path / "a", A, model="before")),
                       load_run(_write_run(tmp_path / "b", B, model="after")))
    assert doc["shared_tasks"] == 5 and doc["only_in_a"] == ["only-a"] and doc["only_in_b"] == ["only-b"]
    assert doc["a"]["model"] == "before" and doc["b"]["model"] == "after"
    # per-task pass rates A -> B: x-1 1 -> 0, x-2 0 -> 1, x-3 .5 -> 1, y-1 0 -> .5, y-2 1 -> 1
    diffs = [-1.0, 1.0, 0.5, 0.5, 0.0]
    o = doc["overall"]["pass_rate"]
    assert o["a"] == pytest.approx(2.5 / 5) and o["b"] == pytest.approx(3.5 / 5)
    assert o["delta"] == pytest.approx(sum(diffs) / 5)
    assert (o["low"], o["high"]) == bootstrap(5, {"d": mean_stat(diffs)})["d"]  # the paired bootstrap of B - A
    assert o["low"] < 0 < o["high"] and o["significant"] is False
    assert doc["overall"]["mean_reward"]["delta"] == pytest.approx(o["delta"])  # reward 1/0 = pass
    assert (doc["overall"]["improved"], doc["overall"]["worsened"]) == (3, 1)
    assert doc["flips"] == {"pass_to_fail": 1, "fail_to_pass": 2}  # x-3 (.5 -> 1) and y-2 stay solved
    p2f = doc["pass_to_fail"][0]
    assert p2f["task"] == "x-1" and p2f["a"]["passed"] and not p2f["b"]["passed"]
    assert p2f["a"]["completion"] == "before says x-1 0" and p2f["b"]["completion"] == "after says x-1 0"
    assert p2f["b"]["reason"] == "wrong letter 0"
    assert {f["task"] for f in doc["fail_to_pass"]} == {"x-2", "y-1"}  # y-1: 0 -> .5 of its samples
    assert set(doc["by_source"]) == {"x", "y"}
    assert doc["by_source"]["x"]["pass_rate"]["delta"] == pytest.approx((-1 + 1 + 0.5) / 3)
    assert doc["by_source"]["y"]["n_tasks"] == 2


def test_compare_command_json_html_and_summary(tmp_path, capsys):
    a, b = _write_run(tmp_path / "a", A), _write_run(tmp_path / "b", B)
    page = tmp_path / "cmp.html"
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(b / "rollouts.jsonl"), "--json", "--html", str(page)])
    assert e.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["flips"] == {"pass_to_fail": 1, "fail_to_pass": 2}
    text = page.read_text()
    assert "pass &rarr; fail: 1 tasks" in text and "m says x-1 0" in text and "paired percentile bootstrap" in text
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(b)])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "5 shared tasks" in out and "fail->pass 2, pass->fail 1" in out and "only in A: 1 tasks: only-a" in out
    assert "pass->fail x-1 [x]" in out and "within noise" in out


def test_only_the_settings_metrics_json_names_are_compared(tmp_path):
    run = _write_run(tmp_path / "a", {"x-1": [True]}, config_hash="old")
    _write_run(run, {"x-1": [False, False], "x-2": [False]}, config_hash="new")  # metrics.json now names "new"
    loaded = load_run(run)
    assert loaded.config_hash == "new" and sorted(loaded.tasks) == ["x-1", "x-2"] and loaded.tasks["x-1"].n == 2


def test_bad_inputs_are_one_line_and_exit_2(tmp_path, capsys):
    a = _write_run(tmp_path / "a", A)
    empty = tmp_path / "empty"
    empty.mkdir()
    other = _write_run(tmp_path / "other", {"z-1": [True]})
    renamed = _write_run(tmp_path / "renamed", {"x-1": [True]}, prompts={"x-1": "another prompt"})
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"not": "a rollout"}\n')
    tasks = tmp_path / "tasks.jsonl"  # a tasks file passed by mistake: it says so (as reverify does)
    tasks.write_text(_task("x-1").to_json() + "\n")
    fake = tmp_path / "fake.parquet"
    fake.write_text("not parquet\n")
    cases = [([str(a), str(tmp_path / "missing")], f"{tmp_path / 'missing'}: no such eval run or rollout file"),
             ([str(empty), str(a)], "not an eval run or a folder of rollout shards: no rollouts.jsonl, *.jsonl"),
             ([str(a), str(junk)], f"{junk}: no rollout records in it: its one record is no rollout ("
                                   f"{junk}:1: a record that is not a rollout (no 'task', 'completion', 'verdict' "
                                   "fields))"),
             ([str(a), str(tasks)], f"{tasks}: no rollout records in it: its one record is no rollout (it holds "
                                    "tasks)"),
             ([str(a), str(tmp_path / "nothing-*.jsonl")], "no file matches this pattern"),
             ([str(a), str(fake)], f"{fake}: not a readable Parquet file"),
             ([str(a), str(other)], "the two runs share no tasks"),
             ([str(a), str(renamed)], "share no tasks (1 ids match but their prompts, answers or verifiers differ)")]
    for argv, needle in cases:
        with pytest.raises(SystemExit) as e:
            main(["compare", *argv])
        out = capsys.readouterr()
        assert e.value.code == 2, argv
        assert needle in out.err and out.err.count("\n") == 1 and out.out == "", (argv, out.err)
        assert "(fix: " in out.err and "Traceback" not in out.err, out.err


def test_compare_two_real_evals_of_the_tiny_model(tiny_model_dir, test_plugin, tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in test_plugin.make_tasks(3)))
    runs = []
    for name, seed in (("before", "1"), ("after", "2")):
        with pytest.raises(SystemExit) as e:
            main(["eval", "--model", str(tiny_model_dir), "--tasks", str(tasks), "--n", "2", "--max-tokens", "4",
                  "--seed", seed, "--output-dir", str(tmp_path / name), "--json"])
        assert e.value.code == 0
        runs.append(json.loads(capsys.readouterr().out))
    with pytest.raises(SystemExit) as e:
        main(["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"])
    assert e.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shared_tasks"] == 3 and doc["only_in_a"] == doc["only_in_b"] == []
    assert doc["a"]["config_hash"] == runs[0]["run"]["config_hash"] != doc["b"]["config_hash"]
    o = doc["overall"]["pass_rate"]
    assert o["a"] == pytest.approx(runs[0]["pass@1"]) and o["b"] == pytest.approx(runs[1]["pass@1"])
    assert o["low"] <= o["delta"] <= o["high"]
    flipped = {f["task"] for f in doc["pass_to_fail"] + doc["fail_to_pass"]}
    assert flipped == {t["task"] for t in doc["per_task"]
                       if (t["pass_rate_a"] >= 0.5) != (t["pass_rate_b"] >= 0.5)}


def test_a_run_is_streamed_and_summarised_per_task_not_held_per_sample(tmp_path):
    """Many samples of few tasks: each task keeps counts and at most three rollouts (first, first pass, first
    fail), and a flip shows the first passing and the first failing completion; the older settings' records in the
    same file are skipped on the second pass."""
    samples = {f"x-{t}": [(j + t) % 3 == 0 for j in range(300)] for t in range(4)}
    a = tmp_path / "a"
    _write_run(a, {tid: [False] * 5 for tid in samples}, config_hash="old")  # an earlier eval in the same dir
    _write_run(a, samples, config_hash="h1")
    run = load_run(a)
    assert run.config_hash == "h1" and set(run.tasks) == set(samples)
    for tid, oks in samples.items():
        res = run.tasks[tid]
        assert (res.n, res.passes) == (300, sum(oks)) and res.mean_reward == pytest.approx(sum(oks) / 300)
        assert not any(isinstance(getattr(res, k), (list, dict, Rollout)) for k in TaskResult.__slots__)
        got = run.rollouts_at({res.first_pass_at, res.first_fail_at})  # read again by position
        assert got[res.first_pass_at].verdict.passed and got[res.first_pass_at].task.id == tid
        assert got[res.first_fail_at].completion.text.endswith(f" {oks.index(False)}")
    doc = compare_runs(run, load_run(_write_run(tmp_path / "b", {tid: [True] for tid in samples})))
    assert doc["a"]["n_rollouts"] == 1200 and doc["flips"]["fail_to_pass"] == 4
    assert doc["fail_to_pass"][0]["a"]["completion"] == "m says x-0 1"  # x-0 passes sample 0, fails sample 1
