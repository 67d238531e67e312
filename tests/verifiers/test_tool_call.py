"""tool_call: three call syntaxes, schema checks, alternatives, defaults, parallel calls, wrong functions."""

from __future__ import annotations

import json

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion
from crossgym.verifiers.tool_call import ToolCallVerifier

WEATHER = {"name": "get_weather", "description": "Weather now",
           "parameters": {"type": "object", "properties": {
               "city": {"type": "string"},
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
               "days": {"type": "integer", "minimum": 1, "maximum": 14}},
               "required": ["city"], "additionalProperties": False}}
TIME = {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                          "required": ["tz"]}}
SEARCH = {"name": "search", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"}, "ids": {"type": "array", "items": {"type": "integer"}}}, "required": ["query"]}}
TOOLS = [WEATHER, TIME, SEARCH]
PARIS = {"name": "get_weather", "arguments": {"city": ["Paris", "Paris, France"]}}


def run(answer, completion, tools=TOOLS, **params):
    comp = completion if isinstance(completion, Completion) else Completion.from_text(completion)
    return ToolCallVerifier(**params).verify(ToolCallVerifier.task(answer, params=params, tools=tools), comp)


def openai(*calls):
    return Completion(messages=(Message(role="assistant", content="", tool_calls=tuple(
        ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls))),))


@pytest.mark.parametrize("completion", [
    openai(("get_weather", {"city": "Paris"})),
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    'Let me check.\n<tool_call>{"name": "get_weather", "arguments": {"city": "paris, france"}}</tool_call>',
    '<|python_start|>[get_weather(city="Paris")]<|python_end|>',  # Llama 4's wrapper, as vLLM's llama4_pythonic
    'get_weather(city="Paris")',
    '[get_weather(city="Paris")]',
    '```python\nget_weather(city="Paris")\n```',
    'get_weather(city="Paris", unit="celsius")',  # explicit default
    '<think>the user wants weather</think><tool_call>{"name": "get_weather", "arguments": {"city": "PARIS"}}'
    "</tool_call>",
])
def test_one_call_passes(completion):
    v = run(PARIS, completion)
    assert v.passed and v.error is None, v


@pytest.mark.parametrize("completion,why", [
    ('get_weather(city="Lyon")', "not accepted"),
    ('get_time(tz="Europe/Paris")', "no call to get_weather"),
    ('get_weather(city="Paris", unit="kelvin")', "one of"),  # schema enum
    ('get_weather(city="Paris", days=0)', "minimum"),
    ('get_weather(city="Paris", mood="happy")', "unexpected"),  # schema additionalProperties
    ('delete_everything(confirm=True)', "unknown function"),
    ("The weather in Paris is sunny.", "no tool call"),
    ('get_weather(city="Paris")\nget_weather(city="Paris")', "extra call"),
    ('get_weather(city="Paris", unit="fahrenheit")', "unexpected argument 'unit'"),
    ('import os; get_weather(city="Paris")', "no tool call"),  # not a call expression: no call is read
])
def test_one_call_fails(completion, why):
    v = run(PARIS, completion)
    assert not v.passed and v.error is None and why in v.reason, (why, v)


@pytest.mark.parametrize("completion", [
    '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
    '<tool_call>{"name": "get_weather"}',
    '</tool_call>',
    '<tool_call>[1, 2]</tool_call>',
    '<tool_call>{"arguments": {}}</tool_call>',
    'get_weather(city=open("/etc/passwd").read())',
    "get_weather(**{'city': 'Paris'})",
    'get_weather(city="Paris"',
    "get_weather(city=\"Paris\", city=\"Lyon\")",
    "",
])
def test_malformed(completion):
    v = run(PARIS, completion)
    assert v.error_kind == "malformed" or (completion == "" and not v.passed), v


