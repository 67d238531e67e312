"""RunConfig -> Hydra overrides for ``python -m verl.trainer.main_ppo`` (pure: no veRL import).

MAPPING is the table docs/backends/verl.md shows; ``overrides()`` returns the ordered key -> value settings and
``hydra_args()`` renders them as ``key=value`` strings Hydra parses back to the same values. ``backend_args`` are
applied last and untouched (a key we also set is replaced in place, so each key appears once).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.adapters.kit.variants import check_variant
from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import RunConfig

#: veRL 0.9.1's loss aggregation modes (ActorConfig.__post_init__ accepts exactly these).
LOSS_AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
#: grpo.loss_type given in TRL's names -> veRL's loss aggregation (a config written for TRL keeps its meaning).
TRL_LOSS_NAMES = {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "bnpo": "token-mean",
                  "dr_grpo": "seq-mean-token-sum-norm"}
#: crossgym engine -> veRL rollout.name ("hf" has no veRL rollout: vLLM stands in, with a note).
ENGINES = {"hf": "vllm", "vllm": "vllm", "sglang": "sglang"}

#: grpo.variant -> veRL knobs. clip_ratio_* apply only when grpo.epsilon / epsilon_high were not set explicitly.
VARIANTS: dict[str, dict[str, Any]] = {
    "grpo": {"loss_agg_mode": "seq-mean-token-mean", "loss_mode": "vanilla"},
    "dapo": {"loss_agg_mode": "token-mean", "loss_mode": "vanilla", "clip_ratio_high": 0.28},
    "dr_grpo": {"loss_agg_mode": "seq-mean-token-sum-norm", "loss_mode": "vanilla", "norm_adv_by_std": False},
    "gspo": {"loss_agg_mode": "seq-mean-token-mean", "loss_mode": "gspo", "clip_ratio_low": 3e-4,
             "clip_ratio_high": 4e-4},
    "rloo": {"adv_estimator": "rloo", "loss_agg_mode": "seq-mean-token-mean", "loss_mode": "vanilla"},
    "reinforce_pp_baseline": {"adv_estimator": "reinforce_plus_plus_baseline", "loss_agg_mode": "token-mean",
                              "loss_mode": "vanilla"},
    # CISPO clips the (detached) ratio from above only: clip_ratio_low 1.0 (ratio >= 0), clip_ratio_high
    # grpo.epsilon_high (4.0 unset: ScaleRL's cap of 5 on the ratio, TRL's epsilon_high 5.0)
    "cispo": {"loss_agg_mode": "token-mean", "loss_mode": "cispo", "clip_ratio_low": 1.0, "clip_ratio_high": 4.0},
    # SAPO: veRL's tau_pos/tau_neg defaults 1.0/1.05 are TRL's sapo_temperature_pos/neg; veRL's sapo loss always
    # aggregates seq-mean-token-mean
    "sapo": {"loss_agg_mode": "seq-mean-token-mean", "loss_mode": "sapo"},
}
#: reward keys of the generated reward module's dict that veRL's gdpo normalises one by one (crossgym.scoring.metrics)
GDPO_TASK_KEY = "crossgym/task_reward"

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."

#: (crossgym field, veRL override(s), note): the mapping table of docs/backends/verl.md.
MAPPING: list[tuple[str, str, str]] = [
    ("(always)", "algorithm.adv_estimator=grpo, algorithm.use_kl_in_reward=false", "group-relative advantages "
     "(rloo: rloo; reinforce_pp_baseline: reinforce_plus_plus_baseline; reward_aggregation normalize_then_sum: gdpo)"),
    ("model", "actor_rollout_ref.model.path", "a local directory or hub id, visible on every node"),
    ("tasks / eval_tasks", "data.train_files / data.val_files", "parquet written by crossgym (no eval_tasks: the "
     "train file, with validation off)"),
    ("grpo.num_generations", R + "n", ""),
    ("grpo.per_device_train_batch_size x gradient_accumulation_steps x GPUs / num_generations",
     "data.train_batch_size = " + A + "ppo_mini_batch_size", "prompts per step; one optimizer step per batch, as "
     "in TRL"),
    ("grpo.per_device_train_batch_size", A + "ppo_micro_batch_size_per_gpu, " + R + "log_prob_micro_batch_size_per_gpu"
     ", actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "completions per GPU per forward"),
    ("grpo.learning_rate", A + "optim.lr", ""),
    ("grpo.beta", A + "use_kl_loss, " + A + "kl_loss_coef, " + A + "kl_loss_type=low_var_kl",
     "beta 0: no KL loss and no reference model"),
    ("grpo.epsilon / epsilon_high", A + "clip_ratio_low / clip_ratio_high", "epsilon_high unset: = epsilon (dapo "
     "0.28, gspo 3e-4/4e-4 when unset)"),
    ("grpo.max_prompt_length", "data.max_prompt_length + data.filter_overlong_prompts=true", "unset: 1024"),
    ("grpo.max_completion_length", "data.max_response_length", "multi-turn: budget for all turns, tool results "
     "included"),
    ("grpo.temperature / top_p", R + "temperature / top_p", ""),
    ("grpo.max_steps", "trainer.total_training_steps, trainer.total_epochs", "epochs: enough to reach max_steps"),
    ("grpo.num_iterations", A + "ppo_epochs", ""),
    ("grpo.scale_rewards", "algorithm.norm_adv_by_std_in_grpo", "variant dr_grpo: false"),
    ("grpo.variant", A + "loss_agg_mode, " + A + "policy_loss.loss_mode", "grpo: seq-mean-token-mean/vanilla; dapo: "
     "token-mean/vanilla; dr_grpo: seq-mean-token-sum-norm/vanilla, no std scaling; gspo: seq-mean-token-mean/gspo"),
    ("grpo.variant rloo / reinforce_pp_baseline", "algorithm.adv_estimator=rloo / reinforce_plus_plus_baseline",
     "seq-mean-token-mean / token-mean, vanilla"),
    ("grpo.variant cispo / sapo", A + "policy_loss.loss_mode=cispo / sapo", "cispo: token-mean, clip_ratio_low 1.0, "
     "clip_ratio_high = grpo.epsilon_high (4.0 unset); sapo: seq-mean-token-mean, tau_pos/tau_neg 1.0/1.05"),
    ("grpo.reward_aggregation normalize_then_sum", "algorithm.adv_estimator=gdpo, +algorithm.gdpo_reward_keys, "
     "+algorithm.gdpo_reward_weights", "keys: crossgym/task_reward and crossgym/extra/<term> of the reward dict; "
     "weights: task_weight and each verifier's weight"),
    ("grpo.loss_type", A + "loss_agg_mode", "veRL names, or TRL's grpo/dapo/bnpo/dr_grpo mapped to them"),
    ("grpo.filter_groups", "algorithm.filter_groups.enable=true, .metric=reward, .max_num_gen_batches=10",
     "DAPO dynamic sampling in veRL's v1 trainer: groups whose rewards are all equal are dropped and refilled"),
    ("grpo.lora", "actor_rollout_ref.model.lora_rank / lora_alpha / target_modules", "dropout is not a veRL knob"),
    ("grpo.save_steps", "trainer.save_freq", "unset: max_steps (one checkpoint at the end)"),
    ("grpo.eval_steps / eval_limit", "trainer.test_freq", "veRL validates on every eval_task (eval_limit is TRL's); unset: "
     "save_steps, else max_steps; -1 without eval_tasks"),
    ("grpo.logging_steps", "(none)", "veRL logs every step"),
    ("seed", "data.seed, " + R + "seed", ""),
    ("output_dir", "trainer.default_local_dir = <output_dir>/checkpoints", "plus trainer.experiment_name"),
    ("engine", R + "name", "vllm or sglang; hf has no veRL rollout, so vllm stands in"),
    ("on_error, task_weight, verifiers[]", "reward.custom_reward_function.path=<output_dir>/verl/crossgym_reward.py",
     "bound in the generated module; on_error must be a number"),
    ("environment", R + "multi_turn.enable, " + R + "agent.agent_loop_config_path", "multi-turn/tool tasks: the "
     "agent_name column picks crossgym's agent loop; it drives reset/step; environment tokens masked"),
    ("environment.max_turns", R + "multi_turn.max_assistant_turns", ""),
    ("(GPUs)", "trainer.n_gpus_per_node, trainer.nnodes", "GPUs seen here, else 1; override in backend_args"),
    ("resume", "trainer.resume_mode, trainer.resume_from_path", "never: disable; auto: auto (the latest "
     "global_step_N in <output_dir>/checkpoints); a folder: resume_path + its absolute path (must name global_step_N)"),
    ("(fixed)", R + "tensor_model_parallel_size=1, trainer.logger=[console]",
     "override in backend_args"),
    ("backend_args", "(any key)", "dotted Hydra keys (nested mappings are flattened), applied last, untouched"),
]


def markdown_table() -> str:
    """MAPPING as the Markdown table docs/backends/verl.md shows (a test keeps the page in step)."""
    def cell(text: str) -> str:
        return text if not text or text.startswith("(") else f"`{text}`"

    rows = ["| crossgym | veRL override | note |", "|---|---|---|"]
    rows += [f"| {cell(a)} | {cell(b)} | {c} |" for a, b, c in MAPPING]
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Paths:
    """Where the generated files live (absolute paths on the machine that launches veRL)."""

    train_files: str
    val_files: str | None
    reward_module: str
    agent_loops: str | None = None
    tool_config: str | None = None
    checkpoints: str = "checkpoints"


def flatten_backend_args(args: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """backend_args as dotted Hydra keys; nested mappings are flattened, values are left as they are."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not full.startswith(("+", "~")) and not _is_dict_leaf(full):
            out.update(flatten_backend_args(value, full + "."))
        else:
            out[full] = value
    return out


