"""Real GRPO steps over a multi-environment blend with TRL (issue 21, item 8): six parts, single-turn and multi-turn
(tool_use, code in the sandbox, sql, shell) in the same step on the tiny model; the rewards TRL trained on are the
scoring core's for each part, and metrics.jsonl carries crossgym/part/<name>/... for every part at every step."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest

from crossgym.config import parse_run_config
from crossgym.rollout.tasks import run_tasks
from crossgym.scoring import RewardRule
from crossgym.scoring.parts import part_key, part_of

pytest.importorskip("trl")

#: one task per part: each step's batch (6 prompts x 2 generations) holds every part, single- and multi-turn mixed
PARTS = [
    {"name": "math", "source": "arithmetic", "params": {"n": 1, "seed": 1, "difficulty": 1}, "count": 1},
    {"name": "json", "source": "json_extraction", "params": {"n": 1, "seed": 1}, "count": 1,
     "verifiers": [{"name": "length", "params": {"max": 6, "unit": "words", "mode": "linear"}, "weight": 0.5}]},
    {"name": "tools", "source": "tool_choice", "params": {"n": 1, "seed": 1, "mode": "env"}, "count": 1,
     "environment": {"name": "tool_use", "max_turns": 2}},
    {"name": "code", "source": "python_functions", "params": {"n": 1, "seed": 1, "env": "code"}, "count": 1,
     "environment": {"name": "code", "max_turns": 2}},
    {"name": "sql", "source": "sql", "params": {"n": 1, "seed": 1, "env": "sql"}, "count": 1,
     "environment": {"name": "sql", "max_turns": 2}},
    {"name": "shell", "source": "shell_tasks", "params": {"n": 1, "seed": 1, "env": "shell"}, "count": 1,
     "environment": {"name": "shell", "max_turns": 2}},
]
SINGLE, MULTI = {"math", "json"}, {"tools", "code", "sql", "shell"}


def _run(model, out):  # type: ignore[no-untyped-def]
    from crossgym.inference.tiny import SPECIAL_TOKENS

    # the tiny model never writes a tool call by itself: bias it towards <tool_call> and end-of-turn, so the
    # multi-turn parts' environments answer (an unreadable call gets an error message) and episodes take turns
    tool_call, eos = SPECIAL_TOKENS.index("<tool_call>"), SPECIAL_TOKENS.index("<|im_end|>")
    return parse_run_config({
        "model": str(model), "tasks": PARTS, "output_dir": str(out), "seed": 0, "on_error": 0.0,
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 12, "max_completion_length": 160,
                 "max_steps": 2, "learning_rate": 1e-3, "temperature": 1.0},
        "backend_args": {"generation_kwargs": {"sequence_bias": [[[tool_call], 5.0], [[tool_call, eos], 30.0]]}}})


def test_grpo_steps_over_a_mixed_blend_log_per_part_metrics(tiny_model_dir, tmp_path):
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.scoring.records import read_rollouts

    out = tmp_path / "out"
    run = _run(tiny_model_dir, out)
    tasks = run_tasks(run)
    assert {part_of(t) for t in tasks} == SINGLE | MULTI
    result = TRLBackend().train(run, tasks=tasks)
    assert result.steps == 2

    # every sample TRL trained on, as the reward path recorded it: the scoring core on its own gives each the same
    # reward, part by part
    rule = RewardRule.from_run(run)
    rollouts = read_rollouts(out / "rollouts.jsonl")
    assert len(rollouts) == 2 * 12
    by_step: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rollouts:
        scored = rule.score(r.task, r.completion)
        assert scored.part == part_of(r.task) and scored.reward is not None
        assert r.provenance["reward_seen"] == scored.reward, (r.task.id, r.completion.text)
        if scored.part in SINGLE:
            assert len(r.completion.assistant_messages) == 1
        by_step[int(r.provenance["step"])][scored.part].append(scored.reward)
    assert len(by_step) == 2
    for parts in by_step.values():
        assert set(parts) == SINGLE | MULTI  # one GRPO step mixes single-turn and multi-turn parts
    assert max(r.turns for r in rollouts if part_of(r.task) in MULTI) >= 2  # real multi-turn episodes
    # the json part's own term judged only the json part's samples
    extra_terms = {part_of(r.task): set(rule.score(r.task, r.completion).extras) for r in rollouts}
    assert extra_terms["json"] == {"json/length"} and all(not v for k, v in extra_terms.items() if k != "json")

    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for row, step in zip(steps, sorted(by_step), strict=True):
        for part in SINGLE | MULTI:
            for metric in ("reward", "passed", "malformed", "verifier_error", "completion_length", "turns"):
                assert part_key(part, metric) in row, (part, metric, sorted(row))
            rewards = by_step[step][part]
            assert math.isclose(row[part_key(part, "reward")], sum(rewards) / len(rewards), rel_tol=1e-6,
                                abs_tol=1e-6), part
        assert max(row[part_key(p, "turns")] for p in MULTI) > 1 == max(row[part_key(p, "turns")] for p in SINGLE)
