"""grpo.filter_groups on veRL: DAPO dynamic sampling in veRL's v1 trainer (algorithm.filter_groups), through veRL's
own Hydra config composition."""

from __future__ import annotations


def test_veRLs_config_accepts_filter_groups(run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl import overrides as ov

    paths = ov.Paths(train_files="/d/t.parquet", val_files=None, reward_module="/d/r.py")
    o, _ = ov.overrides(run_factory(grpo={"filter_groups": True}), paths, gpus=1)
    cfg = verl_compose(ov.hydra_args(o))
    fg = cfg.algorithm.filter_groups
    assert (fg.enable, fg.metric, fg.max_num_gen_batches) == (True, "reward", 10)
    assert cfg.trainer.use_v1  # the trainer that reads algorithm.filter_groups in veRL 0.9.1
    off, _ = ov.overrides(run_factory(), paths, gpus=1)
    assert verl_compose(ov.hydra_args(off)).algorithm.filter_groups.enable is False
