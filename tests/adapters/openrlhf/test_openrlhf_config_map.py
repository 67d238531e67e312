"""RunConfig -> OpenRLHF flags: variants, batch layout, refusals and backend_args pass-through (no OpenRLHF needed)."""

from __future__ import annotations

import pytest

from crossgym.adapters.openrlhf import config_map
from crossgym.config import GRPOConfig, RunConfig
from crossgym.protocol.errors import ConfigError

FILES = {"prompts": "/w/prompts.jsonl", "reward": "/w/reward.py", "agent": "/w/agent.py"}


def run(**kw):
    grpo = kw.pop("grpo", {})
    base = {"model": "/models/m", "tasks": {"source": "arithmetic", "params": {"n": 4}}, "backend": "openrlhf",
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, **grpo},
            "backend_args": {"actor.num_gpus_per_node": 2}}
    base.update(kw)
    return RunConfig.model_validate(base)


def flags(r, agent=False, tasks=10):
    return config_map.flags(r, files=FILES, agent=agent, tasks=tasks)


def test_grpo_defaults_map_to_group_norm_and_sequence_mean():
    f = flags(run())
    assert f["algo.advantage.estimator"] == "group_norm"
    assert f["actor.policy_loss_type"] == "ppo"
    assert f["actor.loss_agg_mode"] == "seq-mean-token-mean"
    assert f["actor.eps_clip_low_high"] == [0.2, 0.2]
    assert f["algo.kl.init_coef"] == 0.0 and "algo.kl.use_loss" not in f
    assert f["reward.remote_url"] == FILES["reward"] and "train.agent_func_path" not in f
    assert f["data.label_key"] == "label" and f["data.input_key"] == "prompt" and f["data.apply_chat_template"]


@pytest.mark.parametrize("variant, expect", [
    ("dapo", {"algo.advantage.estimator": "group_norm", "actor.loss_agg_mode": "token-mean",
              "actor.eps_clip_low_high": [0.2, 0.28]}),
    ("dr_grpo", {"algo.advantage.estimator": "dr_grpo", "actor.loss_agg_mode": "token-mean"}),
    ("gspo", {"algo.advantage.estimator": "group_norm", "actor.policy_loss_type": "gspo",
              "actor.eps_clip_low_high": [3e-4, 4e-4]}),
    ("rloo", {"algo.advantage.estimator": "rloo", "actor.policy_loss_type": "ppo",
              "actor.loss_agg_mode": "seq-mean-token-mean"}),
    ("reinforce_pp_baseline", {"algo.advantage.estimator": "reinforce_baseline", "actor.loss_agg_mode": "token-mean"}),
])
def test_variants(variant, expect):
    f = flags(run(grpo={"variant": variant}))
    for k, v in expect.items():
        assert f[k] == v, k


def test_explicit_epsilon_wins_over_the_variant():
    f = flags(run(grpo={"variant": "gspo", "epsilon": 0.1, "epsilon_high": 0.3}))
    assert f["actor.eps_clip_low_high"] == [0.1, 0.3]
    f = flags(run(grpo={"variant": "dapo", "epsilon": 0.1}))
    assert f["actor.eps_clip_low_high"] == [0.1, 0.28]


def test_scale_rewards_false_drops_the_std():
    assert flags(run(grpo={"scale_rewards": False}))["algo.advantage.estimator"] == "dr_grpo"


def test_beta_turns_on_the_kl_loss():
    f = flags(run(grpo={"beta": 0.04}))
    assert f["algo.kl.use_loss"] is True and f["algo.kl.estimator"] == "k3" and f["algo.kl.init_coef"] == 0.04


def test_loss_type_is_a_loss_aggregation_mode():
    assert flags(run(grpo={"loss_type": "token-mean"}))["actor.loss_agg_mode"] == "token-mean"
    with pytest.raises(ConfigError, match="grpo.loss_type.*no loss aggregation 'dapo'"):
        flags(run(grpo={"loss_type": "dapo"}))


def test_on_error_none_and_sglang_are_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        flags(run(on_error="none"))
    assert "\n" not in str(e.value) and "on_error" in str(e.value) and "fix:" in str(e.value)
    with pytest.raises(ConfigError, match="vLLM only"):
        flags(run(engine="sglang"))


