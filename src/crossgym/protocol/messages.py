"""Chat messages, tool calls and tool specs, in OpenAI's chat format."""

from __future__ import annotations

import json
import math
import numbers
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


def json_kind(value: Any) -> str:
    """What a JSON value is, for an error message: ``a number (5)``, ``a list ([1])`` (the user's words for it,
    not Python's type names, which mean nothing to someone who wrote a JSON file)."""
    names = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}
    return "null" if value is None else f"{names.get(type(value), type(value).__name__)} ({repr(value)[:40]})"


def true_false(value: Any) -> bool:
    """Whether ``value`` is true/false: a bool, or numpy's bool_ (no bool, and no int either, but read as one
    by ``numbers``' checks elsewhere), found without importing numpy. Stored numbers are never true/false."""
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b"


def json_object(what: str, value: Any) -> dict[str, Any]:
    """A stored record's field that is an object, as a dict (empty when null, absent or empty: a columnar file may
    hold an empty list); anything else is a ValueError naming ``what`` (e.g. "'metadata'") and what it got."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be an object, got {json_kind(value)}")
    return dict(value)


def whole_number(value: Any) -> int | None:
    """``value`` as an int when it is a whole number as a stored record may hold one (2, numpy's int64, or 2.0 from
    a float column: Parquet makes an integer column with nulls float); None for anything else (text, 2.5, true)."""
    if true_false(value):
        return None
    if isinstance(value, numbers.Integral):
        return operator.index(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(float(value))
    return None


def _require(d: Mapping[str, Any], key: str, kind: str) -> Any:
    if not isinstance(d, Mapping):
        raise ValueError(f"{kind} must be a JSON object, got {json_kind(d)}")
    if key not in d:
        raise ValueError(f"{kind} is missing required key {key!r}")
    return d[key]


# what an unreadable call's arguments are written as when the model's text is unknown: unreadable again
_UNREADABLE = "<unreadable arguments>"


def _as_text(raw: Any) -> str:
    """A call's arguments as the text a model sent (a JSON value other than an object, written back as JSON)."""
    if type(raw) is str:
        return raw
    try:
        return json.dumps(raw, allow_nan=False)
    except (TypeError, ValueError):
        return _UNREADABLE


