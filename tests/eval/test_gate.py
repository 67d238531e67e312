"""The eval-first gate: verifier self-checks, then a small eval whose rewards must vary."""

from __future__ import annotations

import math

from crossgym.config import RunConfig
from crossgym.eval.gate import run_gate


def _run(model, **extra):  # type: ignore[no-untyped-def]
    return RunConfig.model_validate({
        "model": str(model), "tasks": {"source": "unused"}, "seed": 1,
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_completion_length": 5,
                 "temperature": 1.0}, **extra})


def test_a_verifier_failing_its_self_check_stops_the_gate_before_any_generation(test_plugin, tmp_path):
    tasks = test_plugin.make_tasks(2, verifier="test_broken")
    result = run_gate(_run(tmp_path / "no-model"), tasks)  # a missing model is never reached
    assert not result.ok
    assert result.reason.startswith("verifier 'test_broken' fails its self-check: an example expected to pass "
                                    "gave fail")
    assert "\n" not in result.reason and result.metrics is None


def test_identical_rewards_stop_the_gate(tiny_model_dir, test_plugin):
    tasks = test_plugin.make_tasks(3, verifier="test_equals", answer="never written by a random model")
    result = run_gate(_run(tiny_model_dir), tasks, limit=2)
    assert not result.ok and "\n" not in result.reason
    assert result.reason.startswith("every sampled reward is 0 over 4 completions of 2 tasks (2 each)")
    assert "GRPO has nothing to learn" in result.reason
    assert result.rewards == [0.0] * 4 and [r["name"] for r in result.selfcheck] == ["test_equals"]


def test_varying_rewards_pass_the_gate(tiny_model_dir, test_plugin, hf_engine):
    tasks = test_plugin.make_tasks(6)
    result = run_gate(_run(tiny_model_dir), tasks, n=4, limit=6, engine=hf_engine)
    assert result.ok, result.reason
    assert result.reason.startswith("1 verifier(s) self-checked; 2 distinct rewards over 24 completions")
    assert len(result.rewards) == 24 and len(set(result.rewards)) == 2
    assert result.metrics["n_rollouts"] == 24


def test_extra_weighted_verifiers_count_in_the_training_reward(tiny_model_dir, test_plugin, hf_engine):
    tasks = test_plugin.make_tasks(4, verifier="test_equals", answer="never")
    run = _run(tiny_model_dir, verifiers=[{"name": "test_first_letter", "weight": 0.5}], on_error="none")
    result = run_gate(run, tasks, n=4, engine=hf_engine)
    assert result.ok, result.reason
    assert set(x for x in result.rewards if not math.isnan(x)) <= {0.0, 0.5}
    assert [r["name"] for r in result.selfcheck] == ["test_equals", "test_first_letter"]
