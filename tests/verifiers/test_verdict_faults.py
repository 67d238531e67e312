"""Whose fault a Verdict says it is (rt2 12-13), and word counts that hyphens and CJK cannot game (rt2 14)."""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.api import load_verifier
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring.failure import with_fault
from crossgym.verifiers.constraints import words


def _deep(n: int) -> list[Any]:
    x: list[Any] = []
    for _ in range(n):
        x = [x]
    return x


def _fault(v: Verdict) -> str:
    return str(with_fault(v.to_dict())["fault"])


@pytest.mark.parametrize("name", ["tool_call", "sql", "shell"])
@pytest.mark.parametrize("calls", [({"name": "f", "arguments": {}},), ("abc",),
                                   (ToolCall(id="1", name=None, arguments={}),)],  # type: ignore[arg-type]
                         ids=["dict", "str", "name-None"])
def test_tool_calls_that_are_not_toolcalls_are_malformed_not_infra(name: str, calls: tuple[Any, ...]) -> None:
    task = Task(id="t", prompt="call f", answer=[{"name": "f", "arguments": {}}], verifier=VerifierSpec(name))
    completion = Completion(messages=(Message(role="assistant", content="", tool_calls=calls),))
    v = load_verifier(task.verifier).verify(task, completion)
    assert v.error_kind == "malformed" and "ToolCall" in (v.error or ""), v.error
    assert _fault(v) == "model"


def test_real_toolcalls_still_pass() -> None:
    task = Task(id="t", prompt="call f", answer=[{"name": "f", "arguments": {}}], verifier=VerifierSpec("tool_call"))
    calls = (ToolCall(id="1", name="f", arguments={}),)
    v = load_verifier(task.verifier).verify(task, Completion(messages=(Message(role="assistant", content="",
                                                                               tool_calls=calls),)))
    assert v.passed and v.error is None


@pytest.mark.parametrize("where", ["metadata", "answer"])
def test_a_task_nested_too_deeply_is_the_tasks_fault(where: str) -> None:
    deep = _deep(1000)
    task = Task(id="t", prompt="q", answer=deep if where == "answer" else "Paris",
                verifier=VerifierSpec("exact_match"), metadata={"m": deep} if where == "metadata" else {})
    v = load_verifier(task.verifier).verify(task, Completion.from_text("Paris"))
    assert v.error_kind == "exception" and (v.error or "").startswith("exception: bad task 't'"), v.error
    assert _fault(v) != "model"


def test_a_deep_completion_is_still_the_models_fault() -> None:
    task = Task(id="t", prompt="q", answer={"a": 1}, verifier=VerifierSpec("json_match"))
    v = load_verifier(task.verifier).verify(task, Completion.from_text("[" * 200_000))
    assert v.error_kind == "malformed" and _fault(v) == "model"


@pytest.mark.parametrize(("text", "n"), [("well-known don't", 4), ("这是一个句子", 6), ("hello 世界", 3),
                                         ("-".join(["word"] * 7), 7), ("한국어 문장", 2)])
def test_words_are_counted_as_ifeval_counts_them_and_cjk_per_character(text: str, n: int) -> None:
    assert len(words(text)) == n


@pytest.mark.parametrize("text", ["-".join(["word"] * 2000), "这是一个非常长的句子" * 1000])
@pytest.mark.parametrize("name", ["length", "instructions"])
def test_a_long_reply_cannot_pass_a_five_word_budget(name: str, text: str) -> None:
    if name == "length":
        spec, answer = VerifierSpec("length", {"max": 5}), None
    else:
        spec, answer = VerifierSpec("instructions", {"reward": "all"}), [{"type": "word_count", "max": 5}]
    task = Task(id="l", prompt="at most 5 words", answer=answer, verifier=spec)
    v = load_verifier(spec).verify(task, Completion.from_text(text))
    assert v.reward == 0.0 and not v.passed, v.reason
