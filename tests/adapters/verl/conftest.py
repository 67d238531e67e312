"""Fixtures for the veRL backend's tests. Modules that drive veRL's own code skip without it (default tier);
the `nox -s verl` session installs verl==0.9.1 and runs them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crossgym.config import RunConfig


def make_run(tmp_path: Path, **fields: Any) -> RunConfig:
    """A RunConfig for tests: arithmetic tasks, small GRPO batches, output under tmp_path."""
    data: dict[str, Any] = {"model": str(tmp_path / "model"), "tasks": {"source": "arithmetic",
                                                                       "params": {"n": 16, "seed": 1}},
                            "output_dir": str(tmp_path / "out"),
                            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 3}}
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return RunConfig.model_validate(data)


@pytest.fixture
def run_factory(tmp_path: Path):  # type: ignore[no-untyped-def]
    return lambda **fields: make_run(tmp_path, **fields)


@pytest.fixture(scope="session")
def verl_compose():  # type: ignore[no-untyped-def]
    """Compose veRL's packaged ppo_trainer config with overrides through Hydra, as main_ppo does."""
    pytest.importorskip("verl")
    pytest.importorskip("hydra")
    from crossgym.adapters.verl.parity import compose_config

    return compose_config
