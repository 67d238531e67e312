"""A test plugin for the serve tests: a verifier that takes as long as its task says (to fill slots, hit deadlines).

Registered through crossgym.plugins.register_plugin exactly like a third-party plugin.
"""

from __future__ import annotations

import time

from crossgym.plugins import hookimpl
from crossgym.protocol import Completion, Task, Verdict
from crossgym.verifiers.base import BaseVerifier, Malformed, time_left


class Sleepy(BaseVerifier):
    """Waits ``task.answer`` seconds (bounded by its own deadline), then passes a non-empty completion."""

    name, version, description = "test_sleepy", "1", "sleeps task.answer seconds, then passes non-empty text"
    isolation = "thread"
    default_timeout = 5.0

    def score(self, task: Task, completion: Completion) -> Verdict:
        time.sleep(min(float(task.answer or 0), time_left(5.0)))
        if not completion.text:
            raise Malformed("empty completion")
        return Verdict.ok(1.0, reason="awake")

    @classmethod
    def examples(cls):  # type: ignore[no-untyped-def]
        return [cls.example(0, "x", "pass"), cls.example(0, "", "malformed")]


class Plugin:
    @hookimpl
    def crossgym_register_verifiers(self, registry):  # type: ignore[no-untyped-def]
        registry.add("test_sleepy", "serve_fixtures:Sleepy", description=Sleepy.description)
