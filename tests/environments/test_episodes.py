"""The episode contract of BaseEnvironment, single_turn and tool_use: ordering, max_turns, errors as messages."""

from __future__ import annotations

import json

import pytest

import crossgym
from crossgym.environments.base import MAX_CALLS_PER_TURN, BaseEnvironment, EpisodeError, Reply, read_tool_calls
from crossgym.environments.single_turn import SingleTurnEnv
from crossgym.environments.tool_use import ToolUseEnv
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Task, VerifierSpec


def say(text: str) -> Message:
    return Message(role="assistant", content=text)


def call(name: str, **args: object) -> Message:
    return Message(role="assistant", content="", tool_calls=(ToolCall(id="c1", name=name, arguments=dict(args)),))


def calc_task(answer: float = 12, **meta: object) -> Task:
    return Task(id="calc", prompt="What is 3 times 4? Use the tools. Answer in <answer></answer>.", answer=answer,
                verifier=VerifierSpec("numeric"), env="tool_use", metadata={"toolset": "calculator", **meta})


def test_registered_and_built_through_the_registry() -> None:
    env = crossgym.load_environment("tool_use", max_turns=3)
    assert isinstance(env, ToolUseEnv) and env.max_turns == 3
    assert isinstance(crossgym.environment_factory("single_turn")(), SingleTurnEnv)
    with pytest.raises(ConfigError, match="max_turns"):
        crossgym.load_environment("tool_use", max_turns=0)
    with pytest.raises(ConfigError, match="cannot build environment 'sql'"):
        crossgym.load_environment("sql", nonsense=1)


def test_single_turn_episode_and_reward() -> None:
    task = Task(id="t", prompt="2+2?", answer=4, verifier=VerifierSpec("numeric"))
    env = SingleTurnEnv()
    with pytest.raises(EpisodeError, match="before reset"):
        env.step(say("4"))
    obs = env.reset(task, seed=1)
    assert obs.messages == task.prompt and obs.tools == ()
    with pytest.raises(EpisodeError, match="role 'assistant'"):
        env.step(Message(role="user", content="4"))
    result = env.step(say("The answer is 4"))
    assert result.done and result.messages == ()
    assert env.completion().text == "The answer is 4"
    assert env.verdict().reward == 1.0 and env.reward() == 1.0
    with pytest.raises(EpisodeError, match="after the episode ended"):
        env.step(say("5"))
    env.reset(task)  # reset starts a fresh episode on the same object
    env.step(say("5"))
    assert env.verdict().reward == 0.0
    env.close()
    env.close()


def test_string_and_dict_actions_are_accepted_as_assistant_messages() -> None:
    env = SingleTurnEnv()
    env.reset(Task(id="t", prompt="q", answer="x", verifier=VerifierSpec("exact_match")))
    assert env.step({"role": "assistant", "content": "x"}).done  # type: ignore[arg-type]
    env.reset(Task(id="t", prompt="q", answer="x", verifier=VerifierSpec("exact_match")))
    env.step("x")  # type: ignore[arg-type]
    assert env.verdict().passed


def test_tool_use_runs_tools_and_ends_on_plain_text() -> None:
    env = ToolUseEnv()
    obs = env.reset(calc_task())
    assert {t.name for t in obs.tools} == {"add", "subtract", "multiply", "divide", "sqrt"}
    r1 = env.step(call("multiply", a=3, b=4))
    assert not r1.done
    assert r1.messages[0].role == "tool" and r1.messages[0].content == "12" and r1.messages[0].tool_call_id == "c1"
    assert r1.messages[0].name == "multiply"
    r2 = env.step(say("<answer>12</answer>"))
    assert r2.done and r2.info["final"]
    assert env.verdict().passed


def test_tool_errors_and_malformed_calls_go_back_as_tool_messages() -> None:
    env = ToolUseEnv(max_turns=10)
    env.reset(calc_task())
    cases = [
        (call("divide", a=1, b=0), "Error: ValueError: division by zero"),
        (call("teleport"), "Error: unknown tool 'teleport'"),
        (call("add", a="one", b=2), "Error: argument 'a' of add must be number"),
        (call("add", a=1), "Error: missing required argument 'b'"),
        (say('<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>'), "Error: could not read the tool call"),
        (say("<tool_call>no json here</tool_call>"), "Error: could not read the tool call"),
        (say('<tool_call>{"arguments": {}}</tool_call>'), "Error: could not read the tool call"),
        (say("</tool_call> stray"), "Error: could not read the tool call"),
    ]
    for action, expected in cases:
        result = env.step(action)
        assert not result.done
        assert result.messages[0].role == "tool"
        assert result.messages[0].content.startswith(expected), result.messages[0].content
    assert env.turns == len(cases)


