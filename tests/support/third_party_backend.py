"""A third-party training backend written only against the declared protocol (crossgym.protocol.TrainingBackend):
no crossgym base class, no crossgym adapter code. It records what `crossgym train` hands it."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.plugins import hookimpl
from crossgym.protocol import BackendCapabilities, Plan, Task, TrainResult, VerifierSpec

#: (event, detail) in the order they happened, for the test to read
EVENTS: list[tuple[str, Any]] = []


class StepBackend:
    name = "third_party_step"
    capabilities = BackendCapabilities(multi_turn=False, variants=("grpo",), stop="step")
    compat_driver: str | None = None

    def check(self) -> None:
        EVENTS.append(("check", self.name))

    def preload(self) -> None:
        EVENTS.append(("preload", self.name))

    def plan(self, run: Any) -> Plan:
        return Plan(backend=self.name, native_config={"lr": run.grpo.learning_rate})

    def reward_function(self, spec: VerifierSpec, *, on_error: float | str = 0.0) -> Any:
        return (spec, on_error)

    def train(self, run: Any, *, tasks: Sequence[Task] | None = None, progress: Any = None,
              stop: Any = None) -> TrainResult:
        EVENTS.append(("train", {"tasks": None if tasks is None else len(tasks), "stop_is_set": stop.is_set()}))
        steps = 0
        for step in range(1, run.grpo.max_steps + 1):
            if run.backend_args.get("ctrl_c_at") == step:
                os.kill(os.getpid(), signal.SIGINT)  # the user's first Ctrl-C, to this process only
                EVENTS.append(("stop_seen", stop.wait(5)))
            if stop.is_set():
                break
            steps = step
            progress(step, run.grpo.max_steps, {"reward": 0.25 * step})
        out = Path(run.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        return TrainResult(output_dir=str(out), steps=steps, checkpoint=str(out / "final"),
                           metrics={"interrupted": stop.is_set()})


class ProcessBackend(StepBackend):
    """Launches a process in real life: its stop ends that process, it does not finish a step and save."""

    name = "third_party_process"
    capabilities = BackendCapabilities(multi_turn=False, variants=("grpo",), stop="process")


class Plugin:
    @hookimpl
    def crossgym_register_backends(self, registry: Any) -> None:
        registry.add("third_party_step", "third_party_backend:StepBackend")
        registry.add("third_party_process", "third_party_backend:ProcessBackend")
