"""crossgym.rollout.driver, framework-free: the seed rule, the stop rule, the turn limits, the environment-error
policy, completion assembly and the episode JSON, on real environments (tool_use, BaseEnvironment subclasses)."""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.environments.tool_use import ToolUseEnv
from crossgym.protocol import Message, Observation, StepResult, Task, ToolCall, VerifierSpec
from crossgym.rollout.driver import (
    MAX_TURNS,
    Episode,
    episode_env_params,
    episode_from_json,
    episode_max_turns,
    episode_seed,
    render_messages,
    split_turn,
    stop_token_ids,
)
from crossgym.scoring import ExtraTerm, RewardRule


def say(text: str) -> Message:
    return Message(role="assistant", content=text)


def calc_task() -> Task:
    return Task(id="calc", prompt="What is 3 times 4? Use the tools. Answer in <answer></answer>.", answer=12,
                verifier=VerifierSpec("numeric"), env="tool_use", metadata={"toolset": "calculator"})


class Buggy(BaseEnvironment):
    """A BaseEnvironment whose respond() has a bug on the second turn (BaseEnvironment catches it, reports it)."""

    name = "buggy"
    default_max_turns = 5

    def respond(self, action: Message) -> Reply:
        if self.turns >= 2:
            raise ZeroDivisionError("bug in the environment")
        return Reply(messages=[Message("user", "go on")])


class Silent:
    """A raw protocol environment that answers nothing and never ends."""

    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        return Observation(messages=task.prompt)

    def step(self, action: Message) -> StepResult:
        return StepResult()

    def close(self) -> None:
        pass


class BrokenReset(Silent):
    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        raise OSError("no sandbox")


def test_the_seed_is_one_per_task_and_run_seed() -> None:
    assert episode_seed(0, "a") == episode_seed(0, "a") is not None
    assert len({episode_seed(0, "a"), episode_seed(1, "a"), episode_seed(0, "b")}) == 3
    assert episode_seed(None, "a") is None
    assert 0 <= episode_seed(123, "x") < 2 ** 32  # type: ignore[operator]


def test_stop_rule_and_turn_split() -> None:
    assert stop_token_ids(7, [7, 9, None]) == [7, 9] and stop_token_ids(None, None) == []
    assert split_turn([1, 2, 7], [7]) == ([1, 2], True)
    assert split_turn([1, 2], [7]) == ([1, 2], False)  # cut by the length limit
    assert split_turn([1, 2, 7, 9], [7, 9]) == ([1, 2], True)
    assert split_turn([1, 2, 7], [7], "length") == ([1, 2], False)  # the engine's word wins
    assert split_turn([1, 2], [7], "stop") == ([1, 2], True)


def test_turn_limit_defaults() -> None:
    assert episode_max_turns() == MAX_TURNS and episode_max_turns(3) == 3
    with pytest.raises(ValueError):
        episode_max_turns(0)
    assert episode_env_params({"toolset": "x"}) == {"toolset": "x"}
    assert episode_env_params({"toolset": "x"}, 2) == {"toolset": "x", "max_turns": 2}


def test_a_tool_episode_and_its_completion() -> None:
    ep = Episode(task=calc_task(), env=ToolUseEnv(), env_name="tool_use")
    ep.start(episode_seed(0, "calc"))
    assert ep.prompt == calc_task().prompt and {t.name for t in ep.tools} >= {"multiply"}
    call = Message("assistant", "", tool_calls=(ToolCall(id="c1", name="multiply", arguments={"a": 3, "b": 4}),))
    reply = ep.take(call, token_ids=[5, 6, 2])
    assert not ep.done and [m.content for m in reply] == ["12"]
    ep.feed([8, 8])
    ep.take(say("<answer>12</answer>"), token_ids=[9, 2])
    assert ep.done and ep.stop == "done" and ep.turns == 2
    assert ep.trace_ids == [5, 6, 2, 8, 8, 9, 2] and ep.trace_mask == [1, 1, 1, 0, 0, 1, 1]
    completion = ep.completion()
    assert completion.messages == (call, *reply, say("<answer>12</answer>"))
    assert completion.token_ids == (5, 6, 2, 9, 2)  # the policy's own tokens
    from crossgym.api import load_verifier

    assert ep.verdict(load_verifier("numeric")).passed
    with pytest.raises(RuntimeError, match="is over"):
        ep.take(say("again"))


@pytest.mark.parametrize("env, where", [(Buggy(), "step 2 failed: exception: ZeroDivisionError"),
                                        (BrokenReset(), "reset failed: OSError: no sandbox")])
def test_an_environment_failure_is_an_exception_verdict_scored_on_error(env: Any, where: str) -> None:
    ep = Episode(task=calc_task(), env=env, env_name="x")
    ep.start(None)
    while not ep.done:
        ep.take(say("hi"))
    assert ep.stop == "error" and ep.error is not None
    assert ep.error.error is not None and ep.error.error.startswith("exception: environment 'x' ")
    assert where.replace("exception: ", "") in ep.error.error
    assert ep.verdict(object()) is ep.error  # the verifier is not asked
    rule = RewardRule(on_error=-1.0, task_weight=2.0, extras=(ExtraTerm("len", VerifierSpec("length"), 0.5),))
    scored = ep.score(rule)
    assert scored.verdict.error == ep.error.error
    assert scored.task_reward == -1.0 and scored.extras == {"len": -1.0} and scored.reward == -2.5
    completion, detail = episode_from_json(ep.to_json())
    assert completion.messages == ep.completion().messages and f"exception: {detail}" == ep.error.error


def test_stop_rules_end_the_episode() -> None:
    cut = Episode(task=calc_task(), env=Silent(), env_name="silent")
    cut.start(None)
    cut.take(say("half a sent"), ended=False)
    assert cut.done and cut.stop == "cut"
    empty = Episode(task=calc_task(), env=Silent(), env_name="silent")
    empty.start(None)
    empty.take(say("hello"))
    assert empty.done and empty.stop == "empty_reply"
    capped = Episode(task=calc_task(), env=ToolUseEnv(), env_name="tool_use", max_turns=1)
    capped.start(None)
    capped.take(say('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'))
    assert capped.done and capped.stop == "max_turns" and capped.info["truncated"]
    budget = Episode(task=calc_task(), env=ToolUseEnv(), env_name="tool_use", budget=10)
    budget.start(None)
    budget.take(say('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'), token_ids=[1] * 6)
    assert not budget.done and budget.fits(3) and not budget.fits(4)
    assert budget.done and budget.stop == "budget"
    assert budget.completion().messages[-1].content == "3"  # the last reply is scored, never fed


def test_render_messages_gives_templates_arguments_as_objects() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})
    (rendered,) = render_messages([Message("assistant", "", tool_calls=(call,))])
    assert rendered["tool_calls"] == [{"id": "c1", "type": "function",
                                       "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]
    assert Message("assistant", "", tool_calls=(call,)).to_openai()["tool_calls"][0]["function"]["arguments"] == \
        '{"a": 1, "b": 2}'  # the OpenAI wire form stays a string (servers), never handed to a template


def test_open_builds_the_registered_environment_and_reports_a_bad_one() -> None:
    ep = Episode.open(calc_task(), "tool_use", max_turns=2, seed=1)
    assert ep.env.max_turns == 2 and ep.max_turns == 2 and not ep.done
    ep.close()
    bad = Episode.open(calc_task(), "tool_use", env_params={"nonsense": 1})
    assert bad.done and bad.error is not None and "could not be built" in bad.error.reason
