"""Hermes/Qwen tool-call text to Message.tool_calls, with TRL's plain-text fallback."""

from crossgym.inference.toolcalls import parse_assistant_text
from crossgym.protocol import ToolCall


def test_calls_and_content_before_them():
    text = 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>\n' \
           '<tool_call>{"name": "mul", "arguments": "{\\"b\\": 2}"}</tool_call>'
    msg = parse_assistant_text(text)
    assert msg.content == "Let me add."
    assert msg.tool_calls == (ToolCall("call_0", "add", {"a": 1}), ToolCall("call_1", "mul", {"b": 2}))


def test_unreadable_calls_stay_plain_text():
    for text in ("<tool_call>{not json}</tool_call>", "<tool_call>{\"name\": \"a\"}", "no calls at all",
                 '<tool_call>["a"]</tool_call>'):
        msg = parse_assistant_text(text)
        assert msg.tool_calls == () and msg.content == text


def test_a_block_in_the_reasoning_is_no_call():
    inner = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    text = f"<think>maybe {inner}</think>Done."
    msg = parse_assistant_text(text)
    assert msg.tool_calls == () and msg.content == text
    both = f"<think>maybe {inner}</think>\n" + '<tool_call>{"name": "mul", "arguments": {"b": 2}}</tool_call>'
    msg = parse_assistant_text(both)
    assert msg.content == f"<think>maybe {inner}</think>" and msg.tool_calls == (ToolCall("call_0", "mul", {"b": 2}),)
