"""Test plugins for the TRL backend tests: a verifier with deterministic errors and a small tool environment.

Real crossgym objects (registered through the public plugin hook), used while the library's own land and to pin
the on_error rules: task.metadata["verdict"] forces a timeout / exception / malformed verdict for that task.
"""

from __future__ import annotations

import json
import re
from typing import Any

from crossgym.plugins import hookimpl
from crossgym.protocol import (
    Completion,
    Example,
    Message,
    Observation,
    StepResult,
    Task,
    ToolSpec,
    Verdict,
    VerifierSpec,
)


class ContainsVerifier:
    """Reward 1.0 when the completion's final text contains str(task.answer), else a partial 0.25 for any digit."""

    name = "test_contains"
    version = "1"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        forced = task.metadata.get("verdict")
        if forced == "timeout":
            return Verdict.timeout(1.0)
        if forced == "exception":
            return Verdict.exception("forced by the test task")
        if forced == "raise":
            raise RuntimeError("a buggy verifier")
        text = completion.text
        if forced == "malformed" or not text.strip():
            return Verdict.malformed("empty completion" if not text.strip() else "forced")
        if str(task.answer) in text:
            return Verdict.ok(1.0)
        return Verdict.ok(0.25 if re.search(r"\d", text) else 0.0)

    @classmethod
    def examples(cls) -> list[Example]:
        t = Task(id="ex", prompt=[Message("user", "Write 3")], answer=3, verifier=VerifierSpec(cls.name))
        return [Example(t, Completion.from_text("3"), "pass"), Example(t, Completion.from_text("x"), "fail"),
                Example(t, Completion.from_text(""), "malformed")]


class LengthVerifier:
    """Reward 1.0 for an empty-ish reply, falling linearly to 0 at ``limit`` characters (an extra reward term)."""

    name = "test_short"
    version = "1"

    def __init__(self, limit: int = 16) -> None:
        self.limit = limit

    def verify(self, task: Task, completion: Completion) -> Verdict:
        n = len(completion.text)
        return Verdict.ok(max(0.0, 1.0 - n / self.limit), passed=n <= self.limit // 2)

    @classmethod
    def examples(cls) -> list[Example]:
        t = Task(id="ex", prompt=[Message("user", "hi")], answer=None, verifier=VerifierSpec(cls.name))
        return [Example(t, Completion.from_text("a"), "pass"), Example(t, Completion.from_text("a" * 40), "fail")]


ADD_TOOL = ToolSpec(name="add", description="Add two integers.",
                    parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                "required": ["a", "b"]})
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


class CalcEnv:
    """Multi-turn: the model may call add(a, b) in Hermes <tool_call> form; a reply without a call ends it."""

    def __init__(self, max_turns: int = 3) -> None:
        self.max_turns = max_turns
        self.turns = 0

    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        self.turns = 0
        return Observation(messages=task.prompt, tools=task.tools or (ADD_TOOL,))

    def step(self, action: Message) -> StepResult:
        self.turns += 1
        calls = _CALL.findall(action.content)
        if not calls or self.turns >= self.max_turns:
            return StepResult(done=True)
        out = []
        for i, raw in enumerate(calls):
            try:
                call = json.loads(raw)
                result: Any = int(call["arguments"]["a"]) + int(call["arguments"]["b"])
            except (ValueError, KeyError, TypeError) as exc:
                result = f"error: {exc}"
            out.append(Message(role="tool", content=str(result), tool_call_id=f"call_{i}", name="add"))
        return StepResult(messages=out, done=False)

    def close(self) -> None:
        pass


class TestPlugin:
    @hookimpl
    def crossgym_register_verifiers(self, registry: Any) -> None:
        registry.add("test_contains", f"{__name__}:ContainsVerifier")
        registry.add("test_short", f"{__name__}:LengthVerifier")

    @hookimpl
    def crossgym_register_environments(self, registry: Any) -> None:
        registry.add("test_calc", f"{__name__}:CalcEnv")


def digit_tasks(n: int = 32, *, env: str = "single_turn", tools: bool = False, seed: int = 0) -> list[Task]:
    """"Write the digit d." tasks scored by test_contains."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        d = rng.randint(0, 9)
        out.append(Task(id=f"digit-{i}", prompt=[Message("user", f"Write the digit {d}.")], answer=d,
                        verifier=VerifierSpec("test_contains"), env=env, tools=(ADD_TOOL,) if tools else ()))
    return out
