"""TRL parity driver: the crossgym TRL backend builds a real GRPOTrainer (tiny local model), and the reward of each
(task, completion) is the trainer's own: ``GRPOTrainer._calculate_rewards`` (TRL 1.16) calls every reward function
and turns None into NaN, then the trainer's ``reward_weights`` combine the columns as its loss does (``nansum``; a
row every function left NaN is unscorable: None).

The inputs are what the trainer hands ``_calculate_rewards``: the dataset rows (as the dataloader yields them), the
rollout function's extra fields merged in (multi-turn: the whole Completion), the prompts, conversational
completions (``[{"role": "assistant", "content": text}]``) and the completion token ids (for a rollout function's
episodes, the text TRL decodes from them, special tokens skipped).

Modes: ``single_turn`` is whatever the backend builds for the tasks as given (a rollout function only if the tasks
need one); ``multi_turn`` sets ``environment.max_turns`` so the backend always uses its episode rollout function.
Everything framework-specific is reached through the trainer object: this module imports no framework itself, so
the Unsloth driver reuses it with ``backend="unsloth"``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.kit import replay as kit_replay
from crossgym.protocol.task import Completion, Task

log = logging.getLogger(__name__)

MODES = ("single_turn", "multi_turn")
#: _calculate_rewards stores each reward in a float32 tensor: that is the reward TRL trains on
REWARD_DTYPE = "float32"
#: a model directory to use instead of building the tiny model (the kit's setting)
MODEL_ENV = kit_replay.MODEL_ENV
model_dir = kit_replay.compat_model_dir


def run_config(mode: str, output_dir: str, model: str | None = None) -> Any:
    """A small RunConfig for building a trainer (no training happens)."""
    from crossgym.config import RunConfig

    data: dict[str, Any] = {
        "model": model or model_dir(), "tasks": {"files": ["(given in-process)"]}, "output_dir": output_dir,
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1,
                 "max_completion_length": 16, "logging_steps": 1},
    }
    if mode == "multi_turn":
        data["environment"] = {"max_turns": 4}
    return RunConfig.model_validate(data)


#: what a given RunConfig brings to the parity run (a blend's parts and their verifiers, its environment, its rule)
GIVEN_KEYS = ("tasks", "environment", "verifiers", "on_error", "task_weight", "seed")


def given_run_config(run: Any, output_dir: str) -> Any:
    """The parity RunConfig with ``run``'s tasks section, environment and reward settings (GIVEN_KEYS): the trainer
    then builds the reward functions a run of ``run`` trains with (a blend's per-part verifiers included)."""
    from crossgym.config import RunConfig

    data = run_config("single_turn", output_dir).model_dump(mode="json", exclude_unset=True)
    given = run.model_dump(mode="json", exclude_unset=True)
    data.update({k: given[k] for k in GIVEN_KEYS if k in given})
    return RunConfig.model_validate(data)


def build_trainer(tasks: Sequence[Task], mode: str, output_dir: str, backend: str = "trl", run: Any = None) -> Any:
    """The GRPOTrainer the crossgym ``backend`` (TRL, or one built on its trainer such as Unsloth) builds for
    ``tasks`` in ``mode`` (``run``: a RunConfig whose tasks section and rule to build it for), and the backend."""
    from crossgym.api import get_backend

    b = get_backend(backend)
    run = (run_config(mode, output_dir) if run is None else given_run_config(run, output_dir)
           ).with_overrides(backend=backend)
    trainer = b.build_trainer(run, tasks=list(tasks), record_rollouts=False)  # type: ignore[attr-defined]
    return trainer, b


def _completion_text(c: Completion) -> str:
    return "".join(m.content for m in c.messages if m.role == "assistant") if len(c.messages) > 1 else c.text


#: completion_ids cover at most this many characters of the text: a trainer never generates 1 MB, and the reward
#: functions under test do not read the ids (tokenizing the garbage corpus in full would dominate the run)
IDS_CHARS = 4096


def _ids(tokenizer: Any, text: str, cache: dict[str, list[int]]) -> list[int]:
    if text not in cache:
        head = text[:IDS_CHARS].encode("utf-8", "replace").decode("utf-8")  # ids never decode to lone surrogates
        cache[text] = list(tokenizer(head, add_special_tokens=False)["input_ids"])
    return cache[text]


def trainer_inputs(trainer: Any, completions: Sequence[Completion], episodes: bool
                   ) -> tuple[list[dict[str, Any]], list[Any], list[Any], list[list[int]]]:
    """``(inputs, prompts, completions, completion_ids)`` as the trainer hands them to ``_calculate_rewards``."""
    from crossgym.adapters.trl.rows import COMPLETION_COLUMN

    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    inputs = [dict(trainer.train_dataset[i]) for i in range(len(completions))]
    if episodes:  # extra_fields from the rollout function, merged into the inputs
        for inp, c in zip(inputs, completions, strict=True):
            inp[COMPLETION_COLUMN] = json.dumps(c.to_dict())
    texts = [_completion_text(c) for c in completions]
    cache: dict[str, list[int]] = {}
    completion_ids = [_ids(tokenizer, t, cache) for t in texts]
    if episodes:  # TRL decodes the rollout's completion ids (tool results included) with special tokens skipped
        texts = [tokenizer.decode(ids, skip_special_tokens=True) for ids in completion_ids]
    return (inputs, [inp["prompt"] for inp in inputs], [[{"role": "assistant", "content": t}] for t in texts],
            completion_ids)


def trainer_rewards(trainer: Any, completions: Sequence[Completion], episodes: bool) -> list[float | None]:
    """The trainer's rewards: ``_calculate_rewards`` (None -> NaN per function), weighted by its
    ``reward_weights`` and summed as its loss does (``nansum``); a row with every function NaN is None."""
    import math

    per_func = trainer._calculate_rewards(*trainer_inputs(trainer, completions, episodes))
    weights = trainer.reward_weights.to(per_func.device)
    rewards = (per_func * weights.unsqueeze(0)).nansum(dim=1)
    unscorable = per_func.isnan().all(dim=1)
    return [None if bool(u) or math.isnan(float(r)) else float(r)
            for r, u in zip(rewards.tolist(), unscorable.tolist(), strict=True)]


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion], *, mode: str = "single_turn",
                   backend: str = "trl", run: Any = None) -> list[float | None]:
    """The reward the ``backend``'s GRPOTrainer computes for each (task, completion), called as TRL calls it.
    ``run``: the trainer is built for that RunConfig's tasks section and rule (a blend: one reward function per
    verifier and per extra term, a part's own terms included); its tasks decide whether a rollout function is used."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not tasks:
        return []
    with tempfile.TemporaryDirectory(prefix=f"crossgym-compat-{backend}-") as out:
        trainer, b = build_trainer(tasks, mode, out, backend, run=run)
        episodes = b.rollout_func is not None
        if mode == "multi_turn" and not episodes:
            raise RuntimeError(f"the {backend} backend built no rollout function for a multi-turn run")
        return trainer_rewards(trainer, completions, episodes)


def record_rollouts(tasks: Sequence[Task], completions: Sequence[Completion], path: str | Path, *,
                    backend: str = "trl") -> None:
    """Score the samples through the trainer's own reward computation with the backend's rollout recording on,
    as in training; the rollouts.jsonl it writes is copied to ``path`` (for the compat suite's records check)."""
    from crossgym.api import get_backend

    with tempfile.TemporaryDirectory(prefix=f"crossgym-compat-{backend}-") as out:
        b = get_backend(backend)
        run = run_config("single_turn", out).with_overrides(backend=backend)
        trainer = b.build_trainer(run, tasks=list(tasks), record_rollouts=True)  # type: ignore[attr-defined]
        trainer_rewards(trainer, completions, b.rollout_func is not None)  # type: ignore[attr-defined]
        shutil.copyfile(Path(out) / "rollouts.jsonl", path)


@functools.lru_cache(maxsize=1)
def _config_class() -> Any:
    """TRL's GRPOConfig class, taken from a trainer the backend builds (this module imports no framework)."""
    from crossgym.protocol.messages import user
    from crossgym.protocol.task import VerifierSpec

    probe = Task(id="probe", prompt=(user("1+1?"),), answer="2", verifier=VerifierSpec("exact_match"))
    with tempfile.TemporaryDirectory(prefix="crossgym-compat-trl-") as out:
        trainer, _ = build_trainer([probe], "single_turn", out)
        return type(trainer.args)


def validate_plan(plan: Any) -> None:
    """TRL's own config parsing must accept the plan: ``GRPOConfig(**plan.native_config["GRPOConfig"])``."""
    _config_class()(**dict(plan.native_config["GRPOConfig"]))


#: makes the untrained tiny model end its turns after a few tokens, so episodes reach several turns
EARLY_EOS = {"exponential_decay_length_penalty": (4, 1.6)}


def episode_tokens(tasks: Sequence[Task], *, env: str, max_turns: int = 3, backend: str = "trl") -> dict[str, Any]:
    """Play one GRPO group per task through the backend's rollout function (the one GRPOTrainer calls) and return
    the ids it hands TRL to train on: prompt_ids, completion_ids and env_mask (1 = model tokens). ``backend``: a
    backend built on the TRL backend's trainer (Unsloth's driver passes "unsloth")."""
    from crossgym.config import RunConfig

    with tempfile.TemporaryDirectory(prefix="crossgym-compat-trl-") as out:
        run = run_config("multi_turn", out)
        data = run.model_dump(mode="json")
        data["environment"] = {"name": env, "max_turns": max_turns}
        data["grpo"]["max_completion_length"] = 96
        data["backend_args"] = {"generation_kwargs": dict(EARLY_EOS)}
        from crossgym.api import get_backend

        trl_backend = get_backend(backend)
        trainer = trl_backend.build_trainer(RunConfig.model_validate(data), tasks=list(tasks),  # type: ignore[attr-defined]
                                            record_rollouts=False)
        if trl_backend.rollout_func is None:  # type: ignore[attr-defined]
            raise RuntimeError(f"the {backend} backend built no rollout function for a multi-turn environment")
        n = trainer.args.num_generations
        prompts = [trainer.train_dataset[i]["prompt"] for i in range(len(tasks)) for _ in range(n)]
        got = trl_backend.rollout_func(prompts, trainer)  # type: ignore[attr-defined]
    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    masks = got.get("env_mask") or [None] * len(prompts)
    return {"tokenizer": tokenizer,
            "episodes": [{"prompt_ids": p, "completion_ids": c, "mask": m}
                         for p, c, m in zip(got["prompt_ids"], got["completion_ids"], masks, strict=True)]}


#: grpo.variant values whose advantages the TRL backend computes (compat_tests.advantages)
ADVANTAGE_VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "cispo", "sapo")


