"""Our overrides compose with veRL's packaged ppo_trainer config through Hydra (as main_ppo composes it) and pass
veRL's own validation (validate_config, and the dataclasses its workers build from the config)."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytestmark = pytest.mark.filterwarnings("ignore:Disabled critic")

from crossgym.adapters.verl.backend import VerlBackend  # noqa: E402
from crossgym.api import load_tasks  # noqa: E402

CASES = {
    "grpo": {},
    "dapo": {"grpo": {"variant": "dapo", "beta": 0.001}},
    "dr_grpo": {"grpo": {"variant": "dr_grpo", "scale_rewards": True}},
    "gspo+lora+sglang": {"grpo": {"variant": "gspo", "lora": {"r": 16, "alpha": 32}}, "engine": "sglang"},
    "multi-turn+eval+backend_args": {
        "tasks": {"source": "tool_choice", "params": {"n": 16}},
        "eval_tasks": {"source": "tool_choice", "params": {"n": 4, "seed": 9}},
        "environment": {"max_turns": 4},
        "grpo": {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2, "save_steps": 2},
        "backend_args": {"trainer.n_gpus_per_node": 8, "trainer.nnodes": 2,
                         "actor_rollout_ref": {"rollout": {"gpu_memory_utilization": 0.4}},
                         "actor_rollout_ref.actor.fsdp_config.param_offload": True}},
}


@pytest.mark.parametrize("case", list(CASES))
def test_overrides_compose_and_validate(case, run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    run = run_factory(**CASES[case])
    tasks = load_tasks(run.tasks.source, **run.tasks.params)
    rf = VerlBackend().build(run, tasks=tasks, gpus=1)
    cfg = verl_compose(rf.args)
    for key, value in rf.settings.items():  # every override landed, with its type
        got = OmegaConf.select(cfg, key.lstrip("+"))
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        assert got == value and type(got) is type(value), key
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert need_critic(cfg) is False  # GRPO: no critic
    assert need_reference_policy(cfg) is (run.grpo.beta > 0)
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    algo = omega_conf_to_dataclass(cfg.algorithm)
    assert algo.adv_estimator == "grpo" and rollout.n == run.grpo.num_generations
    assert actor.loss_agg_mode == rf.settings["actor_rollout_ref.actor.loss_agg_mode"]
    if case.startswith("multi-turn"):
        assert rollout.multi_turn.enable and rollout.multi_turn.max_assistant_turns == 4
        assert cfg.trainer.nnodes == 2 and cfg.data.train_batch_size == 2 * 2 * 16 // 4
        assert rollout.agent.agent_loop_config_path.endswith("agent_loops.yaml")


def test_a_bad_backend_arg_is_refused_by_verl_itself(run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    """backend_args are untouched: veRL's own config checks catch what is wrong with them."""
    from verl.utils.config import omega_conf_to_dataclass

    run = run_factory(backend_args={"actor_rollout_ref.actor.loss_agg_mode": "median"})
    rf = VerlBackend().build(run, tasks=load_tasks("arithmetic", n=16, seed=1), gpus=1)
    cfg = verl_compose(rf.args)
    with pytest.raises(Exception, match="Invalid loss_agg_mode: median"):
        omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)


def test_agent_loop_yaml_registers_crossgyms_loop(run_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The YAML veRL reads at agent_loop_config_path names a class hydra can instantiate."""
    import hydra
    from omegaconf import OmegaConf

    from crossgym.adapters.verl.files import agent_loops_yaml

    path = tmp_path / "agent_loops.yaml"
    path.write_text(agent_loops_yaml(), encoding="utf-8")
    entries = OmegaConf.load(path)
    assert [e.name for e in entries] == ["crossgym_agent"]
    cls = hydra.utils.get_class(entries[0]._target_)
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, _agent_loop_registry

    assert issubclass(cls, AgentLoopBase) and _agent_loop_registry["crossgym_agent"]["_target_"].endswith(
        "CrossgymAgentLoop")


def test_run_sh_goes_through_main_ppos_own_hydra_entry(run_factory) -> None:  # type: ignore[no-untyped-def]
    """The generated command line, through `python -m verl.trainer.main_ppo` itself: Hydra's --cfg job prints the
    composed config and exits before training, so every argument is parsed by veRL's real entry point."""
    import os
    import subprocess
    import sys

    import yaml
    from omegaconf import OmegaConf

    run = run_factory(tasks={"source": "tool_choice", "params": {"n": 8}}, environment={"max_turns": 3},
                      grpo={"variant": "gspo"}, backend_args={"trainer.nnodes": 2})
    rf = VerlBackend().build(run, tasks=load_tasks("tool_choice", n=8), gpus=1)
    rf.write()
    proc = subprocess.run(["bash", str(rf.root / "run.sh"), "--cfg", "job"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr[-2000:]
    cfg = OmegaConf.create(yaml.safe_load(proc.stdout))
    for key, value in rf.settings.items():
        got = OmegaConf.select(cfg, key)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        assert got == value, key
