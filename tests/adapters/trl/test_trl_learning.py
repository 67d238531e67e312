"""Slow: GRPO through the TRL backend really learns: the reward rises over ~100 steps on the tiny model.

"Write the digit d." scored by the library's `regex` verifier (reward 1 when d appears in the reply). At random the
tiny char-level model writes d somewhere in 16 characters about 15% of the time; GRPO lifts that well above.
"""

from __future__ import annotations

import random

import pytest

from crossgym.config import parse_run_config
from crossgym.protocol import Message, Task, VerifierSpec

pytest.importorskip("trl")


def digit_tasks(n: int, seed: int = 0) -> list[Task]:
    rng = random.Random(seed)
    spec = VerifierSpec("regex", {"mode": "search"})
    tasks = []
    for i in range(n):
        d = str(rng.randint(0, 9))
        tasks.append(Task(id=f"digit-{i}", prompt=[Message("user", f"Write the digit {d}.")], answer=d, verifier=spec))
    return tasks


@pytest.mark.slow
@pytest.mark.skipif("'slow' not in config.getoption('markexpr')", reason="slow: run with -m slow")
def test_reward_rises_over_100_steps(tiny_model_dir, tmp_path):
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.adapters.trl.outputs import read_metrics, reward_series

    run = parse_run_config({
        "model": str(tiny_model_dir), "tasks": {"source": "unused"}, "output_dir": str(tmp_path), "seed": 0,
        "grpo": {"num_generations": 8, "per_device_train_batch_size": 16, "max_completion_length": 16,
                 "max_steps": 100, "learning_rate": 1e-3, "temperature": 1.0},
        "backend_args": {"lr_scheduler_type": "constant"}})
    result = TRLBackend().train(run, tasks=digit_tasks(400))
    rewards = [v for _, v in reward_series(read_metrics(tmp_path / "metrics.jsonl"))["reward"]]
    assert result.steps == 100 and len(rewards) == 100
    first, last = sum(rewards[:20]) / 20, sum(rewards[-20:]) / 20
    print(f"mean reward: first 20 steps {first:.3f}, last 20 steps {last:.3f}")
    assert last > first + 0.15, (first, last)
    assert (tmp_path / "reward_curve.png").is_file()
