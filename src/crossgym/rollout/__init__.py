"""Rollouts: an inference engine driven through environments, scored by verifiers, stored as JSONL.

``run_rollouts(engine, tasks, RolloutConfig(...), store=RolloutStore(path))`` is the entry point; ``pass_at_k`` the
unbiased estimator. Nothing here imports torch: engines come in as objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crossgym.rollout.config import RolloutConfig
    from crossgym.rollout.passk import mean_pass_at_k, pass_at_k
    from crossgym.rollout.runner import RolloutRunner, run_rollouts
    from crossgym.rollout.store import RolloutStore

_LAZY = {"RolloutConfig": "config", "RolloutRunner": "runner", "run_rollouts": "runner", "RolloutStore": "store",
         "pass_at_k": "passk", "mean_pass_at_k": "passk"}
__all__ = ["RolloutConfig", "RolloutRunner", "RolloutStore", "mean_pass_at_k", "pass_at_k", "run_rollouts"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"crossgym.rollout.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'crossgym.rollout' has no attribute {name!r}")
