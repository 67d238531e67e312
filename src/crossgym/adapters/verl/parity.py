"""Score completions through veRL's own reward machinery, as its trainer does, for the compat suite's parity checks.

``native_rewards(tasks, completions, mode=...)`` writes the generated reward module to a temporary folder, composes
veRL's ``ppo_trainer`` config with the overrides crossgym would pass and scores each sample the way veRL would:
single-turn through the reward manager main_ppo loads (``load_reward_manager``) on a tokenized DataProto,
multi-turn through crossgym's agent loop. ``validate_plan(plan)`` runs a Plan's argv through veRL's own config
composition and validation. These are the compat suite's hooks (``crossgym.compat_tests.drivers``). Needs veRL (the verl nox venv); imports it inside functions.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.verl.dataset import task_rows
from crossgym.adapters.verl.reward import COMPLETION_KEY, reward_module_source
from crossgym.protocol.task import Completion, Task

#: single_turn: veRL's reward manager on decoded responses; multi_turn: crossgym's agent loop scoring episodes.
MODES = ("single_turn", "multi_turn")

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def byte_tokenizer() -> Any:
    """The kit's lossless byte-level tokenizer with a ChatML template."""
    from crossgym.adapters.kit.replay import byte_tokenizer as kit_tokenizer

    return kit_tokenizer(("<pad>", "<|im_end|>", "<|im_start|>"), eos="<|im_end|>", pad="<pad>", chat_template=CHATML)


def _as_completion(value: Completion | str) -> Completion:
    return value if isinstance(value, Completion) else Completion.from_text(str(value))


def _is_episode(c: Completion) -> bool:
    return len(c.messages) != 1 or c.messages[0].role != "assistant" or bool(c.messages[0].tool_calls)


def _encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of generated text: text that looks like a special token stays text (a model emits the special
    token itself, not its spelling), and what UTF-8 cannot hold is replaced, as no decoder produces it."""
    safe = text.encode("utf-8", "replace").decode("utf-8")
    return list(tokenizer(safe, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def build_batch(tokenizer: Any, tasks: Sequence[Task], completions: Sequence[Completion | str], *,
                run: Any = None) -> Any:
    """A veRL DataProto as the rollout hands it to the reward manager: prompts left-padded, responses (completion
    text + end-of-turn token) right-padded, the dataset row's non-tensor fields, and for multi-message completions
    the whole episode in tool_extra_fields, as crossgym's agent loop leaves it."""
    import torch
    from verl import DataProto

    from crossgym.config import RunConfig, TasksConfig

    if len(tasks) != len(completions):
        raise ValueError(f"{len(tasks)} tasks but {len(completions)} completions")
    run = run or RunConfig(model="parity", tasks=TasksConfig(files=["-"]))
    rows = task_rows(tasks, run)
    comps = [_as_completion(c) for c in completions]
    pad = tokenizer.pad_token_id
    prompts = [list(tokenizer.apply_chat_template([{"role": m.role, "content": m.content} for m in t.prompt],
                                                  add_generation_prompt=True, tokenize=True, return_dict=False))
               for t in tasks]
    responses = [_encode(tokenizer, c.text) + [tokenizer.eos_token_id] for c in comps]
    width_p = max(len(p) for p in prompts)
    width_r = max(len(r) for r in responses)
    p_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    r_ids = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    attn = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
                         for p, r in zip(prompts, responses, strict=True)])
    positions = torch.clamp(torch.cumsum(attn, dim=1) - 1, min=0)
    extra = [{COMPLETION_KEY: json.dumps(c.to_dict(), ensure_ascii=False)} if _is_episode(c) else {} for c in comps]
    non_tensors = {
        "data_source": _objects([r["data_source"] for r in rows]),
        "reward_model": _objects([r["reward_model"] for r in rows]),
        "extra_info": _objects([dict(r["extra_info"]) for r in rows]),
        "raw_prompt": _objects([r["prompt"] for r in rows]),
        "tool_extra_fields": _objects(extra),
    }
    return DataProto.from_dict(
        tensors={"prompts": p_ids, "responses": r_ids, "input_ids": torch.cat([p_ids, r_ids], dim=1),
                 "attention_mask": attn, "position_ids": positions, "response_mask": attn[:, width_p:]},
        non_tensors=non_tensors)


