"""RunConfig: one YAML file that runs on every backend (pydantic + YAML; above protocol/, which stays stdlib-only).

- ``run``: the models (RunConfig and its sections: TasksConfig, VerifierConfig, EnvironmentConfig, GRPOConfig,
  LoraConfig).
- ``load``: ``load_run_config(path)`` (YAML) and ``parse_run_config(mapping)``; errors are one ConfigError line.
"""

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
