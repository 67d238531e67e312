"""TRL's checkpoints (``<output_dir>/checkpoint-N``, written by transformers' Trainer every ``save_steps``) and
what resuming from one needs beyond ``trainer.train(resume_from_checkpoint=...)``.

A checkpoint is complete when its trainer_state.json (written last) parses and names its step, and the weights
(full or LoRA adapter) and optimizer state are there: a kill in the middle of a save leaves one that is not, and
``latest`` passes over it to the one before.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_NAME = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin", "adapter_model.bin",
            "model.safetensors.index.json")


def checkpoint_step(folder: Path) -> int | None:
    """The optimizer steps a complete TRL checkpoint folder holds; None when it is not one."""
    try:
        state = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    step = state.get("global_step") if isinstance(state, dict) else None
    if not isinstance(step, int):
        return None
    m = _NAME.match(folder.name)
    if m and int(m.group(1)) != step:
        return None
    if not any((folder / w).is_file() for w in _WEIGHTS) or not (folder / "optimizer.pt").is_file():
        return None
    return step


def checkpoints(output_dir: Path) -> list[tuple[int, Path]]:
    """Every checkpoint-N folder in ``output_dir`` (complete or not), by N."""
    if not output_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in output_dir.iterdir() if p.is_dir() and (m := _NAME.match(p.name))]
    return sorted(found)


def latest(output_dir: Path) -> tuple[int, Path] | None:
    """The newest complete checkpoint in ``output_dir``; incomplete newer ones (a kill mid-save) are passed over."""
    for _, folder in reversed(checkpoints(output_dir)):
        step = checkpoint_step(folder)
        if step is not None:
            return step, folder
        log.warning("%s is not a complete checkpoint (a kill while saving?): passing over it", folder)
    return None


def remove_checkpoints(output_dir: Path) -> int:
    """A fresh start (resume: never) removes the previous run's checkpoint-N folders, so that a later resume can
    only find this run's. Returns how many went."""
    gone = 0
    for _, folder in checkpoints(output_dir):
        shutil.rmtree(folder, ignore_errors=True)
        gone += 1
    if gone:
        log.warning("starting over in %s: removed %d checkpoint(s) of the previous run (resume: never)",
                    output_dir, gone)
    return gone


def apply_learning_rate(optimizer: Any, scheduler: Any, lr: float) -> None:
    """A resumed run: the optimizer and scheduler state loaded from the checkpoint carry the rate of the old
    config; put the run's base rate in and recompute the current rate at the scheduler's step (as LambdaLR does)."""
    inner = getattr(scheduler, "scheduler", scheduler)  # accelerate wraps the scheduler
    lambdas = getattr(inner, "lr_lambdas", None)
    groups = getattr(optimizer, "param_groups", None) or getattr(getattr(optimizer, "optimizer", None),
                                                                "param_groups", [])
    if hasattr(inner, "base_lrs"):
        inner.base_lrs = [lr for _ in inner.base_lrs]
    current = []
    for i, group in enumerate(groups):
        group["initial_lr"] = lr
        factor = lambdas[i](inner.last_epoch) if lambdas else 1.0
        group["lr"] = lr * factor
        current.append(group["lr"])
    if hasattr(inner, "_last_lr"):
        inner._last_lr = current


def advance_sampler(train_dataloader: Any, global_step: int, gradient_accumulation_steps: int) -> int:
    """A resumed run in a later data epoch: TRL's RepeatSampler draws each epoch's prompt order from its own
    generator, which the checkpoint does not hold, so the resumed run would replay the first epoch's order. Draw the
    permutations of the epochs already trained (as the uninterrupted run did, one per epoch) so the next epoch's
    order is the one it would have had. Returns how many were drawn (0 in the first epoch)."""
    import torch

    sampler = _repeat_sampler(train_dataloader)
    if sampler is None or not getattr(sampler, "shuffle", False):
        return 0
    n = len(train_dataloader)
    ga = max(1, gradient_accumulation_steps)
    per_epoch = max(n // ga + int(n % ga > 0), 1)  # transformers' num_update_steps_per_epoch
    epochs = global_step // per_epoch
    for _ in range(epochs):
        torch.randperm(sampler.num_samples, generator=sampler.generator)
    return epochs


def _repeat_sampler(obj: Any, depth: int = 0) -> Any:
    """The RepeatSampler under an (accelerate-wrapped) DataLoader, or None."""
    if obj is None or depth > 4:
        return None
    if hasattr(obj, "mini_repeat_count") and hasattr(obj, "generator") and hasattr(obj, "num_samples"):
        return obj
    for name in ("batch_sampler", "sampler", "base_dataloader"):
        found = _repeat_sampler(getattr(obj, name, None), depth + 1)
        if found is not None:
            return found
    return None


def generation_misalignment(step: int, args: Any) -> int | None:
    """None when a checkpoint at ``step`` falls on a generation boundary (GRPO generates every steps_per_generation
    x num_iterations micro-steps, so a resume there regenerates exactly as the uninterrupted run does); else the
    multiple of steps that save_steps should be for that."""
    import math

    ga = max(1, int(args.gradient_accumulation_steps))
    every = int(args.steps_per_generation or ga) * max(1, int(args.num_iterations))
    if (step * ga) % every == 0:
        return None
    return every // math.gcd(every, ga)
