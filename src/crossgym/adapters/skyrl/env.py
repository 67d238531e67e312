"""The runtime behind crossgym's skyrl_gym environment: SkyRL's step contract -> crossgym's scoring core and
episode driver. Framework-free (``gym_env.py`` is the skyrl_gym class around it).

SkyRL's generator builds one environment per sample (``skyrl_gym.make(env_class, env_config=..., extras=row)``),
calls ``init(prompt)`` for the first chat history, then ``step(text)`` with each decoded assistant turn until the
step says ``done``; the reward SkyRL trains on is the sum of the step rewards. Here:

- the row's ``task`` column (SkyRL's env_extras) is the whole Task as JSON: its verifier, answer and environment;
- a single-turn task (no environment, no tools) is scored at its first step: ``RewardRule.score(task,
  Completion.from_text(text))``, the same call as every backend's reward hook;
- any other task (its blend part's environment settings first, then the run's, then its own) is an episode played
  by crossgym.rollout.driver (seed, turn limit, stop rules, environment
  errors, completion): ``init`` opens it and returns the environment's first observation as chat messages,
  each ``step`` feeds the turn to ``Episode.take`` and returns the environment's reply as observations, and the
  last step's reward is the rule's score of the whole episode (``Episode.score``; a failed environment scores
  on_error). Earlier steps give 0.0, so the sum is exactly that score.

A row that cannot be read is scored on_error at its first step (one bad row never stops a run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task
from crossgym.rollout.driver import Episode, episode_seed, render_messages
from crossgym.rollout.tasks import episode_settings
from crossgym.scoring import RecordWriter, RewardRule, Scored

log = logging.getLogger(__name__)

#: the dataset column (SkyRL env_extras key) that carries the Task JSON
TASK_KEY = "task"


@dataclass(frozen=True)
class EnvConfig:
    """What the generated entry file bakes in (skyrl_gym's registration kwargs)."""

    rule: RewardRule = field(default_factory=RewardRule)
    #: environment for every task (the config's environment.name when set explicitly); None: each task's own
    env: str | None = None
    env_params: dict[str, Any] = field(default_factory=dict)
    #: the run's explicit environment.max_turns; None: the environment decides (under the driver's MAX_TURNS)
    max_turns: int | None = None
    seed: int = 0
    #: append scored rollouts here (JSONL, for `crossgym reverify`); None: do not record
    rollouts: str | None = None
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(), "env": self.env, "env_params": self.env_params,
                "max_turns": self.max_turns, "seed": self.seed, "rollouts": self.rollouts, "model": self.model}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EnvConfig:
        return cls(rule=RewardRule.from_dict(d.get("rule") or {}), env=d.get("env"),
                   env_params=dict(d.get("env_params") or {}), max_turns=d.get("max_turns"),
                   seed=int(d.get("seed", 0)), rollouts=d.get("rollouts"), model=str(d.get("model") or ""))

    def error_reward(self) -> float:
        err = self.rule.error_reward()
        return 0.0 if err is None else float(err)


def task_from_extras(extras: Any) -> Task:
    """The Task a row's env_extras carry (the ``task`` column: Task JSON, or a dict a loader parsed)."""
    from crossgym.adapters.kit.rows import task_from_cell

    if not isinstance(extras, dict) or TASK_KEY not in extras:
        raise ValueError(f"the row has no {TASK_KEY!r} column (a crossgym Task as JSON)")
    return task_from_cell(extras[TASK_KEY])


def needs_episode(task: Task, env: str | None, max_turns: int | None = None) -> bool:
    """Whether a task is played as an episode: its environment (a blend part's, else the run's explicit one, else
    its own) is not single_turn, it allows more than one turn, or it has tools or tool messages."""
    name, _, turns = episode_settings(task, env=env, max_turns=max_turns)
    return (name != "single_turn" or (turns or 1) > 1 or bool(task.tools)
            or any(m.tool_calls or m.role == "tool" for m in task.prompt))


def step_output(observations: list[dict[str, Any]], reward: float, done: bool,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """skyrl_gym's BaseTextEnvStepOutput as a plain dict (it is a TypedDict)."""
    return {"observations": observations, "reward": float(reward), "done": bool(done), "metadata": metadata or {}}


class Session:
    """One sample inside SkyRL's step contract. Not thread-safe: SkyRL builds one environment per sample."""

    def __init__(self, cfg: EnvConfig, extras: Any) -> None:
        self.cfg = cfg
        self.task: Task | None = None
        self.failed: str | None = None
        self.episode: Episode | None = None
        self.result: Scored | None = None
        self.turns = 0
        try:
            self.task = task_from_extras(extras)
        except Exception as exc:  # untrusted row: it scores on_error, the run goes on
            self.failed = f"skyrl: the row is not a crossgym task: {type(exc).__name__}: {exc}"
            log.warning("%s", self.failed)

    # ------------------------------------------------------------ skyrl_gym's contract
    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The first chat history: the row's prompt (single turn) or the environment's first observation."""
        task, cfg = self.task, self.cfg
        if task is None or not needs_episode(task, cfg.env, cfg.max_turns):
            return prompt, {}
        env, params, turns = episode_settings(task, env=cfg.env, params=cfg.env_params, max_turns=cfg.max_turns)
        self.episode = Episode.open(task, env, env_params=params, seed=episode_seed(cfg.seed, task.id),
                                    max_turns=turns)
        return render_messages(self.episode.prompt), {}

    def step(self, action: str) -> dict[str, Any]:
        """One decoded assistant turn: the environment's reply, or the scored end of the sample."""
        self.turns += 1
        task, ep = self.task, self.episode
        if task is None:
            return self._finish(self.cfg.rule.score_error(self.failed or "skyrl: no task"), Completion(messages=()))
        if ep is None:  # single turn: the reward hook every backend calls
            completion = Completion.from_text(action)
            return self._finish(self.cfg.rule.score(task, completion), completion)
        if not ep.done:
            reply = ep.take(Message(role="assistant", content=action))
            if not ep.done:
                return step_output(render_messages(reply), 0.0, False)
        return self._finish(ep.score(self.cfg.rule), ep.completion())

    def metrics(self) -> dict[str, float]:
        """The scoring core's per-sample metrics (SkyRL averages an environment's metrics per env class)."""
        return {} if self.result is None else dict(self.result.metrics)

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()

    # ------------------------------------------------------------ results
    def _finish(self, scored: Scored, completion: Completion) -> dict[str, Any]:
        self.result = scored
        self.close()
        if self.cfg.rollouts and self.task is not None:
            writer = RecordWriter(self.cfg.rollouts, backend="skyrl", model=self.cfg.model)
            writer.write([writer.record(self.task, completion, scored, turns=max(1, self.turns))])
        return step_output([], scored.reward_or(self.cfg.error_reward()), True, {"crossgym": self.metrics()})
