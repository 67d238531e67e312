"""Where crossgym meets SkyRL's own code (imported inside functions: SkyRL lives in its own venv).

- ``import_skyrl()``: SkyRL 0.3.0's ``skyrl.backends`` (the generator, the PPO utilities, the trainer) does not
  import on Python 3.11: ``skyrl.tinker.types`` puts a ``typing.TypedDict`` in a pydantic model, which pydantic
  refuses below 3.12 ("Please use typing_extensions.TypedDict"). On 3.11 that one module is imported with
  ``typing.TypedDict`` bound to ``typing_extensions.TypedDict`` (restored right after); 3.12+ import it as it is.
- ``register_env(config)``: registers gym_env.CrossgymEnv (a skyrl_gym ``BaseTextEnv`` around env.Session) as
  ``crossgym``, with the baked config as its ``crossgym`` kwarg.
- ``parse_overrides(args)``: SkyRL's own config parsing and validation (``SkyRLTrainConfig.from_cli_overrides``,
  ``validate_cfg``), what its main does before Ray starts.
- ``run_main(config, args)``: the generated entry file's body: main_base's main with the environment registered
  inside SkyRL's training task.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import Any

from crossgym.adapters.skyrl.config_map import ENV_CLASS


@functools.lru_cache(maxsize=1)
def import_skyrl() -> None:
    """Make ``skyrl.backends`` importable here (see the module docstring); idempotent."""
    if sys.version_info >= (3, 12) or "skyrl.tinker.types" in sys.modules:
        return
    import typing

    import typing_extensions

    original = typing.TypedDict
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[assignment]
    try:
        import skyrl.tinker.types  # noqa: F401
    finally:
        typing.TypedDict = original  # type: ignore[assignment]


#: skyrl_gym's entry point for ``crossgym`` (a class: SkyRL aggregates metrics through it)
ENTRY_POINT = "crossgym.adapters.skyrl.gym_env:CrossgymEnv"


def register_env(config: dict[str, Any]) -> None:
    """Register (or re-register with this config) the ``crossgym`` environment in skyrl_gym."""
    import skyrl_gym.envs.registration as registration
    from skyrl_gym.envs import register

    if ENV_CLASS in registration.registry:
        registration.deregister(ENV_CLASS)
    register(id=ENV_CLASS, entry_point=ENTRY_POINT, kwargs={"crossgym": dict(config)})


def parse_overrides(args: Sequence[str]) -> Any:
    """SkyRL's typed config from ``key=value`` overrides, validated as its main validates it (the W&B check is
    SkyRL's: crossgym passes trainer.logger console)."""
    import_skyrl()
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils import validate_cfg

    cfg = SkyRLTrainConfig.from_cli_overrides(list(args))
    validate_cfg(cfg)
    return cfg


def _training_task(cfg: Any, config: dict[str, Any]) -> None:
    """SkyRL's skyrl_entrypoint with crossgym's environment registered first (runs as a Ray task)."""
    import_skyrl()
    from skyrl.train.entrypoints.main_base import BasePPOExp

    register_env(config)
    BasePPOExp(cfg).run()


def run_main(config: dict[str, Any], args: Sequence[str]) -> None:
    """skyrl.train.entrypoints.main_base.main, with crossgym's environment in the training task."""
    import_skyrl()
    import ray
    from skyrl.train.utils.utils import initialize_ray

    cfg = parse_overrides(args)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    initialize_ray(cfg)
    ray.get(ray.remote(num_cpus=1)(_training_task).remote(cfg, config))
