"""`crossgym eval` end to end in process: flags, a RunConfig, an endpoint; files written; resume; errors."""

from __future__ import annotations

import json

import pytest

from crossgym.cli import main


def _run(argv, capsys):  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def _task_file(path, plugin, count=3):  # type: ignore[no-untyped-def]
    path.write_text("".join(t.to_json() + "\n" for t in plugin.make_tasks(count)))
    return path


def test_eval_with_flags_writes_everything_and_resumes(tiny_model_dir, test_plugin, tmp_path, capsys, monkeypatch,
                                                       caplog):
    tasks = _task_file(tmp_path / "tasks.jsonl", test_plugin)
    out_dir = tmp_path / "out"
    argv = ["eval", "--model", str(tiny_model_dir), "--tasks", str(tasks), "--n", "4", "--max-tokens", "5",
            "--seed", "3", "--output-dir", str(out_dir), "--json"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    metrics = json.loads(out)  # --json: one document on stdout, nothing else
    assert metrics["n_tasks"] == 3 and metrics["n_rollouts"] == 12 and set(metrics["pass@k"]) == {"1", "2", "4"}
    assert metrics["run"]["engine"] == "hf" and metrics["run"]["sampling"]["max_tokens"] == 5
    assert set(metrics["by_verifier"]) == {"test_first_letter"}
    for name in ("rollouts.jsonl", "metrics.json", "report.html", "reward_histogram.png", "pass_at_k.png",
                 "by_source.png"):
        assert (out_dir / name).is_file()
    assert json.loads((out_dir / "metrics.json").read_text()) == metrics
    lines = (out_dir / "rollouts.jsonl").read_text().splitlines()
    assert len(lines) == 12
    from crossgym.rollout.store import RolloutStore

    scans = []
    keys = RolloutStore.keys
    monkeypatch.setattr(RolloutStore, "keys", lambda self, quiet=False: scans.append(self.path) or keys(self, quiet))
    with (out_dir / "rollouts.jsonl").open("a") as f:
        f.write("not a record\n")  # a damaged line: named once, not once per scan
    caplog.set_level("WARNING")
    code, text, _ = _run(argv[:-1], capsys)  # again, all done: nothing regenerated; the human summary
    assert len(scans) == 2  # the store's keys are read for the message before the work, and by the runner: no more
    assert sum("rollouts.jsonl:13: ignoring a line that is not JSON" in r.getMessage() for r in caplog.records) == 1
    lines.append("not a record")
    assert code == 0 and (out_dir / "rollouts.jsonl").read_text().splitlines() == lines
    assert json.loads((out_dir / "metrics.json").read_text())["pass@k"] == metrics["pass@k"]
    assert "pass@1" in text and "verifier test_first_letter v1" in text and "report.html" in text
    assert text.startswith(f"resumed: 12 of 12 rollouts reused from {out_dir / 'rollouts.jsonl'}")
    ci, fm = metrics["intervals"], metrics["failure_modes"]
    assert ci["pass@1"]["method"] == "wilson" and ci["pass@1"]["trials"] == 12
    assert ci["pass@1"]["low"] <= metrics["pass@1"] <= ci["pass@1"]["high"]
    assert ci["mean_reward"]["method"] == "bootstrap" and set(ci["pass@k"]) == {"1", "2", "4"}
    assert fm["n_rollouts"] == 12 and fm["failed"] == 12 - round(metrics["pass@1"] * 12)
    assert "95% intervals" in text and f"pass@1 {metrics['pass@1']:.3f} [" in text
    if fm["failed"]:
        assert text.index("failed ") < text.index("pass@1")  # failure modes first
    health = metrics["health"]  # the hf engine records token ids; max_tokens 5 is in each record's provenance
    assert health["truncated"]["known"] == 12 and health["truncated"]["max_tokens"] == [5]
    if health["truncated"]["rate"] >= 0.2:
        assert "warning: " in text and "hit max_tokens (5)" in text


def test_eval_from_a_run_config(tiny_model_dir, test_plugin, tmp_path, capsys):
    _task_file(tmp_path / "tasks.jsonl", test_plugin, 2)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"model: {tiny_model_dir}\ntasks:\n  files: [tasks.jsonl]\noutput_dir: {tmp_path / 'run'}\n"
                   "grpo:\n  num_generations: 2\n  per_device_train_batch_size: 2\n  max_completion_length: 4\n"
                   "  temperature: 0.0\nseed: 5\n")
    code, out, _ = _run(["eval", str(cfg), "--n", "2", "--json"], capsys)
    assert code == 0
    metrics = json.loads(out)
    assert metrics["run"]["sampling"] == {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_tokens": 4,
                                          "seed": 5, "stop": []}
    assert (tmp_path / "run" / "eval" / "rollouts.jsonl").is_file()


