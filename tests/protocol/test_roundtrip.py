"""Exact JSON round trips for every protocol type, over generated values."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from crossgym.protocol import (
    Completion,
    Example,
    Message,
    Observation,
    Rollout,
    SamplingParams,
    StepResult,
    Task,
    ToolCall,
    ToolSpec,
    Verdict,
    VerifierSpec,
)

text = st.text(max_size=40)
json_leaf = st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(allow_nan=False) | text
json_value = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                          max_leaves=10)
json_obj = st.dictionaries(text, json_value, max_size=3)

tool_calls = st.builds(ToolCall, id=text, name=st.text(min_size=1, max_size=20), arguments=json_obj)
messages = st.builds(Message, role=st.sampled_from(["system", "user", "assistant", "tool"]), content=text,
                     tool_calls=st.lists(tool_calls, max_size=2).map(tuple),
                     tool_call_id=st.none() | text, name=st.none() | text)
tool_specs = st.builds(ToolSpec, name=st.text(min_size=1, max_size=20), description=text, parameters=json_obj)
specs = st.builds(VerifierSpec, name=st.text(min_size=1, max_size=20), params=json_obj)
tasks = st.builds(Task, id=text, prompt=st.lists(messages, min_size=1, max_size=3).map(tuple), answer=json_value,
                  verifier=specs, env=st.text(min_size=1, max_size=12),
                  tools=st.lists(tool_specs, max_size=2).map(tuple), metadata=json_obj)
completions = st.builds(Completion, messages=st.lists(messages, max_size=3).map(tuple),
                        token_ids=st.none() | st.lists(st.integers(0, 10**6), max_size=5).map(tuple),
                        logprobs=st.none() | st.lists(st.floats(-50, 0), max_size=5).map(tuple))
verdicts = st.builds(Verdict, reward=st.floats(-10, 10), passed=st.booleans(),
                     components=st.dictionaries(text, st.floats(-10, 10), max_size=3), reason=text,
                     error=st.none() | st.sampled_from(["timeout", "malformed: x", "exception: y"]))


def _through_json(d: dict) -> dict:
    return json.loads(json.dumps(d))


@settings(max_examples=25, deadline=None)
@given(tasks)
def test_task_round_trip(task: Task) -> None:
    assert Task.from_dict(_through_json(task.to_dict())) == task
    assert Task.from_json(task.to_json()) == task


@settings(max_examples=25, deadline=None)
@given(completions, verdicts, tasks)
def test_rollout_round_trip(completion: Completion, verdict: Verdict, task: Task) -> None:
    rollout = Rollout(task=task, completion=completion, verdict=verdict, turns=2, timings={"gen": 0.5},
                      provenance={"verifier": task.verifier.to_dict(), "crossgym": "0.1.0"})
    assert Rollout.from_dict(_through_json(rollout.to_dict())) == rollout


@settings(max_examples=20, deadline=None)
@given(st.lists(messages, max_size=3).map(tuple), st.lists(tool_specs, max_size=2).map(tuple), st.booleans(),
       json_obj)
def test_episode_types_round_trip(msgs: tuple, tools: tuple, done: bool, info: dict) -> None:
    obs = Observation(messages=msgs, tools=tools)
    assert Observation.from_dict(_through_json(obs.to_dict())) == obs
    step = StepResult(messages=msgs, done=done, info=info)
    assert StepResult.from_dict(_through_json(step.to_dict())) == step


@settings(max_examples=15, deadline=None)
@given(tasks, completions, st.sampled_from(["pass", "fail", "malformed"]))
def test_example_round_trip(task: Task, completion: Completion, expect: str) -> None:
    ex = Example(task=task, completion=completion, expect=expect)  # type: ignore[arg-type]
    assert Example.from_dict(_through_json(ex.to_dict())) == ex


def test_sampling_params_round_trip() -> None:
    p = SamplingParams(temperature=0.7, top_p=0.9, top_k=5, max_tokens=32, seed=3, stop=("\n",))
    assert SamplingParams.from_dict(_through_json(p.to_dict())) == p


def test_openai_forms_are_accepted() -> None:
    msg = Message.from_dict({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]})
    assert msg.content == ""
    assert msg.tool_calls == (ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),)
    assert Message.from_dict(msg.to_openai()) == msg
    spec = ToolSpec.from_dict({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
    assert spec.name == "f" and ToolSpec.from_dict(spec.to_openai()) == spec


def test_task_prompt_accepts_plain_text() -> None:
    task = Task(id="t", prompt="What is 2+2?", answer=4, verifier=VerifierSpec("numeric"))  # type: ignore[arg-type]
    assert task.prompt == (Message(role="user", content="What is 2+2?"),)


def test_completion_text_is_final_assistant_message() -> None:
    c = Completion(messages=(Message("assistant", "first"), Message("tool", "result"), Message("assistant", "last")))
    assert c.text == "last"
    assert Completion(messages=()).text == ""


def test_example_matches_declared_outcome() -> None:
    t = Task(id="t", prompt="x", answer=1, verifier=VerifierSpec("v"))  # type: ignore[arg-type]
    c = Completion.from_text("1")
    assert Example(t, c, "pass").matches(Verdict.ok(1.0))
    assert not Example(t, c, "pass").matches(Verdict.ok(0.0))
    assert Example(t, c, "fail").matches(Verdict.ok(0.0))
    assert Example(t, c, "malformed").matches(Verdict.malformed("no JSON"))
    assert not Example(t, c, "fail").matches(Verdict.timeout(1.0))
    assert Verdict.timeout(2).error_kind == "timeout"


def test_missing_keys_name_the_key() -> None:
    import pytest

    with pytest.raises(ValueError, match="'verifier'"):
        Task.from_dict({"id": "x", "prompt": "p"})


def test_wrong_types_are_named_not_a_type_error() -> None:
    """A verifier given as a number, a name that is not text, params that are a list, a task that is no object:
    each a ValueError saying what it should be (was an AttributeError/TypeError or a misleading "missing key")."""
    import pytest

    cases = [({"id": "t", "prompt": "p", "verifier": 5}, "a verifier is a registered name or an object.*a number"),
             ({"id": "t", "prompt": "p", "verifier": [1]}, "got a list"),
             ({"id": "t", "prompt": "p", "verifier": {"name": 5}}, "'name' is its registered name.*a number"),
             ({"id": "t", "prompt": "p", "verifier": {"name": "math", "params": [1]}}, "'params' is an object"),
             ([1], "a Task is a JSON object"), ("x", "a Task is a JSON object.*text")]
    for doc, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            Task.from_dict(doc)  # type: ignore[arg-type]
    assert Task.from_dict({"id": "t", "prompt": "p", "verifier": "math"}).verifier.name == "math"
