"""adapters/trl/config_map.py: RunConfig -> GRPOConfig keywords, variants, engines, backend_args."""

from __future__ import annotations

import pytest

from crossgym.adapters.trl import config_map
from crossgym.config import parse_run_config
from crossgym.protocol import ConfigError


def _run(grpo=None, **over):
    data = {"model": "m", "tasks": {"source": "json_addition"}, "grpo": grpo or {}} | over
    return parse_run_config(data)


def test_cpu_defaults_and_core_fields():
    kw = config_map.grpo_kwargs(_run({"learning_rate": 1e-5, "num_generations": 4, "per_device_train_batch_size": 8,
                                      "max_steps": 7, "beta": 0.04}, seed=3, output_dir="o"), device="cpu")
    assert kw["use_cpu"] is True and kw["bf16"] is False and kw["gradient_checkpointing"] is False
    assert kw["report_to"] == [] and kw["use_vllm"] is False
    assert (kw["learning_rate"], kw["num_generations"], kw["per_device_train_batch_size"], kw["max_steps"],
            kw["beta"], kw["seed"], kw["output_dir"]) == (1e-5, 4, 8, 7, 0.04, 3, "o")
    assert kw["save_strategy"] == "no" and "save_steps" not in kw
    gpu = config_map.grpo_kwargs(_run({"save_steps": 50}), device="cuda")
    assert "use_cpu" not in gpu and "bf16" not in gpu
    assert gpu["save_strategy"] == "steps" and gpu["save_steps"] == 50


@pytest.mark.parametrize(("variant", "expected"), [
    ("grpo", {"loss_type": "grpo", "importance_sampling_level": "token", "scale_rewards": "group"}),
    ("dapo", {"loss_type": "dapo", "epsilon_high": 0.28, "mask_truncated_completions": True}),
    ("dr_grpo", {"loss_type": "dr_grpo", "scale_rewards": "none"}),
    ("gspo", {"loss_type": "grpo", "importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4}),
    ("cispo", {"loss_type": "cispo", "importance_sampling_level": "token", "epsilon_high": 5.0}),
    ("sapo", {"loss_type": "sapo", "importance_sampling_level": "token", "scale_rewards": "group"}),
])
def test_variants(variant, expected):
    kw = config_map.grpo_kwargs(_run({"variant": variant}), device="cpu")
    assert {k: kw[k] for k in expected} == expected


def test_explicit_fields_beat_variant_defaults():
    kw = config_map.grpo_kwargs(_run({"variant": "gspo", "epsilon": 0.1, "epsilon_high": 0.2}), device="cpu")
    assert (kw["epsilon"], kw["epsilon_high"], kw["importance_sampling_level"]) == (0.1, 0.2, "sequence")
    kw = config_map.grpo_kwargs(_run({"variant": "dr_grpo", "scale_rewards": True}), device="cpu")
    assert kw["scale_rewards"] == "group"
    kw = config_map.grpo_kwargs(_run({"variant": "grpo", "loss_type": "bnpo"}), device="cpu")
    assert kw["loss_type"] == "bnpo"


def test_unknown_loss_type_is_one_clear_error():
    with pytest.raises(ConfigError, match=r"grpo.loss_type.*no loss_type 'dapoo'.*did you mean 'dapo'"):
        config_map.grpo_kwargs(_run({"loss_type": "dapoo"}), device="cpu")


def test_engines():
    assert config_map.grpo_kwargs(_run(engine="vllm"), device="cuda")["use_vllm"] is True
    with pytest.raises(ConfigError, match="only on a GPU"):
        config_map.grpo_kwargs(_run(engine="vllm"), device="cpu")
    with pytest.raises(ConfigError, match="hf or vllm, not 'sglang'"):
        config_map.grpo_kwargs(_run(engine="sglang"), device="cpu")
    # server mode is a pass-through TRL knob
    kw = config_map.grpo_kwargs(_run(engine="vllm", backend_args={"vllm_mode": "server", "vllm_server_port": 8001}),
                                device="cuda")
    assert (kw["vllm_mode"], kw["vllm_server_port"]) == ("server", 8001)


def test_backend_args_pass_through_last_and_are_checked():
    run = _run(backend_args={"bf16": True, "top_k": 5, "learning_rate": 3e-4})
    kw = config_map.grpo_kwargs(run, device="cpu")
    assert (kw["bf16"], kw["top_k"], kw["learning_rate"]) == (True, 5, 3e-4)
    config_map.check_backend_args(run)
    with pytest.raises(ConfigError, match=r"backend_args.temprature.*did you mean 'temperature'"):
        config_map.check_backend_args(_run(backend_args={"temprature": 0.5}))


def test_lora_mapping():
    assert config_map.lora_kwargs(_run()) is None
    lk = config_map.lora_kwargs(_run({"lora": {"r": 8, "alpha": 16, "target_modules": ["q_proj"]}}))
    assert lk == {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": ["q_proj"],
                  "task_type": "CAUSAL_LM"}


def test_cispo_caps_the_ratio_at_one_plus_epsilon_high():
    kw = config_map.grpo_kwargs(_run({"variant": "cispo", "epsilon_high": 2.0}), device="cpu")
    assert kw["epsilon_high"] == 3.0  # TRL clamps the ratio itself at epsilon_high; veRL at 1 + clip_ratio_high


@pytest.mark.parametrize("variant", ["rloo", "reinforce_pp_baseline"])
def test_variants_grpotrainer_lacks_are_one_config_error_naming_the_backends_that_have_them(variant):
    with pytest.raises(ConfigError, match="has no variant") as err:
        config_map.grpo_kwargs(_run({"variant": variant}), device="cpu")
    assert "verl or openrlhf" in str(err.value) and "\n" not in str(err.value)


def test_reward_aggregation_maps_to_multi_objective_aggregation():
    assert config_map.grpo_kwargs(_run(), device="cpu")["multi_objective_aggregation"] == "sum_then_normalize"
    kw = config_map.grpo_kwargs(_run({"reward_aggregation": "normalize_then_sum"}), device="cpu")
    assert kw["multi_objective_aggregation"] == "normalize_then_sum"
    with pytest.raises(ConfigError, match="divides each term by its group's std"):
        config_map.grpo_kwargs(_run({"reward_aggregation": "normalize_then_sum", "variant": "dr_grpo"}),
                               device="cpu")


@pytest.mark.parametrize("variant", ["grpo", "dapo", "dr_grpo", "gspo", "cispo", "sapo"])
def test_trl_accepts_every_mapping(variant, tmp_path):
    from trl import GRPOConfig

    kw = config_map.grpo_kwargs(_run({"variant": variant, "num_generations": 4, "per_device_train_batch_size": 8},
                                     output_dir=str(tmp_path)), device="cpu")
    args = GRPOConfig(**kw)
    assert args.loss_type == kw["loss_type"] and args.use_cpu and not args.bf16


def test_mapping_table_names_real_grpoconfig_fields():
    import dataclasses
    import inspect

    from trl import GRPOConfig, GRPOTrainer

    known = {f.name for f in dataclasses.fields(GRPOConfig)} | set(inspect.signature(GRPOTrainer).parameters)
    for _, trl_field, _ in config_map.MAPPING:
        for part in trl_field.replace("+", "/").replace(",", "/").split("/"):
            name = part.strip().split("=")[0].strip()
            if name.isidentifier() and not name[0].isupper():
                assert name in known, name


def test_docs_table_is_the_mapping():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "backends" / "trl.md").read_text(encoding="utf-8")
    for ours, theirs, note in config_map.MAPPING:
        assert f"| `{ours}` | `{theirs}` | {note} |" in doc, ours
