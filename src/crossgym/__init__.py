"""crossgym: one protocol for RL tasks, environments and verifiers; GRPO on TRL, Unsloth, veRL and OpenRLHF.

Public helpers are imported on first use so that ``import crossgym`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from crossgym.api import (
        environment_factory,
        get_backend,
        get_engine,
        load_environment,
        load_tasks,
        load_verifier,
        verify,
    )

_API = {"load_verifier", "load_environment", "environment_factory", "load_tasks", "get_backend", "get_engine",
        "verify"}

__all__ = ["__version__", "environment_factory", "get_backend", "get_engine", "load_environment", "load_tasks",
           "load_verifier", "verify"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from crossgym import api

        return getattr(api, name)
    raise AttributeError(f"module 'crossgym' has no attribute {name!r}")