def test_parallel_calls_any_order_and_order_option():
    both = [PARIS, {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}]
    text = '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}</tool_call>\n' \
           '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert run(both, text).passed
    assert not run(both, text, order=True).passed
    v = run(both, 'get_time(tz="Europe/Paris")', reward="fraction")
    assert not v.passed and v.reward == pytest.approx(0.5)
    # the same function twice with different arguments: a perfect matching is needed, not greedy
    two = [{"name": "get_weather", "arguments": {"city": ["Paris", "Lyon"]}},
           {"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert run(two, 'get_weather(city="Paris")\nget_weather(city="Lyon")').passed


def test_alternatives_optional_and_list_arguments():
    exp = {"name": "get_weather", "arguments": {"city": "Paris", "days": [3, 4]}, "optional": ["days"]}
    assert run(exp, 'get_weather(city="Paris", days=4)').passed
    assert run(exp, 'get_weather(city="Paris")').passed
    assert not run(exp, 'get_weather(city="Paris", days=5)').passed
    exp = {"name": "search", "arguments": {"query": "cats", "ids": [[1, 2]]}}
    assert run(exp, 'search(query="cats", ids=[1, 2])').passed
    assert not run(exp, 'search(query="cats", ids=[2, 1])').passed
    assert not run(exp, 'search(query="cats", ids=1)').passed
    assert not run({"name": "search", "arguments": {"query": "Cats"}}, 'search(query="cats")',
                   strings="exact").passed
    assert run({"name": "search", "arguments": {"query": "x"}}, 'search(query="x", ids=[1])',
               allow_extra_args=True).passed


def test_no_call_expected_and_scope():
    assert run([], "It is sunny, no tool needed.").passed
    assert not run([], 'get_weather(city="Paris")').passed
    multi = Completion(messages=(
        Message(role="assistant", content='<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
                                          "</tool_call>"),
        Message(role="tool", content=json.dumps({"temp": 21})),
        Message(role="assistant", content="It is 21 degrees in Paris."),
    ))
    assert not run(PARIS, multi).passed
    assert run(PARIS, multi, scope="all").passed


def test_without_tools_no_schema_checks():
    assert run(PARIS, 'get_weather(city="Paris")', tools=[]).passed
    assert run(PARIS, 'get_weather("Paris")', tools=[]).error_kind == "malformed"  # positional needs a schema


def test_bad_tasks_and_params():
    assert run({"arguments": {}}, "x()").error_kind == "exception"
    assert run({"name": "nope"}, "nope()").error_kind == "exception"
    assert run({"name": "get_time", "arguments": []}, "x()").error_kind == "exception"
    for bad in ({"scope": "first"}, {"reward": "half"}, {"strings": "fuzzy"}):
        with pytest.raises(VerifierError):
            ToolCallVerifier(**bad)


@pytest.mark.parametrize("completion", ['gｅt_weather(city="Paris")', 'get_weather(cｉty="Paris")',
                                        '[get_weather(city="Paris"), ｇet_time(tz="UTC")]', 'get_weather(ｃity="Paris")'])
def test_python_call_names_compare_as_written(completion):
    """Python's parser reads identifiers after NFKC: the fullwidth 'ｅ' in gｅt_weather matched get_weather."""
    v = run(PARIS, completion)
    assert v.error_kind == "malformed" and "not written as Python reads it" in v.reason, v
    assert run(PARIS, 'get_weather(city="Pärïs")').error is None  # non-ASCII strings are values, not names


@pytest.mark.parametrize("digits", [4301, 5000])
def test_a_python_integer_past_the_digit_limit_is_malformed(digits):
    """The fast path's int() raised ValueError past 4,300 digits: an exception verdict (the machine's fault, masked
    under on_error none), where the AST path found the call unreadable."""
    for sign in ("", "-"):
        v = run(PARIS, f'get_weather(city="Paris", days={sign}{"9" * digits})')
        assert v.error_kind == "malformed" and "4300 digits" in v.reason, v
    v = run(PARIS, f'get_weather(city="Paris", days={"9" * 4300})')
    assert v.error is None and not v.passed, v  # an integer under the limit: the schema's maximum fails it


def test_an_argument_that_makes_the_tool_schemas_pattern_backtrack_fails_on_time():
    """tool_call checks arguments against the tool's schema (json_schema's untrusted path for a pattern): "^(a+)+$"
    on 40 characters held the caller for hours; it is checked in the worker pool now, malformed at the deadline."""
    import os
    import time

    tools = [{"name": "f", "description": "d", "parameters": {
        "type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["s"]}}]
    v = ToolCallVerifier(timeout=1.0)
    task = v.task({"name": "f", "arguments": {"s": "aaa"}}, params={"timeout": 1.0}, tools=tools)

    def call(arg: str):
        return v.verify(task, Completion.from_text("<tool_call>" + json.dumps({"name": "f", "arguments": {"s": arg}})
                                                   + "</tool_call>"))

    assert call("aaa").passed
    t0 = time.monotonic()
    got = call("a" * 40 + "!")
    assert time.monotonic() - t0 < 2.0, got
    assert got.reward == 0.0 and not got.passed, got
    loaded = os.getloadavg()[0] >= (os.cpu_count() or 1)
    assert got.error_kind == "malformed" or (loaded and got.error == "timeout"), got


@pytest.mark.parametrize("completion,why", [
    # arguments as a JSON string: vLLM's hermes parser and SGLang's pass on json.dumps of the string, no object
    ('<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>', "a JSON string"),
    ('<tool_call>{"name": "get_weather", "arguments": null}</tool_call>', "null"),
    # 'parameters' or no 'arguments': vLLM's hermes parser raises KeyError and makes no call at all
    ('Let me check.\n<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}</tool_call>', "'parameters'"),
    ('<tool_call>{"name": "get_time"}</tool_call>', "no 'arguments'"),
    # an OpenAI function wrapper or a code fence: no server's Hermes parser makes a call of it
    ('<tool_call>{"type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}'
     '</tool_call>', "wrapper"),
    ('<tool_call>\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n</tool_call>', "invalid JSON"),
    # a positional argument: vLLM's and SGLang's pythonic parsers drop it and call get_weather()
    ("get_weather('Paris')", "positional"),
    ("[get_weather('Paris')]", "positional"),
])
def test_calls_servers_do_not_make_are_malformed(completion, why):
    """Version 15: text the servers' tool parsers make no executable call of (or a call without the argument)
    earns nothing (bench/tool_parse_reference.py); each passed before."""
    v = run(PARIS, completion)
    assert v.error_kind == "malformed" and why in v.reason, (why, v)


def test_served_reading_is_the_verifiers_only():
    """The shared parser keeps its lenient reading for environments; the verifier asks for the served one."""
    from crossgym.text import parse_tool_calls
    text = '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}</tool_call>'
    assert parse_tool_calls(text)[0].arguments == {"city": "Paris"}
    assert parse_tool_calls("get_weather('Paris')", [ToolSpec(**WEATHER)])[0].arguments == {"city": "Paris"}
