"""Environment conformance: reusable checks that any Environment (built-in or third-party) must pass.

An ``EnvCase`` bundles a factory, a task and two scripted trajectories (assistant actions): one that solves the task
(reward ``correct_reward``, default 1) and one that does not (``wrong_reward``, default 0). Each ``check_*``
function raises ``ConformanceError`` with a one-line reason; ``run_conformance`` runs them all and reports.
compat_tests and tests/environments call these; ``builtin_cases()`` gives a case for every built-in environment.

The checks: reset/step contract, done semantics, determinism under a seed, JSON round trip of observations and step
results, the scripted correct and wrong trajectories' rewards, the env's own ``completion()`` (when it has one)
matching the transcript, and 64 episodes alive at once and stepped from many threads without interfering.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.episode import Observation, StepResult
from crossgym.protocol.interfaces import Environment
from crossgym.protocol.messages import Message, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict


class ConformanceError(AssertionError):
    """An environment broke the protocol; the message names the check and what went wrong."""


@dataclass
class EnvCase:
    """An environment factory, a task, and scripted trajectories with the rewards they must earn."""

    name: str
    make_env: Callable[[], Environment]
    task: Task
    correct: Sequence[Message]
    wrong: Sequence[Message]
    seed: int = 0
    correct_reward: float = 1.0
    wrong_reward: float = 0.0
    #: extra label for reports (e.g. which trajectory features it exercises)
    notes: str = ""


@dataclass
class Episode:
    """One scripted episode: the first observation, each step's result, the Completion and its Verdict."""

    observation: Observation
    steps: list[StepResult] = field(default_factory=list)
    completion: Completion = field(default_factory=lambda: Completion(messages=()))
    verdict: Verdict | None = None


def _fail(check: str, case: EnvCase, msg: str) -> ConformanceError:
    return ConformanceError(f"[{case.name}] {check}: {msg}")


def run_episode(env: Environment, task: Task, actions: Sequence[Message], *, seed: int | None = 0,
                score: bool = True, close: bool = True) -> Episode:
    """Reset, take ``actions`` until done, and score the transcript with the task's verifier.

    The Completion is every action followed by the messages its step returned, which is what rollout runners build.
    """
    obs = env.reset(task, seed=seed)
    ep = Episode(observation=obs)
    messages: list[Message] = []
    try:
        for action in actions:
            result = env.step(action)
            ep.steps.append(result)
            messages.append(action)
            messages.extend(result.messages)
            if result.done:
                break
    finally:
        if close:
            env.close()
    ep.completion = Completion(messages=tuple(messages))
    if score:
        from crossgym.api import load_verifier

        ep.verdict = load_verifier(task.verifier).verify(task, ep.completion)
    return ep


# ---------------------------------------------------------------------------------------------- checks
def check_reset_contract(case: EnvCase) -> None:
    """reset returns an Observation of Messages and ToolSpecs; step before reset and non-assistant actions raise."""
    env = case.make_env()
    try:
        try:
            env.step(case.correct[0])
        except Exception:
            pass
        else:
            raise _fail("reset contract", case, "step() before reset() did not raise")
        obs = env.reset(case.task, seed=case.seed)
        if not isinstance(obs, Observation):
            raise _fail("reset contract", case, f"reset() returned {type(obs).__name__}, not an Observation")
        if not obs.messages or not all(isinstance(m, Message) for m in obs.messages):
            raise _fail("reset contract", case, "the observation has no messages, or they are not Messages")
        if not all(isinstance(t, ToolSpec) for t in obs.tools):
            raise _fail("reset contract", case, "observation tools must be ToolSpecs")
        if obs.messages[-1].role not in ("user", "tool"):
            raise _fail("reset contract", case, f"the observation ends with a {obs.messages[-1].role!r} message; "
                                                 "the policy needs a user (or tool) message to answer")
        try:
            env.step(Message(role="user", content="not an action"))
        except Exception:
            pass
        else:
            raise _fail("reset contract", case, "a user-role action was accepted; actions are assistant Messages")
        # reset again mid-episode starts over cleanly
        again = env.reset(case.task, seed=case.seed)
        if again.to_dict() != obs.to_dict():
            raise _fail("reset contract", case, "a second reset() with the same seed gave a different observation")
    finally:
        env.close()


