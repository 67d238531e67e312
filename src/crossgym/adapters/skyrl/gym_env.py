"""crossgym's skyrl_gym environment class (imports skyrl_gym: SkyRL's venv only). SkyRL's generator builds it per
sample with ``skyrl_gym.make("crossgym", env_config=..., extras=row)`` plus the registration's ``crossgym`` kwarg
(the EnvConfig dict native.register_env bakes in); everything it does is env.Session's."""

from __future__ import annotations

from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv

from crossgym.adapters.skyrl.env import EnvConfig, Session


class CrossgymEnv(BaseTextEnv):  # type: ignore[misc]
    """crossgym verifiers and environments in SkyRL's step contract (see crossgym.adapters.skyrl.env)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None,
                 crossgym: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.session = Session(EnvConfig.from_dict(crossgym or {}), extras or {})
        self.max_turns = int((extras or {}).get("max_turns") or 1)

    def init(self, prompt: Any) -> Any:
        return self.session.init(prompt)

    def step(self, action: str) -> Any:
        self.turns += 1
        return self.session.step(action)

    def get_metrics(self) -> dict[str, Any]:
        return self.session.metrics()

    def close(self) -> None:
        self.session.close()
