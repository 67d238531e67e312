"""RunConfig -> Unsloth's FastLanguageModel.from_pretrained / get_peft_model arguments (pure: no unsloth import).

``backend_args`` holds both kinds of native settings: the keys in UNSLOTH_KEYS go to Unsloth, every other key to
TRL's GRPOConfig (checked there). MAPPING is the table docs/backends/unsloth.md shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import LoraConfig, RunConfig

#: backend_args keys that are Unsloth settings (from_pretrained, get_peft_model), not GRPOConfig fields.
FROM_PRETRAINED_KEYS = ("max_seq_length", "load_in_4bit", "fast_inference", "max_lora_rank",
                        "gpu_memory_utilization", "dtype", "use_gradient_checkpointing")
PEFT_KEYS = ("use_rslora", "bias")
UNSLOTH_KEYS = FROM_PRETRAINED_KEYS + PEFT_KEYS

#: Unsloth's own default sequence budget; raised when the prompt + completion budget needs more.
DEFAULT_MAX_SEQ_LENGTH = 2048
#: Unsloth's default vLLM memory share for fast_inference.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.5
#: (crossgym field, Unsloth / TRL setting, note): the mapping table of docs/backends/unsloth.md.
MAPPING: list[tuple[str, str, str]] = [
    ("model", "FastLanguageModel.from_pretrained(model_name=...)", "a local directory (or hub id with network)"),
    ("grpo.max_prompt_length + max_completion_length", "from_pretrained(max_seq_length=...)",
     f"at least {DEFAULT_MAX_SEQ_LENGTH} (Unsloth's default)"),
    ("backend_args.max_seq_length", "from_pretrained(max_seq_length=...)", "overrides the above"),
    ("engine: hf", "from_pretrained(fast_inference=False), GRPOConfig(use_vllm=False)", "transformers generate"),
    ("engine: vllm", "from_pretrained(fast_inference=True, gpu_memory_utilization), GRPOConfig(use_vllm=True)",
     "GPU only: Unsloth's colocated vLLM; on CPU one ConfigError line"),
    ("backend_args.fast_inference", "from_pretrained(fast_inference=...)",
     "follows engine (vllm: true, hf: false); a contradicting value is a ConfigError"),
    ("backend_args.load_in_4bit", "from_pretrained(load_in_4bit=...)",
     "default false (the same 16-bit base as TRL); true is QLoRA: GPU, or bitsandbytes' CPU backend where it runs"),
    ("grpo.lora.r", "get_peft_model(r=...), from_pretrained(max_lora_rank=r)",
     "grpo.lora unset: LoRA r=16, alpha=32, dropout 0 (Unsloth trains adapters)"),
    ("grpo.lora.alpha / dropout", "get_peft_model(lora_alpha=..., lora_dropout=...)", ""),
    ("grpo.lora.target_modules", "get_peft_model(target_modules=...)",
     "'all-linear': Unsloth's default projections (q,k,v,o,gate,up,down) where the model has them"),
    ("seed", "get_peft_model(random_state=seed), GRPOConfig(seed)", ""),
    ("backend_args.use_gradient_checkpointing", "from_pretrained / get_peft_model(use_gradient_checkpointing)",
     "default 'unsloth' on GPU, False on CPU (as TRL's gradient_checkpointing=False there)"),
    ("backend_args.dtype / max_lora_rank / gpu_memory_utilization / use_rslora / bias", "the same Unsloth arguments",
     "passed through"),
    ("grpo.* (all other fields)", "GRPOConfig: exactly the TRL backend's mapping", "see docs/backends/trl.md"),
    ("backend_args (other keys)", "any GRPOConfig field", "checked against trl's GRPOConfig, passed through last"),
    ("tasks, verifiers, environment, on_error", "train_dataset, reward_funcs, rollout_func",
     "the TRL backend's reward functions and environment bridge, shared"),
]


@dataclass(frozen=True)
class UnslothSettings:
    """What the backend hands Unsloth: from_pretrained and get_peft_model keyword arguments."""

    from_pretrained: dict[str, Any]
    peft: dict[str, Any]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"from_pretrained": dict(self.from_pretrained), "get_peft_model": dict(self.peft)}


def split_backend_args(run: RunConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Unsloth settings, GRPOConfig fields) from backend_args."""
    native = {k: v for k, v in run.backend_args.items() if k in UNSLOTH_KEYS}
    grpo = {k: v for k, v in run.backend_args.items() if k not in UNSLOTH_KEYS}
    return native, grpo


