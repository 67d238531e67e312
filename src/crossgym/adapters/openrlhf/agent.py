"""The runtime behind the generated agent file: crossgym Environment episodes inside OpenRLHF's
MultiTurnAgentExecutor (``--train.agent_func_path``).

OpenRLHF drives the loop: it generates an action, calls our ``step``, appends the environment feedback text we
return (tokenized, outside the action ranges, so it is not trained on) and generates again until we say done. We
render the Observation (messages and tools) with the policy's chat template, pass each action to
``Environment.step`` and render its reply messages as the template would. The reward, given once at the last step,
is the task verifier's Verdict on the whole Completion (plus weighted extra verifiers), exactly as the reward file
and the TRL backend score it. The episode itself (seed, turn limit, stop rule, an environment that raises, the
Completion, the rendering) is crossgym.rollout.driver's, as on every backend; the token budget is
``--data.max_len``.

``Episode`` is framework-free; ``agent_executor_class`` imports OpenRLHF and builds the classes the agent file
exposes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from crossgym.adapters.openrlhf.scoring import (
    ScoreConfig,
    error_scored,
    openrlhf_values,
    record,
    score,
)
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task
from crossgym.rollout.driver import Episode as Driven
from crossgym.rollout.driver import episode_seed, render_text, reply_suffix, split_turn, stop_token_ids
from crossgym.rollout.tasks import episode_settings
from crossgym.scoring import Scored

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AgentConfig:
    """What the generated agent file bakes in."""

    score: ScoreConfig = field(default_factory=ScoreConfig)
    #: environment for every task (the config's environment.name when set explicitly); None: each task's own
    env: str | None = None
    env_params: dict[str, Any] = field(default_factory=dict)
    #: the run's explicit environment.max_turns; None: the environment decides (under the driver's MAX_TURNS)
    max_turns: int | None = None
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score.to_dict(), "env": self.env, "env_params": self.env_params,
                "max_turns": self.max_turns, "seed": self.seed}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AgentConfig:
        return cls(score=ScoreConfig.from_dict(d.get("score") or {}), env=d.get("env"),
                   env_params=dict(d.get("env_params") or {}), max_turns=d.get("max_turns"),
                   seed=int(d.get("seed", 0)))


@dataclass(frozen=True)
class StepOut:
    """One step's answer to OpenRLHF."""

    reward: float
    score: float
    feedback: str
    done: bool
    logs: dict[str, float] = field(default_factory=dict)


class Episode:
    """One crossgym episode rendered as OpenRLHF text, played by the episode driver (crossgym.rollout.driver: seed,
    turn limit, stop rule, environment errors, completion, rendering). Not thread-safe: one per agent instance."""

    def __init__(self, cfg: AgentConfig, tokenizer: Any, max_length: int) -> None:
        from crossgym.inference.chat import generation_eos

        self.cfg = cfg
        self.tok = tokenizer
        self.max_length = int(max_length)
        self.episode: Driven | None = None
        self.failed: str | None = None
        self.result: Scored | None = None
        self.stops = stop_token_ids(tokenizer.eos_token_id, generation_eos(tokenizer))

    @property
    def task(self) -> Task | None:
        return None if self.episode is None else self.episode.task

    def reset(self, label: Any, observation: str) -> str:
        """Start the task a label carries; returns the first observation text (``observation`` if it fails)."""
        from crossgym.adapters.openrlhf.convert import task_from_label

        try:
            task = task_from_label(label)
        except Exception as exc:  # one bad row must not stop the run: it scores on_error
            log.warning("episode could not start: %s: %s", type(exc).__name__, exc)
            self.failed = f"openrlhf agent: the episode could not start: {type(exc).__name__}: {exc}"
            return observation
        env, env_params, max_turns = episode_settings(task, env=self.cfg.env, params=self.cfg.env_params,
                                                      max_turns=self.cfg.max_turns)
        self.episode = Driven.open(task, env, env_params=env_params, seed=episode_seed(self.cfg.seed, task.id),
                                   max_turns=max_turns, budget=self.max_length)
        return render_text(self.tok, self.episode.prompt, self.episode.tools)

    def step(self, action_ids: list[int], prompt_len: int, finish_reason: str | None = None) -> StepOut:
        """Apply one generated action (its token ids; ``prompt_len`` tokens came before it)."""
        ep = self.episode
        if ep is None:
            return self._finish(error_scored(self.cfg.score, self.failed or "openrlhf agent: step before reset"))
        if not ep.done:
            body, ended = split_turn(action_ids, self.stops, finish_reason)
            action = Message(role="assistant", content=self.tok.decode(body, skip_special_tokens=False))
            reply = ep.take(action, token_ids=action_ids, ended=ended)
            if not ep.done:
                suffix = reply_suffix(self.tok, ep.conversation()[:-len(reply)], reply, ep.tools)
                if suffix is None:
                    log.warning("chat template is not prefix-preserving: ending the episode after turn %d", ep.turns)
                    ep.end("template")
                elif ep.fits(len(self.tok(suffix, add_special_tokens=False)["input_ids"]),
                             used=prompt_len + len(action_ids)):  # OpenRLHF's max_len counts the whole sequence
                    return StepOut(reward=0.0, score=0.0, feedback=suffix, done=False)
        # the last reply is scored (it is in the Completion) but never fed back: no tokens for it
        if ep.error is not None:
            return self._finish(error_scored(self.cfg.score, ep.error.reason, ep.task))
        return self._finish(score(self.cfg.score, ep.task, ep.completion()))

    def _finish(self, s: Scored) -> StepOut:
        self.result = s
        self.close()
        if self.episode is not None:
            record(self.cfg.score, self.episode.task, self.completion(), s, turns=max(1, self.episode.turns))
        reward, task_score, logs = openrlhf_values(self.cfg.score, s)
        return StepOut(reward=reward, score=task_score, feedback="", done=True, logs=logs)

    def completion(self) -> Completion:
        return Completion(messages=()) if self.episode is None else self.episode.completion()

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()


