"""adapters/unsloth/settings.py: RunConfig -> FastLanguageModel arguments, backend_args split, GPU-only options on
CPU as one ConfigError line. Pure mapping: runs in every venv."""

from __future__ import annotations

from pathlib import Path

import pytest
from unsloth_helpers import make_run

from crossgym.adapters.unsloth import settings
from crossgym.config import GRPOConfig
from crossgym.protocol import ConfigError


def _run(**over):
    return make_run("/models/tiny", Path("/tmp/out"), **over)


def test_loader_and_lora_arguments_come_from_the_run():
    s = settings.unsloth_settings(_run(grpo={"lora": {"r": 8, "alpha": 16, "dropout": 0.05,
                                                      "target_modules": ["q_proj", "v_proj"]}}, seed=7), device="cpu")
    assert s.from_pretrained == {"model_name": "/models/tiny", "max_seq_length": 2048, "load_in_4bit": False,
                                 "fast_inference": False, "max_lora_rank": 8, "use_gradient_checkpointing": False}
    assert s.peft == {"r": 8, "lora_alpha": 16, "lora_dropout": 0.05, "random_state": 7,
                      "use_gradient_checkpointing": False, "target_modules": ["q_proj", "v_proj"]}
    assert s.notes == ()


def test_no_lora_section_means_the_default_lora():
    run = make_run("/m", Path("/o"))
    run = run.model_copy(update={"grpo": run.grpo.model_copy(update={"lora": None})})
    s = settings.unsloth_settings(run, device="cpu")
    assert (s.peft["r"], s.peft["lora_alpha"], s.peft["lora_dropout"]) == (16, 32, 0.0)
    assert "target_modules" not in s.peft  # all-linear: Unsloth's own projection list
    assert any("grpo.lora is unset" in n for n in s.notes)


def test_gpu_defaults_and_vllm_fast_inference():
    s = settings.unsloth_settings(_run(engine="vllm"), device="cuda")
    assert s.from_pretrained["fast_inference"] is True
    assert s.from_pretrained["gpu_memory_utilization"] == settings.DEFAULT_GPU_MEMORY_UTILIZATION
    assert s.from_pretrained["use_gradient_checkpointing"] == "unsloth"


def test_max_seq_length_covers_prompt_and_completion():
    s = settings.unsloth_settings(_run(grpo={"max_prompt_length": 3000, "max_completion_length": 512}), device="cpu")
    assert s.from_pretrained["max_seq_length"] == 3512
    s = settings.unsloth_settings(_run(backend_args={"max_seq_length": 256}), device="cpu")
    assert s.from_pretrained["max_seq_length"] == 256


@pytest.mark.parametrize(("over", "where"), [
    ({"engine": "vllm"}, "engine"),
    ({"engine": "vllm", "backend_args": {"fast_inference": True}}, "backend_args.fast_inference"),
])
def test_fast_inference_on_cpu_is_one_config_error_line(over, where):
    with pytest.raises(ConfigError) as err:
        settings.unsloth_settings(_run(**over), device="cpu")
    assert err.value.where == where and "needs a GPU" in err.value.message and "engine: hf" in err.value.fix
    assert "\n" not in str(err.value)


def test_contradictions_and_bad_values_are_config_errors():
    with pytest.raises(ConfigError, match="contradicts engine: hf"):
        settings.unsloth_settings(_run(backend_args={"fast_inference": True}), device="cuda")
    with pytest.raises(ConfigError, match="below grpo.lora.r"):
        settings.unsloth_settings(_run(backend_args={"max_lora_rank": 2}), device="cpu")
    with pytest.raises(ConfigError, match="hf or vllm, not 'sglang'"):
        settings.unsloth_settings(_run(engine="sglang"), device="cuda")


def test_backend_args_split_between_unsloth_and_grpoconfig():
    run = _run(backend_args={"load_in_4bit": True, "use_rslora": True, "top_k": 5, "max_lora_rank": 16})
    native, grpo = settings.split_backend_args(run)
    assert native == {"load_in_4bit": True, "use_rslora": True, "max_lora_rank": 16} and grpo == {"top_k": 5}
    assert settings.trl_run(run).backend_args == {"top_k": 5}
    assert settings.trl_run(run).grpo == run.grpo
    s = settings.unsloth_settings(run, device="cpu")
    assert s.from_pretrained["load_in_4bit"] is True and s.peft["use_rslora"] is True
    assert any("bitsandbytes' CPU backend" in n for n in s.notes)
    assert settings.without_lora(run).grpo.lora is None and run.grpo.lora is not None


def test_the_mapping_table_names_every_grpo_field_and_unsloth_key():
    table = " ".join(row[0] for row in settings.MAPPING)
    assert "grpo.* (all other fields)" in table  # every other grpo field maps as on the TRL backend
    for name in ("lora", "max_prompt_length", "max_completion_length"):
        assert name in table and name in GRPOConfig.model_fields
    for key in settings.UNSLOTH_KEYS:
        assert key in table, f"backend_args.{key} is missing from settings.MAPPING (docs table)"


def test_the_docs_page_shows_the_current_table():
    page = Path(__file__).resolve().parents[3] / "docs" / "backends" / "unsloth.md"
    assert settings.markdown_table() in page.read_text(encoding="utf-8"), \
        "regenerate: python -c 'from crossgym.adapters.unsloth.settings import markdown_table as m; print(m())'"
