"""Rewards as SkyRL itself computes them, for the compat suite (run inside the skyrl venv; no GPU, no vLLM).

Each (task, completion) goes through SkyRL 0.3.0's own training path: the generated prompt dataset is read by
SkyRL's ``PromptDataset`` (its chat-template length filter included) and batched by its ``collate_fn`` and
``prepare_generator_input``; SkyRL's ``SkyRLGymGenerator`` runs each sample's agent loop, building crossgym's
skyrl_gym environment with ``skyrl_gym.make`` exactly as in training, and SkyRL's
``convert_prompts_responses_to_batch_tensors`` turns the per-token rewards into the float32 reward tensor the
trainer's advantage estimator sums. Only the inference engine is replaced: a replay client returns the
completion's assistant turns as token ids. The tokenizer is byte-level, so any text round-trips.

``validate_plan(plan)`` runs a Plan's overrides through SkyRL's ``SkyRLTrainConfig.from_cli_overrides`` and
``validate_cfg``.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.kit.replay import action_text, qwen_byte_tokenizer
from crossgym.adapters.skyrl import files
from crossgym.adapters.skyrl.config_map import ENV_CLASS
from crossgym.adapters.skyrl.env import EnvConfig, needs_episode
from crossgym.protocol.task import Completion, Task
from crossgym.scoring import RewardRule

#: SkyRL's trainer holds rewards in float32 tensors (convert_prompts_responses_to_batch_tensors)
REWARD_DTYPE = "float32"


class ReplayClient:
    """Stands in for SkyRL's inference client: each generate() returns the sample's next scripted turn, as vLLM
    does (the text without the end-of-turn token, the ids with it)."""

    def __init__(self, tokenizer: Any, turns: dict[str, list[str]]) -> None:
        self.tok = tokenizer
        self.turns = {k: list(v) for k, v in turns.items()}
        self.calls: dict[str, list[list[int]]] = {}
        self.weight_version = None

    async def generate(self, engine_input: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        session = engine_input["session_ids"][0]
        uid = session.rsplit("_", 1)[0]
        self.calls.setdefault(uid, []).append(list(engine_input["prompt_token_ids"][0]))
        queue = self.turns.get(uid) or []
        text = queue.pop(0) if queue else ""
        ids = list(self.tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
        return {"responses": [text], "response_ids": [[*ids, self.tok.eos_token_id]], "stop_reasons": ["stop"],
                "response_logprobs": None}

    async def finish_session(self, session_id: str) -> None:
        return None


def _turns(task: Task, completion: Completion) -> list[str]:
    if needs_episode(task, None):
        return [action_text(m) for m in completion.assistant_messages] or [""]
    return [completion.text]


def generator_run(tasks: Sequence[Task], completions: Sequence[Completion | str], *, rule: RewardRule,
                  rollouts: str | Path | None = None, max_turns: int = 16, tokenizer: Any = None,
                  env: str | None = None, env_max_turns: int | None = None, seed: int = 0,
                  turns: Sequence[Sequence[str]] | None = None) -> tuple[dict[str, Any], ReplayClient, Any]:
    """(SkyRL's GeneratorOutput, the replay client, the tokenizer) for the pairs, through SkyRL's dataset,
    batching and generator with crossgym's environment registered as in training. ``turns``: the texts the
    replay client returns per sample (default: each completion's assistant turns); ``env``/``env_max_turns``:
    the run's explicit environment and turn limit."""
    from crossgym.adapters.skyrl.native import import_skyrl, register_env

    import_skyrl()
    from skyrl.train.config import GeneratorConfig, SamplingParams, SkyRLGymConfig
    from skyrl.train.dataset import PromptDataset
    from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator
    from skyrl.train.generators.utils import prepare_generator_input

    if len(tasks) != len(completions):
        raise ValueError(f"{len(tasks)} tasks but {len(completions)} completions")
    tok = tokenizer or qwen_byte_tokenizer()
    comps = [Completion.from_text(c) if isinstance(c, str) else c for c in completions]
    register_env(EnvConfig(rule=rule, env=env, max_turns=env_max_turns, seed=seed,
                           rollouts=None if rollouts is None else str(rollouts)).to_dict())
    with tempfile.TemporaryDirectory(prefix="crossgym-skyrl-") as tmp:
        data = Path(tmp) / "prompts.jsonl"
        data.write_text(files.dataset_jsonl(tasks), encoding="utf-8")
        dataset = PromptDataset(datasets=[str(data)], tokenizer=tok, max_prompt_length=1 << 20, num_workers=1)
        if len(dataset) != len(tasks):
            raise RuntimeError(f"SkyRL's PromptDataset kept {len(dataset)} of {len(tasks)} rows")
        batch = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    gen_input, _ = prepare_generator_input(batch, 1, None, ENV_CLASS, "train", 0)
    scripts = list(turns) if turns is not None else [_turns(t, c) for t, c in zip(tasks, comps, strict=True)]
    client = ReplayClient(tok, {str(i): list(x) for i, x in enumerate(scripts)})
    cfg = GeneratorConfig(max_turns=max_turns, max_input_length=1 << 20,
                          sampling_params=SamplingParams(max_generate_length=1 << 16, logprobs=None))
    generator = SkyRLGymGenerator(generator_cfg=cfg, skyrl_gym_cfg=SkyRLGymConfig(max_env_workers=0),
                                  inference_engine_client=client, tokenizer=tok)
    out = asyncio.run(generator.generate(gen_input, disable_tqdm=True))
    return out, client, tok


def trained_rewards(output: dict[str, Any], tokenizer: Any) -> list[float]:
    """The reward of each sample as SkyRL's trainer holds it: its batch tensors (float32, per token), summed."""
    from skyrl.train.dataset.preprocess import convert_prompts_responses_to_batch_tensors

    tensors = convert_prompts_responses_to_batch_tensors(
        tokenizer, output["prompt_token_ids"], output["response_ids"], output["rewards"], output["loss_masks"])
    rewards = tensors[3]
    return [float(r) for r in rewards.sum(dim=-1).tolist()]


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], *, on_error: float = 0.0,
                   rule: RewardRule | None = None, rollouts: str | Path | None = None) -> list[float | None]:
    """Each completion's reward through SkyRL's own generator and batch tensors (float32)."""
    out, _, tok = generator_run(tasks, completions, rule=rule or RewardRule(on_error=on_error), rollouts=rollouts)
    return list(trained_rewards(out, tok))


