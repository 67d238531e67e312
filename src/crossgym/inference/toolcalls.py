"""Tool calls out of generated text, in the Hermes/Qwen form ``<tool_call>{"name", "arguments"}</tool_call>``.

Parsed like TRL's Qwen response schema: content is the text before the first ``<tool_call>``; a call whose JSON does
not parse leaves the whole text as plain content with no tool calls (TRL's fallback).
"""

from __future__ import annotations

import json
import re

from crossgym.protocol.messages import Message, ToolCall

_CALL = re.compile(r"<tool_call>\s*(.+?)\s*</tool_call>", re.DOTALL)


def parse_assistant_text(text: str) -> Message:
    """An assistant Message with ``tool_calls`` taken from ``<tool_call>`` blocks (none if any block is bad)."""
    start = text.find("<tool_call>")
    if start < 0:
        return Message(role="assistant", content=text)
    calls = []
    for i, m in enumerate(_CALL.finditer(text, start)):
        try:
            obj = json.loads(m.group(1))
            name = obj["name"]
            args = obj.get("arguments", obj.get("parameters", {}))
            if isinstance(args, str):
                args = json.loads(args) if args.strip() else {}
            if not isinstance(name, str) or not isinstance(args, dict):
                raise TypeError("name must be a string and arguments an object")
        except (ValueError, KeyError, TypeError, AttributeError):
            return Message(role="assistant", content=text)
        calls.append(ToolCall(id=f"call_{i}", name=name, arguments=args))
    if not calls:
        return Message(role="assistant", content=text)
    content = text[:start]
    if content.endswith("\n"):
        content = content[:-1]
    return Message(role="assistant", content=content, tool_calls=tuple(calls))