@dataclass(frozen=True)
class ToolCall:
    """One function call made by the assistant.

    ``error`` says why the call's arguments could not be read as one JSON object (then ``arguments`` is {}): set by
    ``from_dict`` for model output such as ``"arguments": "{bad"``, it makes the call malformed wherever it is
    judged or run, as the same call written as a Hermes ``<tool_call>`` block is. None for a readable call.
    ``raw_arguments`` keeps what the model wrote for such a call, so that every form the call is written out in
    (OpenAI's, Hermes text, verifiers v1, a chat template) carries the unreadable text, never a readable ``{}``."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    raw_arguments: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.error is not None:
            d["error"] = self.error
        if self.raw_arguments is not None:
            d["raw_arguments"] = self.raw_arguments
        return d

    def arguments_text(self) -> str:
        """The arguments as OpenAI's wire form writes them: a JSON object's text, or for an unreadable call what
        the model wrote (read back, it is unreadable again)."""
        if self.error is not None:
            return self.raw_arguments if self.raw_arguments is not None else _UNREADABLE
        return json.dumps(self.arguments)

    def structured_arguments(self) -> dict[str, Any] | str:
        """The arguments where a form carries them as a JSON value (a chat template, a Hermes ``<tool_call>``
        block): the object, or for an unreadable call the text the model wrote (read back, unreadable again)."""
        return self.arguments if self.error is None else self.arguments_text()

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI wire form: arguments as a JSON string (an unreadable call's own text)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_text()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        """Accept crossgym's form and OpenAI's (``{"function": {"name", "arguments": str}}``). Arguments that are not
        one JSON object (invalid JSON, another JSON value, a key given twice, NaN, nesting too deep) never raise:
        the call keeps ``arguments={}`` and an ``error`` saying why (a model's malformed call is judged, not a
        crash)."""
        if "function" in d:
            fn = d["function"]
            name, raw = str(fn["name"]), fn.get("arguments", {})
        else:
            name, raw = str(_require(d, "name", "ToolCall")), d.get("arguments", {})
        error, text = d.get("error"), d.get("raw_arguments")
        if type(raw) is dict:  # structured arguments: taken as they are
            args: dict[str, Any] = dict(raw)
        else:  # text from the model: read as Hermes text is (imported on use, so importing protocol loads no text/)
            from crossgym.text.tool_calls import MalformedToolCall, read_arguments

            try:
                args = read_arguments(raw)
            except MalformedToolCall as exc:
                args, error, text = {}, error if error is not None else str(exc), _as_text(raw)
        if error is None:
            text = None  # (an unreadable call whose text was not kept is written out unreadable: arguments_text)
        return cls(id=str(d.get("id", "")), name=name, arguments=args,
                   error=None if error is None else str(error), raw_arguments=None if text is None else str(text))


@dataclass(frozen=True)
class ToolSpec:
    """A tool the policy may call, in OpenAI function format (``parameters`` is a JSON Schema)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": self.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolSpec:
        """crossgym's form or OpenAI's (``{"type": "function", "function": {...}}``); a spec that is no object, or
        whose ``parameters`` is no object (a JSON Schema), is a ValueError naming what it got (a task file's
        mistake, said in the file's words rather than as Python's AttributeError)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a tool spec must be an object {{'name': ..., 'description': ..., 'parameters': "
                             f"{{...}}}}, got {json_kind(d)}")
        if d.get("type") == "function" and "function" in d:
            d = d["function"]
        name = _require(d, "name", "a tool spec")
        params = d.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            raise ValueError(f"tool {str(name)!r}: 'parameters' must be an object (a JSON Schema), "
                             f"got {json_kind(params)}")
        return cls(
            name=str(name),
            description=str(d.get("description", "")),
            parameters=dict(params) if params is not None else {"type": "object", "properties": {}},
        )


@dataclass(frozen=True)
class Message:
    """One chat message. ``role`` is system, user, assistant or tool."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d

    def to_openai(self) -> dict[str, Any]:
        """The form chat templates and OpenAI-compatible servers take."""
        d = self.to_dict()
        if self.tool_calls:
            d["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        if not isinstance(d, Mapping):
            raise ValueError(f"a message must be an object {{'role': ..., 'content': ...}}, got {json_kind(d)}")
        content = d.get("content")
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        return cls(
            role=str(_require(d, "role", "Message")),
            content="" if content is None else str(content),
            tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
        )


def user(content: str) -> Message:
    return Message(role="user", content=content)


def system(content: str) -> Message:
    return Message(role="system", content=content)


def assistant(content: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
    return Message(role="assistant", content=content, tool_calls=tuple(tool_calls))


def messages_from(value: Any) -> tuple[Message, ...]:
    """A prompt given as a string, one message dict, or a list of dicts/Messages. Anything else (a number, a
    message that is no object) is a ValueError naming what it got and which message, in JSON's words."""
    if isinstance(value, str):
        return (user(value),)
    if isinstance(value, Message):
        return (value,)
    if isinstance(value, Mapping):
        return (Message.from_dict(value),)
    if not isinstance(value, (list, tuple)) and (not isinstance(value, Iterable)
                                                 or isinstance(value, (bytes, bytearray))):
        raise ValueError(f"messages must be text or a list of message objects, got {json_kind(value)}")
    out = []
    for i, m in enumerate(value):
        if isinstance(m, Message):
            out.append(m)
            continue
        try:
            out.append(Message.from_dict(m))
        except ValueError as exc:
            raise ValueError(f"message {i + 1}: {exc}") from None
    return tuple(out)
