"""The contract between tasks, environments, verifiers, engines and backends: stdlib + typing only.

Read it in this order (about ten minutes):

- ``messages``: Message, ToolCall, ToolSpec in OpenAI's chat format, and ``messages_from`` for prompts.
- ``task``: Task, VerifierSpec, Completion, Verdict, Example: what a verifier consumes and produces.
- ``episode``: Observation and StepResult (what an environment answers), SamplingParams, Rollout (a scored attempt).
- ``interfaces``: the protocols implementers write (Verifier, Environment, TrainingBackend, InferenceEngine) and the
  values they exchange with the orchestration (capabilities, Plan, TrainResult).
- ``errors``: the CrossgymError tree; a user error carries one line (what, where, fix) and exits 2.

Not here: RunConfig (pydantic + YAML) is in crossgym.config, and reading tool calls, fences and JSON out of model
text is in crossgym.text. ``crossgym.protocol.RunConfig`` and ``load_run_config`` still resolve: they import
crossgym.config on first use, so importing protocol imports nothing else of crossgym.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crossgym.protocol.episode import Observation, Rollout, SamplingParams, StepResult
from crossgym.protocol.errors import (
    BackendUnavailable,
    ConfigError,
    CrossgymError,
    PluginError,
    SandboxError,
    UnknownNameError,
    VerifierError,
)
from crossgym.protocol.interfaces import (
    BackendBase,
    BackendCapabilities,
    Capabilities,
    EngineCapabilities,
    Environment,
    InferenceEngine,
    Plan,
    ResumableBackend,
    ResumePoint,
    StopSignal,
    TrainingBackend,
    TrainResult,
    Verifier,
)
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec

if TYPE_CHECKING:
    from crossgym.config import RunConfig, load_run_config

__all__ = [
    "BackendBase", "BackendCapabilities", "BackendUnavailable", "Capabilities", "Completion", "ConfigError",
    "CrossgymError", "EngineCapabilities", "Environment", "Example", "InferenceEngine", "Message", "Observation",
    "Plan", "PluginError", "ResumableBackend", "ResumePoint", "Rollout", "RunConfig", "SamplingParams", "SandboxError", "StepResult", "StopSignal", "Task", "ToolCall", "ToolSpec", "TrainResult", "TrainingBackend",
    "UnknownNameError", "Verdict", "Verifier", "VerifierError", "VerifierSpec", "load_run_config",
]


#: Names that live in another package but resolve here too (code written for 0.1 imports them from protocol).
_ELSEWHERE = {"RunConfig": "crossgym.config", "load_run_config": "crossgym.config"}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'crossgym.protocol' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
