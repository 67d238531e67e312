"""A strict codec for values that cross between the solution's process and the test harness.

Only exact built-in types travel (``type(v) is int``, never a subclass), so an object whose ``__eq__``
always answers True cannot reach the harness as a value: the solution side turns it into an opaque handle that
compares by identity only. An instance of a subclass of a built-in type (an ``int`` with a forged ``__eq__``, a
namedtuple, a Counter) travels as the plain value it holds, so the test compares the data, not the dunders.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable

if False:  # annotations only: the server does not import typing
    from typing import Any

MAX_DEPTH = 200
MAX_ITEMS = 2_000_000


class Unencodable(TypeError):
    """The value is not made of exact built-in types."""


def encode(value: Any, handle: Callable[[Any], Any] | None = None, named: bool = False) -> Any:
    """A JSON-able tree for ``value``; objects of other types go through ``handle`` (or raise). ``named``: the
    solution's side, where a handle's type is named by :func:`type_name`."""
    budget = [MAX_ITEMS, named]
    return _enc(value, handle, 0, budget)


def _enc(v: Any, handle: Callable[[Any], Any] | None, depth: int, budget: list[Any]) -> Any:
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise Unencodable("value too deep or too large")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if -(1 << 53) < v < (1 << 53) else ["i", format(v, "x")]
    if t is float:
        return v if math.isfinite(v) else ["f", repr(v)]
    if t is list or t is tuple or t is set or t is frozenset:
        tag = {list: "l", tuple: "t", set: "s", frozenset: "z"}[t]  # type: ignore[index]
        return [tag, [_enc(x, handle, depth + 1, budget) for x in v]]
    if t is dict:
        items = dict.items(v)
        return ["d", [[_enc(k, handle, depth + 1, budget), _enc(x, handle, depth + 1, budget)] for k, x in items]]
    if t is bytes or t is bytearray:
        return ["b" if t is bytes else "y", base64.b64encode(v).decode()]
    if t is complex:
        return ["c", _enc(v.real, None, depth + 1, budget), _enc(v.imag, None, depth + 1, budget)]
    if t is range:
        return ["r", v.start, v.stop, v.step]
    for base, plain in _PLAIN:
        if issubclass(t, base):  # a subclass (IntEnum, namedtuple, Counter, a forged int) travels as its data
            return _enc(plain(v), handle, depth, budget)
    if handle is None:
        raise Unencodable(f"a {t.__name__} object")
    hid = handle(v)  # an id, or [id, name of the solution's class it is exactly an object of]
    name = type_name(t) if budget[1] else t.__name__
    return ["h", hid, name] if type(hid) is int else ["h", hid[0], name, hid[1]]


_FLAGS = type.__dict__["__flags__"].__get__  # a class's real flags and name (never a metaclass's own attribute)
_NAME = type.__dict__["__name__"].__get__
_HEAPTYPE = 1 << 9


def _static_names() -> frozenset[str]:
    """The names of the built-in (static) types loaded: ``int``, ``list``, ``generator``, ``function``, ``map``,
    ``ValueError``, ... (a walk of object's subclasses, about 0.3 ms once a process)."""
    names, seen, todo = set(), set(), [object]
    while todo:
        kind = todo.pop()
        if id(kind) in seen:
            continue
        seen.add(id(kind))
        try:
            todo.extend(type.__subclasses__(kind))
        except TypeError:
            continue
        if not _FLAGS(kind) & _HEAPTYPE:
            names.add(_NAME(kind))
    return frozenset(names)


STATIC_NAMES = _static_names()
# the types whose objects always cross as plain values: a handle named so is forged, whatever its frame says
VALUE_NAMES = frozenset({"int", "float", "complex", "str", "bytes", "bytearray", "bool", "NoneType", "list",
                         "tuple", "dict", "set", "frozenset", "range"})


def type_name(kind: type) -> str:
    """The name a handle's type has in the tests (``type(x).__name__``): its own, except that a class of the
    solution named like a built-in type (``class int``, ``type("generator", (), {})``) is ``solution.<name>``, so
    no test that reads a type's name takes it for the built-in one (issue 20; in one process it would)."""
    name: str = _NAME(kind)
    if _FLAGS(kind) & _HEAPTYPE and name in STATIC_NAMES or name in VALUE_NAMES:
        return "solution." + name
    return name


# The plain built-in value a subclass instance holds, read by the base type's own C code (no method the
# subclass overrides is called): the harness then compares the data, never the subclass's dunders.
_PLAIN: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, int.__int__), (float, float.__float__), (str, str.__str__),
    (complex, lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v))),
    (bytes, lambda v: bytes.__getitem__(v, slice(None))), (bytearray, bytearray.copy),
    (list, list.copy), (tuple, lambda v: tuple.__getitem__(v, slice(None))), (dict, dict.copy),
    (set, set.copy), (frozenset, frozenset.copy))


MAX_SHARED_HASHES = 1024


def _spread(keys: list[Any]) -> None:
    """Refuse set or dict keys of which more than MAX_SHARED_HASHES share a hash with another: a set of n of them
    takes n**2 steps to build, in one C call no timer can stop (``k * (2**61 - 1)`` for every k hash alike), and a
    reply written on the solution's own pipe costs it nothing to send (an honest set like it took the solution the
    same time to make)."""
    if len(keys) - len(set(map(hash, keys))) > MAX_SHARED_HASHES:  # (distinct hashes are distinct ints: no
        raise ValueError("malformed value: set or dict keys with too many equal hashes")  # collisions there)


def decode(tree: Any, handle: Callable[..., Any] | None = None) -> Any:
    """The value for a tree from :func:`encode`; ``handle(id, type_name)`` (``handle(id, type_name, class_name)``:
    see solution._Server.handle) builds handle objects."""
    return _dec(tree, handle, 0)


def _dec(x: Any, handle: Callable[..., Any] | None, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("value too deep")
    if x is None or type(x) in (bool, str, int, float):
        return x
    if type(x) is not list or not x or type(x[0]) is not str:
        raise ValueError("malformed value")
    tag = x[0]
    if tag == "i":
        return int(x[1], 16)
    if tag == "f":
        return float(x[1])
    if tag in ("l", "t", "s", "z"):
        items = [_dec(e, handle, depth + 1) for e in x[1]]
        if tag in ("s", "z") and len(items) > MAX_SHARED_HASHES:
            _spread(items)
        return {"l": list, "t": tuple, "s": set, "z": frozenset}[tag](items)
    if tag == "d":
        pairs = [(_dec(k, handle, depth + 1), _dec(v, handle, depth + 1)) for k, v in x[1]]
        if len(pairs) > MAX_SHARED_HASHES:
            _spread([k for k, _ in pairs])
        return dict(pairs)
    if tag in ("b", "y"):
        raw = base64.b64decode(x[1])
        return raw if tag == "b" else bytearray(raw)
    if tag == "c":
        return complex(_dec(x[1], None, depth + 1), _dec(x[2], None, depth + 1))
    if tag == "r":
        return range(int(x[1]), int(x[2]), int(x[3]))
    if tag == "h" and handle is not None:
        return handle(int(x[1]), str(x[2])) if len(x) < 4 else handle(int(x[1]), str(x[2]), str(x[3]))
    raise ValueError(f"unknown value tag {tag!r}")
