"""RunConfig -> TRL GRPOConfig keyword arguments (pure: no trl import), plus the LoRA config and the engine choice.

MAPPING is the table docs/backends/trl.md shows; grpo_kwargs() is what the backend and `crossgym plan` use.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import RunConfig

#: TRL 1.16 loss types (GRPOConfig.loss_type).
TRL_LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")

#: grpo.variant -> TRL knobs. Values marked "if unset" apply only when the user did not set that grpo field.
VARIANTS: dict[str, dict[str, Any]] = {
    "grpo": {"loss_type": "grpo", "importance_sampling_level": "token"},
    "dapo": {"loss_type": "dapo", "importance_sampling_level": "token", "epsilon_high": 0.28,
             "mask_truncated_completions": True},
    "dr_grpo": {"loss_type": "dr_grpo", "importance_sampling_level": "token", "scale_rewards": "none"},
    "gspo": {"loss_type": "grpo", "importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4},
    # CISPO: TRL's epsilon_high is the cap on the ratio itself (no lower clip): 1 + grpo.epsilon_high, 4.0 unset
    # (ScaleRL's cap 5.0)
    "cispo": {"loss_type": "cispo", "importance_sampling_level": "token"},
    # SAPO: TRL's sapo_temperature_pos/neg defaults 1.0/1.05 are veRL's tau_pos/tau_neg
    "sapo": {"loss_type": "sapo", "importance_sampling_level": "token"},
}
#: Variant values that yield to an explicitly set grpo field of the same name.
_SOFT = {"epsilon_high", "scale_rewards", "epsilon"}
#: grpo.epsilon_high of variant cispo when unset (the ratio is clipped to at most 1 + this)
CISPO_EPSILON_HIGH = 4.0
#: why TRL's GRPOTrainer lacks a variant (one line in the error)
MISSING = {"rloo": "TRL's RLOO is its separate RLOOTrainer, which the TRL backend does not drive",
           "reinforce_pp_baseline": "TRL 1.16 has no REINFORCE++ estimator"}

#: (crossgym field, TRL GRPOConfig field, note): the mapping table of docs/backends/trl.md.
MAPPING: list[tuple[str, str, str]] = [
    ("model", "GRPOTrainer(model=...)", "a local directory (or hub id with network)"),
    ("output_dir", "output_dir", "final checkpoint in output_dir/final"),
    ("seed", "seed", ""),
    ("grpo.num_generations", "num_generations", ""),
    ("grpo.learning_rate", "learning_rate", ""),
    ("grpo.beta", "beta", "0 = no reference model"),
    ("grpo.epsilon / epsilon_high", "epsilon / epsilon_high", "variant dapo sets epsilon_high 0.28, gspo 3e-4/4e-4 when unset"),
    ("grpo.max_completion_length", "max_completion_length", "multi-turn: budget for all turns, tool results included"),
    ("grpo.max_prompt_length", "(none in TRL 1.16)", "crossgym drops longer prompts before training, with a warning"),
    ("grpo.temperature / top_p", "temperature / top_p", ""),
    ("grpo.per_device_train_batch_size", "per_device_train_batch_size", "counts completions"),
    ("grpo.gradient_accumulation_steps", "gradient_accumulation_steps", ""),
    ("grpo.max_steps", "max_steps", ""),
    ("grpo.num_iterations", "num_iterations", ""),
    ("grpo.scale_rewards", "scale_rewards", "true -> 'group', false -> 'none'"),
    ("grpo.variant", "loss_type + importance_sampling_level", "grpo: grpo/token; dapo: dapo/token + epsilon_high 0.28 + "
     "mask_truncated_completions; dr_grpo: dr_grpo/token + scale_rewards none; gspo: grpo/sequence"),
    ("grpo.variant cispo / sapo", "loss_type=cispo / loss_type=sapo", "cispo: epsilon_high = 1 + grpo.epsilon_high (TRL caps "
     "the ratio itself; 5.0 unset); sapo: sapo_temperature_pos/neg 1.0/1.05 (TRL's defaults)"),
    ("grpo.variant rloo / reinforce_pp_baseline", "(none)", "refused: GRPOTrainer has no such estimator"),
    ("grpo.reward_aggregation", "multi_objective_aggregation", "sum -> sum_then_normalize; normalize_then_sum"),
    ("grpo.loss_type", "loss_type", "overrides the variant's loss_type (TRL names)"),
    ("grpo.lora", "GRPOTrainer(peft_config=LoraConfig(...))", "r, lora_alpha, lora_dropout, target_modules"),
    ("grpo.logging_steps", "logging_steps", ""),
    ("grpo.save_steps", "save_strategy='steps', save_steps", "unset: save_strategy='no' (final checkpoint only)"),
    ("resume", "trainer.train(resume_from_checkpoint=<output_dir>/checkpoint-N)", "auto: the latest complete one; "
     "never: starts over (old checkpoint-N removed); a Ctrl-C stop saves one too"),
    ("grpo.eval_steps / eval_limit", "TrainerCallback HeldOutWatch", "crossgym's held-out watch: greedy on the first "
     "eval_limit eval_tasks at step 0 and every N steps; heldout/* rows in metrics.jsonl"),
    ("tasks", "train_dataset", "columns prompt + task (the Task JSON); eval_tasks is for `crossgym eval`"),
    ("task verifiers", "reward_funcs (one per verifier name)", "weight task_weight; logs rewards/<name>/mean"),
    ("verifiers[]", "reward_funcs + reward_weights", "each applied to every task, with its weight"),
    ("on_error", "(reward value)", "verifier error/timeout reward; 'none' -> None, masked by TRL"),
    ("environment (multi-turn, tools)", "GRPOTrainer(rollout_func=...)", "crossgym drives reset/step; env tokens masked"),
    ("engine: hf", "use_vllm=False", "transformers generate"),
    ("engine: vllm", "use_vllm=True, vllm_mode='colocate'", "GPU only; backend_args vllm_mode='server' for trl vllm-serve"),
    ("backend_args", "any GRPOConfig field", "passed through untouched, last"),
    ("(CPU)", "use_cpu=True, bf16=False, gradient_checkpointing=False", "set when no CUDA device is visible"),
    ("(always)", "report_to=[], disable_tqdm=True, log_completions=False", "crossgym draws its own progress bar"),
]


def detect_device() -> str:
    """"cuda" when torch sees a GPU, else "cpu" (also when torch is not installed)."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def variant_settings(run: RunConfig) -> dict[str, Any]:
    """TRL knobs for grpo.variant (and grpo.loss_type), leaving explicitly set grpo fields alone."""
    from crossgym.adapters.kit.variants import check_aggregation, check_variant

    g = run.grpo
    check_variant(run, run.backend if run.backend in ("trl", "unsloth") else "trl", MISSING)
    explicit = g.model_fields_set
    out: dict[str, Any] = {}
    for key, value in VARIANTS[g.variant].items():
        if key in _SOFT and key in explicit:
            continue
        out[key] = value
    if g.variant == "cispo":
        out["epsilon_high"] = 1.0 + (g.epsilon_high if g.epsilon_high is not None else CISPO_EPSILON_HIGH)
    backend = run.backend if run.backend in ("trl", "unsloth") else "trl"
    out["multi_objective_aggregation"] = ("normalize_then_sum" if check_aggregation(run, backend)
                                          else "sum_then_normalize")
    if g.loss_type is not None:
        if g.loss_type not in TRL_LOSS_TYPES:
            close = difflib.get_close_matches(g.loss_type, TRL_LOSS_TYPES, n=1)
            raise ConfigError(f"TRL 1.16 has no loss_type {g.loss_type!r}", where="grpo.loss_type",
                              fix=f"did you mean {close[0]!r}?" if close else
                              f"use one of {', '.join(TRL_LOSS_TYPES)} or leave it unset and pick grpo.variant")
        out["loss_type"] = g.loss_type
        if g.loss_type == "luspo":
            out["importance_sampling_level"] = "sequence"
    return out


