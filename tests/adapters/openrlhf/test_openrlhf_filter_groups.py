"""grpo.filter_groups on OpenRLHF: --algo.dynamic_filtering_enable with the range (0, 1), through OpenRLHF's own
train_ppo_ray parser and checks (it needs the reward file or agent and n_samples_per_prompt > 1, which crossgym's
command line has)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgym.adapters.openrlhf.backend import OpenRLHFBackend
from crossgym.config import RunConfig


def test_openrlhf_parses_dynamic_filtering(tmp_path: Path, tokenizer_dir) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("openrlhf")
    from crossgym.adapters.openrlhf.native_cli import parse_native

    run = RunConfig.model_validate({
        "model": str(tokenizer_dir), "tasks": {"source": "arithmetic", "params": {"n": 4}}, "backend": "openrlhf",
        "output_dir": str(tmp_path / "out"), "backend_args": {"actor.num_gpus_per_node": 1},
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_prompt_length": 4096,
                 "filter_groups": True}})
    plan = OpenRLHFBackend().plan(run)
    assert "--algo.dynamic_filtering_enable" in plan.argv
    a = parse_native(list(plan.argv[3:])).args
    assert a.algo.dynamic_filtering_enable is True and list(a.algo.dynamic_filtering_range) == [0.0, 1.0]