def advantages(groups: Sequence[Sequence[float | None]], variant: str, *, backend: str = "trl") -> list[list[float]]:
    """The advantages TRL's GRPOTrainer computes for ``groups`` of rewards under ``grpo.variant`` ``variant``.

    The backend builds the trainer for the variant (its loss_type / scale_rewards mapping) on the tiny model; the
    trainer's reward call (``_calculate_rewards``) is given the fixed rewards (None -> NaN, as TRL stores a reward
    function's None), and its own ``_generate_and_score_completions`` runs (generation included) and returns the
    ``advantages`` it trains on. Groups of one size go through one call, with the trainer's ``num_generations`` set
    to that size (TRL views the rewards as ``(-1, num_generations)``; ``num_generations_eval`` when the model is in
    eval mode, as it is here).
    """
    rows = [[[r] for r in g] for g in groups]
    return _trainer_advantages(rows, {"grpo": {"variant": variant}}, backend=backend)


def aggregated_advantages(groups: Sequence[Sequence[Sequence[float | None]]], weights: Sequence[float], *,
                          backend: str = "trl") -> list[list[float]]:
    """The advantages TRL's GRPOTrainer computes under reward aggregation normalize_then_sum (the backend maps it to
    ``multi_objective_aggregation='normalize_then_sum'``): each completion's reward is one value per reward
    function, the task verifier's first, then one extra verifier per further weight (the run's ``task_weight`` and
    ``verifiers[].weight``; the trainer's ``reward_weights`` must come out as ``weights``)."""
    extra = [{"name": "length", "params": {"max": 8 + i}, "weight": float(w)} for i, w in enumerate(weights[1:])]
    changes = {"grpo": {"reward_aggregation": "normalize_then_sum"}, "task_weight": float(weights[0]),
               "verifiers": extra}
    return _trainer_advantages(groups, changes, backend=backend, weights=weights)


