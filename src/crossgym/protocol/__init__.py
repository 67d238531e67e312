"""The contract between tasks, environments, verifiers, engines and backends (stdlib + typing only).

RunConfig (pydantic) is loaded on first use so that `import crossgym.protocol` stays cheap.
"""

from __future__ import annotations

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
    Capabilities,
    Environment,
    InferenceEngine,
    Plan,
    TrainingBackend,
    TrainResult,
    Verifier,
)
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec

if TYPE_CHECKING:
    from crossgym.protocol.config import RunConfig, load_run_config

__all__ = [
    "BackendUnavailable", "Capabilities", "Completion", "ConfigError", "CrossgymError", "Environment", "Example",
    "InferenceEngine", "Message", "Observation", "Plan", "PluginError", "Rollout", "RunConfig", "SamplingParams",
    "SandboxError", "StepResult", "Task", "ToolCall", "ToolSpec", "TrainResult", "TrainingBackend",
    "UnknownNameError", "Verdict", "Verifier", "VerifierError", "VerifierSpec", "load_run_config",
]


def __getattr__(name: str) -> Any:
    if name in ("RunConfig", "load_run_config"):
        from crossgym.protocol import config

        return getattr(config, name)
    raise AttributeError(f"module 'crossgym.protocol' has no attribute {name!r}")