def _objects(values: Sequence[Any]) -> Any:
    """A 1-D numpy object array of ``values`` (numpy would turn lists of lists into a 2-D array)."""
    import numpy as np

    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def compose_config(overrides: Sequence[str]) -> Any:
    """veRL's ppo_trainer config composed with ``overrides`` through Hydra, as main_ppo composes it."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def reward_overrides(module_path: str | Path, *, manager: str = "naive") -> list[str]:
    """The reward part of crossgym's overrides (plus a rollout name, which the config requires)."""
    return [f"reward.custom_reward_function.path={module_path}", "reward.custom_reward_function.name=compute_score",
            f"reward.reward_manager.name={manager}", "actor_rollout_ref.rollout.name=vllm"]


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], *, mode: str = "single_turn",
                   on_error: float = 0.0, manager: str = "naive", tokenizer: Any = None, rule: Any = None,
                   remote_url: str | None = None) -> list[float | None]:
    """The reward veRL gives each (task, completion), as a Python float.

    ``single_turn``: veRL's reward manager (``load_reward_manager`` from the composed config) on a tokenized
    DataProto, one sample per batch as its reward workers take them; the trainer then holds each as a float32
    rm_scores entry at the response's last token, and that placement is checked here too. ``multi_turn``: crossgym's
    agent loop scoring the whole episode, as it does inside veRL's rollout workers. ``rule``: the RewardRule the
    generated module binds (default: each task's verifier, errors scoring on_error); ``remote_url``: single-turn
    samples are scored by crossgym's remote reward function (``pkg://crossgym.serve.client``) against that server.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if len(tasks) != len(completions):
        raise ValueError(f"{len(tasks)} tasks but {len(completions)} completions")
    if not tasks:
        return []
    tokenizer = tokenizer or byte_tokenizer()
    with quiet(), tempfile.TemporaryDirectory(prefix="crossgym-verl-") as tmp:
        module = Path(tmp) / "crossgym_reward.py"
        from crossgym.scoring import RewardRule

        rule = rule or RewardRule(on_error=float(on_error))
        module.write_text(reward_module_source({"rule": rule.to_dict()}), encoding="utf-8")
        overrides = reward_overrides(module, manager=manager)
        if remote_url:
            overrides = ["reward.custom_reward_function.path=pkg://crossgym.serve.client",
                         "reward.custom_reward_function.name=verl_compute_score",
                         f"+reward.custom_reward_function.reward_kwargs.url='{remote_url}'",
                         *overrides[2:]]
        config = compose_config(overrides)
        if remote_url:  # the run's rule goes to the remote function as reward_kwargs, as the plan writes them
            from omegaconf import OmegaConf, open_dict

            with open_dict(config):
                config.reward.custom_reward_function.reward_kwargs["rule"] = OmegaConf.create(rule.to_dict())
        if mode == "multi_turn":
            return _agent_loop_rewards(config, tokenizer, tasks, [_as_completion(c) for c in completions])
        return _manager_rewards(config, tokenizer, tasks, completions)


def route_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], url: str, rule: Any
                  ) -> list[float | None]:
    """The rewards veRL's reward manager gets from crossgym's remote reward function against `crossgym serve` at
    ``url``, under ``rule`` (for the compat suite's route check)."""
    return native_rewards(tasks, completions, rule=rule, remote_url=url)


def _manager_rewards(config: Any, tokenizer: Any, tasks: Sequence[Task], completions: Sequence[Any]
                     ) -> list[float | None]:
    from verl.trainer.ppo.reward import load_reward_manager

    mgr = load_reward_manager(config, tokenizer)
    out: list[float | None] = []
    for task, completion in zip(tasks, completions, strict=True):
        data = build_batch(tokenizer, [task], [completion])
        result = mgr.loop.run_until_complete(mgr.run_single(data))
        score = None if result["reward_score"] is None else float(result["reward_score"])
        placed = type(mgr).assemble_rm_scores(data, [0.0 if score is None else score]).sum().item()
        if score is not None and abs(placed - score) > 1e-6 * max(1.0, abs(score)):
            raise AssertionError(f"veRL placed reward {placed} where the reward manager gave {score}")
        out.append(score)
    return out


def _agent_loop_rewards(config: Any, tokenizer: Any, tasks: Sequence[Task], completions: Sequence[Completion]
                        ) -> list[float | None]:
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from crossgym.adapters.verl.agent_loop import CrossgymAgentLoop

    loop = CrossgymAgentLoop(trainer_config=DictConfigWrap(config), server_manager=None, tokenizer=tokenizer,
                             processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data))

    async def score_all() -> list[float | None]:
        return [float((await loop._score(t, c))["score"]) for t, c in zip(tasks, completions, strict=True)]

    return loop.loop.run_until_complete(score_all())