def _trainer_advantages(groups: Sequence[Sequence[Sequence[float | None]]], changes: dict[str, Any], *,
                        backend: str, weights: Sequence[float] | None = None) -> list[list[float]]:
    import torch

    from crossgym.api import get_backend
    from crossgym.config import RunConfig
    from crossgym.protocol.messages import user
    from crossgym.protocol.task import VerifierSpec

    out: list[list[float] | None] = [None] * len(groups)
    probe = Task(id="advantages", prompt=(user("1+1?"),), answer="2", verifier=VerifierSpec("exact_match"))
    with tempfile.TemporaryDirectory(prefix=f"crossgym-compat-{backend}-") as tmp:
        data = run_config("single_turn", tmp).model_dump(mode="json", exclude_unset=True)
        data["grpo"].update(changes.get("grpo", {}))
        data.update({k: v for k, v in changes.items() if k != "grpo"})
        run = RunConfig.model_validate(data).with_overrides(backend=backend)
        trainer = get_backend(backend).build_trainer(run, tasks=[probe], record_rollouts=False)  # type: ignore[attr-defined]
        if weights is not None and [float(w) for w in trainer.reward_weights] != [float(w) for w in weights]:
            raise RuntimeError(f"the trainer's reward_weights {trainer.reward_weights.tolist()} are not {list(weights)}")
        row = dict(trainer.train_dataset[0])
        for size in sorted({len(g) for g in groups}):
            picked = [i for i, g in enumerate(groups) if len(g) == size]
            flat = torch.tensor([[math.nan if r is None else float(r) for r in c] for i in picked for c in groups[i]],
                                dtype=torch.float32)
            trainer.num_generations = trainer.num_generations_eval = size  # train or eval mode alike
            trainer._calculate_rewards = lambda *a, _flat=flat, **k: _flat.clone()
            got = trainer._generate_and_score_completions([dict(row) for _ in range(len(picked) * size)])
            adv = got["advantages"].reshape(len(picked), size).tolist()
            for i, a in zip(picked, adv, strict=True):
                out[i] = [float(x) for x in a]
    return [a if a is not None else [] for a in out]



