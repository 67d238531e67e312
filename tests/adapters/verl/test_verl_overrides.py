"""RunConfig -> veRL Hydra overrides (pure: runs in every tier). Hydra's own parser checks the rendering."""

from __future__ import annotations

import math

import pytest

from crossgym.adapters.verl import overrides as ov
from crossgym.protocol.errors import ConfigError

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."
PATHS = ov.Paths(train_files="/d/train.parquet", val_files=None, reward_module="/d/crossgym_reward.py",
                 checkpoints="/d/checkpoints")


def settings(run, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("gpus", 1)
    return ov.overrides(run, PATHS, **kw)


def test_core_mapping(run_factory) -> None:  # type: ignore[no-untyped-def]
    run = run_factory(grpo={"learning_rate": 3e-6, "beta": 0.04, "temperature": 0.7, "top_p": 0.9,
                            "max_completion_length": 96, "max_prompt_length": 200, "num_iterations": 2,
                            "max_steps": 7})
    o, _ = settings(run, n_tasks=16)
    assert o["algorithm.adv_estimator"] == "grpo"
    assert o[A + "optim.lr"] == 3e-6
    assert (o[A + "use_kl_loss"], o[A + "kl_loss_coef"], o[A + "kl_loss_type"]) == (True, 0.04, "low_var_kl")
    assert (o[R + "n"], o[R + "temperature"], o[R + "top_p"]) == (4, 0.7, 0.9)
    assert (o["data.max_response_length"], o["data.max_prompt_length"]) == (96, 200)
    assert o[A + "ppo_epochs"] == 2
    assert o["trainer.total_training_steps"] == 7 and o["trainer.save_freq"] == 7
    assert o["reward.custom_reward_function.path"] == "/d/crossgym_reward.py"
    assert o["data.val_files"] == "/d/train.parquet" and o["trainer.val_before_train"] is False


def test_batch_sizes_follow_trl_semantics(run_factory) -> None:  # type: ignore[no-untyped-def]
    # 8 completions per GPU x 2 accumulation x 2 GPUs = 32 completions per optimizer step = 8 prompts of 4
    run = run_factory(grpo={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2, "max_steps": 10})
    o, _ = settings(run, gpus=2, n_tasks=20)
    assert o["data.train_batch_size"] == 8 and o[A + "ppo_mini_batch_size"] == 8
    assert o[A + "ppo_micro_batch_size_per_gpu"] == 8
    assert o[R + "log_prob_micro_batch_size_per_gpu"] == 8
    assert o["trainer.n_gpus_per_node"] == 2
    # 20 tasks give 2 full batches per epoch: 10 steps need 5 epochs
    assert o["trainer.total_epochs"] == math.ceil(10 / 2)


def test_too_few_tasks_for_one_batch(run_factory) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="no full batch"):
        settings(run_factory(), gpus=8, n_tasks=4)


@pytest.mark.parametrize("variant, agg, mode, low, high, norm", [
    ("grpo", "seq-mean-token-mean", "vanilla", 0.2, 0.2, True),
    ("dapo", "token-mean", "vanilla", 0.2, 0.28, True),
    ("dr_grpo", "seq-mean-token-sum-norm", "vanilla", 0.2, 0.2, False),
    ("gspo", "seq-mean-token-mean", "gspo", 3e-4, 4e-4, True),
    ("rloo", "seq-mean-token-mean", "vanilla", 0.2, 0.2, True),
    ("reinforce_pp_baseline", "token-mean", "vanilla", 0.2, 0.2, True),
    ("cispo", "token-mean", "cispo", 1.0, 4.0, True),
    ("sapo", "seq-mean-token-mean", "sapo", 0.2, 0.2, True),
])
def test_variants(run_factory, variant, agg, mode, low, high, norm) -> None:  # type: ignore[no-untyped-def]
    o, _ = settings(run_factory(grpo={"variant": variant}))
    estimator = {"rloo": "rloo", "reinforce_pp_baseline": "reinforce_plus_plus_baseline"}.get(variant, "grpo")
    assert o["algorithm.adv_estimator"] == estimator
    assert o[A + "loss_agg_mode"] == agg and o[A + "policy_loss.loss_mode"] == mode
    assert (o[A + "clip_ratio_low"], o[A + "clip_ratio_high"]) == (low, high)
    assert o["algorithm.norm_adv_by_std_in_grpo"] is norm