def episode_tokens(tasks: Sequence[Task], *, env: str, max_turns: int = 3) -> dict[str, Any]:
    """The ids veRL would train on for one GRPO group per task, played through its AgentLoopWorker with crossgym's
    agent loop (see ``crossgym.adapters.verl.episodes``): {"tokenizer", "episodes": [{prompt_ids, completion_ids,
    mask}]}."""
    from crossgym.adapters.verl.episodes import play_episodes

    with quiet():
        return play_episodes(tasks, env=env, max_turns=max_turns)


def validate_plan(plan: Any) -> None:
    """veRL's own parsing must accept the plan: its argv composed with the packaged ppo_trainer config through
    Hydra (as main_ppo composes it), then ``validate_config`` and the config dataclasses veRL's workers build."""
    import importlib.util

    from omegaconf import open_dict
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    argv = list(plan.argv)
    if argv[1:3] != ["-m", "verl.trainer.main_ppo"]:
        raise ValueError(f"not a veRL main_ppo command: {' '.join(argv[:3])}")
    with quiet():
        cfg = compose_config(argv[3:])
        rollout = cfg.actor_rollout_ref.rollout
        lora_rank = int(cfg.actor_rollout_ref.model.get("lora_rank", 0) or 0)
        if lora_rank > 0 and rollout.name == "vllm" and importlib.util.find_spec("vllm") is None:
            # veRL's LoRA-rank check imports its vLLM rollout package, which refuses to load without vLLM (a GPU
            # install). Check the rank against the list veRL falls back to, and everything else as planned.
            if lora_rank > VLLM_MAX_LORA_RANK:
                raise ValueError(f"lora_rank must be less than or equal to {VLLM_MAX_LORA_RANK}, got {lora_rank}")
            with open_dict(cfg):
                cfg.actor_rollout_ref.model.lora_rank = 0
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        for section in (cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout, cfg.algorithm):
            omega_conf_to_dataclass(section)