def _is_dict_leaf(key: str) -> bool:
    # settings whose value is itself a mapping in veRL's config (kept whole)
    return key.endswith(("reward_kwargs", "engine_kwargs", "override_config", "runtime_env"))


def variant_settings(run: RunConfig) -> dict[str, Any]:
    """veRL's clip ratios, loss aggregation, policy-loss mode and std scaling for grpo.variant / grpo.loss_type."""
    g = run.grpo
    explicit = g.model_fields_set
    check_variant(run, "verl")
    v = VARIANTS[g.variant]
    if g.variant == "cispo":  # one-sided: grpo.epsilon does not apply (TRL's cispo has no lower clip either)
        high = g.epsilon_high if g.epsilon_high is not None else v["clip_ratio_high"]
        return {"clip_ratio_low": v["clip_ratio_low"], "clip_ratio_high": high, "loss_agg_mode": _agg(g, v),
                "loss_mode": v["loss_mode"], "norm_adv_by_std_in_grpo": bool(g.scale_rewards),
                "adv_estimator": v.get("adv_estimator", "grpo")}
    # gspo's tiny ratios yield to an explicit epsilon; dapo's clip-higher yields only to an explicit epsilon_high
    low = v["clip_ratio_low"] if "clip_ratio_low" in v and "epsilon" not in explicit else g.epsilon
    if g.epsilon_high is not None:
        high = g.epsilon_high
    elif "clip_ratio_high" in v and (g.variant == "dapo" or "epsilon" not in explicit):
        high = v["clip_ratio_high"]
    else:
        high = low
    norm = v.get("norm_adv_by_std", bool(g.scale_rewards))
    return {"clip_ratio_low": low, "clip_ratio_high": high, "loss_agg_mode": _agg(g, v), "loss_mode": v["loss_mode"],
            "norm_adv_by_std_in_grpo": norm, "adv_estimator": v.get("adv_estimator", "grpo")}