def grpo_kwargs(run: RunConfig, *, device: str | None = None) -> dict[str, Any]:
    """GRPOConfig keyword arguments for ``run`` on ``device`` ("cpu" or "cuda"; detected when None)."""
    device = device or detect_device()
    g = run.grpo
    kw: dict[str, Any] = {
        "output_dir": run.output_dir,
        "seed": run.seed,
        "num_generations": g.num_generations,
        "learning_rate": g.learning_rate,
        "beta": g.beta,
        "epsilon": g.epsilon,
        "max_completion_length": g.max_completion_length,
        "temperature": g.temperature,
        "top_p": g.top_p,
        "per_device_train_batch_size": g.per_device_train_batch_size,
        "gradient_accumulation_steps": g.gradient_accumulation_steps,
        "max_steps": g.max_steps,
        "num_iterations": g.num_iterations,
        "scale_rewards": "group" if g.scale_rewards else "none",
        "logging_steps": g.logging_steps,
        "save_strategy": "steps" if g.save_steps else "no",
        "report_to": [],
        "disable_tqdm": True,
        "log_completions": False,
    }
    if g.epsilon_high is not None:
        kw["epsilon_high"] = g.epsilon_high
    if g.save_steps:
        kw["save_steps"] = g.save_steps
    kw.update(variant_settings(run))
    kw.update(engine_settings(run, device))
    if device == "cpu":
        kw.update({"use_cpu": True, "bf16": False, "gradient_checkpointing": False})
    kw.update(run.backend_args)
    return kw


def engine_settings(run: RunConfig, device: str) -> dict[str, Any]:
    """use_vllm and vllm_mode for RunConfig.engine; one clear error for engines TRL cannot train with."""
    if run.engine == "hf":
        return {"use_vllm": False}
    if run.engine == "vllm":
        if device != "cuda":
            raise ConfigError("TRL generates with vLLM only on a GPU, and no CUDA device is visible", where="engine",
                              fix="use engine: hf on CPU")
        return {"use_vllm": True, "vllm_mode": "colocate"}
    raise ConfigError(f"the TRL backend generates with hf or vllm, not {run.engine!r}", where="engine",
                      fix="set engine: hf (or vllm on a GPU); sglang/openai engines serve `crossgym eval` only")


def lora_kwargs(run: RunConfig) -> dict[str, Any] | None:
    """peft.LoraConfig keyword arguments, or None for full fine-tuning."""
    lora = run.grpo.lora
    if lora is None:
        return None
    return {"r": lora.r, "lora_alpha": lora.alpha, "lora_dropout": lora.dropout,
            "target_modules": lora.target_modules, "task_type": "CAUSAL_LM"}


def check_backend_args(run: RunConfig) -> None:
    """Every backend_args key must be a GRPOConfig field (needs trl); unknown keys get a suggestion."""
    import dataclasses

    from trl import GRPOConfig

    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    for key in run.backend_args:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            raise ConfigError(f"{key!r} is not a TRL GRPOConfig field", where=f"backend_args.{key}",
                              fix=f"did you mean {close[0]!r}?" if close else "see TRL's GRPOConfig docs")