#: the largest LoRA rank vLLM serves (veRL's fallback list when vLLM is not importable)
VLLM_MAX_LORA_RANK = 512


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """veRL prints progress to stdout; `crossgym compat --json` keeps stdout for its one JSON document."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


#: grpo.variant values whose advantages veRL computes (compat_tests.advantages); the estimator is the mapping's
ADVANTAGE_VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo", "sapo")


def _batch(n: int) -> tuple[Any, list[int]]:
    """(response_mask of n responses, their lengths): the k-th has ``advantages.response_length(k)`` tokens."""
    import torch

    from crossgym.compat_tests.advantages import WIDTH, response_length

    lengths = [response_length(k) for k in range(n)]
    mask = torch.zeros(n, WIDTH, dtype=torch.float32)
    for k, m in enumerate(lengths):
        mask[k, :m] = 1.0
    return mask, lengths


def _per_sequence(adv: Any, lengths: Sequence[int]) -> list[float]:
    """The one value every response token carries (an error where veRL gave a sequence's tokens different ones)."""
    out = []
    for i, n in enumerate(lengths):
        row = adv[i, :n]
        if not bool((row == row[0]).all()) or bool((adv[i, n:] != 0).any()):
            raise RuntimeError(f"veRL gave sequence {i} different advantages across its tokens: {adv[i].tolist()}")
        out.append(float(row[0]))
    return out


def _by_size(groups: Sequence[Sequence[Any]]) -> list[list[int]]:
    return [[i for i, g in enumerate(groups) if len(g) == n] for n in sorted({len(g) for g in groups})]


def advantages(groups: Sequence[Sequence[float | None]], variant: str) -> list[list[float]]:
    """The advantages veRL's trainer computes for ``groups`` of rewards under ``grpo.variant`` ``variant``.

    Called as ``RayPPOTrainer.fit`` calls it: ``verl.trainer.ppo.ray_trainer.compute_advantage(data, estimator,
    norm_adv_by_std_in_grpo=..., config=AlgoConfig())`` (grpo: ``core_algos.compute_grpo_outcome_advantage``; rloo,
    reinforce_plus_plus_baseline: the registered estimators), on a DataProto whose ``token_level_rewards`` hold each
    reward at the last response token (as veRL's reward managers place it), with responses of different lengths under
    ``response_mask`` and one ``uid`` per group. The estimator and ``norm_adv_by_std_in_grpo`` are what crossgym's
    mapping sets for the variant (``overrides.variant_settings``). Groups of one size go through one call (a batch of
    the batch-whitened estimators). Every response token must carry the same advantage; that value is returned per
    sequence. veRL has no mask for a missing reward: None is an error.
    """
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from crossgym.adapters.verl.overrides import variant_settings

    if any(r is None for g in groups for r in g):
        raise ValueError("veRL has no mask for a missing (None) reward")
    v = variant_settings(_run(variant))
    out: list[list[float]] = [[] for _ in groups]
    for picked in _by_size(groups):
        flat = [float(r) for i in picked for r in groups[i]]  # type: ignore[arg-type]
        uids = np.array([f"g{i}" for i in picked for _ in groups[i]], dtype=object)
        mask, lengths = _batch(len(flat))
        rewards = torch.zeros_like(mask)
        for k, (n, r) in enumerate(zip(lengths, flat, strict=True)):
            rewards[k, n - 1] = r
        data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                                   non_tensors={"uid": uids})
        adv = compute_advantage(data, v["adv_estimator"], norm_adv_by_std_in_grpo=v["norm_adv_by_std_in_grpo"],
                                config=AlgoConfig()).batch["advantages"]
        per_seq = _per_sequence(adv, lengths)
        size = len(groups[picked[0]])
        for j, i in enumerate(picked):
            out[i] = per_seq[j * size:(j + 1) * size]
    return out


def _run(variant: str, weights: Sequence[float] = (1.0,), aggregation: str = "sum") -> Any:
    """A RunConfig with ``variant``, one extra verifier per weight after the first, and ``aggregation``."""
    from crossgym.config import RunConfig

    return RunConfig.model_validate({
        "model": "m", "tasks": {"files": ["(given in-process)"]}, "backend": "verl", "task_weight": weights[0],
        "verifiers": [{"name": "length", "params": {"max": 8 + i}, "weight": w} for i, w in enumerate(weights[1:])],
        "grpo": {"variant": variant, "reward_aggregation": aggregation}})


def aggregated_advantages(groups: Sequence[Sequence[Sequence[float]]], weights: Sequence[float]) -> list[list[float]]:
    """The advantages veRL's ``gdpo`` estimator computes for reward aggregation normalize_then_sum, each completion's
    reward one value per term (the task term first, then each extra verifier, weighted by ``weights``).

    The keys and weights are the ones crossgym's mapping sets (``overrides.gdpo_settings``: ``gdpo_reward_keys``
    name the reward dict's crossgym/task_reward and crossgym/extra/<term> entries, which land in the batch's
    non_tensor_batch as veRL's reward_extra_info does); ``compute_advantage(data, "gdpo", config=AlgoConfig(...))``
    reads each term at the last response token, as the trainer does.
    """
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from crossgym.adapters.verl.overrides import gdpo_settings

    g = gdpo_settings(_run("grpo", weights, "normalize_then_sum"))
    keys, ws = g["+algorithm.gdpo_reward_keys"], g["+algorithm.gdpo_reward_weights"]
    out: list[list[float]] = [[] for _ in groups]
    for picked in _by_size(groups):
        flat = [list(map(float, c)) for i in picked for c in groups[i]]
        uids = np.array([f"g{i}" for i in picked for _ in groups[i]], dtype=object)
        mask, lengths = _batch(len(flat))
        prompt = 3
        attention = torch.cat([torch.ones(len(flat), prompt), mask], dim=1)
        summed = torch.zeros_like(mask)  # token_level_rewards: gdpo reads the terms instead
        for k, (n, c) in enumerate(zip(lengths, flat, strict=True)):
            summed[k, n - 1] = sum(w * x for w, x in zip(ws, c, strict=True))
        non_tensors: dict[str, Any] = {"uid": uids}
        for t, key in enumerate(keys):
            non_tensors[key] = np.array([c[t] for c in flat], dtype=np.float32)
        data = DataProto.from_dict(tensors={"token_level_rewards": summed, "response_mask": mask,
                                            "prompts": torch.zeros(len(flat), prompt, dtype=torch.long),
                                            "attention_mask": attention.long()}, non_tensors=non_tensors)
        adv = compute_advantage(data, "gdpo", norm_adv_by_std_in_grpo=True,
                                config=AlgoConfig(gdpo_reward_keys=list(keys), gdpo_reward_weights=list(ws))
                                ).batch["advantages"]
        per_seq = _per_sequence(adv, lengths)
        size = len(groups[picked[0]])
        for j, i in enumerate(picked):
            out[i] = per_seq[j * size:(j + 1) * size]
    return out


