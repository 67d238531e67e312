"""Resuming on veRL (issue 28): RunConfig.resume -> trainer.resume_mode / resume_from_path, composed and validated
by veRL's own config (Hydra, as main_ppo composes it); the checkpoint veRL's auto mode loads is the resume point."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgym.adapters.kit.resume import begin_segment
from crossgym.adapters.verl.backend import VerlBackend
from crossgym.api import load_tasks
from crossgym.protocol.errors import ConfigError


def _verl_checkpoint(out: Path, *steps: int) -> Path:
    """<output_dir>/checkpoints as veRL leaves it: global_step_N/actor and the tracker naming the last save."""
    root = out / "checkpoints"
    for s in steps:
        (root / f"global_step_{s}" / "actor").mkdir(parents=True)
    (root / "latest_checkpointed_iteration.txt").write_text(str(steps[-1]))
    return root


def _settings(run):
    return VerlBackend().build(run, tasks=load_tasks("arithmetic", n=16, seed=1), gpus=1).settings


def test_resume_maps_to_verls_resume_mode(run_factory, tmp_path):
    s = _settings(run_factory(grpo={"save_steps": 2}))
    assert s["trainer.resume_mode"] == "disable" and s["trainer.save_freq"] == 2
    assert "trainer.resume_from_path" not in s
    assert _settings(run_factory(resume="auto"))["trainer.resume_mode"] == "auto"
    root = _verl_checkpoint(tmp_path / "out", 2)
    s = _settings(run_factory(resume="global_step_2"))  # relative: under <output_dir>/checkpoints
    assert s["trainer.resume_mode"] == "resume_path"
    assert s["trainer.resume_from_path"] == str((root / "global_step_2").resolve())
    with pytest.raises(ConfigError, match="veRL resumes from a global_step_N folder") as exc:
        _settings(run_factory(resume=str(tmp_path)))
    assert exc.value.where == "resume"


def test_the_checkpoint_verl_loads_is_the_resume_point(run_factory, tmp_path):
    run = run_factory(resume="auto")
    assert VerlBackend().resume_point(run) is None
    begin_segment(run.output_dir, run, None, backend="verl")
    root = _verl_checkpoint(tmp_path / "out", 2, 4)
    (root / "global_step_6").mkdir()  # a save the kill cut short: no tracker update, no actor/
    point = VerlBackend().resume_point(run)
    assert point is not None and point.step == 4 and point.checkpoint == str(root / "global_step_4")
    changed = run.with_overrides(grpo={**run.grpo.model_dump(), "learning_rate": 1e-5})
    assert VerlBackend().resume_point(changed).changed == {"grpo.learning_rate": [1e-6, 1e-5]}
    named = VerlBackend().resume_point(run.with_overrides(resume="global_step_2"))  # under <output_dir>/checkpoints
    assert named is not None and named.step == 2 and named.checkpoint == str(root / "global_step_2")
    with pytest.raises(ConfigError, match="global_step_6 is not a complete checkpoint"):
        VerlBackend().resume_point(run.with_overrides(resume="global_step_6"))
    with pytest.raises(ConfigError, match="the LoRA shape changed") as exc:
        VerlBackend().resume_point(run.with_overrides(grpo={**run.grpo.model_dump(), "lora": {"r": 4}}))
    assert exc.value.where == "grpo.lora"


@pytest.mark.parametrize("resume", ["auto", "global_step_2"])
def test_verls_own_config_accepts_the_resume_settings(run_factory, verl_compose, tmp_path, resume):
    pytest.importorskip("verl")
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    _verl_checkpoint(tmp_path / "out", 2)
    rf = VerlBackend().build(run_factory(resume=resume, grpo={"save_steps": 2}),
                             tasks=load_tasks("arithmetic", n=16, seed=1), gpus=1)
    cfg = verl_compose(rf.args)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.trainer.resume_mode == rf.settings["trainer.resume_mode"]
    assert cfg.trainer.resume_from_path == rf.settings.get("trainer.resume_from_path")
    assert cfg.trainer.save_freq == 2 and cfg.trainer.default_local_dir == str((tmp_path / "out" / "checkpoints")
                                                                               .resolve())
    if resume != "auto":
        assert "global_step_" in cfg.trainer.resume_from_path  # what veRL's _load_checkpoint asserts
