"""Helpers for the Unsloth backend tests (a module of its own: conftest modules are not importable by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossgym.protocol.config import RunConfig, parse_run_config


def make_run(model: Path | str, out: Path, **over: Any) -> RunConfig:
    """A small Unsloth RunConfig: json_addition tasks, LoRA r=4, two steps of two GRPO groups of four."""
    data: dict[str, Any] = {"model": str(model), "tasks": {"source": "json_addition"}, "output_dir": str(out),
                            "seed": 0, "backend": "unsloth",
                            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8,
                                     "max_completion_length": 12, "max_steps": 2, "learning_rate": 1e-3,
                                     "lora": {"r": 4, "alpha": 8}}}
    for k, v in over.items():
        data[k] = data[k] | v if isinstance(v, dict) and isinstance(data.get(k), dict) else v
    return parse_run_config(data)