def test_eval_against_an_openai_compatible_endpoint(hf_engine, test_plugin, tmp_path, capsys):
    from engine_server import EngineServer

    server = EngineServer(hf_engine, model_name="tiny-served").start()
    try:
        tasks = _task_file(tmp_path / "tasks.jsonl", test_plugin, 2)
        code, out, _ = _run(["eval", "--endpoint", server.url, "--tasks", str(tasks), "--n", "2", "--max-tokens",
                             "4", "--output-dir", str(tmp_path / "o"), "--json"], capsys)
    finally:
        server.stop()
    assert code == 0
    metrics = json.loads(out)
    assert metrics["run"]["engine"] == "openai" and metrics["run"]["model"] == "tiny-served"
    assert metrics["n_rollouts"] == 4


def test_user_errors_are_one_line_and_exit_2(tiny_model_dir, tmp_path, capsys):
    for argv, needle in [(["eval", "--model", str(tiny_model_dir)], "no tasks given"),
                         (["eval", "--tasks", "arithmetic"], "no model given"),
                         (["eval", "--model", str(tiny_model_dir), "--tasks", "arithmetc"], "did you mean"),
                         (["eval", "--model", str(tiny_model_dir), "--tasks", "arithmetic", "--engine", "hff"],
                          "did you mean 'hf'"),
                         (["eval", "--tasks", "arithmetic", "--engine", "sglang", "--model", "x"], "--endpoint")]:
        code, out, err = _run(argv, capsys)
        assert code == 2, argv
        assert needle in err and err.count("\n") == 1 and out == ""


def test_eval_of_a_blend_scores_each_task_once_and_reports_each_part(tiny_model_dir, tmp_path, capsys):
    cfg = tmp_path / "blend.yaml"
    cfg.write_text(f"model: {tiny_model_dir}\noutput_dir: {tmp_path / 'run'}\nseed: 1\n"
                   "tasks:\n"
                   "  - {name: math, source: arithmetic, params: {n: 3, seed: 2}, count: 7}\n"
                   "  - {name: words, source: word_problems, params: {n: 2, seed: 2}}\n"
                   "grpo: {num_generations: 2, per_device_train_batch_size: 2, max_completion_length: 4,"
                   " temperature: 0.0}\n")
    code, out, _ = _run(["eval", str(cfg), "--n", "1", "--json"], capsys)
    assert code == 0
    metrics = json.loads(out)
    rollouts = [json.loads(line) for line in (tmp_path / "run" / "eval" / "rollouts.jsonl").read_text().splitlines()]
    ids = [r["task"]["id"] for r in rollouts]
    assert len(ids) == len(set(ids)) == 5  # the blend's 9 rows repeat math's 3 tasks: each is evaluated once
    assert {i.split("/")[0] for i in ids} == {"math", "words"}
    assert set(metrics["by_source"]) == {"math", "words"}  # each part is a group of the report
    assert metrics["by_source"]["math"]["n_tasks"] == 3
