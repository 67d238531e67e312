"""The four protocols implementers write against: Verifier, Environment, TrainingBackend, InferenceEngine; and the
values they exchange with the orchestration (capabilities per role, Plan, TrainResult, StopSignal)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

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


#: How a backend honours ``stop``: "step" ends after the optimizer step in progress and saves the model;
#: "process" asks the launched training process group to stop (SIGINT, then SIGTERM after a grace period).
STOP_MODES = ("step", "process")


@dataclass(frozen=True)
class BackendCapabilities:
    """What a training backend can do; the compat suite, `crossgym list` and `crossgym plan` read these."""

    multi_turn: bool = False
    lora: bool = False
    engines: tuple[str, ...] = ()
    distributed: bool = False
    needs_gpu: bool = False
    variants: tuple[str, ...] = ("grpo",)
    stop: str = "step"
    """One of STOP_MODES."""
    resume: bool = False
    """Continues a run from its own checkpoints (RunConfig.resume); such a backend is a ResumableBackend."""

    def to_dict(self) -> dict[str, Any]:
        return {"multi_turn": self.multi_turn, "lora": self.lora, "engines": list(self.engines),
                "distributed": self.distributed, "needs_gpu": self.needs_gpu, "variants": list(self.variants),
                "stop": self.stop, "resume": self.resume}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BackendCapabilities:
        return cls(multi_turn=bool(d.get("multi_turn", False)), lora=bool(d.get("lora", False)),
                   engines=tuple(d.get("engines") or ()), distributed=bool(d.get("distributed", False)),
                   needs_gpu=bool(d.get("needs_gpu", False)), variants=tuple(d.get("variants") or ("grpo",)),
                   stop=str(d.get("stop", "step")), resume=bool(d.get("resume", False)))


#: The name 0.1 had for a backend's capabilities.
Capabilities = BackendCapabilities


@dataclass(frozen=True)
class EngineCapabilities:
    """What an inference engine gives back: multi-turn chat (tool turns included), token ids, logprobs."""

    multi_turn: bool = False
    token_ids: bool = False
    logprobs: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"multi_turn": self.multi_turn, "token_ids": self.token_ids, "logprobs": self.logprobs}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EngineCapabilities:
        return cls(multi_turn=bool(d.get("multi_turn", False)), token_ids=bool(d.get("token_ids", False)),
                   logprobs=bool(d.get("logprobs", False)))


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


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run continues: the checkpoint, the optimizer steps it holds, the run segment that starts
    now (1 is the first run), and the config fields changed since the last segment ({field: [old, new]})."""

    checkpoint: str
    step: int
    segment: int
    changed: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"checkpoint": self.checkpoint, "step": self.step, "segment": self.segment, "changed": self.changed}


#: A reward for a verifier error or timeout: a number, or "none" (None/NaN, for backends that mask it).
OnError = float | Literal["none"]
#: ``progress(step, max_steps, logs)``: called by a backend after each optimizer step (logs may hold "reward").
ProgressFn = Callable[[int, int, Mapping[str, Any]], None]


@runtime_checkable
class StopSignal(Protocol):
    """Set when a run should end early (the CLI's first Ctrl-C); ``threading.Event`` is one. A backend polls it
    between steps and, once it is set, ends the run the way its ``capabilities.stop`` says, saving what it has."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


@runtime_checkable
class TrainingBackend(Protocol):
    """Runs GRPO for a RunConfig on one training framework. ``crossgym train`` calls, in order: ``check()``,
    ``preload()``, then ``train(run, tasks=..., progress=..., stop=...)``; ``crossgym plan`` calls ``plan(run)``;
    the compat suite imports ``compat_driver``. Subclass BackendBase for the defaults of the optional parts."""

    name: str
    capabilities: BackendCapabilities
    #: The module of this backend's compat parity driver (see crossgym.compat_tests.drivers), or None.
    compat_driver: str | None

    def check(self) -> None:
        """Raise BackendUnavailable (with the install command) when this backend cannot run here."""
        ...

    def preload(self) -> None:
        """Imports that must come before anything loads the frameworks (Unsloth patches transformers); called
        before the eval gate. Most backends do nothing."""
        ...

    def plan(self, run: RunConfig) -> Plan:
        """Native config, argv and generated files; no side effects."""
        ...

    def reward_function(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> Any:
        """The framework's native reward object applying ``spec`` to every row."""
        ...

    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None) -> TrainResult:
        """Train on ``tasks`` (loaded from ``run.tasks`` when None), calling ``progress`` after each step and
        honouring ``stop`` (see StopSignal)."""
        ...


@runtime_checkable
class ResumableBackend(TrainingBackend, Protocol):
    """A TrainingBackend whose ``capabilities.resume`` is True: ``train`` continues from ``resume_point(run)``
    through the framework's own checkpoint loading, and ``crossgym train`` asks first (to skip the gate, say where
    it resumes, and refuse ``--resume`` with nothing to resume)."""

    def resume_point(self, run: RunConfig) -> ResumePoint | None:
        """The checkpoint ``run`` continues from (its RunConfig.resume), or None to start from the model ("never",
        or "auto" with no complete checkpoint). A ConfigError naming the field when it cannot resume (the model,
        LoRA shape or backend changed; the checkpoint named is not a complete one)."""
        ...


class BackendBase:
    """Defaults for a TrainingBackend's optional parts: no compat driver, nothing to preload."""

    compat_driver: str | None = None

    def preload(self) -> None:
        return None


@runtime_checkable
class InferenceEngine(Protocol):
    """Generates n completions per prompt; token ids and logprobs where the engine gives them."""

    name: str
    capabilities: EngineCapabilities

    def check(self) -> None:
        """Raise BackendUnavailable (or a CrossgymError) when the engine cannot generate here: a package is missing
        or its server does not answer."""
        ...

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]: ...

    def close(self) -> None:
        """Release what the engine holds (a model, a server's connections); safe to call twice."""
        ...
