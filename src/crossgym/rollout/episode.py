"""One episode in flight: the conversation so far, the environment (if any), tokens and timings."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.episode import StepResult
from crossgym.protocol.messages import Message, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict

log = logging.getLogger(__name__)

#: the environment name recorded when a task's env is not registered and the runner plays one turn itself
BUILTIN_SINGLE_TURN = "single_turn (built in)"


@dataclass
class Episode:
    """A task's sample ``index`` being played; ``env`` is None for the built-in single turn."""

    task: Task
    index: int
    env: Any
    env_name: str
    prompt: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    messages: list[Message] = field(default_factory=list)
    token_ids: list[int] | None = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    turns: int = 0
    done: bool = False
    error: Verdict | None = None
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"generate_s": 0.0, "env_s": 0.0})

    def start(self, seed: int | None) -> None:
        """Reset the environment (or take the task's own prompt and tools)."""
        if self.env is None:
            self.prompt, self.tools = self.task.prompt, self.task.tools
            return
        t = time.perf_counter()
        try:
            obs = self.env.reset(self.task, seed=seed)
            self.prompt, self.tools = obs.messages, obs.tools
        except Exception as exc:  # a broken environment fails this episode, visibly, not the run
            self.fail(f"environment {self.env_name!r} reset failed: {type(exc).__name__}: {exc}")
        self.timings["env_s"] += time.perf_counter() - t

    def conversation(self) -> list[Message]:
        return [*self.prompt, *self.messages]

    def prompt_key(self) -> str:
        """Equal keys mean equal prompts, which one engine call can sample n times."""
        return json.dumps([[m.to_dict() for m in self.conversation()], [t.to_dict() for t in self.tools]],
                          sort_keys=True)

    def take(self, completion: Completion, seconds: float, max_turns: int) -> None:
        """Apply one generated assistant turn: step the environment, collect tokens."""
        action = next((m for m in reversed(completion.messages) if m.role == "assistant"),
                      Message(role="assistant", content=completion.text))
        self.turns += 1
        self.timings["generate_s"] += seconds
        if completion.token_ids is None or self.token_ids is None:
            self.token_ids = None
        else:
            self.token_ids.extend(completion.token_ids)
        if completion.logprobs is None or self.logprobs is None:
            self.logprobs = None
        else:
            self.logprobs.extend(completion.logprobs)
        self.messages.append(action)
        if self.env is None:
            self.done = True
            return
        t = time.perf_counter()
        try:
            result: StepResult = self.env.step(action)
        except Exception as exc:
            self.fail(f"environment {self.env_name!r} step {self.turns} failed: {type(exc).__name__}: {exc}")
            return
        finally:
            self.timings["env_s"] += time.perf_counter() - t
        self.messages.extend(result.messages)
        self.info = dict(result.info)
        self.done = bool(result.done)
        if not self.done and self.turns >= max_turns:
            self.done = True
            self.info["truncated"] = True

    def fail(self, why: str) -> None:
        log.warning("task %s sample %d: %s", self.task.id, self.index, why)
        self.error = Verdict.exception(why)
        self.done = True

    def completion(self) -> Completion:
        """What the verifier scores: every message after the prompt, with the policy's own tokens."""
        return Completion(messages=tuple(self.messages),
                          token_ids=tuple(self.token_ids) if self.token_ids else None,
                          logprobs=tuple(self.logprobs) if self.logprobs else None)

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            except Exception as exc:
                log.warning("environment %s close failed: %s", self.env_name, exc)
