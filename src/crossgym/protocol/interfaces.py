"""The four protocols implementers write against: Verifier, Environment, TrainingBackend, InferenceEngine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from crossgym.protocol.episode import Observation, SamplingParams, StepResult
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec

if TYPE_CHECKING:  # pydantic stays out of `import crossgym`
    from crossgym.config import RunConfig


@runtime_checkable
class Verifier(Protocol):
    """Scores a completion for a task. Never raises on any completion; honours a hard timeout."""

    name: str
    #: Changes whenever scoring changes, so old rewards can be told apart.
    version: str

    def verify(self, task: Task, completion: Completion) -> Verdict: ...

    def examples(self) -> list[Example]:
        """At least one passing, one failing and one malformed case."""
        ...


@runtime_checkable
class Environment(Protocol):
    """One episode. The episode's reward is the task verifier's Verdict on the whole Completion."""

    def reset(self, task: Task, *, seed: int | None = None) -> Observation: ...

    def step(self, action: Message) -> StepResult: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Capabilities:
    """What a backend or engine can do; the compat suite and `crossgym list` read these."""

    multi_turn: bool = False
    lora: bool = False
    engines: tuple[str, ...] = ()
    distributed: bool = False
    needs_gpu: bool = False
    variants: tuple[str, ...] = ("grpo",)
    token_ids: bool = False
    logprobs: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"multi_turn": self.multi_turn, "lora": self.lora, "engines": list(self.engines),
                "distributed": self.distributed, "needs_gpu": self.needs_gpu, "variants": list(self.variants),
                "token_ids": self.token_ids, "logprobs": self.logprobs}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Capabilities:
        return cls(multi_turn=bool(d.get("multi_turn", False)), lora=bool(d.get("lora", False)),
                   engines=tuple(d.get("engines") or ()), distributed=bool(d.get("distributed", False)),
                   needs_gpu=bool(d.get("needs_gpu", False)), variants=tuple(d.get("variants") or ("grpo",)),
                   token_ids=bool(d.get("token_ids", False)), logprobs=bool(d.get("logprobs", False)))


@dataclass(frozen=True)
class Plan:
    """What a backend would run, with no side effects: native config, command line and generated files."""

    backend: str
    native_config: dict[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "native_config": self.native_config, "argv": list(self.argv),
                "files": self.files, "notes": list(self.notes)}


@dataclass(frozen=True)
class TrainResult:
    """Where a training run left its outputs."""

    output_dir: str
    steps: int = 0
    checkpoint: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"output_dir": self.output_dir, "steps": self.steps, "checkpoint": self.checkpoint,
                "metrics": self.metrics}


@runtime_checkable
class TrainingBackend(Protocol):
    """Runs GRPO for a RunConfig on one training framework."""

    name: str
    capabilities: Capabilities

    def check(self) -> None:
        """Raise BackendUnavailable (with the install command) when this backend cannot run here."""
        ...

    def plan(self, run: RunConfig) -> Plan: ...

    def reward_function(self, spec: VerifierSpec) -> Any:
        """The framework's native reward object for one verifier."""
        ...

    def train(self, run: RunConfig) -> TrainResult: ...


@runtime_checkable
class InferenceEngine(Protocol):
    """Generates n completions per prompt; token ids and logprobs where the engine gives them."""

    name: str

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]: ...