def check_done_semantics(case: EnvCase) -> None:
    """Every step returns a StepResult; the scripted trajectories end with done=True exactly at their last step,
    and stepping after done raises."""
    for label, actions in (("correct", case.correct), ("wrong", case.wrong)):
        env = case.make_env()
        try:
            env.reset(case.task, seed=case.seed)
            for i, action in enumerate(actions):
                result = env.step(action)
                if not isinstance(result, StepResult):
                    raise _fail("done semantics", case, f"step() returned {type(result).__name__}")
                if not all(isinstance(m, Message) for m in result.messages):
                    raise _fail("done semantics", case, "step() messages must be Messages")
                if any(m.role == "assistant" for m in result.messages):
                    raise _fail("done semantics", case, "the environment spoke as the assistant")
                last = i == len(actions) - 1
                if result.done and not last:
                    raise _fail("done semantics", case, f"{label} trajectory: done after action {i + 1} of "
                                                         f"{len(actions)}")
                if last and not result.done:
                    raise _fail("done semantics", case, f"{label} trajectory: not done after its last action")
            try:
                env.step(Message(role="assistant", content="one more"))
            except Exception:
                pass
            else:
                raise _fail("done semantics", case, "step() after done=True did not raise")
        finally:
            env.close()
    env = case.make_env()
    env.close()
    env.close()  # close is idempotent, even before reset


def _transcript(ep: Episode) -> list[Any]:
    return [ep.observation.to_dict()] + [{"messages": [m.to_dict() for m in s.messages], "done": s.done}
                                         for s in ep.steps]


def check_determinism(case: EnvCase) -> None:
    """The same task, seed and actions give the same observations, messages, done flags and reward."""
    a = run_episode(case.make_env(), case.task, case.correct, seed=case.seed)
    b = run_episode(case.make_env(), case.task, case.correct, seed=case.seed)
    if _transcript(a) != _transcript(b):
        raise _fail("determinism", case, "two episodes with the same seed and actions differ")
    if a.verdict is None or b.verdict is None or a.verdict.to_dict() != b.verdict.to_dict():
        raise _fail("determinism", case, "the same episode scored differently twice")


def check_json_round_trip(case: EnvCase) -> None:
    """Observations and step results survive JSON exactly (they cross process and network boundaries)."""
    ep = run_episode(case.make_env(), case.task, case.correct, seed=case.seed, score=False)
    obs_json = json.dumps(ep.observation.to_dict())
    if Observation.from_dict(json.loads(obs_json)) != ep.observation:
        raise _fail("json round trip", case, "Observation.from_dict(to_dict()) differs")
    for i, step in enumerate(ep.steps):
        try:
            text = json.dumps(step.to_dict())
        except (TypeError, ValueError) as exc:
            raise _fail("json round trip", case, f"step {i + 1} is not JSON: {exc}") from None
        back = StepResult.from_dict(json.loads(text))
        if back.messages != step.messages or back.done != step.done:
            raise _fail("json round trip", case, f"step {i + 1} changed through JSON")
    comp = Completion.from_dict(json.loads(json.dumps(ep.completion.to_dict())))
    if comp != ep.completion:
        raise _fail("json round trip", case, "the episode's Completion changed through JSON")


def check_rewards(case: EnvCase) -> None:
    """The correct trajectory earns ``correct_reward`` (and passes); the wrong one earns ``wrong_reward``."""
    for label, actions, want in (("correct", case.correct, case.correct_reward),
                                 ("wrong", case.wrong, case.wrong_reward)):
        ep = run_episode(case.make_env(), case.task, actions, seed=case.seed)
        v = ep.verdict
        assert v is not None
        if v.error is not None:
            raise _fail("rewards", case, f"{label} trajectory: verifier error {v.error!r}")
        if abs(v.reward - want) > 1e-9:
            raise _fail("rewards", case, f"{label} trajectory earned {v.reward}, expected {want} ({v.reason})")
        if label == "correct" and not v.passed:
            raise _fail("rewards", case, f"correct trajectory did not pass ({v.reason})")
        if label == "wrong" and v.passed:
            raise _fail("rewards", case, f"wrong trajectory passed ({v.reason})")


