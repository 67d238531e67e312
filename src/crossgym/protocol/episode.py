"""Environment episodes and rollouts: observations, step results, sampling, and a scored attempt."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.messages import Message, ToolSpec, json_kind, json_object, messages_from, whole_number
from crossgym.protocol.task import Completion, Task, Verdict


@dataclass(frozen=True)
class Observation:
    """What the policy sees at the start of an episode: the messages to continue and the tools it may call."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple) or not all(isinstance(m, Message) for m in self.messages):
            object.__setattr__(self, "messages", messages_from(self.messages))
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [m.to_dict() for m in self.messages], "tools": [t.to_dict() for t in self.tools]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Observation:
        return cls(messages=messages_from(d.get("messages") or ()),
                   tools=tuple(ToolSpec.from_dict(t) for t in d.get("tools") or ()))


@dataclass(frozen=True)
class StepResult:
    """The environment's answer to one action: new messages (tool results, feedback), done, and info."""

    messages: tuple[Message, ...] = ()
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple) or not all(isinstance(m, Message) for m in self.messages):
            object.__setattr__(self, "messages", messages_from(self.messages))

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [m.to_dict() for m in self.messages], "done": self.done, "info": self.info}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepResult:
        return cls(messages=messages_from(d.get("messages") or ()), done=bool(d.get("done", False)),
                   info=dict(d.get("info") or {}))


@dataclass(frozen=True)
class SamplingParams:
    """How to sample completions; engines map these to their own knobs."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k,
                "max_tokens": self.max_tokens, "seed": self.seed, "stop": list(self.stop)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SamplingParams:
        return cls(temperature=float(d.get("temperature", 1.0)), top_p=float(d.get("top_p", 1.0)),
                   top_k=int(d.get("top_k", -1)), max_tokens=int(d.get("max_tokens", 256)),
                   seed=d.get("seed"), stop=tuple(d.get("stop") or ()))


@dataclass(frozen=True)
class Rollout:
    """One scored attempt at a task, with enough provenance to re-check the reward later."""

    task: Task
    completion: Completion
    verdict: Verdict
    turns: int = 1
    timings: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task.to_dict(), "completion": self.completion.to_dict(),
                "verdict": self.verdict.to_dict(), "turns": self.turns, "timings": self.timings,
                "provenance": self.provenance}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rollout:
        return cls(task=Task.from_dict(d["task"]), completion=Completion.from_dict(d["completion"]),
                   verdict=Verdict.from_dict(d["verdict"]), turns=_turns(d.get("turns", 1)),
                   timings=_timings(d.get("timings")), provenance=json_object("'provenance'", d.get("provenance")))


def _turns(value: Any) -> int:
    """A stored rollout's ``turns``: a whole number (null: 1, as when absent). Text or 2.5 were Python's
    "invalid literal for int()" or quietly 2."""
    if value is None:
        return 1
    turns = whole_number(value)
    if turns is None:
        raise ValueError(f"'turns' must be a whole number, got {json_kind(value)}")
    return turns


def _timings(value: Any) -> dict[str, float]:
    """A stored rollout's ``timings``: an object of numbers (seconds); null or absent is none."""
    table = json_object("'timings'", value)
    for k, v in table.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(f"'timings' must hold numbers (seconds), got {json_kind(v)} for {str(k)!r}")
    return {str(k): float(v) for k, v in table.items()}

