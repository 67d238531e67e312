"""The held-out watch (grpo.eval_steps) on real TRL steps with the tiny model: its rows in metrics.jsonl equal an
independent greedy eval of the same weights (before training, and of the saved final model), the reward curve
draws it on its own axis, and a watch without eval_tasks is one clear error before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trl_test_plugins import digit_tasks

from crossgym.config import parse_run_config
from crossgym.protocol import ConfigError, SamplingParams

pytest.importorskip("trl")


def _run(model: Path, out: Path, eval_file: Path | None, **grpo: object):
    data = {"model": str(model), "tasks": {"source": "json_addition"}, "output_dir": str(out), "seed": 0,
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 8,
                     "max_steps": 2, "learning_rate": 5e-3, "temperature": 1.0, **grpo}}
    if eval_file is not None:
        data["eval_tasks"] = {"files": [str(eval_file)]}
    return parse_run_config(data)


def _greedy_scores(model_dir: Path, tasks: list) -> tuple[float, float]:
    """(pass rate, mean reward) of the same tasks by crossgym's own engine and runner, independent of the watch."""
    from crossgym.inference.hf import HFEngine
    from crossgym.rollout.config import RolloutConfig
    from crossgym.rollout.runner import run_rollouts

    config = RolloutConfig(model=str(model_dir), engine="hf", n=1,
                           sampling=SamplingParams(temperature=0.0, max_tokens=8, seed=0))
    rollouts = run_rollouts(HFEngine(model_dir).load(), tasks, config)
    return (sum(r.verdict.passed for r in rollouts) / len(rollouts),
            sum(r.verdict.reward for r in rollouts) / len(rollouts))


def test_watch_rows_equal_a_greedy_eval_of_the_same_weights(tiny_model_dir, tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.adapters.trl.outputs import read_metrics

    held_out = digit_tasks(6, seed=7)
    eval_file = tmp_path / "eval.jsonl"
    eval_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in held_out))
    out = tmp_path / "out"
    run = _run(tiny_model_dir, out, eval_file, eval_steps=1, eval_limit=5, save_steps=1)
    result = TRLBackend().train(run, tasks=digit_tasks(8))
    rows = read_metrics(out / "metrics.jsonl")
    watch = [r for r in rows if "heldout/pass_rate" in r]
    assert [r["step"] for r in watch] == [0, 1, 2]  # the baseline, then every step
    assert [r["step"] for r in rows if "reward" in r] == [1, 2]  # beside the training reward of each step
    assert all(r["heldout/n"] == 5 and r["heldout/infra"] == 0 for r in watch)
    # each row is what an eval of that step's weights says: the model before training, then each checkpoint
    for row, weights in zip(watch, [tiny_model_dir, out / "checkpoint-1", out / "final"], strict=True):
        assert (row["heldout/pass_rate"], row["heldout/mean_reward"]) == _greedy_scores(weights, held_out[:5]), row
    assert len({r["heldout/mean_reward"] for r in watch}) > 1  # the weights moved, and the watch saw it
    assert result.metrics["heldout"] == watch
    from PIL import Image

    with Image.open(out / "reward_curve.png") as im:  # the held-out line is drawn (its colour is on the plot)
        colors = {c for _, c in im.convert("RGB").getcolors(maxcolors=1 << 22) or ()}
    assert (0xC4, 0x4E, 0x52) in colors


def test_a_watch_without_eval_tasks_is_one_config_error(tiny_model_dir, tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend

    with pytest.raises(ConfigError, match="no eval_tasks") as exc:
        TRLBackend().train(_run(tiny_model_dir, tmp_path / "out", None, eval_steps=1), tasks=digit_tasks(8))
    assert exc.value.where == "grpo.eval_steps"
    assert not (tmp_path / "out" / "final").exists()


def test_plan_says_what_the_watch_does(tiny_model_dir, tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend

    eval_file = tmp_path / "eval.jsonl"
    eval_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in digit_tasks(3)))
    notes = TRLBackend().plan(_run(tiny_model_dir, tmp_path / "o", eval_file, eval_steps=5, eval_limit=2)).notes
    assert any("first 2 eval_tasks at step 0 and every 5 steps" in n for n in notes)
    bare = TRLBackend().plan(_run(tiny_model_dir, tmp_path / "o", None, eval_steps=5)).notes
    assert any("no eval_tasks: training refuses to start" in n for n in bare)
    assert not any("held-out" in n for n in TRLBackend().plan(_run(tiny_model_dir, tmp_path / "o", None)).notes)
