"""Unsloth parity driver: the crossgym Unsloth backend builds a real GRPOTrainer on Unsloth's LoRA model (tiny local
model), and the rewards are that trainer's own ``GRPOTrainer._calculate_rewards`` weighted by its
``reward_weights`` (TRL 1.15, which Unsloth 2026.10.9 pins, computes them as 1.16 does).

The procedure is the TRL driver's own (``crossgym.adapters.trl.parity``), so the two backends are held to one
definition; only the trainer differs. Needs unsloth (the `unsloth` nox venv).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any

from crossgym.adapters.trl import parity as trl_driver
from crossgym.protocol.task import Completion, Task

MODES = ("single_turn", "multi_turn")
REWARD_DTYPE = trl_driver.REWARD_DTYPE


def build_trainer(tasks: Sequence[Task], mode: str, output_dir: str) -> tuple[Any, Any]:
    """The GRPOTrainer the crossgym Unsloth backend builds for ``tasks`` in ``mode``, and the backend."""
    return trl_driver.build_trainer(tasks, mode, output_dir, "unsloth")


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion], *, mode: str = "single_turn",
                   run: Any = None) -> list[float | None]:
    """The reward the Unsloth backend's GRPOTrainer computes for each (task, completion): the TRL driver's call
    (``run``: build the trainer for that RunConfig's tasks section and rule, e.g. a blend's)."""
    return trl_driver.native_rewards(tasks, completions, mode=mode, backend="unsloth", run=run)


def record_rollouts(tasks: Sequence[Task], completions: Sequence[Completion], path: Any) -> None:
    """The Unsloth trainer's recorded rollouts for the samples, at ``path``: the TRL driver's procedure."""
    trl_driver.record_rollouts(tasks, completions, path, backend="unsloth")


#: the variants whose advantages the Unsloth trainer (TRL's GRPOTrainer under Unsloth's pins) computes here
ADVANTAGE_VARIANTS = trl_driver.ADVANTAGE_VARIANTS


def advantages(groups: Sequence[Sequence[float | None]], variant: str) -> list[list[float]]:
    """The advantages the Unsloth backend's GRPOTrainer computes for ``groups``: the TRL driver's procedure."""
    return trl_driver.advantages(groups, variant, backend="unsloth")


def aggregated_advantages(groups: Sequence[Sequence[Sequence[float | None]]], weights: Sequence[float]
                          ) -> list[list[float]]:
    """Reward aggregation normalize_then_sum through the Unsloth backend's GRPOTrainer: the TRL driver's procedure."""
    return trl_driver.aggregated_advantages(groups, weights, backend="unsloth")


def episode_tokens(tasks: Sequence[Task], *, env: str, max_turns: int = 3) -> dict[str, Any]:
    """The token ids the Unsloth trainer's rollout function hands TRL for multi-turn episodes (prompt_ids,
    completion_ids, env_mask), played with Unsloth's model and tokenizer: the TRL driver's procedure."""
    return trl_driver.episode_tokens(tasks, env=env, max_turns=max_turns, backend="unsloth")


#: where Unsloth's GPU loader defines the arguments it takes (read, not imported: importing unsloth.models on a
#: CPU host patches trl as a side effect)
GPU_SIGNATURES = {"FastLanguageModel.from_pretrained": ("models/loader.py", "FastLanguageModel", "from_pretrained"),
                  "FastLanguageModel.get_peft_model": ("models/llama.py", "FastLlamaModel", "get_peft_model")}


def _gpu_parameters(relpath: str, cls: str, method: str) -> set[str]:
    """Named parameters of ``cls.method`` in the installed unsloth source file ``relpath``."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("unsloth")
    if spec is None or spec.origin is None:
        raise ImportError("unsloth is not installed")
    tree = ast.parse((Path(spec.origin).parent / relpath).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == method:
                    a = fn.args
                    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    raise LookupError(f"unsloth/{relpath} has no {cls}.{method}")


@functools.lru_cache(maxsize=1)
def _accepted() -> dict[str, set[str]]:
    """Argument names each Unsloth entry point takes: its GPU loader's and this host's (CPU) loader's."""
    import unsloth  # noqa: F401  (first, as the backend imports it)
    from unsloth import FastLanguageModel

    here = {"FastLanguageModel.from_pretrained": FastLanguageModel.from_pretrained,
            "FastLanguageModel.get_peft_model": FastLanguageModel.get_peft_model}
    out = {}
    for section, where in GPU_SIGNATURES.items():
        names = _gpu_parameters(*where)
        names |= {n for n, p in inspect.signature(here[section]).parameters.items()
                  if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}
        out[section] = names
    return out


def validate_plan(plan: Any) -> None:
    """TRL's own parsing accepts the plan's GRPOConfig, and every loader / LoRA argument is one Unsloth names."""
    accepted = _accepted()  # imports unsloth before trl
    from trl import GRPOConfig  # type: ignore[attr-defined]

    GRPOConfig(**dict(plan.native_config["GRPOConfig"]))
    for section, names in accepted.items():
        unknown = sorted(set(plan.native_config[section]) - names)
        if unknown:
            raise ValueError(f"Unsloth's {section} takes no argument(s) {unknown}")
