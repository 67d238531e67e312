"""The runtime behind the generated agent file: crossgym Environment episodes inside OpenRLHF's
MultiTurnAgentExecutor (``--train.agent_func_path``).

OpenRLHF drives the loop: it generates an action, calls our ``step``, appends the environment feedback text we
return (tokenized, outside the action ranges, so it is not trained on) and generates again until we say done. We
render the Observation (messages and tools) with the policy's chat template, pass each action to
``Environment.step`` and render its reply messages as the template would. The reward, given once at the last step,
is the task verifier's Verdict on the whole Completion (plus weighted extra verifiers), exactly as the reward file
and the TRL backend score it. Episodes end like TRL's: environment done, an action cut off by the length limit,
``max_turns``, or the token budget (``--data.max_len``) about to run out.

``Episode`` is framework-free; ``agent_executor_class`` imports OpenRLHF and builds the classes the agent file
exposes.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from crossgym.adapters.openrlhf.scoring import (
    ScoreConfig,
    Scored,
    error_scored,
    rollout_record,
    score,
    write_rollouts,
)
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task

log = logging.getLogger(__name__)

#: Safety cap on assistant turns when the config does not set environment.max_turns; the environment decides done
#: (the TRL backend uses the same cap).
DEFAULT_MAX_TURNS = 16


def episode_seed(base: int, task_id: str) -> int:
    """The same environment seed for every member of a GRPO group, stable across runs (as the TRL backend)."""
    digest = hashlib.sha256(f"{base}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass(frozen=True)
class AgentConfig:
    """What the generated agent file bakes in."""

    score: ScoreConfig = field(default_factory=ScoreConfig)
    #: environment for every task (the config's environment.name when set explicitly); None: each task's own
    env: str | None = None
    env_params: dict[str, Any] = field(default_factory=dict)
    #: None: 1 for single_turn, DEFAULT_MAX_TURNS otherwise
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
    """One crossgym episode rendered as OpenRLHF text. Not thread-safe: one per OpenRLHF agent instance."""

    def __init__(self, cfg: AgentConfig, tokenizer: Any, max_length: int) -> None:
        self.cfg = cfg
        self.tok = tokenizer
        self.max_length = int(max_length)
        self.task: Task | None = None
        self.env: Any = None
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] | None = None
        self.out: list[Message] = []
        self.turns = 0
        self.max_turns = 1
        self.failed: str | None = None
        self.result: Scored | None = None

    # ------------------------------------------------------------ rendering
    def render(self, messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        return str(self.tok.apply_chat_template(messages, tools=self.tools, add_generation_prompt=add_generation_prompt,
                                                tokenize=False))

    def _eos_ids(self) -> set[int]:
        ids = {self.tok.eos_token_id, self.tok.pad_token_id}
        return {i for i in ids if i is not None}

    def _suffix(self, new: list[dict[str, Any]]) -> str | None:
        """The text the chat template puts after the assistant's end-of-turn token, up to the next generation
        prompt (the same cut as the TRL backend); None when the template is not prefix-preserving."""
        before = self.render(self.messages, False)
        after = self.render(self.messages + new, True)
        eos = self.tok.eos_token or ""
        cut = before.rfind(eos) + len(eos) if eos and eos in before else len(before)
        if not after.startswith(before[:cut]):
            log.warning("chat template is not prefix-preserving: ending the episode after turn %d", self.turns)
            return None
        return after[cut:]

    # ------------------------------------------------------------ the episode
    def reset(self, label: Any, observation: str) -> str:
        """Start the task a label carries; returns the first observation text (``observation`` if it fails)."""
        from crossgym.adapters.openrlhf.convert import task_from_label
        from crossgym.api import load_environment

        try:
            self.task = task_from_label(label)
            name = self.cfg.env or self.task.env
            self.max_turns = self.cfg.max_turns or (1 if name == "single_turn" else DEFAULT_MAX_TURNS)
            self.env = load_environment(name, **self.cfg.env_params)
            obs = self.env.reset(self.task, seed=episode_seed(self.cfg.seed, self.task.id))
            self.messages = [m.to_openai() for m in obs.messages]
            self.tools = [t.to_openai() for t in obs.tools] or None
            return self.render(self.messages, True)
        except Exception as exc:  # one bad task or environment must not stop the run: it scores on_error
            log.warning("episode could not start: %s: %s", type(exc).__name__, exc)
            self.failed = f"openrlhf agent: the episode could not start: {type(exc).__name__}: {exc}"
            return observation

    def step(self, action_ids: list[int], prompt_len: int, finish_reason: str | None = None) -> StepOut:
        """Apply one generated action (its token ids; ``prompt_len`` tokens came before it)."""
        if self.failed is not None or self.task is None:
            return self._finish(error_scored(self.cfg.score, self.failed or "openrlhf agent: step before reset"))
        eos = self._eos_ids()
        ids = list(action_ids)
        ended = (finish_reason != "length") if finish_reason is not None else bool(ids) and ids[-1] in eos
        while ids and ids[-1] in eos:
            ids.pop()
        action = Message(role="assistant", content=self.tok.decode(ids, skip_special_tokens=False))
        self.turns += 1
        self.out.append(action)
        self.messages.append(action.to_openai())
        try:
            result = self.env.step(action)
        except Exception as exc:  # environments must not raise on model output; end the episode if one does
            log.warning("environment %s raised on step: %s", type(self.env).__name__, exc)
            return self._finish(score(self.cfg.score, self.task, Completion(messages=tuple(self.out))))
        if not (result.done or not ended or self.turns >= self.max_turns):
            new = [m.to_openai() for m in result.messages]
            suffix = self._suffix(new)
            if suffix is not None:
                n = len(self.tok(suffix, add_special_tokens=False)["input_ids"])
                if prompt_len + len(action_ids) + n < self.max_length:
                    self.out.extend(result.messages)
                    self.messages.extend(new)
                    return StepOut(reward=0.0, score=0.0, feedback=suffix, done=False)
        self.out.extend(result.messages)  # the last reply is scored, as eval does, but never fed back (no tokens)
        return self._finish(score(self.cfg.score, self.task, Completion(messages=tuple(self.out))))

    def _finish(self, s: Scored) -> StepOut:
        self.result = s
        self.close()
        if self.cfg.score.rollouts and self.task is not None and self.failed is None:
            import json

            rec = rollout_record(self.task, Completion(messages=tuple(self.out)), s, turns=max(1, self.turns))
            write_rollouts(self.cfg.score.rollouts, [json.dumps(rec, ensure_ascii=False)])
        return StepOut(reward=s.reward, score=s.score, feedback="", done=True, logs=dict(s.logs))

    def completion(self) -> Completion:
        return Completion(messages=tuple(self.out))

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            except Exception as exc:  # closing must not lose the reward
                log.warning("environment close failed: %s", exc)
            self.env = None


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
