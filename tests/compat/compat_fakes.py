"""Deliberately broken verifiers and backends beside the suite: each breaks one rule, so the tests can show the
matching check catches it. Registered in-process (``register_plugin``) by tests/compat/conftest.py fixtures; also
importable by module name in the fresh-process check's child."""

from __future__ import annotations

import itertools
import struct
import time
from typing import Any

from crossgym.plugins import hookimpl
from crossgym.protocol import BackendBase, BackendCapabilities, Completion, Example, Task, Verdict, VerifierSpec
from crossgym.verifiers.base import BaseVerifier, Malformed

#: set by a test in the parent process only; the fresh-process check must notice the difference
PROCESS_LOCAL = {"bonus": 0.0}


class Contains(BaseVerifier):
    """A well-behaved verifier: the answer appears in the completion."""

    name, version = "fake_contains", "1"

    def score(self, task: Task, completion: Completion) -> Verdict:
        text = completion.text
        if not text.strip():
            raise Malformed("empty completion")
        hit = str(task.answer) in text
        return Verdict.ok(0.3 if hit and len(text) > 30 else 1.0 if hit else 0.0, threshold=0.3)

    @classmethod
    def examples(cls) -> list[Example]:
        return [cls.example("42", "The answer is 42.", "pass"), cls.example("42", "It is 7.", "fail"),
                cls.example("42", " ", "malformed"),
                cls.example("42", "After a long and winding explanation: 42", "pass", "long: reward 0.3 (not a float32 number)"),
                cls.example("7", "It is 7.", "pass", "a second task")]


class Flaky(Contains):
    """Not deterministic: the reward alternates between calls."""

    name = "fake_flaky"
    _calls = itertools.count()

    def score(self, task: Task, completion: Completion) -> Verdict:
        v = super().score(task, completion)
        return Verdict.ok(v.reward * (1 if next(self._calls) % 2 else 0.5), passed=v.passed)


class Raises:
    """Not a BaseVerifier, and breaks the never-raise rule on odd input."""

    name, version = "fake_raises", "1"

    def __init__(self, **params: Any) -> None:
        self.params = params

    def verify(self, task: Task, completion: Any) -> Verdict:
        text = completion.text  # AttributeError on None
        if len(text) > 10_000:
            raise ValueError("too long")
        return Verdict.ok(1.0 if str(task.answer) in text else 0.0)

    @classmethod
    def examples(cls) -> list[Example]:
        t = Task(id="r", prompt="say 1", answer="1", verifier=VerifierSpec("fake_raises"))
        return [Example(t, Completion.from_text("1"), "pass"), Example(t, Completion.from_text("2"), "fail"),
                Example(t, Completion.from_text(""), "malformed")]


class Slow(Contains):
    """Accepts timeout= but ignores it: sleeps on one garbage entry."""

    name = "fake_slow"

    def score(self, task: Task, completion: Completion) -> Verdict:
        if completion.text.endswith("a!"):  # the garbage corpus's (a+)+$ entry
            time.sleep(1.5)
        return super().score(task, completion)


class WrongExamples(Contains):
    """Declares a failing case as passing, and has no malformed case."""

    name = "fake_wrong_examples"

    @classmethod
    def examples(cls) -> list[Example]:
        return [cls.example("42", "It is 7.", "pass"), cls.example("42", "42", "pass"),
                cls.example("42", "7", "fail")]


class ProcessLocal(Contains):
    """Scores with process state that a fresh interpreter does not have."""

    name = "fake_process_local"

    def score(self, task: Task, completion: Completion) -> Verdict:
        v = super().score(task, completion)
        return Verdict.ok(min(1.0, v.reward + PROCESS_LOCAL["bonus"]), passed=v.passed)


# ------------------------------------------------------------------ backends
class _Backend(BackendBase):
    capabilities = BackendCapabilities(multi_turn=True, variants=("grpo",))

    def check(self) -> None:
        return None

    def plan(self, run: Any) -> Any:
        from crossgym.protocol import Plan

        if run.grpo.variant != "grpo":
            from crossgym.protocol import ConfigError

            raise ConfigError(f"no variant {run.grpo.variant}", where="grpo.variant")
        return Plan(backend=self.name, native_config={"lr": run.grpo.learning_rate})  # type: ignore[attr-defined]


class ExactBackend(_Backend):
    """Hands the trainer Verdict.reward through its declared driver (this module)."""

    name = "fake_exact"
    compat_driver = "compat_fakes"


class Float32Backend(_Backend):
    """Rounds rewards to float32 on the way, like a tensor would; declared in its registry entry."""

    name = "fake_float32"


class NoDriverBackend(_Backend):
    name = "fake_nodriver"


def _reward(task: Task, completion: Completion) -> float:
    from crossgym.api import load_verifier

    v = load_verifier(task.verifier).verify(task, completion)
    return v.reward if v.error is None or v.error_kind == "malformed" else 0.0


MODES = ("single_turn", "multi_turn")


def native_rewards(tasks: list[Task], completions: list[Completion], *, mode: str = "single_turn") -> list[float]:
    """fake_exact's driver: the crossgym reward, unchanged (and chatty on stdout, as OpenRLHF's logger is: `crossgym
    compat --json` must keep stdout for its document)."""
    print("fake_exact: scoring", len(tasks), "completions")
    return [_reward(t, c) for t, c in zip(tasks, completions, strict=True)]


def validate_plan(plan: Any) -> None:
    if not isinstance(plan.native_config.get("lr"), float):
        raise ValueError("lr must be a float")


@hookimpl
def crossgym_register_verifiers(registry: Any) -> None:
    for cls in (Contains, Flaky, Raises, Slow, WrongExamples, ProcessLocal):
        registry.add(cls.name, f"compat_fakes:{cls.__name__}")


@hookimpl
def crossgym_register_backends(registry: Any) -> None:
    registry.add("fake_exact", "compat_fakes:ExactBackend")
    registry.add("fake_float32", "compat_fakes:Float32Backend", capabilities={"compat_driver": "compat_fakes_f32"})
    registry.add("fake_nodriver", "compat_fakes:NoDriverBackend")
    registry.add("fake_missing", "compat_fakes_missing:Backend", install="pip install fake-missing-rl",
                 requires=("compat_fakes_missing_framework",))


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])
