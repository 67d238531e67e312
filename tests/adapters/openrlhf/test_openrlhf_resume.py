"""Resuming on OpenRLHF (issue 28): RunConfig.resume -> --ckpt.load_enable, which loads the latest checkpoint in
--ckpt.path; OpenRLHF's own parser accepts the command line; the checkpoint it would load is found the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgym.adapters.kit.resume import begin_segment
from crossgym.adapters.openrlhf import config_map
from crossgym.adapters.openrlhf.backend import OpenRLHFBackend
from crossgym.config import RunConfig
from crossgym.protocol.errors import ConfigError

FILES = {"prompts": "/w/prompts.jsonl", "reward": "/w/reward.py", "agent": "/w/agent.py"}


def _run(tmp_path: Path, model: str = "/models/m", **kw) -> RunConfig:
    base = {"model": model, "tasks": {"source": "arithmetic", "params": {"n": 4}}, "backend": "openrlhf",
            "output_dir": str(tmp_path / "out"), "grpo": {"num_generations": 2, "per_device_train_batch_size": 4,
                                                          "save_steps": 5},
            "backend_args": {"actor.num_gpus_per_node": 1}}
    base.update(kw)
    return RunConfig.model_validate(base)


def _deepspeed_checkpoint(out: Path, *steps: int) -> Path:
    """<output_dir>/checkpoints/_actor as DeepSpeed leaves it: global_stepN folders and `latest` naming the last."""
    actor = out / "checkpoints" / "_actor"
    for s in steps:
        (actor / f"global_step{s}").mkdir(parents=True)
    (actor / "latest").write_text(f"global_step{steps[-1]}")
    return actor


def test_resume_maps_to_ckpt_load_enable(tmp_path):
    def flags(r):
        return config_map.flags(r, files=FILES, agent=False, tasks=8)

    assert "ckpt.load_enable" not in flags(_run(tmp_path))  # never: start from the model
    f = flags(_run(tmp_path, resume="auto"))
    assert f["ckpt.load_enable"] is True and f["ckpt.path"] == str((tmp_path / "out" / "checkpoints").resolve())
    assert f["ckpt.save_steps"] == 5
    actor = _deepspeed_checkpoint(tmp_path / "out", 5, 10)
    assert flags(_run(tmp_path, resume=str(actor / "global_step10")))["ckpt.load_enable"] is True
    assert flags(_run(tmp_path, resume="global_step10"))["ckpt.load_enable"] is True  # under checkpoints/_actor
    with pytest.raises(ConfigError, match="only from the latest checkpoint") as exc:
        flags(_run(tmp_path, resume=str(actor / "global_step5")))
    assert exc.value.where == "resume"


def test_the_checkpoint_openrlhf_loads_is_the_resume_point(tmp_path):
    run = _run(tmp_path, resume="auto")
    assert OpenRLHFBackend().resume_point(run) is None  # nothing saved yet: OpenRLHF starts from the model too
    begin_segment(run.output_dir, run.with_overrides(resume="never"), None, backend="openrlhf")
    actor = _deepspeed_checkpoint(tmp_path / "out", 5, 10)
    point = OpenRLHFBackend().resume_point(run)
    assert point is not None and point.step == 10 and point.checkpoint == str(actor.resolve() / "global_step10")
    assert point.segment == 2 and point.changed == {}
    named = OpenRLHFBackend().resume_point(run.with_overrides(resume="global_step10"))  # under checkpoints/_actor
    assert named is not None and named.step == 10
    with pytest.raises(ConfigError, match="cannot resume: model changed") as exc:
        OpenRLHFBackend().resume_point(run.with_overrides(model="/models/other"))
    assert exc.value.where == "model"


def test_openrlhf_parses_the_resume_flag(tmp_path, tokenizer_dir):
    """The generated argv with --ckpt.load_enable, through OpenRLHF's own train_ppo_ray parser and checks."""
    pytest.importorskip("openrlhf")
    from crossgym.adapters.openrlhf.native_cli import parse_native

    run = _run(tmp_path, model=str(tokenizer_dir), resume="auto", grpo={"num_generations": 2,
               "per_device_train_batch_size": 4, "save_steps": 5, "max_prompt_length": 4096})
    plan = OpenRLHFBackend().plan(run)
    assert "--ckpt.load_enable" in plan.argv
    a = parse_native(list(plan.argv[3:])).args
    assert a.ckpt.load_enable is True and a.ckpt.path == str((tmp_path / "out" / "checkpoints").resolve())
    assert a.ckpt.save_steps == 5


def test_the_reward_files_record_the_run_segment(tmp_path):
    """Rollouts OpenRLHF's reward file and agent record say which segment wrote them (2 after one resume)."""
    from crossgym.adapters.openrlhf.scoring import ScoreConfig, record_many
    from crossgym.protocol import Completion, Message
    from crossgym.scoring import RewardRule
    from crossgym.scoring.records import read_rollouts

    run = _run(tmp_path, resume="auto")
    assert OpenRLHFBackend()._configs(run)[0].segment == 1
    begin_segment(run.output_dir, run, None, backend="openrlhf")
    _deepspeed_checkpoint(tmp_path / "out", 5)
    cfg = OpenRLHFBackend()._configs(run)[0]
    assert cfg.segment == 2 and ScoreConfig.from_dict(cfg.to_dict()) == cfg  # as the generated file reads it
    from crossgym.api import load_tasks

    task = load_tasks("arithmetic", n=1)[0]
    rule = RewardRule()
    scored = rule.score(task, Completion([Message("assistant", "7")]))
    record_many(ScoreConfig(rule=rule, rollouts=str(tmp_path / "r.jsonl"), segment=cfg.segment),
                [(task, Completion([Message("assistant", "7")]), scored)])
    assert read_rollouts(tmp_path / "r.jsonl")[0].provenance["segment"] == 2
