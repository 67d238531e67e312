"""A multi-environment blend through veRL's own code (issue 21, item 8; runs in the `verl` nox venv).

The compat suite's six-part blend (single-turn and multi-turn parts, part-only verifiers) as the veRL backend
builds the run: the train parquet's rows carry data_source = the part's name and the part's environment, params and
max_turns; veRL's RLHFDataset reads them back; the generated reward module, loaded by veRL's reward manager and by
crossgym's agent loop (every row of a run with multi-turn parts), gives each part the scoring core's reward.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from crossgym.compat_tests.blend import BLEND_PARTS, blend_run, blend_samples
from crossgym.rollout.tasks import run_tasks
from crossgym.scoring import RewardRule
from crossgym.scoring.parts import part_of

PARTS = {p["name"]: p for p in BLEND_PARTS}


def _run(tmp_path):  # type: ignore[no-untyped-def]
    return blend_run(model=str(tmp_path / "model"), backend="verl", output_dir=str(tmp_path / "out"),
                     grpo={"num_generations": 2, "per_device_train_batch_size": 4, "max_steps": 2})


def test_blend_rows_name_their_part_and_carry_its_environment(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl import dataset
    from crossgym.adapters.verl.files import build

    run = _run(tmp_path)
    tasks = run_tasks(run)
    rf = build(run, tasks)
    (rows,) = [list(r) for p, r in rf.parquet.items() if p.endswith("train.parquet")]
    assert Counter(r["data_source"] for r in rows) == Counter(list(PARTS))  # veRL's metrics per part
    for task, row in zip(tasks, rows, strict=True):
        part = part_of(task)
        assert row["data_source"] == part and row["agent_name"] == dataset.AGENT_NAME  # the agent loop per row
        extra = row["extra_info"]
        env = PARTS[part].get("environment") or {}
        assert extra["env"] == env.get("name", task.env)
        assert extra["max_turns"] == env.get("max_turns")  # unset: None, the environment decides
        assert json.loads(extra["env_params"]) == env.get("params", {})
    assert "agent_loops" in " ".join(rf.text_files)


def test_verl_reads_the_blend_and_scores_each_part_as_the_scoring_core(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from crossgym.adapters.verl.files import build
    from crossgym.adapters.verl.parity import byte_tokenizer, native_rewards
    from crossgym.adapters.verl.reward import task_for
    from crossgym.compat_tests.parity import is_multi_turn

    run = _run(tmp_path)
    tasks = run_tasks(run)
    rf = build(run, tasks)
    rf.write()
    train = next(p for p in rf.parquet if p.endswith("train.parquet"))
    cfg = OmegaConf.create({"max_prompt_length": 4096, "filter_overlong_prompts": True, "return_raw_chat": True,
                            "prompt_key": "prompt", "truncation": "error", "cache_dir": str(tmp_path / "cache")})
    ds = RLHFDataset(data_files=[train], tokenizer=byte_tokenizer(), config=cfg, processor=None)
    items = [ds[i] for i in range(len(ds))]
    assert [task_for(it["extra_info"]) for it in items] == tasks
    assert [it["data_source"] for it in items] == [part_of(t) for t in tasks]

    rule = RewardRule.from_run(run)
    samples = blend_samples(run)
    want = [rule.score(s.task, s.completion).reward for s in samples]
    # every row through the agent loop (a run with multi-turn parts), and the single-turn ones through the reward
    # manager main_ppo loads: the generated module binds the blend's rule, data_source is the part
    got = native_rewards([s.task for s in samples], [s.completion for s in samples], mode="multi_turn", rule=rule)
    assert got == want
    single = [i for i, s in enumerate(samples) if not is_multi_turn(s)]
    got_single = native_rewards([samples[i].task for i in single], [samples[i].completion for i in single],
                                mode="single_turn", rule=rule)
    assert got_single == [want[i] for i in single]
    assert {part_of(samples[i].task) for i in single} == {"math", "json"}
    assert want[[s.id for s in samples].index("json:correct")] == 1.25  # the json part's own term counted
