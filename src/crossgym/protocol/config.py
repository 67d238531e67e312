"""Deprecated: RunConfig lives in crossgym.config; this shim is kept only for code written for crossgym 0.1.

Import ``RunConfig``, ``load_run_config`` and the config sections from ``crossgym.config`` (``run`` holds the models,
``load`` the YAML loading). ``from crossgym.protocol.config import RunConfig`` still works, with a
DeprecationWarning; the names resolve from crossgym.config on first use, so importing this module, like all of
protocol/, imports no pydantic, no YAML and nothing else of crossgym.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crossgym.config import (
        EnvironmentConfig,
        GRPOConfig,
        LoraConfig,
        RunConfig,
        TasksConfig,
        Variant,
        VerifierConfig,
        load_run_config,
        parse_run_config,
    )

__all__ = [
    "EnvironmentConfig", "GRPOConfig", "LoraConfig", "RunConfig", "TasksConfig", "Variant", "VerifierConfig",
    "load_run_config", "parse_run_config",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'crossgym.protocol.config' has no attribute {name!r}")
    warnings.warn(f"crossgym.protocol.config is deprecated: import {name} from crossgym.config",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module("crossgym.config"), name)
