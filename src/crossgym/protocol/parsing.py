"""Moved to crossgym.text (fences, json_text, tool_calls); this module re-exports it while importers switch."""

from __future__ import annotations

from crossgym.text.fences import extract_fenced, iter_fenced
from crossgym.text.fences import is_single_block as _only_block
from crossgym.text.json_text import (
    MAX_JSON_DEPTH,
    MalformedJSON,
    find_json_span,
    json_depth_ok,
    loads_strict,
    parse_json_text,
)
from crossgym.text.tool_calls import (
    MAX_PY_CALL_CHARS,
    MalformedToolCall,
    _parse_python_ast,
    _simple_call,
    parse_python_calls,
    parse_tool_calls,
)

__all__ = [
    "MAX_JSON_DEPTH", "MAX_PY_CALL_CHARS", "MalformedJSON", "MalformedToolCall", "_only_block", "_parse_python_ast",
    "_simple_call", "extract_fenced", "find_json_span", "iter_fenced", "json_depth_ok", "loads_strict",
    "parse_json_text", "parse_python_calls", "parse_tool_calls",
]