def check_completion_helper(case: EnvCase) -> None:
    """When the environment offers ``completion()``/``verdict()``, they agree with the transcript and verifier."""
    env = case.make_env()
    ep = run_episode(env, case.task, case.correct, seed=case.seed, close=False)
    try:
        if hasattr(env, "completion"):
            own = env.completion()
            if own != ep.completion:
                raise _fail("completion helper", case, "env.completion() differs from the episode's transcript")
        if hasattr(env, "verdict") and ep.verdict is not None:
            if env.verdict().to_dict() != ep.verdict.to_dict():
                raise _fail("completion helper", case, "env.verdict() differs from the task verifier's Verdict")
    finally:
        env.close()


def check_concurrency(case: EnvCase, episodes: int = 64, workers: int = 16) -> None:
    """``episodes`` episodes alive at once (all reset before any steps), stepped from ``workers`` threads,
    alternating correct and wrong trajectories: each earns its own reward, untouched by the others."""
    envs = [case.make_env() for _ in range(episodes)]
    try:
        for env in envs:
            env.reset(case.task, seed=case.seed)
        lock = threading.Lock()
        errors: list[str] = []

        def play(i: int) -> float:
            env = envs[i]
            actions = case.correct if i % 2 == 0 else case.wrong
            messages: list[Message] = []
            for action in actions:
                result = env.step(action)
                messages.append(action)
                messages.extend(result.messages)
                time.sleep(0)  # let other threads interleave between steps
                if result.done:
                    break
            from crossgym.api import load_verifier

            v = load_verifier(case.task.verifier).verify(case.task, Completion(messages=tuple(messages)))
            if v.error is not None:
                with lock:
                    errors.append(f"episode {i}: {v.error}")
            return v.reward

        with ThreadPoolExecutor(max_workers=workers) as pool:
            rewards = list(pool.map(play, range(episodes)))
    finally:
        for env in envs:
            env.close()
    if errors:
        raise _fail("concurrency", case, f"{len(errors)} episodes errored, e.g. {errors[0]}")
    wrong = [i for i, r in enumerate(rewards)
             if abs(r - (case.correct_reward if i % 2 == 0 else case.wrong_reward)) > 1e-9]
    if wrong:
        raise _fail("concurrency", case, f"{len(wrong)} of {episodes} concurrent episodes earned the wrong reward "
                                         f"(e.g. episode {wrong[0]}: {rewards[wrong[0]]})")


CHECKS: dict[str, Callable[[EnvCase], None]] = {
    "reset_contract": check_reset_contract,
    "done_semantics": check_done_semantics,
    "determinism": check_determinism,
    "json_round_trip": check_json_round_trip,
    "rewards": check_rewards,
    "completion_helper": check_completion_helper,
    "concurrency": check_concurrency,
}


def run_conformance(case: EnvCase, checks: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the checks on one case: {"name", "ok", "checks": [{"check", "ok", "error", "seconds"}]}."""
    rows = []
    for name in checks or list(CHECKS):
        t0 = time.perf_counter()
        try:
            CHECKS[name](case)
            rows.append({"check": name, "ok": True, "error": None})
        except Exception as exc:  # a crashing environment is a failed check, reported, not raised
            rows.append({"check": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
        rows[-1]["seconds"] = round(time.perf_counter() - t0, 3)
    return {"name": case.name, "ok": all(r["ok"] for r in rows), "checks": rows}


def builtin_cases() -> list[EnvCase]:
    """One case per built-in environment (see ``crossgym.environments.cases``)."""
    from crossgym.environments.cases import builtin_cases as _cases

    return _cases()