def _agg(g: Any, v: Mapping[str, Any]) -> str:
    agg = str(v["loss_agg_mode"])
    if g.loss_type is not None:
        agg = TRL_LOSS_NAMES.get(g.loss_type, g.loss_type)
        if agg not in LOSS_AGG_MODES:
            raise ConfigError(f"veRL 0.9.1 has no loss aggregation {g.loss_type!r}", where="grpo.loss_type",
                              fix=f"use one of {', '.join(LOSS_AGG_MODES)} (or leave it unset and pick grpo.variant)")
    return agg


def gdpo_settings(run: RunConfig) -> dict[str, Any]:
    """The gdpo overrides for reward aggregation normalize_then_sum ({} for "sum"): veRL normalises each key of the
    reward dict (the task term, then each extra term, by crossgym's metric names) within its group, weighted."""
    from crossgym.adapters.kit.variants import check_aggregation
    from crossgym.scoring import RewardRule
    from crossgym.scoring.metrics import extra_key

    if not check_aggregation(run, "verl"):
        return {}
    rule = RewardRule.from_run(run)
    return {"algorithm.adv_estimator": "gdpo",
            "+algorithm.gdpo_reward_keys": [GDPO_TASK_KEY] + [extra_key(t.name) for t in rule.extras],
            "+algorithm.gdpo_reward_weights": [rule.task_weight] + [t.weight for t in rule.extras]}