def record_rollouts(tasks: Sequence[Task], completions: Sequence[Completion | str], path: str | Path) -> None:
    """Score the samples through SkyRL's path with training-time rollout recording on (records at ``path``)."""
    generator_run(tasks, completions, rule=RewardRule(), rollouts=path)


#: what the replay client answers in each turn of a token-consistency episode (awkward on purpose)
EPISODE_TURNS = ("First try: 41.", "  Second — «42»?\n", "<tool_call> is text here. 42")


def episode_tokens(tasks: Sequence[Task], *, env: str, max_turns: int = 3) -> dict[str, Any]:
    """The ids SkyRL's generator would train on for multi-turn episodes of ``tasks`` in ``env``: the prompt ids,
    the response ids (actions and environment observations) and SkyRL's loss mask (1: the policy's tokens)."""
    out, _, tok = generator_run(tasks, [Completion.from_text("") for _ in tasks], rule=RewardRule(), env=env,
                                env_max_turns=max_turns, max_turns=max_turns,
                                turns=[list(EPISODE_TURNS[:max_turns]) for _ in tasks])
    episodes = [{"prompt_ids": list(p), "completion_ids": list(r), "mask": list(m)}
                for p, r, m in zip(out["prompt_token_ids"], out["response_ids"], out["loss_masks"], strict=True)]
    return {"tokenizer": tok, "episodes": episodes}


def validate_plan(plan: Any) -> None:
    """SkyRL's own parse and validation of the Plan's overrides (raises what SkyRL raises)."""
    from crossgym.adapters.skyrl.native import parse_overrides

    parse_overrides(list(plan.argv[2:]))


#: the variants SkyRL runs (config_map.VARIANTS); the advantages hook takes each
ADVANTAGE_VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "cispo", "sapo")
#: how SkyRL 0.3.0 normalises a group (read from ppo_utils.compute_grpo_outcome_advantage: torch.std, unbiased,
#: epsilon 1e-6; a group of ONE gets mean 0 and std 1, so its advantage is r / (1 + 1e-6), not 0)
GRPO_EPS = 1e-6


def advantage_source() -> str:
    return "skyrl 0.3.0 ppo_utils.compute_advantages_and_returns (AdvantageEstimatorRegistry: grpo / rloo)"


def advantages(groups: Sequence[Sequence[float | None]], variant: str) -> list[list[float]]:
    """The advantages SkyRL's trainer computes for ``groups`` of rewards under ``grpo.variant`` ``variant``.

    Calls ``ppo_utils.compute_advantages_and_returns`` as the trainer does, with the estimator and
    ``grpo_norm_by_std`` crossgym's mapping sets for the variant (``config_map.variant_settings``), on
    ``token_level_rewards`` holding each reward at the last response token (as the generator places it), responses
    of different lengths under ``response_mask`` (the k-th has ``compat_tests.advantages.response_length(k)``
    tokens) and one index per group. Every response token must carry the same advantage; that value is returned per
    sequence. SkyRL has no mask for a missing reward: None is an error."""
    import numpy as np
    import torch

    from crossgym.adapters.skyrl.config_map import variant_settings
    from crossgym.adapters.skyrl.native import import_skyrl
    from crossgym.compat_tests.advantages import WIDTH, response_length
    from crossgym.config import RunConfig

    import_skyrl()
    from skyrl.backends.skyrl_train.utils.ppo_utils import compute_advantages_and_returns
    from skyrl.train.config import AlgorithmConfig

    if any(r is None for g in groups for r in g):
        raise ValueError("SkyRL has no mask for a missing (None) reward")
    run = RunConfig.model_validate({"model": "m", "tasks": {"files": ["-"]}, "grpo": {"variant": variant}})
    knobs = variant_settings(run)
    rows = [(gi, float(r)) for gi, g in enumerate(groups) for r in g]  # type: ignore[arg-type]
    lengths = [response_length(k) for k in range(len(rows))]
    mask = torch.zeros(len(rows), WIDTH, dtype=torch.float32)
    rewards = torch.zeros(len(rows), WIDTH, dtype=torch.float32)
    for k, ((_, r), n) in enumerate(zip(rows, lengths, strict=True)):
        mask[k, :n] = 1.0
        rewards[k, n - 1] = r
    adv, _ = compute_advantages_and_returns(
        token_level_rewards=rewards, response_mask=mask, index=np.array([str(gi) for gi, _ in rows], dtype=object),
        adv_estimator=knobs["trainer.algorithm.advantage_estimator"], config=AlgorithmConfig(),
        grpo_norm_by_std=knobs["trainer.algorithm.grpo_norm_by_std"])
    out: list[list[float]] = [[] for _ in groups]
    for k, ((gi, _), n) in enumerate(zip(rows, lengths, strict=True)):
        row = adv[k, :n]
        if not bool((row == row[0]).all()) or bool((adv[k, n:] != 0).any()):
            raise RuntimeError(f"SkyRL gave sequence {k} different advantages across its tokens: {adv[k].tolist()}")
        out[gi].append(float(row[0]))
    return out
