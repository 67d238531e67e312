"""Moved to crossgym.config (run: the models, load: YAML loading); this module re-exports it while importers switch."""

from __future__ import annotations

from crossgym.config.load import load_run_config, parse_run_config
from crossgym.config.run import (
    EnvironmentConfig,
    GRPOConfig,
    LoraConfig,
    RunConfig,
    TasksConfig,
    Variant,
    VerifierConfig,
)

__all__ = [
    "EnvironmentConfig", "GRPOConfig", "LoraConfig", "RunConfig", "TasksConfig", "Variant", "VerifierConfig",
    "load_run_config", "parse_run_config",
]
