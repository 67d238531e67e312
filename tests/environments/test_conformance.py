"""Conformance: every built-in environment passes every check, and broken environments are caught."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.environments.cases import CASES, builtin_cases
from crossgym.environments.conformance import CHECKS, ConformanceError, EnvCase, run_conformance
from crossgym.environments.single_turn import SingleTurnEnv
from crossgym.protocol.episode import Observation, StepResult
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task

_cases: dict[str, EnvCase] = {}


def case(name: str) -> EnvCase:
    if name not in _cases:
        _cases[name] = builtin_cases([name])[0]
    return _cases[name]


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("env", list(CASES))
def test_builtin_environment_conforms(env: str, check: str) -> None:
    CHECKS[check](case(env))


def test_every_registered_environment_has_a_case() -> None:
    from crossgym.plugins import registry

    # "openenv" needs a live OpenEnv server: its conformance runs in tests/interop/test_openenv_bridge.py
    assert set(registry("environments").names()) - {"openenv"} == set(CASES)


def test_run_conformance_reports_every_check() -> None:
    report = run_conformance(case("single_turn"))
    assert report["ok"] and [r["check"] for r in report["checks"]] == list(CHECKS)


# ---------------------------------------------------------------------------------------------- broken envs
class NoGuards:
    """Accepts steps before reset and after done, and returns plain dicts."""

    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        return Observation(messages=task.prompt)

    def step(self, action: Message) -> Any:
        return StepResult(done=True)

    def close(self) -> None:
        pass


_counter = itertools.count()


class Drifting(SingleTurnEnv):
    """Adds a different system line on every reset: not deterministic."""

    def start(self, task: Task) -> Observation:
        return Observation(messages=(Message(role="system", content=f"episode {next(_counter)}"), *task.prompt))


class EndsEarly(BaseEnvironment):
    """Ends every episode after the first action, however many the task needs."""

    name = "ends_early"
    default_max_turns = 8

    def respond(self, action: Message) -> Reply:
        return Reply(done=True)


_shared: list[Message] = []


class SharedState(BaseEnvironment):
    """Keeps the transcript in a class-level list that other episodes write to as well."""

    name = "shared"
    default_max_turns = 1

    def respond(self, action: Message) -> Reply:
        _shared.append(action)
        _shared.append(Message(role="assistant", content="written by another episode"))
        return Reply(done=True)

    def completion(self) -> Any:
        from crossgym.protocol.task import Completion

        return Completion(messages=tuple(_shared[-1:]))


class Speaker(SingleTurnEnv):
    """Replies as the assistant."""

    def respond(self, action: Message) -> Reply:
        return Reply(messages=[Message(role="assistant", content="me too")], done=True)


def broken(make: Any, base: str = "single_turn") -> EnvCase:
    c = case(base)
    return EnvCase(f"broken-{getattr(make, '__name__', make)}", make, c.task, c.correct, c.wrong, c.seed)


@pytest.mark.parametrize("make, check, match", [
    (NoGuards, "reset_contract", "step\\(\\) before reset\\(\\) did not raise"),
    (NoGuards, "done_semantics", "after done=True did not raise"),
    (Drifting, "determinism", "differ"),
    (Drifting, "reset_contract", "second reset"),
    (Speaker, "done_semantics", "spoke as the assistant"),
])
def test_broken_environments_fail_the_checks(make: Any, check: str, match: str) -> None:
    with pytest.raises(ConformanceError, match=match):
        CHECKS[check](broken(make))


def test_an_environment_ending_too_early_fails_done_semantics() -> None:
    c = case("tool_use")
    with pytest.raises(ConformanceError, match="done after action 1"):
        CHECKS["done_semantics"](EnvCase("early", EndsEarly, c.task, c.correct, c.wrong))


def test_wrong_expected_rewards_are_reported() -> None:
    c = case("single_turn")
    swapped = EnvCase("swapped", c.make_env, c.task, correct=c.wrong, wrong=c.correct)
    with pytest.raises(ConformanceError, match="correct trajectory earned 0.0"):
        CHECKS["rewards"](swapped)
    report = run_conformance(swapped, ["rewards", "determinism"])
    assert not report["ok"] and report["checks"][1]["ok"]


def test_shared_state_is_caught_by_the_completion_helper() -> None:
    c = case("single_turn")
    with pytest.raises(ConformanceError, match="completion\\(\\) differs"):
        CHECKS["completion_helper"](EnvCase("shared", SharedState, c.task, c.correct, c.wrong))