def loss_weights(variant: str, lengths: Sequence[int], horizon: int, *, log_ratio: Sequence[Sequence[float]] | None
                 = None, advantages: Sequence[float] | None = None) -> list[list[float]]:
    """-d loss / d log-prob of each response token through veRL's own policy loss for ``variant``.

    The actor config is the one veRL's worker builds from crossgym's overrides for the variant (composed through
    Hydra, ``omega_conf_to_dataclass`` of ``actor_rollout_ref.actor``, ``data.max_response_length`` = ``horizon``);
    its registered policy loss (``core_algos.get_policy_loss_fn(policy_loss.loss_mode)``: vanilla, gspo, cispo,
    sapo) runs with ``loss_agg_mode`` and ``global_batch_info`` as ``workers.utils.losses`` sets them (one
    data-parallel rank, the batch's tokens and sequences), on log-probs equal to the old ones (ratio 1) and
    advantage 1 on every token, responses of ``lengths`` padded to ``horizon``; ``log_ratio`` (per token) and
    ``advantages`` (per sequence) make the batch off-policy.
    """
    import tempfile

    import torch
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.utils.config import omega_conf_to_dataclass

    from crossgym.adapters.verl import overrides as ov
    from crossgym.config import RunConfig

    with tempfile.TemporaryDirectory(prefix="crossgym-compat-verl-") as tmp:
        run = RunConfig.model_validate({
            "model": tmp, "tasks": {"files": ["(given in-process)"]}, "backend": "verl", "output_dir": tmp,
            "grpo": {"variant": variant, "num_generations": 2, "per_device_train_batch_size": 2,
                     "max_completion_length": horizon}})
        paths = ov.Paths(train_files=f"{tmp}/t.parquet", val_files=None, reward_module=f"{tmp}/r.py")
        settings, _ = ov.overrides(run, paths, gpus=1)
        with quiet():
            cfg = compose_config(ov.hydra_args(settings))
            actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    b = len(lengths)
    mask = torch.zeros(b, horizon)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1.0
    actor.global_batch_info.update({"dp_size": 1, "batch_num_tokens": int(mask.sum()), "global_batch_size": b,
                                    "loss_scale_factor": actor.loss_scale_factor})
    log_prob = torch.zeros(b, horizon, requires_grad=True)
    old = -torch.tensor(log_ratio, dtype=torch.float32) if log_ratio is not None else torch.zeros(b, horizon)
    adv = (torch.tensor(advantages, dtype=torch.float32).unsqueeze(1).expand(b, horizon).contiguous()
           if advantages is not None else torch.ones(b, horizon))
    loss_fn = get_policy_loss_fn(actor.policy_loss.loss_mode)
    loss, _ = loss_fn(old_log_prob=old, log_prob=log_prob, advantages=adv, response_mask=mask,
                      loss_agg_mode=actor.loss_agg_mode, config=actor)
    loss.backward()
    assert log_prob.grad is not None
    return [[float(-g) for g in row] for row in log_prob.grad]
