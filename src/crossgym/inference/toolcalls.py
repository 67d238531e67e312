"""Tool calls out of generated text, in the Hermes/Qwen form ``<tool_call>{"name", "arguments"}</tool_call>``.

Parsed like TRL's Qwen response schema and vLLM's hermes parser: content is the text before the first
``<tool_call>``; when a block cannot be read the whole text stays plain content with no tool calls (TRL's
fallback), and the environment or verifier judges it. The block grammar is crossgym.text's.
"""

from __future__ import annotations

from crossgym.protocol.messages import Message
from crossgym.text import MalformedToolCall, parse_tool_calls

_OPEN = "<tool_call>"


def parse_assistant_text(text: str) -> Message:
    """An assistant Message with ``tool_calls`` taken from ``<tool_call>`` blocks (none if any block is bad)."""
    think = text.find("</think>")  # a block in the reasoning is no call: content runs to the first one after it
    start = text.find(_OPEN, think + len("</think>") if think >= 0 else 0)
    if start < 0:
        return Message(role="assistant", content=text)
    try:
        calls = parse_tool_calls(text)
    except MalformedToolCall:
        return Message(role="assistant", content=text)
    if not calls:
        return Message(role="assistant", content=text)
    content = text[:start]
    if content.endswith("\n"):
        content = content[:-1]
    return Message(role="assistant", content=content, tool_calls=tuple(calls))