def trl_run(run: RunConfig) -> RunConfig:
    """``run`` as the shared TRL code sees it: backend_args without the Unsloth keys."""
    _, grpo = split_backend_args(run)
    if len(grpo) == len(run.backend_args):
        return run
    return run.model_copy(update={"backend_args": grpo})


def without_lora(run: RunConfig) -> RunConfig:
    """``run`` with grpo.lora unset: the TRL code must not add a second set of adapters to Unsloth's model."""
    if run.grpo.lora is None:
        return run
    return run.model_copy(update={"grpo": run.grpo.model_copy(update={"lora": None})})


def lora_of(run: RunConfig) -> LoraConfig:
    """grpo.lora, or LoraConfig's defaults when unset: this backend always trains LoRA adapters, never all weights.
    (pydantic is imported here, not at module level, so `crossgym list` stays fast.)"""
    from crossgym.config import LoraConfig

    return run.grpo.lora if run.grpo.lora is not None else LoraConfig()


def unsloth_settings(run: RunConfig, *, device: str) -> UnslothSettings:
    """from_pretrained / get_peft_model arguments for ``run`` on ``device`` ("cpu" or "cuda").

    Options a CPU cannot honour raise one ConfigError line (what, where, fix) instead of Unsloth's traceback.
    """
    native, _ = split_backend_args(run)
    notes: list[str] = []
    g = run.grpo
    lora = lora_of(run)
    if g.lora is None:
        notes.append(f"grpo.lora is unset: Unsloth trains LoRA adapters (r={lora.r}, alpha={lora.alpha})")
    if run.engine not in ("hf", "vllm"):
        raise ConfigError(f"the Unsloth backend generates with hf or vllm, not {run.engine!r}", where="engine",
                          fix="set engine: hf (or vllm on a GPU, Unsloth's fast_inference)")
    fast = native.get("fast_inference", run.engine == "vllm")
    if bool(fast) != (run.engine == "vllm"):
        raise ConfigError(f"backend_args.fast_inference={fast!r} contradicts engine: {run.engine}",
                          where="backend_args.fast_inference",
                          fix="drop it: engine: vllm turns on Unsloth's fast_inference, engine: hf turns it off")
    if fast and device != "cuda":
        raise ConfigError("fast_inference (Unsloth's vLLM generation) needs a GPU, and no CUDA device is visible",
                          where="engine" if "fast_inference" not in native else "backend_args.fast_inference",
                          fix="use engine: hf on CPU")
    max_seq = int(native.get("max_seq_length") or max(DEFAULT_MAX_SEQ_LENGTH,
                                                      (g.max_prompt_length or 0) + g.max_completion_length))
    checkpointing = native.get("use_gradient_checkpointing", "unsloth" if device == "cuda" else False)
    fp: dict[str, Any] = {
        "model_name": run.model,
        "max_seq_length": max_seq,
        "load_in_4bit": bool(native.get("load_in_4bit", False)),
        "fast_inference": bool(fast),
        "max_lora_rank": int(native.get("max_lora_rank", lora.r)),
        "use_gradient_checkpointing": checkpointing,
    }
    if "dtype" in native:
        fp["dtype"] = native["dtype"]
    if fast:
        fp["gpu_memory_utilization"] = float(native.get("gpu_memory_utilization", DEFAULT_GPU_MEMORY_UTILIZATION))
    if fp["max_lora_rank"] < lora.r:
        raise ConfigError(f"max_lora_rank {fp['max_lora_rank']} is below grpo.lora.r {lora.r}",
                          where="backend_args.max_lora_rank", fix=f"raise it to at least {lora.r} or drop it")
    peft: dict[str, Any] = {"r": lora.r, "lora_alpha": lora.alpha, "lora_dropout": lora.dropout,
                            "random_state": run.seed, "use_gradient_checkpointing": checkpointing}
    if lora.target_modules != "all-linear":
        peft["target_modules"] = list(lora.target_modules) if isinstance(lora.target_modules, list) \
            else lora.target_modules
    for key in PEFT_KEYS:
        if key in native:
            peft[key] = native[key]
    if fp["load_in_4bit"] and device != "cuda":
        notes.append("load_in_4bit on CPU: QLoRA through bitsandbytes' CPU backend (checked before loading)")
    return UnslothSettings(from_pretrained=fp, peft=peft, notes=tuple(notes))


def markdown_table() -> str:
    """MAPPING as the Markdown table docs/backends/unsloth.md shows."""
    rows = ["| crossgym | Unsloth / TRL 1.15 | note |", "|---|---|---|"]
    rows += [f"| `{a}` | `{b}` | {c} |" for a, b, c in MAPPING]
    return "\n".join(rows)
