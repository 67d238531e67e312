"""RunConfig -> SkyRL 0.3.0 `skyrl.train` overrides (pure: imports no framework).

SkyRL takes its whole config as dotted ``key=value`` overrides of its typed ``SkyRLTrainConfig`` dataclasses
(``SkyRLTrainConfig.from_cli_overrides``); an unknown key is an error there. MAPPING is the table
docs/backends/skyrl.md shows; ``overrides()`` is what `crossgym plan` and `crossgym train` pass.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import RunConfig

SKYRL_VERSION = "0.3.0"
#: the name crossgym's environment is registered under in skyrl_gym (the dataset's env_class column)
ENV_CLASS = "crossgym"
#: SkyRL 0.3.0's loss reductions (``trainer.algorithm.loss_reduction``); grpo.loss_type may name one
LOSS_REDUCTIONS = ("token_mean", "token_mean_legacy", "sequence_mean", "seq_mean_token_sum_norm", "prompt_mean")
#: prompt budget (``trainer.max_prompt_length``) when grpo.max_prompt_length is unset
DEFAULT_PROMPT_BUDGET = 1024

#: grpo.variant -> SkyRL algorithm knobs (explicit grpo fields win over the epsilons here)
VARIANTS: dict[str, dict[str, Any]] = {
    "grpo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "regular",
             "trainer.algorithm.loss_reduction": "sequence_mean"},
    "dapo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "regular",
             "trainer.algorithm.loss_reduction": "token_mean", "epsilon_high": 0.28},
    "dr_grpo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "regular",
                "trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm",
                "trainer.algorithm.grpo_norm_by_std": False},
    "gspo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "gspo",
             "trainer.algorithm.loss_reduction": "sequence_mean", "epsilon": 3e-4, "epsilon_high": 4e-4},
    "rloo": {"trainer.algorithm.advantage_estimator": "rloo", "trainer.algorithm.policy_loss_type": "regular",
             "trainer.algorithm.loss_reduction": "sequence_mean"},
    "cispo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "cispo",
              "trainer.algorithm.loss_reduction": "token_mean"},
    "sapo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.policy_loss_type": "sapo",
             "trainer.algorithm.loss_reduction": "sequence_mean"},
}
#: why SkyRL lacks a variant (one line in the error)
MISSING = {"reinforce_pp_baseline": "its reinforce++ estimator has no group baseline: it whitens the returns over "
                                    "the batch"}

#: (crossgym field, SkyRL override, note): the mapping table of docs/backends/skyrl.md
MAPPING: list[tuple[str, str, str]] = [
    ("model", "trainer.policy.model.path (trainer.ref.model.path follows it)",
     "a directory every Ray node can read (or a hub id with network)"),
    ("output_dir", "trainer.ckpt_path <output_dir>/checkpoints, trainer.export_path <output_dir>/export, "
     "trainer.log_path <output_dir>/skyrl/logs", "generated files in <output_dir>/skyrl/"),
    ("seed", "trainer.seed", "environment seeds: crossgym's episode_seed(seed, task id)"),
    ("tasks", "data.train_data [prompts.jsonl], environment.env_class crossgym",
     "rows: prompt (chat messages), env_class crossgym, task (the whole Task as JSON: SkyRL's env_extras)"),
    ("grpo.max_steps", "trainer.max_training_steps, trainer.epochs 1, prompts.jsonl rows = max_steps x "
     "train_batch_size", "tasks cycled (reshuffled by seed each pass)"),
    ("grpo.num_generations", "generator.n_samples_per_prompt", ""),
    ("grpo.per_device_train_batch_size x gradient_accumulation_steps x GPUs",
     "trainer.train_batch_size = trainer.policy_mini_batch_size = that / num_generations (prompts)",
     "one optimizer step per rollout batch"),
    ("grpo.per_device_train_batch_size", "trainer.micro_train_batch_size_per_gpu, "
     "trainer.micro_forward_batch_size_per_gpu", ""),
    ("grpo.num_iterations", "trainer.update_epochs_per_batch", ""),
    ("grpo.learning_rate", "trainer.policy.optimizer_config.lr", ""),
    ("grpo.beta", "> 0: trainer.algorithm.use_kl_loss true, kl_loss_coef, kl_estimator_type k3; 0: use_kl_loss "
     "false", "0 = no reference model (TRL's meaning)"),
    ("grpo.epsilon / epsilon_high", "trainer.algorithm.eps_clip_low / eps_clip_high", "high defaults to low"),
    ("grpo.max_completion_length", "generator.sampling_params.max_generate_length", ""),
    ("grpo.max_prompt_length", "trainer.max_prompt_length; generator.max_input_length (multi-turn: prompt budget "
     "+ max_completion_length)", f"unset: {DEFAULT_PROMPT_BUDGET}; SkyRL drops longer prompts from the dataset"),
    ("grpo.temperature / top_p", "generator.sampling_params.temperature / top_p", ""),
    ("grpo.scale_rewards", "trainer.algorithm.grpo_norm_by_std", ""),
    ("grpo.variant grpo", "advantage_estimator grpo, policy_loss_type regular, loss_reduction sequence_mean", ""),
    ("grpo.variant dapo", "regular, loss_reduction token_mean, eps_clip_high 0.28 when unset",
     "dynamic sampling: backend_args trainer.algorithm.dynamic_sampling.type: filter; overlong filtering: "
     "generator.apply_overlong_filtering: true"),
    ("grpo.variant dr_grpo", "grpo_norm_by_std false, loss_reduction seq_mean_token_sum_norm, "
     "algorithm.max_seq_len = max_completion_length", "Dr. GRPO's constant normaliser"),
    ("grpo.variant gspo", "policy_loss_type gspo, loss_reduction sequence_mean, eps_clip 3e-4 / 4e-4 when unset", ""),
    ("grpo.variant rloo", "advantage_estimator rloo, regular, sequence_mean", "leave-one-out group baseline"),
    ("grpo.variant cispo", "policy_loss_type cispo, loss_reduction token_mean",
     "trainer.algorithm.cispo.* keep SkyRL's defaults"),
    ("grpo.variant sapo", "policy_loss_type sapo, loss_reduction sequence_mean",
     "trainer.algorithm.sapo.* keep SkyRL's defaults"),
    ("grpo.variant reinforce_pp_baseline", "(none)", f"refused: {MISSING['reinforce_pp_baseline']}"),
    ("grpo.reward_aggregation normalize_then_sum", "(none)", "refused: SkyRL gets one summed reward per sample"),
    ("grpo.loss_type", "trainer.algorithm.loss_reduction", f"one of {', '.join(LOSS_REDUCTIONS)}"),
    ("grpo.filter_groups", "trainer.algorithm.dynamic_sampling.type filter, .max_sample_batches 10",
     "DAPO dynamic sampling: groups whose rewards are all equal are dropped and more batches sampled"),
    ("grpo.lora", "trainer.policy.model.lora.rank / alpha / dropout / target_modules", ""),
    ("grpo.save_steps", "trainer.ckpt_interval, trainer.hf_save_interval", "unset: max_steps (a final save)"),
    ("grpo.logging_steps", "(none)", "SkyRL logs every step (trainer.logger console)"),
    ("task verifiers + verifiers[] (weights)", "the crossgym skyrl_gym environment's step reward",
     "reward = task_weight x task verdict + sum(weight x extra verdict), given at the episode's last step"),
    ("environment / multi-turn / tools", "the same environment, generator.max_turns = environment.max_turns (unset: "
     "64)", "crossgym's episode driver plays the episode inside skyrl_gym's step contract"),
    ("on_error", "(reward value)", "a number; 'none' is refused: SkyRL's generator needs a float per step"),
    ("engine", "generator.inference_engine.backend vllm, num_engines = GPUs, tensor_parallel_size 1, "
     "trainer.placement.colocate_all true", "SkyRL generates with vLLM only (hf and vllm both mean vLLM)"),
    ("(GPUs)", "trainer.placement.policy_num_gpus_per_node = ref_num_gpus_per_node = visible GPUs (1 if none), "
     "*_num_nodes 1", "set them in backend_args for a cluster: batch sizes follow them"),
    ("resume", "trainer.resume_mode none / latest / from_path (+ trainer.resume_path)", ""),
    ("(defaults)", "trainer.logger console, trainer.eval_interval -1, trainer.eval_before_train false, "
     "trainer.project_name crossgym", "crossgym's own eval gate runs before train"),
    ("backend_args", "any SkyRL override, dotted (trainer.policy.fsdp_config.cpu_offload: true)",
     "passed through last, replacing crossgym's value; null drops crossgym's"),
]


def markdown_table() -> str:
    """MAPPING as the Markdown table docs/backends/skyrl.md shows (a test keeps the page current)."""
    rows = [f"| crossgym | SkyRL {SKYRL_VERSION} | note |", "|---|---|---|"]
    rows += [f"| `{a}` | {b} | {c} |" for a, b, c in MAPPING]
    return "\n".join(rows) + "\n"


def check_run(run: RunConfig) -> None:
    """Refuse, in one line each, what SkyRL cannot do."""
    if run.on_error == "none":
        raise ConfigError("SkyRL cannot mask a missing reward (its generator needs a float for every step)",
                          where="on_error", fix="set on_error to a number, e.g. 0.0")
    if run.engine not in ("hf", "vllm"):
        raise ConfigError(f"SkyRL {SKYRL_VERSION} generates with vLLM only, not {run.engine!r}", where="engine",
                          fix="set engine: vllm (or remove it)")
    g = run.grpo
    if g.variant not in VARIANTS:
        why = MISSING.get(g.variant)
        raise ConfigError(f"SkyRL {SKYRL_VERSION} has no variant {g.variant!r}" + (f" ({why})" if why else ""),
                          where="grpo.variant", fix=f"use one of {', '.join(VARIANTS)}")
    if getattr(g, "reward_aggregation", "sum") != "sum":
        raise ConfigError(f"SkyRL has no reward aggregation {g.reward_aggregation!r} (it gets one summed reward per "
                          "sample)", where="grpo.reward_aggregation", fix="use reward_aggregation: sum")
    if g.loss_type is not None and g.loss_type not in LOSS_REDUCTIONS:
        raise ConfigError(f"SkyRL {SKYRL_VERSION} has no loss reduction {g.loss_type!r}", where="grpo.loss_type",
                          fix=f"use one of {', '.join(LOSS_REDUCTIONS)} or leave it unset and pick grpo.variant")


def _arg(backend_args: dict[str, Any], key: str, default: Any) -> Any:
    value = backend_args.get(key)
    return default if value is None else value


def layout(run: RunConfig, *, tasks: int) -> dict[str, int]:
    """GPUs, batch sizes and dataset rows for ``run`` with ``tasks`` tasks."""
    g = run.grpo
    ba = run.backend_args
    gpus = int(_arg(ba, "trainer.placement.policy_num_gpus_per_node", visible_gpus() or 1))
    nodes = int(_arg(ba, "trainer.placement.policy_num_nodes", 1))
    completions = g.per_device_train_batch_size * g.gradient_accumulation_steps * gpus * nodes
    prompts = max(1, completions // g.num_generations)
    return {"gpus": gpus, "nodes": nodes, "completions": completions, "prompts": prompts,
            "rows": prompts * g.max_steps, "tasks": tasks}


def resume_settings(run: RunConfig) -> dict[str, Any]:
    """trainer.resume_mode (and resume_path) for run.resume: never, auto, or a checkpoint folder."""
    if run.resume == "never":
        return {"trainer.resume_mode": "none"}
    if run.resume == "auto":
        return {"trainer.resume_mode": "latest"}
    return {"trainer.resume_mode": "from_path", "trainer.resume_path": str(Path(run.resume).expanduser().resolve())}


def variant_settings(run: RunConfig) -> dict[str, Any]:
    """SkyRL algorithm knobs for grpo.variant, grpo.scale_rewards and grpo.loss_type (explicit fields win)."""
    g = run.grpo
    v = dict(VARIANTS[g.variant])
    low = g.epsilon if "epsilon" in g.model_fields_set else v.get("epsilon", g.epsilon)
    high = g.epsilon_high if g.epsilon_high is not None else v.get("epsilon_high", low)
    v.pop("epsilon", None)
    v.pop("epsilon_high", None)
    v["trainer.algorithm.eps_clip_low"] = low
    v["trainer.algorithm.eps_clip_high"] = high
    if not g.scale_rewards:
        v["trainer.algorithm.grpo_norm_by_std"] = False
    v.setdefault("trainer.algorithm.grpo_norm_by_std", True)
    if g.loss_type is not None:
        v["trainer.algorithm.loss_reduction"] = g.loss_type
    if v["trainer.algorithm.loss_reduction"] == "seq_mean_token_sum_norm":
        v["trainer.algorithm.max_seq_len"] = g.max_completion_length
    if g.filter_groups:  # DAPO dynamic sampling: groups whose rewards are all equal are dropped, batches resampled
        v["trainer.algorithm.dynamic_sampling.type"] = "filter"
        v["trainer.algorithm.dynamic_sampling.max_sample_batches"] = 10
    return v


def overrides(run: RunConfig, *, files: dict[str, str], multi_turn: bool, tasks: int) -> dict[str, Any]:
    """SkyRL overrides (dotted keys) in order; backend_args last. ``files`` maps role -> absolute path."""
    from crossgym.rollout.driver import MAX_TURNS, run_max_turns

    check_run(run)
    g = run.grpo
    lay = layout(run, tasks=tasks)
    out = Path(run.output_dir).resolve()
    prompt_budget = g.max_prompt_length or DEFAULT_PROMPT_BUDGET
    turns = (run_max_turns(run) or MAX_TURNS) if multi_turn else 1
    o: dict[str, Any] = {
        "data.train_data": [files["prompts"]],
        "data.val_data": [],
        "environment.env_class": ENV_CLASS,
        "trainer.policy.model.path": run.model,
        "trainer.seed": run.seed,
        "trainer.epochs": 1,
        "trainer.max_training_steps": g.max_steps,
        "trainer.train_batch_size": lay["prompts"],
        "trainer.policy_mini_batch_size": lay["prompts"],
        "trainer.micro_train_batch_size_per_gpu": g.per_device_train_batch_size,
        "trainer.micro_forward_batch_size_per_gpu": g.per_device_train_batch_size,
        "trainer.update_epochs_per_batch": g.num_iterations,
        "trainer.policy.optimizer_config.lr": g.learning_rate,
        "trainer.max_prompt_length": prompt_budget,
        "generator.n_samples_per_prompt": g.num_generations,
        "generator.max_turns": turns,
        "generator.max_input_length": prompt_budget + g.max_completion_length if multi_turn else prompt_budget,
        "generator.sampling_params.max_generate_length": g.max_completion_length,
        "generator.sampling_params.temperature": g.temperature,
        "generator.sampling_params.top_p": g.top_p,
    }
    o.update(variant_settings(run))
    if g.beta > 0:
        o.update({"trainer.algorithm.use_kl_loss": True, "trainer.algorithm.kl_loss_coef": g.beta,
                  "trainer.algorithm.kl_estimator_type": "k3"})
    else:
        o.update({"trainer.algorithm.use_kl_loss": False, "trainer.algorithm.use_kl_in_reward": False})
    if g.lora is not None:
        tm = g.lora.target_modules
        o.update({"trainer.policy.model.lora.rank": g.lora.r, "trainer.policy.model.lora.alpha": g.lora.alpha,
                  "trainer.policy.model.lora.dropout": g.lora.dropout,
                  "trainer.policy.model.lora.target_modules": tm if isinstance(tm, str) else ",".join(tm)})
    save = g.save_steps if g.save_steps is not None else g.max_steps
    o.update({
        "generator.inference_engine.backend": "vllm",
        "generator.inference_engine.num_engines": lay["gpus"] * lay["nodes"],
        "generator.inference_engine.tensor_parallel_size": 1,
        "trainer.placement.colocate_all": True,
        "trainer.placement.policy_num_nodes": lay["nodes"], "trainer.placement.policy_num_gpus_per_node": lay["gpus"],
        "trainer.placement.ref_num_nodes": lay["nodes"], "trainer.placement.ref_num_gpus_per_node": lay["gpus"],
        "trainer.ckpt_interval": save,
        "trainer.hf_save_interval": save,
        "trainer.ckpt_path": str(out / "checkpoints"),
        "trainer.export_path": str(out / "export"),
        "trainer.log_path": str(out / "skyrl" / "logs"),
        "trainer.logger": "console",
        "trainer.project_name": "crossgym",
        "trainer.run_name": out.name or "crossgym",
        "trainer.eval_interval": -1,
        "trainer.eval_before_train": False,
    })
    o.update(resume_settings(run))
    for key, value in run.backend_args.items():
        if not key or key.startswith(("-", "+")) or "=" in key or " " in key:
            raise ConfigError(f"backend_args key {key!r} is not a SkyRL override", where=f"backend_args.{key}",
                              fix="write SkyRL keys dotted, e.g. trainer.policy.fsdp_config.cpu_offload: true")
        if value is None:
            o.pop(key, None)
        else:
            o[key] = value  # replaces crossgym's value in place, or appends
    return o


def argv_from_overrides(o: dict[str, Any]) -> list[str]:
    """``key=value`` arguments as SkyRL's command line (OmegaConf.from_cli) reads them."""
    return [f"{k}={_fmt(v)}" for k, v in o.items()]


def _fmt(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        return str(v) if math.isinf(v) or math.isnan(v) else repr(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(list(v) if isinstance(v, tuple) else v)
    return str(v)