@dataclass
class _Generated:
    prompt_ids: list[int]
    token_ids: list[int]
    finish_reason: str | None


class EngineTap:
    """Wraps OpenRLHF's engine for one episode: passes generate() through and keeps the last call's token ids
    (the agent needs their exact count; OpenRLHF's step() gets only the text)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.last = _Generated([], [], None)

    async def generate(self, prompt_ids: Any, sampling_params: Any, **kwargs: Any) -> Any:
        out = await self.engine.generate(prompt_ids, sampling_params, **kwargs)
        first = out.outputs[0]
        self.last = _Generated(list(prompt_ids), list(first.token_ids), getattr(first, "finish_reason", None))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def agent_executor_class(config: dict[str, Any]) -> type:
    """The ``AgentExecutor`` class OpenRLHF loads from the agent file (a MultiTurnAgentExecutor subclass)."""
    import torch
    from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

    cfg = AgentConfig.from_dict(config)

    def t(x: float) -> Any:
        return torch.tensor(float(x), dtype=torch.float64)

    class CrossgymAgentInstance(AgentInstanceBase):  # type: ignore[misc]
        """One episode; the executor binds the tokenizer, engine tap and budget of its call to a subclass."""

        tokenizer: Any = None
        tap: EngineTap | None = None
        max_length: int = 0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.episode = Episode(cfg, self.tokenizer, self.max_length)

        async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            text = await asyncio.to_thread(self.episode.reset, states.get("label"), states["observation"])
            return {"observation": text}

        async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            last = self.tap.last if self.tap is not None else _Generated([], [], None)
            out = await asyncio.to_thread(self.episode.step, last.token_ids, len(last.prompt_ids),
                                          last.finish_reason)
            return {"rewards": t(out.reward), "scores": t(out.score), "environment_feedback": out.feedback,
                    "done": out.done, "extra_logs": {k: t(v) for k, v in out.logs.items()}}

    class AgentExecutor(MultiTurnAgentExecutor):  # type: ignore[misc]
        """OpenRLHF's MultiTurnAgentExecutor running crossgym episodes."""

        config = cfg

        def __init__(self) -> None:
            super().__init__(CrossgymAgentInstance)

        async def execute(self, prompt: Any, label: Any, sampling_params: Any, max_length: int,
                          hf_tokenizer: Any, llm_engine: Any, images: Any = None) -> Any:
            tap = EngineTap(llm_engine)
            # MultiTurnAgentExecutor builds the instance before its first await: no other episode can interleave
            self.agent_instance_cls = type("CrossgymAgentInstance", (CrossgymAgentInstance,),
                                           {"tokenizer": hf_tokenizer, "tap": tap, "max_length": max_length})
            return await super().execute(prompt, label, sampling_params, max_length, hf_tokenizer, tap, images)

    return AgentExecutor
