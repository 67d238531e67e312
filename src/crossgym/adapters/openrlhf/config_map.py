"""RunConfig -> OpenRLHF 0.11.2 `train_ppo_ray` flags (pure: imports no framework).

OpenRLHF 0.11 spells every flag dotted (``--algo.advantage.estimator``); there are no old aliases. MAPPING is the
table docs/backends/openrlhf.md shows; ``flags()`` is what `crossgym plan` and `crossgym train` use.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.protocol.errors import ConfigError

if TYPE_CHECKING:
    from crossgym.config import RunConfig

OPENRLHF_VERSION = "0.11.2"
ENTRY = ("python", "-m", "openrlhf.cli.train_ppo_ray")
#: Policy-loss aggregation modes of 0.11.2 (``--actor.loss_agg_mode``); grpo.loss_type may name one.
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean")
#: Prompt budget used for ``--data.max_len`` when grpo.max_prompt_length is unset.
DEFAULT_PROMPT_BUDGET = 1024

#: grpo.variant -> OpenRLHF knobs. The estimator for grpo/dapo/gspo becomes dr_grpo when grpo.scale_rewards is
#: false (group mean without the std: group_norm has no switch for it).
VARIANTS: dict[str, dict[str, Any]] = {
    "grpo": {"algo.advantage.estimator": "group_norm", "actor.policy_loss_type": "ppo",
             "actor.loss_agg_mode": "seq-mean-token-mean"},
    "dapo": {"algo.advantage.estimator": "group_norm", "actor.policy_loss_type": "ppo",
             "actor.loss_agg_mode": "token-mean", "epsilon_high": 0.28},
    "dr_grpo": {"algo.advantage.estimator": "dr_grpo", "actor.policy_loss_type": "ppo",
                "actor.loss_agg_mode": "token-mean"},
    "gspo": {"algo.advantage.estimator": "group_norm", "actor.policy_loss_type": "gspo",
             "actor.loss_agg_mode": "seq-mean-token-mean", "epsilon": 3e-4, "epsilon_high": 4e-4},
    "rloo": {"algo.advantage.estimator": "rloo", "actor.policy_loss_type": "ppo",
             "actor.loss_agg_mode": "seq-mean-token-mean"},
    # REINFORCE++-baseline: the group mean subtracted, then whitened over the batch's tokens
    "reinforce_pp_baseline": {"algo.advantage.estimator": "reinforce_baseline", "actor.policy_loss_type": "ppo",
                              "actor.loss_agg_mode": "token-mean"},
}
#: why OpenRLHF lacks a variant (one line in the error)
MISSING = {"cispo": "its policy losses are ppo and gspo only", "sapo": "its policy losses are ppo and gspo only"}

#: (crossgym field, OpenRLHF flag, note): the mapping table of docs/backends/openrlhf.md.
MAPPING: list[tuple[str, str, str]] = [
    ("model", "--actor.model_name_or_path", "a directory every Ray node can read (or a hub id with network)"),
    ("output_dir", "--ckpt.output_dir <output_dir>/final, --ckpt.path <output_dir>/checkpoints",
     "generated files in <output_dir>/openrlhf/; --ckpt.save_hf"),
    ("seed", "--train.seed", ""),
    ("tasks", "--data.prompt_dataset prompts.jsonl, --data.input_key prompt, --data.label_key label, "
     "--data.apply_chat_template", "label = the whole Task as JSON (verifier spec and answer included)"),
    ("grpo.max_steps", "prompts.jsonl rows = max_steps x rollout batch, --train.num_episodes 1",
     "tasks cycled (reshuffled by seed each pass) so exactly max_steps rollout/update rounds run"),
    ("grpo.num_generations", "--rollout.n_samples_per_prompt", ""),
    ("grpo.per_device_train_batch_size x gradient_accumulation_steps x GPUs",
     "--train.batch_size (completions per update); --rollout.batch_size = that / num_generations (prompts)", ""),
    ("grpo.per_device_train_batch_size", "--train.micro_batch_size, --rollout.micro_batch_size", ""),
    ("grpo.num_iterations", "--train.max_epochs", "PPO epochs over each rollout batch"),
    ("grpo.learning_rate", "--actor.adam.lr", ""),
    ("grpo.beta", "--algo.kl.init_coef (+ --algo.kl.use_loss --algo.kl.estimator k3 when > 0)",
     "0 = no reference model (TRL's meaning)"),
    ("grpo.epsilon / epsilon_high", "--actor.eps_clip_low_high LOW HIGH", "high defaults to low"),
    ("grpo.max_completion_length", "--rollout.max_new_tokens", "multi-turn: the episode budget is --data.max_len"),
    ("grpo.max_prompt_length", "--data.max_len = prompt budget + max_completion_length",
     f"unset: prompt budget {DEFAULT_PROMPT_BUDGET}; OpenRLHF left-truncates longer prompts"),
    ("grpo.temperature / top_p", "--rollout.temperature / --rollout.top_p", ""),
    ("grpo.scale_rewards", "false: --algo.advantage.estimator dr_grpo", "group mean only, no std"),
    ("grpo.variant grpo", "--algo.advantage.estimator group_norm, --actor.policy_loss_type ppo, "
     "--actor.loss_agg_mode seq-mean-token-mean", ""),
    ("grpo.variant dapo", "group_norm, ppo, --actor.loss_agg_mode token-mean, eps_clip_low_high (eps, 0.28)",
     "dynamic sampling: backend_args algo.dynamic_filtering_enable: true; TRL's mask_truncated_completions has "
     "no OpenRLHF flag"),
    ("grpo.variant dr_grpo", "--algo.advantage.estimator dr_grpo, token-mean", ""),
    ("grpo.variant gspo", "--actor.policy_loss_type gspo, eps_clip_low_high 3e-4 4e-4 when unset", ""),
    ("grpo.variant rloo", "--algo.advantage.estimator rloo, ppo, seq-mean-token-mean", ""),
    ("grpo.variant reinforce_pp_baseline", "--algo.advantage.estimator reinforce_baseline, ppo, token-mean",
     "whitened over the batch's tokens"),
    ("grpo.variant cispo / sapo", "(none)", "refused: --actor.policy_loss_type is ppo or gspo"),
    ("grpo.reward_aggregation normalize_then_sum", "(none)", "refused: OpenRLHF gets one summed reward per sample"),
    ("grpo.loss_type", "--actor.loss_agg_mode", f"one of {', '.join(LOSS_AGG_MODES)}"),
    ("grpo.filter_groups", "--algo.dynamic_filtering_enable, --algo.dynamic_filtering_range 0 1",
     "drops a group whose mean task score is not strictly inside (0, 1): all failed or all passed; a group of "
     "equal partial scores (all 0.5) is kept, unlike veRL's and TRL's zero-variance rule"),
    ("grpo.lora", "--ds.lora.rank/alpha/dropout/target_modules", ""),
    ("grpo.logging_steps / save_steps", "--logger.logging_steps / --ckpt.save_steps", "unset save_steps: -1"),
    ("grpo.eval_steps / eval_limit", "(none)", "no held-out watch here (crossgym gives OpenRLHF no eval dataset); "
     "run `crossgym eval` on the saved checkpoints, or watch on TRL or veRL"),
    ("resume", "--ckpt.load_enable", "auto (or the latest checkpoint's folder): loads the latest "
     "<output_dir>/checkpoints/_actor/global_stepN; never: not set"),
    ("task verifiers + verifiers[] (weights)", "--reward.remote_url reward.py (reward_func)",
     "reward = task_weight x task verdict + sum(weight x extra verdict)"),
    ("environment / multi-turn / tools", "--train.agent_func_path agent.py (AgentExecutor)",
     "replaces --reward.remote_url; the agent scores the whole episode"),
    ("on_error", "(reward value)", "a number; 'none' is refused: OpenRLHF cannot mask a missing reward"),
    ("engine", "--vllm.num_engines = GPUs x nodes, --vllm.tensor_parallel_size 1, --train.colocate_all, "
     "--vllm.enable_sleep, --ds.enable_sleep, --vllm.gpu_memory_utilization 0.6",
     "OpenRLHF generates with vLLM only (hf and vllm both mean vLLM)"),
    ("(GPUs)", "--actor.num_nodes 1, --actor.num_gpus_per_node = visible GPUs (1 if none); --ref.* the same",
     "set actor.num_nodes / actor.num_gpus_per_node in backend_args for a cluster: batch sizes follow them"),
    ("(defaults)", "--ds.zero_stage 2, --ds.param_dtype bf16, --ds.attn_implementation sdpa, "
     "--actor.gradient_checkpointing_enable, --ckpt.save_hf", "flash_attention_2 needs flash-attn: set it in "
     "backend_args"),
    ("backend_args", "any train_ppo_ray flag, dotted, without '--'", "true = bare flag, false/null = drop it, "
     "list = several values; passed through last, replacing crossgym's value"),
]


def markdown_table() -> str:
    """MAPPING as the Markdown table docs/backends/openrlhf.md shows (a test keeps the page current)."""
    rows = ["| crossgym | OpenRLHF 0.11.2 | note |", "|---|---|---|"]
    rows += [f"| `{a}` | {b} | {c} |" for a, b, c in MAPPING]
    return "\n".join(rows) + "\n"


def _arg(backend_args: dict[str, Any], key: str, default: Any) -> Any:
    for k in (key, f"--{key}"):
        if k in backend_args and backend_args[k] is not None:
            return backend_args[k]
    return default


def variant_settings(run: RunConfig) -> dict[str, Any]:
    """OpenRLHF knobs for grpo.variant, grpo.scale_rewards and grpo.loss_type (explicit grpo fields win)."""
    from crossgym.adapters.kit.variants import check_aggregation, check_variant

    g = run.grpo
    check_variant(run, "openrlhf", MISSING)
    check_aggregation(run, "openrlhf")
    explicit = g.model_fields_set
    v = dict(VARIANTS[g.variant])
    low = g.epsilon if "epsilon" in explicit else v.pop("epsilon", g.epsilon)
    high = g.epsilon_high if g.epsilon_high is not None else v.pop("epsilon_high", low)
    v.pop("epsilon", None)
    v.pop("epsilon_high", None)
    v["actor.eps_clip_low_high"] = [low, high]
    if not g.scale_rewards and v["algo.advantage.estimator"] == "group_norm":
        v["algo.advantage.estimator"] = "dr_grpo"
    if g.loss_type is not None:
        if g.loss_type not in LOSS_AGG_MODES:
            raise ConfigError(f"OpenRLHF {OPENRLHF_VERSION} has no loss aggregation {g.loss_type!r}",
                              where="grpo.loss_type",
                              fix=f"use one of {', '.join(LOSS_AGG_MODES)} or leave it unset and pick grpo.variant")
        if g.variant == "gspo":
            raise ConfigError("OpenRLHF's gspo loss always averages per sequence; grpo.loss_type cannot change it",
                              where="grpo.loss_type", fix="leave grpo.loss_type unset with variant gspo")
        v["actor.loss_agg_mode"] = g.loss_type
    return v


def check_run(run: RunConfig) -> None:
    """Refuse, in one line each, what OpenRLHF cannot do."""
    if run.on_error == "none":
        raise ConfigError("OpenRLHF cannot mask a missing reward (a None reward stops its trainer)",
                          where="on_error", fix="set on_error to a number, e.g. 0.0")
    if run.engine not in ("hf", "vllm"):
        raise ConfigError(f"OpenRLHF {OPENRLHF_VERSION} generates with vLLM only, not {run.engine!r}",
                          where="engine", fix="set engine: vllm (or remove it)")


def layout(run: RunConfig, *, tasks: int) -> dict[str, int]:
    """GPUs, batch sizes and dataset rows for ``run`` with ``tasks`` tasks."""
    g = run.grpo
    ba = run.backend_args
    gpus = int(_arg(ba, "actor.num_gpus_per_node", visible_gpus() or 1))
    nodes = int(_arg(ba, "actor.num_nodes", 1))
    completions = g.per_device_train_batch_size * g.gradient_accumulation_steps * gpus * nodes
    prompts = max(1, completions // g.num_generations)
    return {"gpus": gpus, "nodes": nodes, "completions": completions, "prompts": prompts,
            "rows": prompts * g.max_steps, "tasks": tasks}


def flags(run: RunConfig, *, files: dict[str, str], agent: bool, tasks: int) -> dict[str, Any]:
    """OpenRLHF flags (dotted names, no '--') in order; backend_args last. ``files`` maps role -> absolute path."""
    check_run(run)
    g = run.grpo
    lay = layout(run, tasks=tasks)
    out = Path(run.output_dir).resolve()
    f: dict[str, Any] = {
        "actor.model_name_or_path": run.model,
        "data.prompt_dataset": files["prompts"],
        "data.input_key": "prompt",
        "data.label_key": "label",
        "data.apply_chat_template": True,
        "data.max_len": (g.max_prompt_length or DEFAULT_PROMPT_BUDGET) + g.max_completion_length,
        "data.max_samples": lay["rows"],
    }
    if agent:
        f["train.agent_func_path"] = files["agent"]
    else:
        f["reward.remote_url"] = files["reward"]
    f.update({
        "rollout.n_samples_per_prompt": g.num_generations,
        "rollout.batch_size": lay["prompts"],
        "rollout.micro_batch_size": g.per_device_train_batch_size,
        "rollout.max_new_tokens": g.max_completion_length,
        "rollout.temperature": g.temperature,
        "rollout.top_p": g.top_p,
        "train.batch_size": lay["completions"],
        "train.micro_batch_size": g.per_device_train_batch_size,
        "train.max_epochs": g.num_iterations,
        "train.num_episodes": 1,
        "train.seed": run.seed,
        "actor.adam.lr": g.learning_rate,
    })
    f.update(variant_settings(run))
    if g.beta > 0:
        f.update({"algo.kl.use_loss": True, "algo.kl.estimator": "k3", "algo.kl.init_coef": g.beta})
    else:
        f["algo.kl.init_coef"] = 0.0
    f.update({
        "actor.num_nodes": lay["nodes"], "actor.num_gpus_per_node": lay["gpus"],
        "ref.num_nodes": lay["nodes"], "ref.num_gpus_per_node": lay["gpus"],
        "vllm.num_engines": lay["gpus"] * lay["nodes"], "vllm.tensor_parallel_size": 1,
        "train.colocate_all": True, "vllm.enable_sleep": True, "ds.enable_sleep": True,
        "vllm.gpu_memory_utilization": 0.6,
        "ds.zero_stage": 2, "ds.param_dtype": "bf16", "ds.attn_implementation": "sdpa",
        "actor.gradient_checkpointing_enable": True,
    })
    if g.lora is not None:
        tm = g.lora.target_modules
        f.update({"ds.lora.rank": g.lora.r, "ds.lora.alpha": g.lora.alpha, "ds.lora.dropout": g.lora.dropout,
                  "ds.lora.target_modules": tm if isinstance(tm, list) else [tm]})
    f.update({
        "logger.logging_steps": g.logging_steps,
        "ckpt.save_steps": g.save_steps if g.save_steps is not None else -1,
        "ckpt.output_dir": str(out / "final"),
        "ckpt.path": str(out / "checkpoints"),
        "ckpt.save_hf": True,
    })
    f.update(resume_flags(run, out / "checkpoints"))
    if g.filter_groups:  # DAPO dynamic sampling: groups whose mean task score is 0 or 1 (all alike) are dropped
        f.update({"algo.dynamic_filtering_enable": True, "algo.dynamic_filtering_range": [0.0, 1.0]})
    for key, value in run.backend_args.items():
        name = key[2:] if key.startswith("--") else key
        if not name or name.startswith("-") or " " in name:
            raise ConfigError(f"backend_args key {key!r} is not an OpenRLHF flag name", where=f"backend_args.{key}",
                              fix="write flags dotted without dashes, e.g. vllm.num_engines: 2")
        f[name] = value  # replaces crossgym's value in place, or appends
    return f


def latest_checkpoint(ckpt_path: Path) -> tuple[int, Path] | None:
    """The checkpoint ``--ckpt.load_enable`` loads: DeepSpeed's ``latest`` tag under <ckpt.path>/_actor (written
    after a save completes), when its global_stepN folder is there."""
    actor = ckpt_path / "_actor"
    try:
        tag = (actor / "latest").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    step = checkpoint_step(actor / tag)
    return None if step is None else (step, actor / tag)


def checkpoint_step(folder: Path) -> int | None:
    """The step of an OpenRLHF actor checkpoint folder (_actor/global_stepN), else None."""
    name = folder.name
    if not name.startswith("global_step") or not name[len("global_step"):].isdigit() or not folder.is_dir():
        return None
    return int(name[len("global_step"):])


def resume_flags(run: RunConfig, ckpt_path: Path) -> dict[str, Any]:
    """RunConfig.resume as OpenRLHF's ``--ckpt.load_enable``: it loads the latest checkpoint in --ckpt.path
    (actor weights, optimizer and scheduler through DeepSpeed, global_step and the dataloader's position)."""
    if run.resume == "never":
        return {}
    if run.resume == "auto":
        return {"ckpt.load_enable": True}
    folder = Path(run.resume).expanduser()
    if not folder.is_absolute() and not folder.exists():  # as resume_point reads it
        folder = next((base / folder for base in (ckpt_path.parent, ckpt_path / "_actor")
                       if (base / folder).exists()), folder)
    found = latest_checkpoint(ckpt_path)
    if found is None or folder.resolve() not in (found[1].resolve(), ckpt_path.resolve()):
        latest = f"the latest is {found[1]}" if found else f"there is none in {ckpt_path} yet"
        raise ConfigError(f"OpenRLHF resumes only from the latest checkpoint in its --ckpt.path, not {run.resume} "
                          f"({latest})", where="resume", fix="set resume: auto")
    return {"ckpt.load_enable": True}


def argv_from_flags(f: dict[str, Any]) -> list[str]:
    """``--name value`` pairs; True -> bare flag, False/None -> left out, lists -> several values."""
    argv: list[str] = []
    for name, value in f.items():
        if value is None or value is False:
            continue
        if value is True:
            argv.append(f"--{name}")
        elif isinstance(value, (list, tuple)):
            argv.append(f"--{name}")
            argv.extend(_fmt(v) for v in value)
        else:
            argv.extend([f"--{name}", _fmt(value)])
    return argv


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return str(v)
        return repr(v)
    return str(v)