def loss_weights(variant: str, lengths: Sequence[int], horizon: int, *, log_ratio: Sequence[Sequence[float]] | None
                 = None, advantages: Sequence[float] | None = None) -> list[list[float]]:
    """-d loss / d log-prob of each completion token through TRL's own ``GRPOTrainer._compute_loss`` for
    ``variant`` (the trainer the TRL backend builds, ``max_completion_length`` = ``horizon``).

    The model's per-token log-probs are fixed (``_get_per_token_logps_and_entropies`` returns a leaf tensor; the old
    log-probs are the same, so the ratio is 1), every advantage is 1, the completions have ``lengths`` tokens under
    ``completion_mask``, and ``num_items_in_batch`` is their token count (one process, one accumulation step: the
    trainer is in eval mode, where TRL divides by neither the accumulation steps nor steps_per_generation).
    ``log_ratio`` (per token: the old log-probs are the fixed ones minus it) and ``advantages`` (per sequence) make
    the batch off-policy.
    """
    import torch

    from crossgym.api import get_backend
    from crossgym.config import RunConfig
    from crossgym.protocol.messages import user
    from crossgym.protocol.task import VerifierSpec

    probe = Task(id="loss-weights", prompt=(user("1+1?"),), answer="2", verifier=VerifierSpec("exact_match"))
    b = len(lengths)
    with tempfile.TemporaryDirectory(prefix="crossgym-compat-trl-") as tmp:
        data = run_config("single_turn", tmp).model_dump(mode="json", exclude_unset=True)
        data["grpo"].update({"variant": variant, "max_completion_length": horizon})
        run = RunConfig.model_validate(data).with_overrides(backend="trl")
        trainer = get_backend("trl").build_trainer(run, tasks=[probe], record_rollouts=False)  # type: ignore[attr-defined]
        if trainer.max_completion_length != horizon:
            raise RuntimeError(f"the trainer's max_completion_length is {trainer.max_completion_length}, not {horizon}")
        mask = torch.zeros(b, horizon, dtype=torch.long)
        for i, n in enumerate(lengths):
            mask[i, :n] = 1
        logps = torch.zeros(b, horizon, requires_grad=True)
        trainer._get_per_token_logps_and_entropies = lambda *a, **k: (logps, torch.zeros(b, horizon), None)
        inputs = {"prompt_ids": torch.ones(b, 1, dtype=torch.long), "prompt_mask": torch.ones(b, 1, dtype=torch.long),
                  "completion_ids": torch.zeros(b, horizon, dtype=torch.long), "completion_mask": mask,
                  "advantages": (torch.tensor(advantages, dtype=torch.float32) if advantages is not None
                                 else torch.ones(b)),
                  "num_items_in_batch": mask.sum(), "ref_per_token_logps": torch.zeros(b, horizon)}
        if log_ratio is not None:
            inputs["old_per_token_logps"] = -torch.tensor(log_ratio, dtype=torch.float32)
        trainer.model.eval()
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
        assert logps.grad is not None
        return [[float(-g) for g in row] for row in logps.grad]
