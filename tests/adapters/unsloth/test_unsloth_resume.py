"""Resuming an Unsloth run (issue 28): it goes through the TRL backend's resume (TRL's resume_from_checkpoint
loads the LoRA adapter, optimizer, scheduler and RNG into Unsloth's model), so a run continued from checkpoint-1
ends with the adapter an uninterrupted run ends with."""

from __future__ import annotations

import json
import shutil

import pytest
from unsloth_helpers import make_run

from crossgym.api import get_backend

needs_unsloth = pytest.mark.usefixtures("needs_unsloth")


@needs_unsloth
def test_a_run_continued_from_a_checkpoint_ends_with_the_uninterrupted_adapter(tiny_model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    out = tmp_path / "out"
    run = make_run(tiny_model_dir, out, grpo={"save_steps": 1})
    assert get_backend("unsloth").capabilities.resume
    done = get_backend("unsloth").train(run)
    assert done.steps == 2
    want = load_file(str(out / "final" / "adapter_model.safetensors"))
    # as a kill after checkpoint-1 leaves it: no checkpoint-2, step 2's records written
    shutil.rmtree(out / "checkpoint-2")
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()
            if "reward" in line] == [1, 2]
    again = get_backend("unsloth").train(run.with_overrides(resume="auto"))
    assert again.steps == 2 and again.metrics["resumed_from"]["step"] == 1
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["segment"]) for r in rows if "reward" in r] == [(1, 1), (2, 2)]
    got = load_file(str(out / "final" / "adapter_model.safetensors"))
    assert got.keys() == want.keys() and len(got) > 0
    for k in got:
        assert torch.allclose(got[k], want[k], rtol=1e-5, atol=1e-6), k


def test_plan_shows_the_resume_setting(tmp_path):
    """Planned without Unsloth: the TRL resume setting, and the plain script resumes the TRL way."""
    from crossgym.adapters.kit.resume import begin_segment

    out = tmp_path / "out"
    run = make_run(tmp_path / "model", out, resume="auto")
    begin_segment(out, run, None, backend="unsloth")
    ckpt = out / "checkpoint-3"
    ckpt.mkdir()
    for name in ("adapter_model.safetensors", "optimizer.pt"):
        (ckpt / name).write_bytes(b"x")
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    plan = get_backend("unsloth").plan(run)
    assert plan.native_config["GRPOTrainer.train"] == {"resume_from_checkpoint": str(ckpt)}
    assert "trainer.train(resume_from_checkpoint=last)" in plan.files["train_unsloth.py"]