def test_hermes_parallel_calls_and_the_per_turn_cap() -> None:
    env = ToolUseEnv()
    env.reset(calc_task())
    text = ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
            '<tool_call>{"name": "sqrt", "arguments": {"x": 16}}</tool_call>')
    result = env.step(say(text))
    assert [m.content for m in result.messages] == ["3", "4.0"]
    assert [m.tool_call_id for m in result.messages] == ["call_0", "call_1"]
    many = Message(role="assistant", content="", tool_calls=tuple(
        ToolCall(id=f"c{i}", name="add", arguments={"a": i, "b": 0}) for i in range(MAX_CALLS_PER_TURN + 2)))
    out = env.step(many).messages
    assert len(out) == MAX_CALLS_PER_TURN + 1  # the calls run, and one reply for those left out
    assert out[-1].content == f"Error: at most {MAX_CALLS_PER_TURN} tool calls per turn; the 2 after them were not run"


def test_max_turns_truncates_and_task_metadata_sets_the_budget() -> None:
    env = ToolUseEnv()
    env.reset(calc_task(max_turns=2))
    assert env.max_turns == 2
    assert not env.step(call("add", a=1, b=1)).done
    last = env.step(call("add", a=1, b=1))
    assert last.done and last.info["truncated"]
    assert not env.verdict().passed and env.verdict().reward == 0.0
    explicit = ToolUseEnv(max_turns=5)
    explicit.reset(calc_task(max_turns=2))
    assert explicit.max_turns == 5  # an explicit param wins over the task
    with pytest.raises(ConfigError, match="max_turns"):
        ToolUseEnv().reset(calc_task(max_turns="many"))


def test_python_call_syntax_only_when_asked() -> None:
    plain = ToolUseEnv()
    plain.reset(calc_task())
    assert plain.step(say("add(a=1, b=2)")).done  # plain text: a final answer
    py = ToolUseEnv(python_calls=True)
    py.reset(calc_task())
    result = py.step(say("add(a=1, b=2)"))
    assert not result.done and result.messages[0].content == "3"


def test_toolset_override_and_missing_toolset() -> None:
    env = ToolUseEnv(toolset="utilities")
    obs = env.reset(calc_task())
    assert "get_weather" in {t.name for t in obs.tools}
    with pytest.raises(ConfigError, match="unknown toolset"):
        ToolUseEnv(toolset="nope").reset(calc_task())


class ExplodingEnv(BaseEnvironment):
    name = "exploding"
    default_max_turns = 3

    def respond(self, action: Message) -> Reply:
        raise ZeroDivisionError("bug in the environment")


def test_an_environment_bug_ends_the_episode_instead_of_crashing() -> None:
    env = ExplodingEnv()
    env.reset(calc_task())
    result = env.step(say("hi"))
    assert result.done and result.info["error"].startswith("exception: ZeroDivisionError")


def test_reset_rejects_non_tasks() -> None:
    with pytest.raises(ConfigError, match="needs a crossgym Task"):
        SingleTurnEnv().reset({"id": "x"})  # type: ignore[arg-type]


def test_read_tool_calls_prefers_openai_form() -> None:
    m = Message(role="assistant", content='<tool_call>{"name": "x"}</tool_call>',
                tool_calls=(ToolCall(id="a", name="y", arguments={}),))
    calls, err = read_tool_calls(m)
    assert err is None and [c.name for c in calls] == ["y"]


def test_a_result_too_big_to_show_is_an_error_reply_not_a_failed_step() -> None:
    """multiply of two 4,000-digit integers: its result has no JSON and no repr (past 4,300 digits), and the error
    escaped step: the episode failed as the machine's fault (masked under on_error: none)."""
    env = ToolUseEnv()
    env.reset(calc_task())
    big = "9" * 4000
    args = json.dumps({"name": "multiply", "arguments": {"a": int(big), "b": int(big)}})
    out = env.step(say(f"<tool_call>{args}</tool_call>"))
    assert not out.done and out.messages[0].content.startswith("Error: the result cannot be shown"), out
    assert env.step(call("add", a=1, b=2)).messages[0].content == "3"


def test_a_tool_echoing_a_lone_surrogate_leaves_the_conversation_encodable(tiny_model_dir) -> None:  # type: ignore[no-untyped-def]
    """The model's "\\ud800" (JSON for a lone surrogate) saved and recalled through the notes tools went into the
    conversation as is: the fast tokenizer raised (a TRL step, a whole eval lost), and the honest answer after it
    was malformed ("not valid Unicode"). An environment's reply is made UTF-8 safe as the episode takes it."""
    from crossgym.rollout.driver import Episode
    from crossgym.scoring.rule import RewardRule

    task = Task(id="n", prompt="Answer 4 in <answer></answer>.", answer=4, verifier=VerifierSpec("numeric"),
                env="tool_use", metadata={"toolset": "notes"})
    ep = Episode.open(task, "tool_use", seed=0)
    ep.take(say('<tool_call>{"name": "remember", "arguments": {"key": "k", "value": "\\ud800"}}</tool_call>'))
    ep.take(say('<tool_call>{"name": "recall", "arguments": {"key": "k"}}</tool_call>'))
    assert all(m.content.encode("utf-8") for m in ep.messages)
    assert "\\ud800" in ep.messages[-1].content
    ep.take(say("<answer>4</answer>"))
    assert ep.score(RewardRule()).reward == 1.0
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert tok.apply_chat_template([m.to_dict() for m in ep.messages], tokenize=True)