def filter_groups_settings(run: RunConfig) -> dict[str, Any]:
    """grpo.filter_groups: veRL's DAPO dynamic sampling (the v1 trainer's algorithm.filter_groups) on the
    canonical reward: groups whose rewards are all equal are dropped and refilled, at most 10 generation batches a
    step."""
    if not run.grpo.filter_groups:
        return {}
    return {"algorithm.filter_groups.enable": True, "algorithm.filter_groups.metric": "reward",
            "algorithm.filter_groups.max_num_gen_batches": 10}


def rollout_name(run: RunConfig) -> tuple[str, str | None]:
    """(veRL rollout.name, a note or None) for run.engine; unknown engines are one ConfigError."""
    name = ENGINES.get(run.engine)
    if name is None:
        raise ConfigError(f"veRL cannot generate with engine {run.engine!r}", where="engine",
                          fix="use vllm or sglang (veRL's rollout engines)")
    note = None if run.engine == name else "engine hf: veRL has no hf rollout, so generation runs on vLLM"
    return name, note


def overrides(run: RunConfig, paths: Paths, *, n_tasks: int | None = None, episodes: bool = False,
              gpus: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """(ordered Hydra key -> value, notes) for ``run``; ``gpus`` is GPUs per node (detected when None)."""
    from crossgym.adapters.verl.reward import reward_settings

    reward_settings(run)  # on_error "none" fails here, before anything else
    g = run.grpo
    notes: list[str] = []
    extra = flatten_backend_args(run.backend_args)
    if "trainer.n_gpus_per_node" in extra:
        per_node = int(extra["trainer.n_gpus_per_node"])
    else:
        per_node = visible_gpus() if gpus is None else gpus
        if per_node < 1:
            notes.append("no GPU visible here: planned for 1 GPU per node (set backend_args "
                         "trainer.n_gpus_per_node for the cluster)")
            per_node = 1
    nnodes = int(extra.get("trainer.nnodes", 1))
    world = per_node * nnodes
    completions = g.per_device_train_batch_size * g.gradient_accumulation_steps * world
    prompts = completions // g.num_generations
    engine, note = rollout_name(run)
    if note:
        notes.append(note)
    v = variant_settings(run)
    max_steps = g.max_steps
    epochs = 1
    if n_tasks is not None:
        per_epoch = n_tasks // prompts
        if per_epoch < 1:
            raise ConfigError(f"{n_tasks} tasks make no full batch of {prompts} prompts per step (veRL drops the "
                              "last partial batch)", where="tasks / grpo.per_device_train_batch_size",
                              fix=f"give at least {prompts} tasks or a smaller per_device_train_batch_size")
        epochs = math.ceil(max_steps / per_epoch)
    has_eval = paths.val_files is not None
    o: dict[str, Any] = {
        "algorithm.adv_estimator": v["adv_estimator"],
        "algorithm.norm_adv_by_std_in_grpo": v["norm_adv_by_std_in_grpo"],
        "algorithm.use_kl_in_reward": False,
        **filter_groups_settings(run),
        "data.train_files": paths.train_files,
        "data.val_files": paths.val_files or paths.train_files,
        "data.train_batch_size": prompts,
        "data.max_prompt_length": g.max_prompt_length or 1024,
        "data.max_response_length": g.max_completion_length,
        "data.filter_overlong_prompts": True,
        "data.seed": run.seed,
        "actor_rollout_ref.model.path": run.model,
        A + "optim.lr": g.learning_rate,
        A + "ppo_mini_batch_size": prompts,
        A + "ppo_micro_batch_size_per_gpu": g.per_device_train_batch_size,
        A + "ppo_epochs": g.num_iterations,
        A + "use_kl_loss": g.beta > 0,
        A + "kl_loss_coef": g.beta,
        A + "kl_loss_type": "low_var_kl",
        A + "entropy_coeff": 0,
        A + "clip_ratio_low": v["clip_ratio_low"],
        A + "clip_ratio_high": v["clip_ratio_high"],
        A + "loss_agg_mode": v["loss_agg_mode"],
        A + "policy_loss.loss_mode": v["loss_mode"],
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": g.per_device_train_batch_size,
        R + "name": engine,
        R + "n": g.num_generations,
        R + "temperature": g.temperature,
        R + "top_p": g.top_p,
        R + "seed": run.seed,
        R + "tensor_model_parallel_size": 1,
        R + "log_prob_micro_batch_size_per_gpu": g.per_device_train_batch_size,
    }
    o.update(gdpo_settings(run))
    if g.lora is not None:
        o["actor_rollout_ref.model.lora_rank"] = g.lora.r
        o["actor_rollout_ref.model.lora_alpha"] = g.lora.alpha
        o["actor_rollout_ref.model.target_modules"] = g.lora.target_modules
        if g.lora.dropout:
            notes.append("grpo.lora.dropout has no veRL knob: ignored")
    if episodes:
        o[R + "multi_turn.enable"] = True
        o[R + "multi_turn.format"] = "hermes"
        if "max_turns" in run.environment.model_fields_set:
            o[R + "multi_turn.max_assistant_turns"] = run.environment.max_turns
        if paths.agent_loops:
            o[R + "agent.agent_loop_config_path"] = paths.agent_loops
        notes.append("multi-turn/tool tasks: crossgym's agent loop plays each episode (environment reset/step); "
                     "environment tokens get response_mask 0; the reward is the Verdict on the whole episode")
    if paths.tool_config:
        # not set as multi_turn.tool_config_path: crossgym's agent loop runs tools through the environment, and
        # veRL's dataset would count every tool's schema into every prompt's length
        notes.append(f"task tools as veRL BaseTools (for veRL's own tool_agent loop): {paths.tool_config}")
    o.update({
        "reward.custom_reward_function.path": paths.reward_module,
        "reward.custom_reward_function.name": "compute_score",
        "reward.reward_manager.name": "naive",
        "trainer.total_training_steps": max_steps,
        "trainer.total_epochs": epochs,
        "trainer.n_gpus_per_node": per_node,
        "trainer.nnodes": nnodes,
        "trainer.logger": ["console"],
        "trainer.project_name": "crossgym",
        "trainer.experiment_name": _experiment(run.output_dir),
        "trainer.default_local_dir": paths.checkpoints,
        "trainer.save_freq": g.save_steps or max_steps,
        "trainer.test_freq": (g.eval_steps or g.save_steps or max_steps) if has_eval else -1,
        "trainer.val_before_train": has_eval,
        **resume_settings(run, paths),
    })
    if g.logging_steps != 1:
        notes.append("grpo.logging_steps has no veRL knob: veRL logs every step")
    for key, value in extra.items():  # untouched, last; replacing ours in place keeps one value per key
        o[key] = value
    return o, notes


def resume_settings(run: RunConfig, paths: Paths) -> dict[str, Any]:
    """RunConfig.resume as veRL's trainer.resume_mode (and resume_from_path): veRL loads the checkpoint itself
    (actor weights and optimizer, the dataloader state, global_steps)."""
    if run.resume == "never":
        return {"trainer.resume_mode": "disable"}
    if run.resume == "auto":
        return {"trainer.resume_mode": "auto"}
    folder = Path(run.resume).expanduser()
    if not folder.is_absolute() and not folder.exists():
        folder = Path(paths.checkpoints) / folder
    if not folder.name.startswith("global_step_"):
        raise ConfigError(f"veRL resumes from a global_step_N folder, not {run.resume}", where="resume",
                          fix=f"name one under {paths.checkpoints}, or set resume: auto")
    return {"trainer.resume_mode": "resume_path", "trainer.resume_from_path": str(folder.resolve())}


def _experiment(output_dir: str) -> str:
    name = os.path.basename(os.path.normpath(output_dir)) or "run"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


_SAFE = re.compile(r"^[A-Za-z_/~][A-Za-z0-9_./+@%:~-]*$")
_KEYWORDS = {"true", "false", "null", "inf", "nan"}


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar that parses back to the same Python value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if _SAFE.match(text) and text.lower() not in _KEYWORDS and "${" not in text:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def hydra_args(settings: Mapping[str, Any]) -> list[str]:
    """``key=value`` strings for the command line (keys starting with + or ~ are kept as given)."""
    out = []
    for key, value in settings.items():
        if key.startswith("~") and value is None:
            out.append(key)
        else:
            out.append(f"{key}={hydra_value(value)}")
    return out
