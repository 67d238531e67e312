"""Tools from plain Python callables: ToolSpecs from signatures and docstrings, safe calls, and rebuilding a task's
tools in any process from names the task carries (``metadata["toolset"]`` / ``metadata["tool_refs"]``)."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import ToolSpec
from crossgym.protocol.task import Task

log = logging.getLogger(__name__)

#: Built-in toolsets by short name ("module:attr" of a factory ``(task, seed) -> list[callable]`` or a list).
BUILTIN_TOOLSETS: dict[str, str] = {
    "utilities": "crossgym.environments.toolsets:utilities",
    "calculator": "crossgym.environments.toolsets:calculator",
    "notes": "crossgym.environments.toolsets:notes",
}

#: Longest tool result handed back to the model, in characters.
MAX_RESULT_CHARS = 4000

_PY_TO_JSON = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def json_schema_for(annotation: Any) -> dict[str, Any]:
    """A JSON Schema for a Python type annotation (unknown annotations give an unconstrained schema)."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation in _PY_TO_JSON:
        return {"type": _PY_TO_JSON[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        values = list(args)
        schema: dict[str, Any] = {"enum": values}
        kinds = {_PY_TO_JSON.get(type(v)) for v in values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (typing.Union, types.UnionType):
        options = [json_schema_for(a) for a in args]
        non_null = [o for o in options if o != {"type": "null"}]
        if len(non_null) == 1 and len(options) == 2:
            inner = dict(non_null[0])
            if "type" in inner and isinstance(inner["type"], str):
                inner["type"] = [inner["type"], "null"]
                return inner
        return {"anyOf": options}
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args and args[-1] is not Ellipsis and (origin is not tuple or len(args) == 1):
            schema["items"] = json_schema_for(args[0])
        elif origin is tuple and args and args[-1] is Ellipsis:
            schema["items"] = json_schema_for(args[0])
        return schema
    if annotation is dict or origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = json_schema_for(args[1])
        return schema
    return {}


_ARG_LINE = re.compile(r"^\s*(?:\*{0,2})(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a Google-, Sphinx- or numpy-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    numpy = False  # "Parameters" underlined with dashes: "name : type" lines, descriptions indented below
    for line in lines:
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        if line.strip().startswith(":"):  # :returns:, :raises: ...
            section, current = "other", None
            continue
        head = _SECTION.match(line)
        if head:
            section = "args" if head.group(1).lower().startswith(("arg", "param")) else "other"
            current, numpy = None, False
            continue
        if section is None:
            description.append(line)
            continue
        if section == "args":
            if line.strip() and set(line.strip()) <= {"-"}:  # numpy underline
                numpy = True
                continue
            indent = len(line) - len(line.lstrip())
            m = _ARG_LINE.match(line)
            if numpy and indent == 0 and m:
                current = m.group(1)
                params[current] = ""
            elif not numpy and m and indent <= 4 and not (current and indent > 4):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "sphinx" and current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    text = " ".join(" ".join(description).split())
    return text, params


def tool_spec(fn: Callable[..., Any], *, name: str | None = None) -> ToolSpec:
    """The ToolSpec (OpenAI function format) of a callable, from its signature and docstring."""
    desc, param_docs = parse_docstring(inspect.getdoc(fn))
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or pname in ("self", "cls"):
            continue
        schema = json_schema_for(hints.get(pname, p.annotation))
        if pname in param_docs:
            schema["description"] = param_docs[pname]
        if p.default is p.empty:
            required.append(pname)
        elif _jsonable(p.default):
            schema["default"] = p.default
        properties[pname] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return ToolSpec(name=name or fn.__name__, description=desc, parameters=parameters)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class ToolError(Exception):
    """A tool call that cannot run (unknown tool, bad arguments); its message goes back to the model."""


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


@dataclass(frozen=True)
class Tool:
    """A callable with its spec; ``call`` checks arguments against the spec and never lets an error escape."""

    spec: ToolSpec
    fn: Callable[..., Any]

    @classmethod
    def from_callable(cls, fn: Callable[..., Any], *, name: str | None = None) -> Tool:
        return cls(spec=tool_spec(fn, name=name), fn=fn)

    @property
    def name(self) -> str:
        return self.spec.name

    def check_arguments(self, arguments: Mapping[str, Any]) -> None:
        """Raise ToolError naming the first problem: unknown, missing or wrongly typed arguments."""
        props = self.spec.parameters.get("properties", {})
        unknown = [k for k in arguments if k not in props]
        if unknown:
            raise ToolError(f"unknown argument {unknown[0]!r} for {self.name}; expected: {', '.join(props) or 'none'}")
        missing = [k for k in self.spec.parameters.get("required", []) if k not in arguments]
        if missing:
            raise ToolError(f"missing required argument {missing[0]!r} for {self.name}")
        for key, value in arguments.items():
            kinds = props[key].get("type")
            if kinds is None:
                continue
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not any(_CHECKS.get(k, lambda v: True)(value) for k in kinds):
                raise ToolError(f"argument {key!r} of {self.name} must be {' or '.join(kinds)}, "
                                f"got {type(value).__name__}")
            enum = props[key].get("enum")
            if enum is not None and value not in enum:
                raise ToolError(f"argument {key!r} of {self.name} must be one of {enum}")

    def call(self, arguments: Mapping[str, Any]) -> str:
        """The result as text for a tool message; errors become 'Error: ...' text, never exceptions."""
        try:
            self.check_arguments(arguments)
            result = self.fn(**dict(arguments))
        except ToolError as exc:
            return f"Error: {exc}"
        except Exception as exc:  # the tool itself failed: the model sees why
            return f"Error: {type(exc).__name__}: {exc}"
        try:
            return format_result(result)
        except Exception as exc:  # (an integer past 4,300 digits has no JSON and no repr: it raised out of step)
            return f"Error: the result cannot be shown: {type(exc).__name__}: {exc}"


def format_result(result: Any) -> str:
    """Tool results as text: strings as they are, everything else as JSON (repr when not JSON)."""
    if isinstance(result, str):
        text = result
    else:
        try:
            text = json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(result)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"... [truncated {len(text) - MAX_RESULT_CHARS} chars]"
    return text


def import_ref(ref: str) -> Any:
    """The object a ``"module:attr"`` string names (ConfigError when it cannot be imported)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"tool reference {ref!r} is not 'module:attr'", fix="write e.g. 'mypkg.tools:search'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import tool {ref!r}: {exc}",
                          fix="install the module that defines it in every process that runs episodes") from None
    return obj


def _as_tools(objs: Iterable[Any]) -> list[Tool]:
    tools = []
    for obj in objs:
        if isinstance(obj, Tool):
            tools.append(obj)
        elif callable(obj):
            tools.append(Tool.from_callable(obj))
        else:
            raise ConfigError(f"toolset entry {obj!r} is not callable", fix="list functions or Tool objects")
    return tools


def load_toolset(name: str, task: Task | None = None, seed: int | None = None) -> list[Tool]:
    """A toolset by built-in name or ``"module:attr"``: a list of callables, or a factory ``(task, seed)``."""
    ref = BUILTIN_TOOLSETS.get(name, name)
    if ":" not in ref:
        raise ConfigError(f"unknown toolset {name!r}",
                          fix=f"use one of {', '.join(sorted(BUILTIN_TOOLSETS))} or a 'module:attr' reference")
    obj = import_ref(ref)
    if callable(obj) and not isinstance(obj, (list, tuple)):
        sig_params = _positional_count(obj)
        obj = obj(task, seed) if sig_params >= 2 else obj(task) if sig_params == 1 else obj()
    return _as_tools(obj)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def tools_for_task(task: Task, seed: int | None = None) -> list[Tool]:
    """Rebuild a task's tools from the task alone, in any process.

    ``metadata["toolset"]`` names a toolset (built-in name or ``"module:attr"``) and/or ``metadata["tool_refs"]``
    lists ``"module:function"`` entries. When ``task.tools`` is non-empty, only the tools it declares are kept
    (and each must be found), so the specs the model sees and the callables that run always agree.
    """
    tools: list[Tool] = []
    toolset = task.metadata.get("toolset")
    if toolset:
        tools.extend(load_toolset(str(toolset), task, seed))
    for ref in task.metadata.get("tool_refs") or ():
        fn = import_ref(str(ref))
        tools.extend(_as_tools([fn]))
    by_name: dict[str, Tool] = {}
    for t in tools:
        by_name.setdefault(t.name, t)
    if task.tools:
        missing = [s.name for s in task.tools if s.name not in by_name]
        if missing:
            raise ConfigError(f"task {task.id!r} declares tool {missing[0]!r} but its toolset does not provide it",
                              fix="set metadata['toolset'] or metadata['tool_refs'] to where the tool is defined")
        return [Tool(spec=s, fn=by_name[s.name].fn) for s in task.tools]
    return list(by_name.values())