def test_explicit_settings_win_over_variant_defaults(run_factory) -> None:  # type: ignore[no-untyped-def]
    o, _ = settings(run_factory(grpo={"variant": "dapo", "epsilon_high": 0.3}))
    assert o[A + "clip_ratio_high"] == 0.3
    o, _ = settings(run_factory(grpo={"variant": "gspo", "epsilon": 0.1}))
    assert (o[A + "clip_ratio_low"], o[A + "clip_ratio_high"]) == (0.1, 0.1)
    o, _ = settings(run_factory(grpo={"scale_rewards": False}))
    assert o["algorithm.norm_adv_by_std_in_grpo"] is False


def test_loss_type_takes_verl_or_trl_names_and_rejects_others(run_factory) -> None:  # type: ignore[no-untyped-def]
    assert settings(run_factory(grpo={"loss_type": "token-sum"}))[0][A + "loss_agg_mode"] == "token-sum"
    assert settings(run_factory(grpo={"loss_type": "dr_grpo"}))[0][A + "loss_agg_mode"] == "seq-mean-token-sum-norm"
    with pytest.raises(ConfigError, match="grpo.loss_type.*no loss aggregation 'cispo'"):
        settings(run_factory(grpo={"loss_type": "cispo"}))


def test_beta_zero_means_no_kl_loss(run_factory) -> None:  # type: ignore[no-untyped-def]
    o, _ = settings(run_factory(grpo={"beta": 0.0}))
    assert o[A + "use_kl_loss"] is False


def test_engines(run_factory) -> None:  # type: ignore[no-untyped-def]
    o, notes = settings(run_factory(engine="hf"))
    assert o[R + "name"] == "vllm" and any("no hf rollout" in n for n in notes)
    assert settings(run_factory(engine="sglang"))[0][R + "name"] == "sglang"
    with pytest.raises(ConfigError, match="engine.*'openai'"):
        settings(run_factory(engine="openai"))


def test_on_error_none_is_one_clear_error(run_factory) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="on_error") as info:
        settings(run_factory(on_error="none"))
    assert "\n" not in str(info.value)


def test_lora_and_multi_turn(run_factory) -> None:  # type: ignore[no-untyped-def]
    run = run_factory(grpo={"lora": {"r": 8, "alpha": 16, "dropout": 0.1}}, environment={"max_turns": 3})
    paths = ov.Paths(train_files="/t", val_files="/v", reward_module="/r.py", agent_loops="/a.yaml")
    o, notes = ov.overrides(run, paths, episodes=True, gpus=1)
    assert (o["actor_rollout_ref.model.lora_rank"], o["actor_rollout_ref.model.lora_alpha"]) == (8, 16)
    assert o[R + "multi_turn.enable"] is True and o[R + "multi_turn.max_assistant_turns"] == 3
    assert o[R + "agent.agent_loop_config_path"] == "/a.yaml"
    assert o["data.val_files"] == "/v" and o["trainer.val_before_train"] is True
    assert any("dropout" in n for n in notes)


def test_backend_args_pass_through_untouched_and_last(run_factory) -> None:  # type: ignore[no-untyped-def]
    args = {"trainer.n_gpus_per_node": 4, "actor_rollout_ref": {"rollout": {"gpu_memory_utilization": 0.35}},
            "+ray_kwargs.ray_init.num_cpus": 8, "actor_rollout_ref.actor.optim.lr": "5e-7"}
    o, notes = settings(run_factory(backend_args=args), gpus=None)
    keys = list(o)
    assert o["trainer.n_gpus_per_node"] == 4 and not any("no GPU" in n for n in notes)
    assert o[R + "gpu_memory_utilization"] == 0.35
    assert o["+ray_kwargs.ray_init.num_cpus"] == 8
    assert o[A + "optim.lr"] == "5e-7"  # untouched: a string stays a string
    assert keys.count(A + "optim.lr") == 1
    assert keys.index(A + "optim.lr") < keys.index("trainer.resume_mode") < keys.index("+ray_kwargs.ray_init.num_cpus")
    # 4 GPUs from backend_args change the batch: 8 x 4 / 4 generations
    assert o["data.train_batch_size"] == 8