def test_batch_layout_counts_completions_like_trl():
    # 8 completions/device x 2 accumulation x 2 GPUs = 32 completions = 8 prompts x 4 samples per update
    r = run(grpo={"gradient_accumulation_steps": 2, "max_steps": 5})
    f = flags(r, tasks=3)
    assert f["train.batch_size"] == 32 and f["rollout.batch_size"] == 8
    assert f["train.micro_batch_size"] == 8 and f["rollout.n_samples_per_prompt"] == 4
    assert f["data.max_samples"] == 40 and f["train.num_episodes"] == 1
    assert f["vllm.num_engines"] == 2 and f["actor.num_gpus_per_node"] == 2


def test_every_rollout_batch_holds_whole_groups():
    # whatever the layout, train.batch_size == rollout.batch_size x n_samples (one update per rollout round)
    for gpus in (1, 3, 8):
        for per_device, accum, n in ((8, 1, 4), (6, 2, 3), (16, 4, 8)):
            r = run(grpo={"per_device_train_batch_size": per_device, "gradient_accumulation_steps": accum,
                          "num_generations": n}, backend_args={"actor.num_gpus_per_node": gpus})
            f = flags(r)
            assert f["train.batch_size"] == f["rollout.batch_size"] * f["rollout.n_samples_per_prompt"]


def test_backend_args_replace_append_and_drop():
    r = run(backend_args={"actor.num_gpus_per_node": 1, "vllm.num_engines": 4, "--ds.zero_stage": 3,
                          "train.colocate_all": False, "ds.attn_implementation": "flash_attention_2",
                          "algo.dynamic_filtering_enable": True, "algo.dynamic_filtering_range": [0.0, 1.0]})
    f = flags(r)
    argv = config_map.argv_from_flags(f)
    assert f["vllm.num_engines"] == 4 and f["ds.zero_stage"] == 3
    assert "--train.colocate_all" not in argv
    assert argv[argv.index("--ds.attn_implementation") + 1] == "flash_attention_2"
    i = argv.index("--algo.dynamic_filtering_range")
    assert argv[i + 1:i + 3] == ["0.0", "1.0"] and "--algo.dynamic_filtering_enable" in argv
    assert argv.count("--ds.zero_stage") == 1


def test_bad_backend_arg_key_is_one_clear_error():
    with pytest.raises(ConfigError, match="backend_args"):
        flags(run(backend_args={"-x": 1}))


def test_agent_replaces_the_reward_file():
    f = flags(run(), agent=True)
    assert f["train.agent_func_path"] == FILES["agent"] and "reward.remote_url" not in f


def test_lora_flags():
    f = flags(run(grpo={"lora": {"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}}))
    assert (f["ds.lora.rank"], f["ds.lora.alpha"], f["ds.lora.target_modules"]) == (8, 16, ["q_proj", "v_proj"])


def test_the_mapping_table_names_every_grpo_field():
    table = " ".join(row[0] for row in config_map.MAPPING)
    for name in GRPOConfig.model_fields:
        assert name in table, f"grpo.{name} is missing from config_map.MAPPING (docs table)"


def test_the_mapping_table_names_every_flag_crossgym_sets():
    text = " ".join(row[1] for row in config_map.MAPPING)
    r = run(grpo={"beta": 0.1, "lora": {"r": 4}})
    for agent in (False, True):
        for key in flags(r, agent=agent):
            group = key.rsplit(".", 1)[0]
            assert f"--{key}" in text or f"--{group}.*" in text or f"--{group}." in text, key


def test_the_docs_page_shows_the_current_table():
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "backends" / "openrlhf.md"
    assert config_map.markdown_table() in page.read_text(encoding="utf-8"), \
        "regenerate the table: python -c 'from crossgym.adapters.openrlhf.config_map import markdown_table as m; print(m())'"


@pytest.mark.parametrize("variant", ["cispo", "sapo"])
def test_cispo_and_sapo_are_one_config_error(variant):
    with pytest.raises(ConfigError, match=f"no variant '{variant}'.*ppo and gspo only") as err:
        flags(run(grpo={"variant": variant}))
    assert "trl or unsloth or verl" in str(err.value)


def test_normalize_then_sum_is_refused():
    with pytest.raises(ConfigError, match="no reward aggregation 'normalize_then_sum'"):
        flags(run(grpo={"reward_aggregation": "normalize_then_sum"}))
