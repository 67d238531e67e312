"""Tool-call arguments that are not one JSON object (issue 20/27): a malformed call is a Verdict, never an exception,
and judged the same in OpenAI ``tool_calls`` as in a Hermes ``<tool_call>`` block."""

from __future__ import annotations

import json

import pytest

from crossgym.environments.tool_use import ToolUseEnv
from crossgym.protocol.episode import Rollout
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.batch import verify_many
from crossgym.verifiers.tool_call import ToolCallVerifier

WEATHER = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                  "required": ["city"]}}
TASK = ToolCallVerifier.task({"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])

BAD = {  # arguments text -> the problem the reason must name
    "{bad": "arguments string is not JSON: invalid JSON",
    '"x"': "arguments must be an object, got str",
    '[["city", "Paris"]]': "arguments must be an object, got list",
    '{"city": "a", "city": "Paris"}': "duplicate key 'city'",
    '{"city": NaN}': "NaN is not valid JSON",
    '{"city": Infinity}': "Infinity is not valid JSON",
    '{"city": ' + "[" * 300 + "]" * 300 + "}": "nests deeper than",
}


def openai_completion(arguments: str) -> Completion:
    return Completion.from_dict({"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]}]})


def hermes_completion(arguments: str) -> Completion:
    return Completion.from_text("<tool_call>" + json.dumps({"name": "get_weather", "arguments": arguments})
                                + "</tool_call>")


@pytest.mark.parametrize("arguments", list(BAD))
def test_bad_arguments_build_a_call_with_an_error_never_raise(arguments: str) -> None:
    (call,) = openai_completion(arguments).messages[0].tool_calls
    assert call.name == "get_weather" and call.arguments == {}
    assert call.error is not None and BAD[arguments] in call.error
    own = ToolCall.from_dict({"id": "c1", "name": "get_weather", "arguments": arguments})  # crossgym's form
    assert own == call


@pytest.mark.parametrize("arguments", list(BAD))
def test_bad_arguments_are_malformed_as_in_hermes_text(arguments: str) -> None:
    comp = openai_completion(arguments)
    v = ToolCallVerifier().verify(TASK, comp)
    assert v.error_kind == "malformed" and v.reward == 0.0 and not v.passed
    assert v.reason.startswith("tool call 1 (get_weather): ") and BAD[arguments] in v.reason
    assert v == ToolCallVerifier().verify(TASK, hermes_completion(arguments))  # the same verdict, either form
    assert verify_many([(TASK, comp)]) == [v]


def test_duplicate_keys_in_a_hermes_object_are_malformed_too() -> None:
    v = ToolCallVerifier().verify(TASK, Completion.from_text(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "a", "city": "Paris"}}</tool_call>'))
    assert v.error_kind == "malformed" and "duplicate key 'city'" in v.reason
    assert ToolCallVerifier().verify(TASK, openai_completion('{"city": "a", "city": "Paris"}')).error_kind \
        == "malformed"
    python = ToolCallVerifier().verify(TASK, Completion.from_text(  # and in a Python-syntax dict (the last one won)
        'get_weather(city="Paris", opts={"unit": "x", "unit": "c"})'))
    assert python.error_kind == "malformed" and "repeats the key 'unit'" in python.reason, python


def test_readable_arguments_are_unchanged() -> None:
    for comp in (openai_completion('{"city": "Paris"}'), openai_completion(""),
                 Completion.from_dict({"messages": [{"role": "assistant", "content": "", "tool_calls": [
                     {"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]}]})):
        call = comp.messages[0].tool_calls[0]
        assert call.error is None and "error" not in call.to_dict()
    assert ToolCallVerifier().verify(TASK, openai_completion('{"city": "Paris"}')).passed
    # a later call in the message that cannot be read makes the whole message malformed, naming that call
    two = Completion(messages=(Message(role="assistant", tool_calls=(
        ToolCall("c1", "get_weather", {"city": "Paris"}), ToolCall.from_dict(
            {"id": "c2", "function": {"name": "get_weather", "arguments": "{bad"}}))),))
    assert ToolCallVerifier().verify(TASK, two).reason.startswith("tool call 2 (get_weather): arguments string")


def test_the_error_survives_a_rollout_record_and_old_records_load() -> None:
    comp = openai_completion("{bad")
    verdict = ToolCallVerifier().verify(TASK, comp)
    record = json.loads(json.dumps(Rollout(task=TASK, completion=comp, verdict=verdict).to_dict()))
    assert record["completion"]["messages"][0]["tool_calls"][0]["error"].startswith("arguments string is not JSON")
    back = Rollout.from_dict(record)
    assert back.completion == comp and ToolCallVerifier().verify(back.task, back.completion) == verdict
    # a record written before the field existed (no "error") loads as a readable call
    old = {"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    assert ToolCall.from_dict(old) == ToolCall("c1", "get_weather", {"city": "Paris"})


def test_the_tool_use_environment_answers_an_unreadable_call_with_an_error() -> None:
    task = Task(id="calc", prompt="3 times 4?", answer=12, verifier=VerifierSpec("numeric"), env="tool_use",
                metadata={"toolset": "calculator"})
    env = ToolUseEnv(max_turns=4)
    env.reset(task)
    action = Message.from_dict({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "multiply", "arguments": '{"a": 3, "a": 4, "b": 4}'}}]})
    result = env.step(action)
    assert not result.done
    (msg,) = result.messages
    assert msg.role == "tool" and msg.content.startswith("Error: could not read the tool call: tool call 1 (multiply)")
    assert "duplicate key 'a'" in msg.content


def test_an_unreadable_call_in_a_task_prompt_is_still_a_data_error() -> None:
    doc = {"id": "t1", "verifier": "tool_call", "answer": [], "prompt": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{bad"}}]}]}
    with pytest.raises(ValueError, match=r"Task 't1': prompt message 2, tool call 1 \(get_weather\): arguments "
                                         r"string is not JSON"):
        Task.from_dict(doc)


@pytest.mark.parametrize("env", ["shell", None])
def test_the_shell_verifier_replays_nothing_of_a_message_the_environment_refused(env: str | None) -> None:
    from crossgym.verifiers.base import Malformed
    from crossgym.verifiers.shell import extract_commands

    def run_call(i: int, arguments: str) -> dict:
        return {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": arguments}}

    comp = Completion.from_dict({"messages": [
        {"role": "assistant", "content": "", "tool_calls": [run_call(1, '{"command": "ls"}')]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "c1", "name": "run"},
        {"role": "assistant", "content": "", "tool_calls": [run_call(2, '{"command": "touch x"}'),
                                                            run_call(3, '{"command": "rm a.txt", "command": "true"}')]},
    ]})
    assert extract_commands(comp, env=env) == ["ls"]  # the second message ran nothing in the environment
    only_bad = Completion.from_dict({"messages": [{"role": "assistant", "content": "", "tool_calls": [
        run_call(1, "{bad")]}]})
    with pytest.raises(Malformed):
        extract_commands(only_bad, env=env)


def test_an_openenv_action_from_an_unreadable_call_is_refused() -> None:
    from crossgym.interop.openenv import parse_action

    action = Message.from_dict({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "move", "arguments": '[["dir", "up"]]'}}]})
    with pytest.raises(ValueError, match=r"tool call 1 \(move\): arguments must be an object, got list"):
        parse_action(action, {"required": ["dir"]})


def test_an_openai_server_answer_keeps_the_unreadable_call() -> None:
    from crossgym.inference.openai_engine import parse_choices

    doc = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"'}}]}}]}
    (comp,) = parse_choices(doc, parse_tools=True)
    (call,) = comp.messages[0].tool_calls
    assert call.id == "call_0" and call.error is not None and call.error.startswith("arguments string is not JSON")
    assert ToolCallVerifier().verify(TASK, comp) == ToolCallVerifier().verify(TASK, hermes_completion('{"city": "Paris"'))


PING = ToolCallVerifier.task({"name": "ping", "arguments": {}},
                             tools=[{"name": "ping", "parameters": {"type": "object", "properties": {}}}])


def _ping(arguments: str) -> Completion:
    return Completion.from_dict({"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": arguments}}]}]})


def _written_out(comp: Completion) -> dict[str, Completion]:
    """The completion after each form crossgym writes a call in and reads it back from."""
    from crossgym.adapters.kit.replay import action_text

    msg = comp.messages[0]
    return {
        "openai": Completion(messages=(Message.from_dict(msg.to_openai()),)),
        "record": Completion.from_dict(json.loads(json.dumps(comp.to_dict()))),
        "record twice": Completion.from_dict(json.loads(json.dumps(
            Completion.from_dict(json.loads(json.dumps(comp.to_dict()))).to_dict()))),
        "hermes text": Completion.from_text(action_text(msg)),
    }


@pytest.mark.parametrize("arguments", [*BAD, "5", "true"])
def test_an_unreadable_call_stays_unreadable_in_every_form_it_is_written_in(arguments: str) -> None:
    # a malformed call to a tool without arguments used to come back readable ({}) from OpenAI's wire form and
    # from Hermes text (the replay server's), and then scored 1.0
    comp = _ping(arguments)
    (call,) = comp.messages[0].tool_calls
    assert call.error is not None and call.raw_arguments == arguments  # what the model wrote is kept
    assert call.to_openai()["function"]["arguments"] == arguments
    solo = ToolCallVerifier().verify(PING, comp)
    assert solo.error_kind == "malformed" and solo.reward == 0.0
    for form, back in _written_out(comp).items():
        (again,) = back.messages[0].tool_calls or (None,)
        if again is not None:  # Hermes text refuses the whole block; the other forms keep the call
            assert again.error is not None and again.arguments == {}, form
            assert again.to_openai()["function"]["arguments"] == arguments, form
        v = ToolCallVerifier().verify(PING, back)
        assert v.error_kind == "malformed" and v.reward == 0.0 and not v.passed, form
    assert ToolCallVerifier().verify(PING, _ping("{}")).passed  # the readable call still passes


def test_an_unreadable_call_renders_as_its_own_text_for_chat_templates() -> None:
    from crossgym.inference.base import render_messages

    (rendered,) = render_messages(_ping("{bad").messages)
    assert rendered["tool_calls"][0]["function"]["arguments"] == "{bad"
    (good,) = render_messages(_ping('{"n": 1}').messages)
    assert good["tool_calls"][0]["function"]["arguments"] == {"n": 1}  # a readable call stays a dict


def test_an_error_without_the_models_text_is_still_unreadable_when_written_out() -> None:
    call = ToolCall.from_dict({"id": "c1", "name": "ping", "arguments": {}, "error": "arguments string is not JSON"})
    assert call.raw_arguments is None and call.arguments_text() != "{}"  # nothing made up is kept as the model's text
    assert ToolCall.from_dict(call.to_dict()) == call  # a record round trip keeps it as it is
    assert call.structured_arguments() == call.arguments_text()  # chat templates and Hermes text: unreadable too
    back = ToolCall.from_dict(call.to_openai())
    assert back.error is not None and back.arguments == {}
    assert ToolCall("c1", "ping", {}, error="x").arguments_text() != "{}"  # built directly: never a readable {}
    assert ToolCall("c1", "ping", {"a": 1}).arguments_text() == '{"a": 1}'