VALUES = [True, False, None, 0, 17, -3, 1e-06, 0.28, 2.0, "vllm", "/tmp/a b/c.parquet", "1e-6", "true", "null",
          "it's", "a,b", "x=y", "[1]", "${oc.env:HOME}", ["console"], [1, "two", 3.5], {"a": 1, "b": "c d"}]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v) for v in VALUES])
def test_hydra_values_parse_back_to_the_same_value(value) -> None:  # type: ignore[no-untyped-def]
    parser_mod = pytest.importorskip("hydra.core.override_parser.overrides_parser")
    parsed = parser_mod.OverridesParser.create().parse_overrides([f"a.b={ov.hydra_value(value)}"])[0]
    assert parsed.value() == value and type(parsed.value()) is type(value)


def test_mapping_table_covers_every_grpo_field() -> None:
    from crossgym.config import GRPOConfig

    documented = " ".join(row[0] for row in ov.MAPPING)
    missing = [f for f in GRPOConfig.model_fields if f not in documented]
    assert missing == []


def test_docs_show_the_current_mapping_table() -> None:
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "backends" / "verl.md"
    assert ov.markdown_table() in page.read_text(encoding="utf-8")


def test_cispo_clips_from_above_only_and_epsilon_high_is_the_ratio_margin(run_factory) -> None:  # type: ignore[no-untyped-def]
    o, _ = settings(run_factory(grpo={"variant": "cispo", "epsilon": 0.1, "epsilon_high": 2.0}))
    assert (o[A + "clip_ratio_low"], o[A + "clip_ratio_high"]) == (1.0, 2.0)


def test_normalize_then_sum_is_gdpo_over_crossgyms_reward_keys(run_factory) -> None:  # type: ignore[no-untyped-def]
    run = run_factory(grpo={"reward_aggregation": "normalize_then_sum"}, task_weight=2.0,
                      verifiers=[{"name": "length", "params": {"max": 8}, "weight": 0.5},
                                 {"name": "json_valid", "weight": 0.25}])
    o, _ = settings(run)
    assert o["algorithm.adv_estimator"] == "gdpo"
    assert o["+algorithm.gdpo_reward_keys"] == ["crossgym/task_reward", "crossgym/extra/length",
                                                 "crossgym/extra/json_valid"]
    assert o["+algorithm.gdpo_reward_weights"] == [2.0, 0.5, 0.25]
    assert "algorithm.gdpo_reward_keys" not in o and "+algorithm.gdpo_reward_keys" in " ".join(ov.hydra_args(o))
    with pytest.raises(ConfigError, match="normalize_then_sum"):
        settings(run_factory(grpo={"reward_aggregation": "normalize_then_sum", "variant": "rloo"}))


def test_eval_steps_is_verl_s_test_freq(run_factory) -> None:  # type: ignore[no-untyped-def]
    with_val = ov.Paths(train_files="/d/train.parquet", val_files="/d/val.parquet", reward_module="/d/r.py",
                        checkpoints="/d/checkpoints")
    watched, _ = ov.overrides(run_factory(grpo={"max_steps": 20, "save_steps": 10, "eval_steps": 4}), with_val, gpus=1)
    assert (watched["trainer.test_freq"], watched["trainer.val_before_train"]) == (4, True)  # a baseline, then every 4
    unset, _ = ov.overrides(run_factory(grpo={"max_steps": 20, "save_steps": 10}), with_val, gpus=1)
    assert unset["trainer.test_freq"] == 10  # as before: with each checkpoint
    no_val, _ = settings(run_factory(grpo={"max_steps": 20, "eval_steps": 4}))
    assert no_val["trainer.test_freq"] == -1
