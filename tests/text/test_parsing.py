"""crossgym.text: tool calls in three dialects, fenced blocks, bounded JSON."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.text import (
    MalformedJSON,
    MalformedToolCall,
    extract_fenced,
    find_json_span,
    iter_fenced,
    json_depth_ok,
    loads_strict,
    parse_json_text,
    parse_tool_calls,
)
from crossgym.text.tool_calls import _parse_python_ast, _simple_call

SPEC = ToolSpec(name="add", parameters={"type": "object", "properties": {"a": {"type": "integer"},
                                                                         "b": {"type": "integer"}}})


def msg(text):
    return Message(role="assistant", content=text)


def test_openai_tool_calls_win():
    m = Message(role="assistant", content="<tool_call>ignored</tool_call>",
                tool_calls=(ToolCall(id="x", name="f", arguments={"a": 1}),))
    assert parse_tool_calls(m) == [ToolCall(id="x", name="f", arguments={"a": 1})]


def test_hermes():
    text = ('I will call two tools.\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
            '<tool_call>{"name": "g", "arguments": "{\\"b\\": [1, 2]}"}</tool_call>')
    calls = parse_tool_calls(msg(text))
    assert [(c.name, c.arguments) for c in calls] == [("f", {"a": 1}), ("g", {"b": [1, 2]})]
    assert [c.id for c in calls] == ["call_0", "call_1"]
    wire = '<tool_call>{"type": "function", "function": {"name": "f", "arguments": "{}"}}</tool_call>'
    assert parse_tool_calls(msg(wire))[0].name == "f"
    fenced = '<tool_call>\n```json\n{"name": "f", "arguments": {}}\n```\n</tool_call>'
    assert parse_tool_calls(msg(fenced))[0].name == "f"


@pytest.mark.parametrize("text,why", [
    ("<tool_call>{", "never closed"),
    ("</tool_call>", "without a matching"),
    ("<tool_call>{\"name\": \"f\"}</tool_call></tool_call>", "without a matching"),
    ("<tool_call><tool_call>{}</tool_call>", "nested"),
    ("<tool_call>not json</tool_call>", "invalid JSON"),
    ("<tool_call>[]</tool_call>", "JSON object"),
    ("<tool_call>{\"name\": \"\"}</tool_call>", "name"),
    ("<tool_call>{\"name\": \"f\", \"arguments\": \"{bad\"}</tool_call>", "arguments string"),
    ("<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "must be an object"),
    ("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": NaN}}</tool_call>", "NaN"),
])
def test_hermes_malformed(text, why):
    with pytest.raises(MalformedToolCall, match=why):
        parse_tool_calls(msg(text))


def test_python_syntax():
    calls = parse_tool_calls(msg('[add(a=1, b=2), ns.tool.run(x="s", y=[true, null, -1.5], z={"k": (1, 2)})]'))
    assert [(c.name, c.arguments) for c in calls] == [
        ("add", {"a": 1, "b": 2}), ("ns.tool.run", {"x": "s", "y": [True, None, -1.5], "z": {"k": [1, 2]}})]
    assert parse_tool_calls(msg("add(1, b=2)"), [SPEC])[0].arguments == {"a": 1, "b": 2}
    assert parse_tool_calls(msg("```python\nadd(a=1)\n```"))[0].arguments == {"a": 1}
    assert len(parse_tool_calls(msg("add(a=1)\nadd(a=2)"))) == 2


@pytest.mark.parametrize("text,why", [
    ("add(a=__import__('os').system('id'))", "not a literal"),
    ("add(a=1 + 2)", "not a literal"),
    ("add(a=x)", "not a literal"),
    ("add(**kw)", r"\*\*kwargs"),
    ("add(1)", "positional"),
    ("add(a=1, a=2)", "given twice|not valid"),
    ("add(a=1", "not valid Python"),
    ("add(a={1: 2})", "non-string key"),
    ("add(a=b'x')", "bytes"),
    ("add(a=1); x = 2", "only call expressions"),
    ("add(a=1)(b=2)", "plain"),
    ("add(a=" + "[" * 300 + "]" * 300 + ")", "nests too deeply|not valid"),
    ("add(a=" + "(" * 100_001, "over"),
])
def test_python_malformed(text, why):
    with pytest.raises(MalformedToolCall, match=why):
        parse_tool_calls(msg(text))


def test_prose_has_no_calls():
    for text in ["", "The answer is 4.", "Use add(a, b) to add", "I think (maybe) so", "print is a function"]:
        assert parse_tool_calls(msg(text)) == []


def test_plain_strings_accepted():
    assert parse_tool_calls("add(a=1)")[0].name == "add"


def test_fences():
    text = "pre\n```json\n{\"a\": 1}\n```\nmid\n~~~python\nx = 1\n~~~\n```\nplain\n```"
    assert list(iter_fenced(text)) == [("json", '{"a": 1}'), ("python", "x = 1"), ("", "plain")]
    assert extract_fenced(text, "json") == '{"a": 1}'
    assert extract_fenced(text, ("python", "py")) == "x = 1"
    assert extract_fenced(text, None, last=False) == '{"a": 1}'
    assert extract_fenced("no fences", "json") is None
    assert extract_fenced("```json\n{\"unclosed\": 1}", "json") == '{"unclosed": 1}'
    assert extract_fenced("````md\n```inner```\n````", "md") == "```inner```"


def test_json_helpers():
    assert loads_strict('{"a": [1, 2]}') == {"a": [1, 2]}
    for bad in ['{"a": NaN}', "[Infinity]", "[", "1" * 5000, '{"a": 1, "a": 2}']:
        with pytest.raises(MalformedJSON):
            loads_strict(bad, unique_keys=True)
    assert loads_strict('{"a": 1, "a": 2}') == {"a": 2}
    assert not json_depth_ok("[" * 201 + "]" * 201) and json_depth_ok('"[[[[[[[[["' + "[" * 5 + "]" * 5)
    with pytest.raises(MalformedJSON, match="deeper"):
        loads_strict("[" * 300 + "]" * 300)
    assert find_json_span('say {"a": "}"} ok') == (4, 14)
    assert find_json_span("x ] { [ }") is None
    assert parse_json_text('text {"a": 1} more', allow_surrounding=True) == {"a": 1}
    with pytest.raises(MalformedJSON):
        parse_json_text('text {"a": 1} more')
    assert parse_json_text('```json\n[1]\n```') == [1]
    with pytest.raises(MalformedJSON):
        parse_json_text("   ")


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
_scalars = st.one_of(
    st.integers(-10**6, 10**6).map(str), st.floats(-1e4, 1e4, allow_nan=False).map(lambda f: f"{f:.3f}"),
    st.sampled_from(["True", "False", "None", "true", "false", "null", "01", "1e5", "1_000", ".5"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\\\n\r'\"\x00"), max_size=8).map(lambda t: f'"{t}"'),
    st.text(st.characters(codec="utf-8", exclude_characters="\\\n\r'\"\x00"), max_size=8).map(lambda t: f"'{t}'"),
)


@settings(max_examples=300, deadline=None)
@given(name=st.lists(_names, min_size=1, max_size=2).map(".".join),
       args=st.lists(st.tuples(_names, _scalars), max_size=4), sep=st.sampled_from([",", ", ", " , "]),
       trailing=st.booleans())
def test_simple_call_fast_path_agrees_with_the_ast(name, args, sep, trailing):
    src = f"{name}({sep.join(f'{k}={v}' for k, v in args)}{',' if trailing and args else ''})"
    try:
        slow = _parse_python_ast(src, ())
    except MalformedToolCall:
        slow = None
    fast = _simple_call(src)
    if fast is not None:
        assert slow is not None and [fast] == slow, (src, fast, slow)
