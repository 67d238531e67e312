"""Reading structure out of model text (stdlib only; beside protocol/ at the bottom layer).

- ``fences``: fenced code blocks (``iter_fenced``, ``extract_fenced``, ``is_single_block``).
- ``json_text``: bounded strict JSON (``loads_strict``, ``parse_json_text``, ``find_json_span``, ``MalformedJSON``,
  ``JSONTooDeep``).
- ``tool_calls``: tool calls in OpenAI, Hermes and Python syntax (``parse_tool_calls``, ``parse_python_calls``,
  ``MalformedToolCall``).
- ``chunks``: ``chunked(items, size)``, a stream in bounded lists (every layer's batching loop).
- ``blank``: ``is_blank(text)``, text that shows nothing (whitespace, zero-width and other invisible characters).
- ``visible``: ``visible(text)``, untrusted text safe to print: control characters (ESC, CR, newline, bidi
  overrides) as their escapes, every other character unchanged. Every line a command or a log prints that quotes a
  completion, a reason, a task id or a source goes through it.

Verifiers, environments and inference engines import from here; the names below are the public ones.
"""

from __future__ import annotations

from crossgym.text.blank import is_blank
from crossgym.text.chunks import chunked
from crossgym.text.fences import extract_fenced, is_single_block, iter_fenced
from crossgym.text.json_text import (
    MAX_JSON_DEPTH,
    JSONTooDeep,
    MalformedJSON,
    find_json_span,
    json_depth_ok,
    loads_strict,
    parse_json_text,
    read_json_text,
)
from crossgym.text.tool_calls import (
    MAX_PY_CALL_CHARS,
    MalformedToolCall,
    after_reasoning,
    parse_python_calls,
    parse_tool_calls,
)
from crossgym.text.visible import visible

__all__ = [
    "MAX_JSON_DEPTH", "MAX_PY_CALL_CHARS", "JSONTooDeep", "MalformedJSON", "MalformedToolCall", "after_reasoning",
    "chunked", "is_blank",
    "extract_fenced", "find_json_span", "is_single_block", "iter_fenced", "json_depth_ok", "loads_strict",
    "parse_json_text", "parse_python_calls", "read_json_text", "parse_tool_calls", "visible",
]
