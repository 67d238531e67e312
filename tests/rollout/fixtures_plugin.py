"""A test plugin: verifiers whose rewards vary on the tiny model's random text, and a three-turn environment.

Registered through crossgym.plugins.register_plugin exactly like a third-party plugin.
"""

from __future__ import annotations

import threading

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.plugins import hookimpl
from crossgym.protocol import Completion, Message, Task, Verdict
from crossgym.verifiers.base import BaseVerifier, Malformed

CALLS = {"verify": 0}
_lock = threading.Lock()


class FirstLetter(BaseVerifier):
    """1.0 when the last assistant message starts with a letter: about half of random text does."""

    name, version, description = "test_first_letter", "1", "first character is a letter"

    def score(self, task: Task, completion: Completion) -> Verdict:
        with _lock:
            CALLS["verify"] += 1
        text = completion.text
        if not text:
            raise Malformed("empty completion")
        ok = text[0].isalpha()
        return Verdict.ok(1.0 if ok else 0.0, reason="letter" if ok else "not a letter")

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return [cls.example(None, "abc", "pass"), cls.example(None, "1bc", "fail"), cls.example(None, "", "malformed")]


class FirstLetterV2(FirstLetter):
    """The same verifier after a scoring change: digits now pass too."""

    version = "2"

    def score(self, task: Task, completion: Completion) -> Verdict:
        text = completion.text
        if not text:
            raise Malformed("empty completion")
        ok = text[0].isalnum()
        return Verdict.ok(1.0 if ok else 0.0)


class Slow(FirstLetter):
    """FirstLetter that takes 0.1 s and records when it ran (to see verification overlap generation)."""

    name = "test_slow"
    intervals: list[tuple[float, float]] = []

    def score(self, task: Task, completion: Completion) -> Verdict:
        import time

        start = time.monotonic()
        time.sleep(0.1)
        verdict = super().score(task, completion)
        with _lock:
            Slow.intervals.append((start, time.monotonic()))
        return verdict


class Equals(FirstLetter):
    """1.0 only when the text equals the task's answer: on random text, always 0 (identical rewards)."""

    name = "test_equals"

    def score(self, task: Task, completion: Completion) -> Verdict:
        if not completion.text:
            raise Malformed("empty completion")
        return Verdict.ok(1.0 if completion.text == task.answer else 0.0)

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return [cls.example("a", "a", "pass"), cls.example("a", "b", "fail"), cls.example("a", "", "malformed")]


class Broken(FirstLetter):
    """A verifier whose own examples are wrong: its self-check fails."""

    name = "test_broken"

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return [cls.example(None, "1bc", "pass"), cls.example(None, "abc", "fail"), cls.example(None, "", "malformed")]


class Turns(BaseEnvironment):
    """Says "again" after each reply; ends after ``max_turns`` replies (default 3)."""

    name = "test_turns"
    default_max_turns = 3

    def respond(self, action: Message) -> Reply:
        return Reply(messages=[Message("user", f"again {self.turns}")])


class Exploding(BaseEnvironment):
    """Raises a crossgym error on the second step: the runner must record it, not die."""

    name = "test_exploding"
    default_max_turns = 5

    def respond(self, action: Message) -> Reply:
        if self.turns >= 2:
            from crossgym.protocol import ConfigError

            raise ConfigError("tool backend went away")
        return Reply(messages=[Message("user", "go on")])


class Plugin:
    @hookimpl
    def crossgym_register_verifiers(self, registry):  # type: ignore[no-untyped-def]
        registry.add("test_first_letter", f"{__name__}:FirstLetter")
        registry.add("test_broken", f"{__name__}:Broken")
        registry.add("test_slow", f"{__name__}:Slow")
        registry.add("test_equals", f"{__name__}:Equals")

    @hookimpl
    def crossgym_register_environments(self, registry):  # type: ignore[no-untyped-def]
        registry.add("test_turns", f"{__name__}:Turns")
        registry.add("test_exploding", f"{__name__}:Exploding")


def make_tasks(count: int, *, env: str = "single_turn", verifier: str = "test_first_letter",
               source: str = "letters", answer: object = None) -> list[Task]:
    from crossgym.protocol import VerifierSpec

    return [Task(id=f"{source}-{i}", prompt=f"Write anything #{i}", answer=answer, verifier=VerifierSpec(verifier),
                 env=env, metadata={"source": source}) for i in range(count)]
