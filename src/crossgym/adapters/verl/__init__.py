"""crossgym's veRL backend: Tasks -> parquet, verifiers -> a reward module, environments -> an agent loop, RunConfig
-> Hydra overrides for ``python -m verl.trainer.main_ppo``.

Nothing here imports veRL at import time except ``agent_loop`` and ``tools``, which only veRL's workers import.
"""

from crossgym.adapters.verl.backend import VerlBackend

__all__ = ["VerlBackend"]
