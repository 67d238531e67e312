"""Tool calls in model text, in three dialects (stdlib only).

``parse_tool_calls`` accepts OpenAI ``tool_calls`` on the message, Hermes/Qwen ``<tool_call>{json}</tool_call>``
blocks in the text, and Python call syntax ``f(a=1, b="x")`` or ``[f(a=1), g()]`` (parsed with ``ast``, literal
arguments only, never evaluated). Text up to the first ``</think>`` is reasoning, never read for calls. Everything here is linear-time or bounded on its input.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any

from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.text import pyast
from crossgym.text.fences import extract_fenced, is_single_block
from crossgym.text.json_text import MAX_JSON_DEPTH, MalformedJSON, loads_strict

#: Python-syntax calls longer than this are refused (ast.parse is not cheap on huge input)
MAX_PY_CALL_CHARS = 100_000


class MalformedToolCall(ValueError):
    """A tool call is present but cannot be read; the message says why."""


_TOOL_OPEN = "<tool_call>"
_TOOL_CLOSE = "</tool_call>"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_PY_START, _PY_END = "<|python_start|>", "<|python_end|>"
_PY_CALL_START = re.compile(r"\A\s*\[?\s*[A-Za-z_][\w.]*\s*\(")


def parse_tool_calls(message: Message | str, tools: Sequence[ToolSpec] = (), *, served: bool = False) \
        -> list[ToolCall]:
    """The tool calls in an assistant message, in order: OpenAI ``tool_calls`` if present, else Hermes
    ``<tool_call>`` blocks in the text, else a Python call expression making up the whole text (in a ```python
    fence allowed). ``tools`` lets positional Python arguments map to parameter names. Returns [] when the message
    holds no call; raises MalformedToolCall when a call is present but unreadable.

    ``served=True`` reads text only as the servers' tool parsers turn it into calls a client can execute (vLLM's
    hermes/qwen3_json and pythonic, SGLang's detectors; bench/tool_parse_reference.py): a Hermes block is one JSON
    object with a string ``name`` and an ``arguments`` object (no code fence, no OpenAI ``function`` wrapper, no
    ``parameters`` in its place, no arguments as a JSON string: those parsers drop such a call or pass on arguments
    that are no object), and a Python call has keyword arguments only (they drop positional ones)."""
    if isinstance(message, Message):
        if message.tool_calls:
            return list(message.tool_calls)
        text = message.content
    else:
        text = message
    if not isinstance(text, str):
        raise MalformedToolCall(f"message content must be text, got {type(text).__name__}")
    text = after_reasoning(text)
    if _TOOL_OPEN in text or _TOOL_CLOSE in text:
        return _parse_hermes(text, served)
    body = text.strip()
    if body.startswith(_PY_START):  # Llama 4 wraps its Python calls in these (vLLM's llama4_pythonic drops them)
        body = body[len(_PY_START):].replace(_PY_END, "").strip()
    if body.startswith(("```", "~~~")):
        fenced = extract_fenced(body, ("python", "py", "tool_code", ""))
        if fenced is not None and is_single_block(body):
            body = fenced.strip()
    if _PY_CALL_START.match(body):
        return parse_python_calls(body, tools, positional=not served)
    return []


def after_reasoning(text: str) -> str:
    """The text after the reasoning, which ends at the first ``</think>`` as in vLLM's reasoning parsers (Qwen3,
    DeepSeek-R1): a call written in the reasoning is not made (the server moves it out of the content before its
    tool parser runs). A later ``</think>`` (one inside a call's arguments) is content. Raises MalformedToolCall for
    a ``<tool_call>`` inside a ``<think>`` that never closes; other text without a closed ``<think>`` is returned
    as it is."""
    close = text.find(_THINK_CLOSE)
    if close >= 0:
        return text[close + len(_THINK_CLOSE):]
    if _THINK_OPEN in text:
        if _TOOL_OPEN in text[text.find(_THINK_OPEN):]:
            raise MalformedToolCall("a <tool_call> inside a <think> that never closes (the reasoning never ended)")
        return text[:text.find(_THINK_OPEN)]
    return text


def _parse_hermes(text: str, served: bool = False) -> list[ToolCall]:
    calls: list[ToolCall] = []
    pos = 0
    while True:
        start = text.find(_TOOL_OPEN, pos)
        stray = text.find(_TOOL_CLOSE, pos)
        if start < 0:
            if stray >= 0:
                raise MalformedToolCall("</tool_call> without a matching <tool_call>")
            return calls
        if 0 <= stray < start:
            raise MalformedToolCall("</tool_call> without a matching <tool_call>")
        end = text.find(_TOOL_CLOSE, start + len(_TOOL_OPEN))
        if end < 0:
            raise MalformedToolCall(f"<tool_call> number {len(calls) + 1} is never closed")
        body = text[start + len(_TOOL_OPEN):end].strip()
        if _TOOL_OPEN in body:
            raise MalformedToolCall("nested <tool_call> tags")
        if ("```" in body or "~~~" in body) and not served:  # served: vLLM's and SGLang's json.loads fail on it
            fenced = extract_fenced(body, ("json", ""))
            if fenced is not None:
                body = fenced.strip()
        try:  # a key given twice is refused, as a keyword given twice is in Python syntax: parsers differ on
            obj = loads_strict(body, unique_keys=True)  # which one counts (the verifier's and the tool's may not agree)
        except MalformedJSON as exc:
            raise MalformedToolCall(f"<tool_call> number {len(calls) + 1}: {exc}") from None
        calls.append(_call_from_obj(obj, len(calls), served))
        pos = end + len(_TOOL_CLOSE)


def _call_from_obj(obj: Any, index: int, served: bool = False) -> ToolCall:
    where = f"tool call {index + 1}"
    if not isinstance(obj, dict):
        raise MalformedToolCall(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if served:
        _served_block(obj, where)
    if "function" in obj and isinstance(obj["function"], dict):  # OpenAI wire form inside the tag
        if {"name", "arguments", "parameters"} & set(obj):  # which one is called depends on the parser
            raise MalformedToolCall(f"{where}: both a 'function' object and a top-level "
                                    f"{'name' if 'name' in obj else 'arguments'}: write one call one way")
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise MalformedToolCall(f"{where}: missing a string 'name'")
    if "arguments" in obj and "parameters" in obj and obj["arguments"] != obj["parameters"]:
        raise MalformedToolCall(f"{where} ({name}): both 'arguments' and 'parameters', different: parsers differ on "
                                "which one counts")
    try:
        args = read_arguments(obj.get("arguments", obj.get("parameters", {})))
    except MalformedToolCall as exc:
        raise MalformedToolCall(f"{where} ({name}): {exc}") from None
    # the name exactly as written: " get_weather" is not get_weather (a function name has no spaces)
    return ToolCall(id=str(obj.get("id") or f"call_{index}"), name=name, arguments=args)


def _served_block(obj: dict[str, Any], where: str) -> None:
    """A Hermes block's object as vLLM's hermes parser (Qwen's qwen3_json too) makes it a call a client can execute:
    it reads ``obj["name"]`` and ``obj["arguments"]`` and writes ``json.dumps(arguments)`` as the call's arguments
    text. Without either key it makes no call at all (SGLang's detectors drop a wrapped call too); arguments that
    are a JSON string, null or a list reach the client as that value, no object."""
    name = obj.get("name")
    fix = "write <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>"
    if "function" in obj and "name" not in obj:
        raise MalformedToolCall(f"{where}: an OpenAI 'function' wrapper, which servers' Hermes parsers do not "
                                f"read (they make no call): {fix}")
    if isinstance(name, str) and name.strip() and "arguments" not in obj:
        what = "'parameters' in place of 'arguments'" if "parameters" in obj else "no 'arguments'"
        raise MalformedToolCall(f"{where} ({name}): {what}: vLLM's hermes parser makes no call of it; {fix}")
    if isinstance(name, str) and name.strip() and not isinstance(obj["arguments"], dict):
        if isinstance(obj["arguments"], str):  # unreadable text: the reason an OpenAI call with it gets
            try:
                read_arguments(obj["arguments"])
            except MalformedToolCall as exc:
                raise MalformedToolCall(f"{where} ({name}): {exc}") from None
        kind = "a JSON string" if isinstance(obj["arguments"], str) else type(obj["arguments"]).__name__
        kind = "null" if obj["arguments"] is None else kind
        raise MalformedToolCall(f"{where} ({name}): arguments are {kind}, not an object: the served call passes "
                                f"them on as that value, which no client reads as arguments; {fix}")


def read_arguments(args: Any) -> dict[str, Any]:
    """A call's arguments as one JSON object, read as every tool-call form reads them (Hermes text, OpenAI
    ``tool_calls``, ``ToolCall.from_dict``): an object as it is; a JSON text of one object, strictly (no duplicate
    key, NaN/Infinity or nesting past MAX_JSON_DEPTH: parsers and tools read those differently); None or blank text
    as {}. Raises MalformedToolCall saying why (the caller names the call)."""
    if isinstance(args, str):
        try:
            args = loads_strict(args, unique_keys=True) if args.strip() else {}
        except MalformedJSON as exc:
            raise MalformedToolCall(f"arguments string is not JSON: {exc}") from None
    if args is None:
        return {}
    if isinstance(args, Mapping):
        return dict(args)
    raise MalformedToolCall(f"arguments must be an object, got {type(args).__name__}")


def parse_python_calls(text: str, tools: Sequence[ToolSpec] = (), *, positional: bool = True) -> list[ToolCall]:
    """Calls written as Python: ``f(a=1)``, ``f(1, b=[2])``, ``[f(a=1), g()]`` or one call per line.
    Literal arguments only (never evaluated); raises MalformedToolCall. ``positional=False``: a positional
    argument is malformed (servers' pythonic parsers drop it and call the function without it)."""
    if len(text) > MAX_PY_CALL_CHARS:
        raise MalformedToolCall(f"python call text is over {MAX_PY_CALL_CHARS:,} characters")
    src = text.strip()
    quick = _simple_call(src)
    if quick is not None:
        return [quick]
    return _parse_python_ast(src, tools, positional)


def _parse_python_ast(src: str, tools: Sequence[ToolSpec], positional: bool = True) -> list[ToolCall]:
    try:
        tree = pyast.parse(src, mode="exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise MalformedToolCall(f"not valid Python call syntax: {getattr(exc, 'msg', None) or exc}") from None
    if not src.isascii():
        _names_as_written(src)
    nodes: list[ast.expr] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            raise MalformedToolCall(f"only call expressions are allowed, found a {type(stmt).__name__} statement")
        v = stmt.value
        nodes.extend(v.elts if isinstance(v, (ast.List, ast.Tuple)) else [v])
    if not nodes:
        raise MalformedToolCall("no call found")
    by_name = {t.name: t for t in tools}
    calls = []
    for i, node in enumerate(nodes):
        if not isinstance(node, ast.Call):
            raise MalformedToolCall(f"call {i + 1}: expected name(args...), found {type(node).__name__}")
        name = _dotted(node.func)
        if name is None:
            raise MalformedToolCall(f"call {i + 1}: the function must be a plain (dotted) name")
        args: dict[str, Any] = {}
        if node.args and not positional:
            raise MalformedToolCall(f"call {i + 1} ({name}): a positional argument, which servers' pythonic parsers "
                                    "drop (the function is called without it): write name=value")
        if node.args:
            spec = by_name.get(name)
            order = list((spec.parameters.get("properties") or {}).keys()) if spec else []
            if len(node.args) > len(order):
                raise MalformedToolCall(f"call {i + 1} ({name}): positional arguments need the tool's schema; "
                                        "write name=value")
            for pname, a in zip(order, node.args, strict=False):
                args[pname] = _literal(a, name, pname)
        for kw in node.keywords:
            if kw.arg is None:
                raise MalformedToolCall(f"call {i + 1} ({name}): **kwargs are not allowed")
            if kw.arg in args:
                raise MalformedToolCall(f"call {i + 1} ({name}): argument {kw.arg!r} given twice")
            args[kw.arg] = _literal(kw.value, name, kw.arg)
        calls.append(ToolCall(id=f"call_{i}", name=name, arguments=args))
    return calls


# One call with keyword arguments whose values are plain scalars: the usual case, read without building an AST.
_SCALAR = r"""(?:"[^"\\\n]*"|'[^'\\\n]*'|-?(?:0|[1-9]\d*)(?:\.\d+)?(?![\w.])|True|False|None|true|false|null)"""
_SIMPLE_CALL = re.compile(rf"([A-Za-z_][A-Za-z0-9_.]*)\(\s*((?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*{_SCALAR}\s*(?:,\s*|(?=\))))*)\)")
_SIMPLE_ARG = re.compile(rf"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*({_SCALAR})")
_SIMPLE_CONST = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}


def _simple_call(src: str) -> ToolCall | None:
    """``name(k="v", n=3)`` parsed directly (same result as the AST path), or None for anything else."""
    m = _SIMPLE_CALL.fullmatch(src)
    if m is None or any(not p or keyword.iskeyword(p) for p in m.group(1).split(".")):
        return None
    args: dict[str, Any] = {}
    for a in _SIMPLE_ARG.finditer(m.group(2)):
        key, tok = a.group(1), a.group(2)
        if key in args or key in _SIMPLE_CONST or keyword.iskeyword(key):
            return None  # let the AST path report it
        if tok[0] in "\"'":
            args[key] = tok[1:-1]
        elif tok in _SIMPLE_CONST:
            args[key] = _SIMPLE_CONST[tok]
        elif "." in tok:
            args[key] = float(tok)
        else:
            try:
                args[key] = int(tok)
            except ValueError:  # past int()'s digit limit (4,300): it escaped as the verifier's exception, where
                return None  # the AST path reports it as unreadable call syntax
    return ToolCall(id="call_0", name=m.group(1), arguments=args)


def _names_as_written(src: str) -> None:
    """Python reads identifiers after NFKC ("gｅt_weather" is get_weather): a name compares as written, so a name
    that NFKC changes is refused rather than matched as another."""
    import io
    import tokenize
    import unicodedata

    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.NAME and unicodedata.normalize("NFKC", tok.string) != tok.string:
                raise MalformedToolCall(f"the name {tok.string!r} is not written as Python reads it "
                                        f"({unicodedata.normalize('NFKC', tok.string)!r}): write it in plain form")
    except (tokenize.TokenError, SyntaxError):
        pass  # ast.parse read it: nothing the tokenizer refuses holds a name ast would have changed


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_PY_CONSTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _literal(node: ast.expr, fn: str, arg: str, depth: int = 0) -> Any:
    """A JSON value from a literal expression (JSON's true/false/null spellings accepted); nothing is evaluated."""
    if depth > MAX_JSON_DEPTH:
        raise MalformedToolCall(f"{fn}: argument {arg!r} nests too deeply")
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return node.value
        raise MalformedToolCall(f"{fn}: argument {arg!r} is a {type(node.value).__name__}, not a JSON value")
    if isinstance(node, ast.Name) and node.id in _PY_CONSTS:
        return _PY_CONSTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        num: int | float = node.operand.value  # type: ignore[assignment]  # narrowed by the type() test above
        return -num if isinstance(node.op, ast.USub) else num
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(x, fn, arg, depth + 1) for x in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise MalformedToolCall(f"{fn}: argument {arg!r} has a non-string key")
            if k.value in out:  # as JSON arguments with a repeated key are refused (parsers keep different ones)
                raise MalformedToolCall(f"{fn}: argument {arg!r} repeats the key {k.value!r}")
            out[k.value] = _literal(v, fn, arg, depth + 1)
        return out
    raise MalformedToolCall(f"{fn}: argument {arg!r} is not a literal value ({type(node).__name__})")
