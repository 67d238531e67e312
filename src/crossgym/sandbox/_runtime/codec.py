"""A strict codec for values that cross between the solution's process and the test harness.

Only exact built-in types travel (``type(v) is int``, never a subclass), so an object whose ``__eq__``
always answers True cannot reach the harness as a value: the solution side turns it into an opaque handle that
compares by identity only. An instance of a subclass of a built-in type (an ``int`` with a forged ``__eq__``, a
namedtuple, a subclass of Counter) travels as the plain value it holds, so the test compares the data, not the
dunders. A few value types of the standard library cross as themselves (exactly them: see ``_STDLIB_VALUES``).

Objects of the *value classes* (a class the problem's prompt defines and the solution defines too, such as
LeetCode's ``ListNode`` and ``TreeNode``) travel as their attributes: ``handle`` answers ``(name, attributes)``
for one, each is encoded once into the value's table (so shared nodes stay shared and cycles end), and the
receiving side makes an object of its own class of that name (``make``) without running its ``__init__``, then
sets the attributes. A value holding any is ``["g", tree, [[class name, [[attribute, tree], ...]], ...]]`` and
``["@", i]`` in a tree is the table's i-th object. No link between objects nests: a list of 10,000 nodes is as
deep as one. A list, dict, set or bytearray met again in the same value is ``["^", i]``, the i-th of them met (in
the order encoding meets them, which is the order decoding makes them): shared parts stay shared and a list may
hold itself. A NaN float counts among them (``[x, x] == [x, x]`` holds in one process for one NaN object ``x``,
since a container compares its items by identity first), and ``math.nan`` itself is ``["f", "nan", 0]``, the
receiving side's ``math.nan``: ``f() == [math.nan]`` holds as in one process.
"""

from __future__ import annotations

import base64
import builtins
import collections
import math
import sys
from collections.abc import Callable

if False:  # annotations only: the server does not import typing
    from typing import Any

MAX_DEPTH = 200
MAX_ITEMS = 2_000_000


# The built-in types and functions that cross as themselves (taken when this module loads, before any solution
# runs: one that rebinds ``builtins.int`` has a class of its own, which crosses as a handle). Only what computes
# with what it is given: no ``eval``, ``exec``, ``open``, ``getattr`` or ``__import__`` reaches the tests' process
# from the solution's (a test calling what the solution returned runs it there).
_BUILTIN_NAMES = ("int float complex bool str bytes bytearray list tuple dict set frozenset range slice object type "
                  "enumerate filter map reversed zip abs all any ascii bin callable chr divmod format hash hex "
                  "isinstance issubclass iter len max min next oct ord pow repr round sorted sum Ellipsis "
                  "NotImplemented").split()
_BUILTIN: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTIN_NAMES}
_BUILTIN.update({name: kind for name, kind in vars(builtins).items()
                 if isinstance(kind, type) and issubclass(kind, BaseException)})
_BUILTIN_OF = {id(obj): name for name, obj in _BUILTIN.items()}
_BUILTIN_FUNCTION = type(len)
_FUNCTION = type(lambda: None)
_SINGLETONS = (type(Ellipsis), type(NotImplemented))


class Unencodable(TypeError):
    """The value is not made of exact built-in types."""


def encode(value: Any, handle: Callable[[Any], Any] | None = None, named: bool = False,
           same: dict[int, str] | None = None, moved: dict[int, str] | None = None, limit: int = MAX_ITEMS,
           views: bool = False) -> Any:
    """A JSON-able tree for ``value``; objects of other types go through ``handle`` (or raise). ``named``: the
    solution's side, where a handle's type is named by :func:`type_name`. ``same``: id -> key of the call's
    arguments (a list, dict, set or bytearray the call did not change): one of them in the value is ``["a", key]``,
    and the tests get their own object back (``clone(xs) is not xs`` fails for ``return xs``, as in one process).
    ``moved``: id -> key of a list, dict, set or bytearray inside an argument that the call changed: it is
    ``["m", key, its new contents]`` (once; ``["a", key]`` where it is met again), the tests' own object changed.
    ``limit``: the most items (Unencodable past it). ``views``: a dict's view is a value on the tests' side too (the
    solution's side always sends its views so: see VIEWS)."""
    if moved:
        same = dict(same or {})
    budget: list[Any] = [limit, named, {}, [], same, moved, {}, named or views]  # items left, named, id -> index,
    # table, args, id -> index of each list, dict, set and bytearray met (see _enc), views as values
    tree = _enc(value, handle, 0, budget)
    table = budget[3]
    if not table:
        return tree
    nodes: list[Any] = []
    while len(nodes) < len(table):  # (each object's attributes may add more objects to the table)
        _, name, attrs = table[len(nodes)]
        nodes.append([name, [[k, _enc(x, handle, 1, budget)] for k, x in attrs.items() if _attribute(k)]])
    return ["g", tree, nodes]


def _attribute(name: Any) -> bool:
    """An attribute a value class's object may travel with: a plain name, never a dunder (``__class__``)."""
    return type(name) is str and name.isidentifier() and not (name.startswith("__") and name.endswith("__"))


def state(obj: Any) -> dict[str, Any]:
    """The attributes an object of a value class travels with: its instance dictionary and its slots, read with
    object's own lookup."""
    out: dict[str, Any] = {}
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        own = None
    if type(own) is dict:
        out.update(own)
    for kind in _MRO_OF(type(obj)):
        slots = kind.__dict__.get("__slots__", ())
        for name in (slots,) if type(slots) is str else slots if type(slots) in (list, tuple) else ():
            if type(name) is str and name not in out:
                try:
                    out[name] = object.__getattribute__(obj, name)
                except AttributeError:
                    pass
    return out


def value_class(kind: Any, module: str) -> bool:
    """Whether a class can be a value class: a plain class (no metaclass, no built-in base but object, no
    ``__new__`` of its own) made in ``module``, as are the ones it derives from."""
    if type(kind) is not type:
        return False
    for k in _MRO_OF(kind)[:-1]:
        if type(k) is not type or k.__dict__.get("__module__") != module or "__new__" in k.__dict__:
            return False
    return _MRO_OF(kind)[-1] is object


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
        if math.isfinite(v):
            return v
        if v == v:  # (an infinity: equal to any other, no identity to keep)
            return ["f", repr(v)]
        if v is _NAN:
            return ["f", "nan", 0]
        met = budget[6]  # a NaN is unequal to itself, so which object it is decides ``[x] == [x]``: kept, as a list's
        index = met.get(id(v))
        if index is not None:
            return ["^", index]
        met[id(v)] = len(met)
        return ["f", "nan"]
    if budget[4] and (t is list or t is dict or t is set or t is bytearray or t in VIEWS) and id(v) in budget[4]:
        return ["a", budget[4][id(v)]]  # (a view the tests gave, given back: theirs too)
    if budget[5] and (t is list or t is dict or t is set or t is bytearray) and id(v) in budget[5]:
        key = budget[5].pop(id(v))
        contents = _enc(v, handle, depth + 1, budget)
        budget[4][id(v)] = key  # (met again: the same object of the tests, already changed)
        return ["m", key, contents]
    if t is list or t is dict or t is set or t is bytearray:  # one met again is ``["^", i]``, the i-th met (in
        met = budget[6]  # the order they are first met): ``[[0] * 3] * 3`` has one row three times, and a list
        index = met.get(id(v))  # may hold itself, as in one process
        if index is not None:
            return ["^", index]
        met[id(v)] = len(met)
    if t is list or t is tuple or t is set or t is frozenset:
        tag = {list: "l", tuple: "t", set: "s", frozenset: "z"}[t]  # type: ignore[index]
        return [tag, [_enc(x, handle, depth + 1, budget) for x in v]]
    if t is dict:
        items = dict.items(v)
        return ["d", [[_enc(k, handle, depth + 1, budget), _enc(x, handle, depth + 1, budget)] for k, x in items]]
    if t is bytes or t is bytearray:
        return ["b" if t is bytes else "y", base64.b64encode(v).decode()]
    if t is complex:
        return ["c", *(x if math.isfinite(x) else ["f", repr(x)] for x in (v.real, v.imag))]
    if t is range:
        return ["r", v.start, v.stop, v.step]
    if t is slice:
        return ["p", [_enc(v.start, handle, depth + 1, budget), _enc(v.stop, handle, depth + 1, budget),
                      _enc(v.step, handle, depth + 1, budget)]]
    if (t is type or t is _BUILTIN_FUNCTION or t in _SINGLETONS) and _BUILTIN_OF.get(id(v)) is not None:
        name = _BUILTIN_OF[id(v)]
        if _BUILTIN[name] is v:  # a built-in type or function as itself (``filter_by_type(xs, int)``, ``is len``)
            return ["T", name]
    if t in VIEWS and budget[7]:  # a dict's view the solution returns: a view of a dict of the tests' process (the
        return _view(v, t, handle, depth, budget)  # tests' own: see harness.Remote.arg)
    if t is memoryview:
        shown = _memoryview(v)
        if shown is not None:
            return shown
    std = _stdlib_value(v, t, handle, depth, budget)
    if std is not None:
        return std
    if issubclass(t, tuple):
        named = _named_fields(t)
        if named is not None:  # a namedtuple: its data, its class's name and fields (see _named)
            data = tuple.__getitem__(v, slice(None))
            if len(data) == len(named[1]):
                return ["N", named[0], list(named[1]), [_enc(x, handle, depth + 1, budget) for x in data]]
    for base, plain in _PLAIN:
        if issubclass(t, base):  # a subclass (IntEnum, namedtuple, Counter, a forged int) travels as its data
            return _enc(plain(v), handle, depth, budget)
    if handle is None:
        raise Unencodable(f"a {t.__name__} object")
    hid = handle(v)  # an id, or [id, name of the solution's class it is exactly an object of]
    if type(hid) is Lent:  # an object of the tests' process the solution calls or iterates there
        return ["k", hid.rid, hid.caps]
    if type(hid) is tuple:  # an object of a value class: (class name, its attributes), into the value's table
        index = budget[2].get(id(v))
        if index is None:
            index = budget[2][id(v)] = len(budget[3])
            budget[3].append((v, str(hid[0]), hid[1]))  # (kept: the id stays this object's while encoding)
        return ["@", index]
    if budget[1]:  # the solution's side: what its type can do goes with it (see capabilities)
        name = type_name(t)
        return ["h", hid, name, None, capabilities(t)] if type(hid) is int else \
            ["h", hid[0], name, hid[1], capabilities(t)]
    return ["h", hid, t.__name__] if type(hid) is int else ["h", hid[0], t.__name__, hid[1]]


#: the protocols a handle takes part in, as bits: those its type does not define, the tests' handle lacks too, so
#: ``isinstance(h, Iterator)``, ``callable(h)``, ``hasattr(h, "__len__")`` and ``hash(h)`` answer as in one process
CAPABILITIES = ("__iter__", "__next__", "__len__", "__contains__", "__call__", "__getitem__", "__setitem__",
                "__delitem__", "__hash__", "__enter__", "__exit__")
_CAPS: dict[int, tuple[type, int]] = {}  # id(type) -> (the type, its bits); the type kept, so the id stays its own


def capabilities(kind: type) -> int:
    """The bits of :data:`CAPABILITIES` the type defines (not None), read from its real MRO's dictionaries: no
    metaclass ``__getattr__`` answers for it."""
    kept = _CAPS.get(id(kind))
    if kept is not None and kept[0] is kind:
        return kept[1]
    bits = 0
    mro = _MRO_OF(kind)
    for i, name in enumerate(CAPABILITIES):
        for k in mro:
            found = type.__dict__["__dict__"].__get__(k)
            if name in found:
                if found[name] is not None:
                    bits |= 1 << i
                break
    for name, bit in (("__eq__", DATACLASS_EQ), ("__lt__", DATACLASS_ORDER), ("__hash__", DATACLASS_HASH)):
        if dataclass_of(kind, name) is not None:
            bits |= bit
    if not bits & DATACLASS_EQ:
        for k in mro:  # the first __eq__ of its MRO: its own (a class's, not object's, not a built-in base's)
            found = type.__dict__["__dict__"].__get__(k)
            if "__eq__" in found:
                if found["__eq__"] is not object.__dict__["__eq__"] and found["__eq__"] is not None:
                    bits |= OWN_EQ  # (a function, a partialmethod, a built-in base's: SimpleNamespace compares dicts)
                break
    if any(type(type.__dict__["__dict__"].__get__(k).get("__dataclass_fields__")) is dict for k in mro):
        bits |= DATACLASS
    abcs = sys.modules.get("_collections_abc")  # (always loaded: collections.abc's classes are its own)
    if abcs is not None:
        for i, name in enumerate(ABCS):
            if any(k is getattr(abcs, name) for k in mro):
                bits |= ABC << i
    if len(_CAPS) < 4096:
        _CAPS[id(kind)] = (kind, bits)
    return bits


#: the standard library's modules whose exception classes cross as themselves where the tests imported them too
#: (``except dataclasses.FrozenInstanceError``, ``json.JSONDecodeError``, ``decimal.InvalidOperation``); others,
#: and the solution's own, cross as the nearest built-in class they derive from
STD_EXCEPTION_MODULES = frozenset({
    "array", "base64", "binascii", "bisect", "calendar", "collections", "concurrent", "configparser", "copy", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "enum", "fractions", "functools", "graphlib", "hashlib", "heapq",
    "ipaddress", "itertools", "json", "math", "numbers", "operator", "pickle", "queue", "random", "re", "shlex",
    "statistics", "string", "struct", "textwrap", "tomllib", "typing", "uuid", "zlib", "zoneinfo"})

#: a class whose ``__eq__`` (``__lt__`` and the other orderings; ``__hash__``) is the one ``@dataclass`` made: the
#: tests' handles compare (order; hash) by the fields' values, as that method does, here in the tests' process, so
#: ``P(1, 2) == P(1, 2)`` holds as in one process and no ``__eq__`` of the solution's answers for it
DATACLASS_EQ, DATACLASS_ORDER, DATACLASS_HASH = 1 << 16, 1 << 17, 1 << 18
DATACLASS = 1 << 19  # a dataclass at all: ``dataclasses.fields``, ``asdict`` and ``is_dataclass`` read its fields
#: a class with an ``__eq__`` of its own (a Python function, not a dataclass's): two of its objects compare as that
#: method says, in the solution's process (``Frac(1, 2) == Frac(2, 4)``), unless it says one equals an object it
#: cannot know (equal to everything, or to an empty one: then by their state, as a dataclass with no field compares)
OWN_EQ = 1 << 20
#: the abstract classes of collections.abc that a class must derive from (no method of its tells them: they have no
#: ``__subclasshook__``): a handle's class is registered with those its type derives from, so ``isinstance(h,
#: Mapping)`` and ``isinstance(h, Sequence)`` answer as in one process (the bit of ABCS[i] is ``ABC << i``)
ABCS = ("Sequence", "MutableSequence", "Mapping", "MutableMapping", "Set", "MutableSet")
ABC = 1 << 21
#: the tests' operators on a handle that are carried out in the solution's process (harness._operator, solution
#: _Server.operate), by their dunder names' stems: binary ones with their reflected ("r") and in-place ("i") forms,
#: divmod and rdivmod, the orderings, and the unary ones and conversions (solution._UNARY)
BINARY_OPERATORS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and",
                    "xor", "or")
ORDERINGS = ("lt", "le", "gt", "ge")
UNARY_OPERATORS = ("neg", "pos", "abs", "invert", "complex", "int", "float", "index", "round", "trunc", "floor",
                   "ceil")


def dataclass_of(kind: type, name: str) -> type | None:
    """The class of ``kind``'s MRO whose ``@dataclass`` made the method ``name`` ``kind`` has, or None (its own
    method, or none). The dataclass compares objects of exactly one class by the fields it had then; a method
    that only looks made by it (compiled from a string) is compared by those fields too, never run."""
    for k in _MRO_OF(kind):
        found = type.__dict__["__dict__"].__get__(k)
        if name in found:
            fn = found[name]
            code = getattr(fn, "__code__", None) if type(fn) is _FUNCTION else None
            if (code is None or code.co_filename != "<string>" or fn.__name__ != name
                    or type(found.get("__dataclass_fields__")) is not dict):
                return None
            owner: type = k
            return owner
    return None


def dataclass_layout(kind: type, encode: Callable[[Any], Any]) -> list[list[Any]]:
    """The fields of a dataclass as ``dataclasses.fields`` lists them: [name, its annotation (None where it does
    not cross), init, repr, hash, compare, kw_only]."""
    fields = getattr(kind, "__dataclass_fields__", None)
    out: list[list[Any]] = []
    if type(fields) is not dict:
        return out
    for name, field in list(fields.items())[:255]:
        if type(name) is not str or str(getattr(field, "_field_type", "")) != "_FIELD":
            continue
        note = field.type
        try:
            encode(note)  # (whether it crosses: the caller encodes the whole)
        except (Unencodable, RecursionError):
            note = None
        flags = [getattr(field, flag, None) for flag in ("init", "repr", "hash", "compare", "kw_only")]
        out.append([name, note, *(f if type(f) is bool else None for f in flags)])
    return out


def dataclass_fields(kind: type, name: str) -> list[str]:
    """The fields the dataclass method ``name`` of ``kind`` compares (``__eq__``, ``__lt__``) or hashes."""
    owner = dataclass_of(kind, name)
    if owner is None:
        return []
    fields = type.__dict__["__dict__"].__get__(owner)["__dataclass_fields__"]
    names = []
    for field_name, field in fields.items():
        if type(field_name) is not str or getattr(field, "_field_type", None) is None:
            continue
        if str(getattr(field, "_field_type", "")) != "_FIELD":
            continue
        compare, hashed = getattr(field, "compare", True), getattr(field, "hash", None)
        if (hashed if name == "__hash__" and hashed is not None else compare):
            names.append(field_name)
    return names


class Lent:
    """What a ``handle`` returns for an object of the tests that the solution may use only through the tests'
    process (a function, ``key=len``, a lambda, an iterator or generator of theirs): ``["k", id, capabilities]``,
    which the solution's side decodes as a stand-in whose calls and iteration are asked of the tests' process."""

    __slots__ = ("rid", "caps")

    def __init__(self, rid: int, caps: int) -> None:
        self.rid, self.caps = rid, caps


_MRO_OF = type.__dict__["__mro__"].__get__  # a class's real MRO (never a metaclass's own attribute)
_FLAGS = type.__dict__["__flags__"].__get__
_MODULE = type.__dict__["__module__"].__get__


# The standard library's value types that cross as themselves (exactly these classes, never a subclass, which
# crosses as the built-in value it holds): an OrderedDict compares with its order, a Counter as a Counter, a Decimal,
# Fraction, date or timedelta keeps its value. Each side makes its own module's object; nothing of the sender's runs.
_STDLIB_VALUES = {"collections": ("OrderedDict", "Counter", "deque", "defaultdict", "UserDict", "UserList",
                                   "UserString", "ChainMap"),
                  "decimal": ("Decimal",), "fractions": ("Fraction",),
                  "datetime": ("date", "datetime", "time", "timedelta", "timezone"), "array": ("array",),
                  "types": ("SimpleNamespace",), "time": ("struct_time",), "os": ("stat_result",)}
_LOADED = frozenset({"types", "time", "os"})  # (always loaded on both sides: taken from sys.modules, never imported,
# so the harness's import hook never takes them for modules the tests imported: see harness.Globals and _Shared)
_USER_DATA = {"UserDict": dict, "UserList": list, "UserString": str}  # what a collections.User* class wraps (.data)
_NAN = math.nan  # (taken before any solution runs)

# A dict's view (``d.keys()``, ``d.items()``, ``d.values()``) and a read-only mapping (``types.MappingProxyType``)
# cross as the same kind of view of a dict made on the other side of its dict's items: they compare, combine
# (``d.keys() & {...}``) and print as in one process; not live (a change made to the dict later is not seen). The
# solution's always; the tests' only as an argument itself (``encode(views=True)``, see harness.Remote.arg), given
# back unchanged as the tests' own object; inside another value, or where its dict holds what cannot cross, the
# tests' view is lent (Lent).
VIEWS = {type({}.keys()): "dict_keys", type({}.values()): "dict_values", type({}.items()): "dict_items",
         type(type.__dict__): "mappingproxy"}
#: the formats a memoryview crosses with (single native items, as ``memoryview.cast`` takes them); others: a handle
_VIEW_FORMATS = frozenset("bBhHiIlLqQnNefd?c")


def _view(v: Any, t: type, handle: Any, depth: int, budget: list[Any]) -> Any:
    """A view with the whole of its dict (``d.keys().mapping`` is that dict's mapping, in one process)."""
    name = VIEWS[t]
    pairs = list(v.items() if name == "mappingproxy" else v.mapping.items())
    return ["x", name, [[_enc(k, handle, depth + 1, budget), _enc(x, handle, depth + 1, budget)] for k, x in pairs]]


def _memoryview(v: memoryview) -> Any:
    """A memoryview as its bytes, item format, shape and whether it is read-only (None for one that cannot be made
    again with ``cast``: a released one, a format of several items, a non-contiguous one)."""
    try:
        if v.format not in _VIEW_FORMATS or not v.c_contiguous or v.ndim > 64:
            return None
        return ["x", "memoryview", [v.format, list(v.shape or ()), v.readonly, base64.b64encode(v.tobytes()).decode()]]
    except ValueError:
        return None


def _stdlib_value(v: Any, t: type, handle: Any, depth: int, budget: list[Any]) -> Any:
    module = _MODULE(t)
    names = _STDLIB_VALUES.get(module) if type(module) is str else None
    name = _NAME(t)
    if not names or name not in names or getattr(sys.modules.get(module), name, None) is not t:
        return None
    if name in ("OrderedDict", "Counter"):
        items = dict.items(v)
        return ["x", name, [[_enc(k, handle, depth + 1, budget), _enc(x, handle, depth + 1, budget)] for k, x in items]]
    if name == "deque":
        return ["x", name, [[_enc(x, handle, depth + 1, budget) for x in v], v.maxlen]]
    if name == "defaultdict":  # with its factory when that is a built-in one (``defaultdict(list)``), else a dict
        factory = v.default_factory
        if factory is not None and _BUILTIN.get(_BUILTIN_OF.get(id(factory), "")) is not factory:
            return None
        items = dict.items(v)
        return ["x", name, [None if factory is None else ["T", _BUILTIN_OF[id(factory)]],
                            [[_enc(k, handle, depth + 1, budget), _enc(x, handle, depth + 1, budget)] for k, x in items]]]
    if name == "Fraction":
        return ["x", name, [_enc(int(v.numerator), None, depth + 1, budget), _enc(int(v.denominator), None, depth + 1,
                                                                                  budget)]]
    if name == "timedelta":
        return ["x", name, [v.days, v.seconds, v.microseconds]]
    if name == "timezone":  # (its offset, and its name when it was given one)
        args = v.__getinitargs__()
        offset = args[0]
        return ["x", name, [offset.days, offset.seconds, offset.microseconds, args[1] if len(args) > 1 else None]]
    if name in _USER_DATA:  # (what it wraps, read from its instance dictionary: the class is exactly the library's)
        data = state(v).get("data")
        return ["x", name, _enc(data, handle, depth + 1, budget)] if type(data) is _USER_DATA[name] else None
    if name == "ChainMap":
        maps = state(v).get("maps")
        if type(maps) is not list or any(type(m) is not dict for m in maps):
            return None  # (a map of another kind: a handle, as before)
        return ["x", name, [_enc(m, handle, depth + 1, budget) for m in maps]]
    if name == "SimpleNamespace":
        attrs = state(v)
        if not all(type(k) is str for k in attrs):
            return None
        return ["x", name, [[k, _enc(x, handle, depth + 1, budget)] for k, x in attrs.items()]]
    if name == "array":
        return ["x", name, [v.typecode, base64.b64encode(v.tobytes()).decode()]]
    if name in ("struct_time", "stat_result"):  # its fields, and the named ones beyond them (``tm_zone``)
        _, (fields, extra) = v.__reduce__()
        return ["x", name, [[_enc(x, None, depth + 1, budget) for x in fields],
                            [[k, _enc(x, None, depth + 1, budget)] for k, x in extra.items() if type(k) is str]]]
    if name in ("datetime", "time") and v.tzinfo is not None and type(v.tzinfo) is not sys.modules["datetime"].timezone:
        return None  # (a zone of its own: a handle, as before)
    return ["x", name, v.isoformat() if name != "Decimal" else str(v)]


def _stdlib_decode(name: str, body: Any, handle: Any, depth: int, objects: Any) -> Any:
    if name in _VIEW_NAMES:
        return _view_decode(name, body, handle, depth, objects)
    if name == "memoryview":
        return _memoryview_decode(body)
    module = next((m for m, names in _STDLIB_VALUES.items() if name in names), None)
    if module is None:
        raise ValueError(f"unknown value type {name!r}")
    kind = getattr((sys.modules.get(module) if module in _LOADED else None) or __import__(module), name)
    if name in _USER_DATA:
        data = _dec(body, handle, depth + 1, objects)
        if type(data) is not _USER_DATA[name]:
            raise ValueError("malformed value")
        made = kind.__new__(kind)
        made.data = data  # (the object decoded, not a copy: a list it shares with the rest of the value stays shared)
        return made
    if name == "ChainMap":
        maps = [_dec(m, handle, depth + 1, objects) for m in body]
        if any(type(m) is not dict for m in maps):
            raise ValueError("malformed value")
        return kind(*maps) if maps else kind()
    if name == "SimpleNamespace":
        pairs = [(k, _dec(x, handle, depth + 1, objects)) for k, x in body]
        if not all(type(k) is str for k, _ in pairs):
            raise ValueError("malformed value")
        return kind(**dict(pairs))
    if name == "array":
        code, raw = body
        if type(code) is not str or len(code) != 1 or code not in sys.modules["array"].typecodes:
            raise ValueError("malformed value")
        made = kind(code)
        made.frombytes(base64.b64decode(raw))  # (ValueError unless whole items)
        return made
    if name in ("struct_time", "stat_result"):
        fields = tuple(_dec(x, None, depth + 1) for x in body[0])
        extra = {str(k): _dec(x, None, depth + 1) for k, x in body[1]}
        return kind(fields, extra)
    if name == "timezone":
        days, seconds, micro, text = body
        offset = sys.modules["datetime"].timedelta(days=int(days), seconds=int(seconds), microseconds=int(micro))
        return kind(offset) if text is None else kind(offset, str(text))
    if name in ("OrderedDict", "Counter"):
        pairs = [(_dec(k, handle, depth + 1, objects), _dec(x, handle, depth + 1, objects)) for k, x in body]
        if len(pairs) > MAX_SHARED_HASHES:
            _spread([k for k, _ in pairs])
        return kind(pairs) if name == "OrderedDict" else kind(dict(pairs))
    if name == "defaultdict":
        factory = _dec(body[0], None, depth + 1) if body[0] is not None else None
        if factory is not None and _BUILTIN.get(_BUILTIN_OF.get(id(factory), "")) is not factory:
            raise ValueError("malformed value: a defaultdict's factory that is no built-in")
        pairs = [(_dec(k, handle, depth + 1, objects), _dec(x, handle, depth + 1, objects)) for k, x in body[1]]
        if len(pairs) > MAX_SHARED_HASHES:
            _spread([k for k, _ in pairs])
        return kind(factory, pairs)
    if name == "deque":
        items, maxlen = body
        return kind([_dec(x, handle, depth + 1, objects) for x in items], None if maxlen is None else int(maxlen))
    if name == "Fraction":
        return kind(_dec(body[0], None, depth + 1), _dec(body[1], None, depth + 1))
    if name == "timedelta":
        return kind(days=int(body[0]), seconds=int(body[1]), microseconds=int(body[2]))
    if type(body) is not str:
        raise ValueError("malformed value")
    return kind(body) if name == "Decimal" else kind.fromisoformat(body)  # a class's real flags and name (never a metaclass's own attribute)
_NAME = type.__dict__["__name__"].__get__
_HEAPTYPE = 1 << 9
_VIEW_NAMES = frozenset(VIEWS.values())


def _view_decode(name: str, body: Any, handle: Any, depth: int, objects: Any) -> Any:
    pairs = [(_dec(k, handle, depth + 1, objects), _dec(x, handle, depth + 1, objects)) for k, x in body]
    if len(pairs) > MAX_SHARED_HASHES:
        _spread([k for k, _ in pairs])
    made = dict(pairs)
    if name == "mappingproxy":
        return type(type.__dict__)(made)
    return made.keys() if name == "dict_keys" else made.values() if name == "dict_values" else made.items()


def _memoryview_decode(body: Any) -> Any:
    form, shape, readonly, raw = body
    data = base64.b64decode(raw)
    if (type(form) is not str or form not in _VIEW_FORMATS or type(shape) is not list or len(shape) > 64
            or not all(type(n) is int and n >= 0 for n in shape)):
        raise ValueError("malformed value")
    view: Any = memoryview(data if readonly is True else bytearray(data))
    if form == "B" and shape == [len(data)]:
        return view
    return view.cast("B").cast(form, shape)  # (ValueError/TypeError when the sizes disagree)


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
def _named_fields(kind: type) -> tuple[str, tuple[str, ...]] | None:
    """(class name, fields) of a namedtuple class (``collections.namedtuple``, ``typing.NamedTuple``, or a class
    deriving from one), read from its real MRO's dictionaries; None for another tuple class."""
    for k in _MRO_OF(kind):
        fields = type.__dict__["__dict__"].__get__(k).get("_fields")
        if fields is not None:
            if type(fields) is tuple and len(fields) <= 255 and all(type(f) is str for f in fields):
                name = type.__dict__["__name__"].__get__(kind)
                return name, fields
            return None
    return None


def _named(name: Any, fields: Any) -> type | None:
    """This process's namedtuple class for a namedtuple of the other (one per name and fields): it compares,
    hashes and prints as a tuple of its data does, and names its fields (``p.x``, ``p._asdict()``); made by
    ``collections.namedtuple`` from checked identifiers, so nothing of the sender's runs. None where the names
    are no namedtuple's (then a plain tuple)."""
    if (type(name) is not str or not name.isidentifier() or type(fields) is not list or len(fields) > 255
            or not all(type(f) is str and f.isidentifier() and not f.startswith("_") for f in fields)):
        return None
    key = (name, tuple(fields))
    made = _NAMED_NOW[0]
    kept = made.get(key)
    if kept is not None:
        return kept
    try:
        kind: type = collections.namedtuple(name, fields, module="solution")  # type: ignore[misc]
    except (ValueError, TypeError, SyntaxError):
        return None
    if len(made) < 4096:
        made[key] = kind
    return kind


_NAMED: dict[Any, type] = {}
_NAMED_NOW: list[dict[Any, type]] = [_NAMED]

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


# The call's arguments, while its reply is decoded (``["a"/"m", key...]``): an object whose ``find(key)`` is the
# tests' list, dict, set or bytearray of a key (None: no such object) and whose ``changed(obj, new)`` is told of
# ``["m", key, new contents]`` (harness.Given).
_GIVEN: list[Any] = [None]
_LENT: list[Any] = [None]  # rid, capabilities -> the object of a ``["k", ...]``, while a tree is decoded
_MADE: list[Any] = [None]  # each list, dict, set and bytearray made so far, in order, while a tree is decoded


def decode(tree: Any, handle: Callable[..., Any] | None = None, make: Callable[[str], Any] | None = None,
           given: Any = None, lent: Callable[[int, int], Any] | None = None,
           named: dict[Any, type] | None = None) -> Any:
    """The value for a tree from :func:`encode`; ``handle(id, type_name)`` (``handle(id, type_name, class_name)``:
    see solution._Server.handle) builds handle objects; ``make(class name)`` a fresh object of a value class (or
    raises ValueError), whose attributes are then set with ``object.__setattr__`` (no hook of the class runs);
    ``given``: the call's arguments, for ``["a", key]`` and ``["m", key, contents]``; ``lent(id, capabilities)``:
    the object of a ``["k", id, capabilities]`` (see :class:`Lent`); ``named``: the namedtuple classes made for
    this sender so far (see :func:`_named`; one per solution in the tests' process, so no sibling's fill it)."""
    _GIVEN[0], _LENT[0], _MADE[0] = given, lent, []
    _NAMED_NOW[0] = _NAMED if named is None else named
    try:
        return _decode(tree, handle, make)
    finally:
        _GIVEN[0] = _LENT[0] = _MADE[0] = None
        _NAMED_NOW[0] = _NAMED


def _decode(tree: Any, handle: Callable[..., Any] | None, make: Callable[[str], Any] | None) -> Any:
    if type(tree) is list and len(tree) == 3 and tree[0] == "g" and make is not None and type(tree[2]) is list:
        nodes = tree[2]
        if len(nodes) > MAX_ITEMS or any(type(n) is not list or len(n) != 2 or type(n[0]) is not str
                                         or type(n[1]) is not list for n in nodes):
            raise ValueError("malformed value")
        objects = [make(name) for name, _ in nodes]
        value = _dec(tree[1], handle, 0, objects)  # (first, as it was encoded: see ["^", i])
        for obj, (_, attrs) in zip(objects, nodes, strict=True):
            for pair in attrs:
                if type(pair) is not list or len(pair) != 2 or not _attribute(pair[0]):
                    raise ValueError("malformed value")
                object.__setattr__(obj, pair[0], _dec(pair[1], handle, 1, objects))
        return value
    return _dec(tree, handle, 0)


def _dec(x: Any, handle: Callable[..., Any] | None, depth: int, objects: list[Any] | None = None) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("value too deep")
    if x is None or type(x) in (bool, str, int, float):
        return x
    if type(x) is not list or not x or type(x[0]) is not str:
        raise ValueError("malformed value")
    tag = x[0]
    if tag == "i":
        return int(x[1], 16)
    made = _MADE[0]
    if tag == "f":
        number = float(x[1])
        if number == number:
            return number
        if len(x) == 3:  # (``math.nan`` itself)
            return _NAN
        if made is not None:  # (one NaN object: met again, it is ``["^", i]``, as a list is)
            made.append(number)
        return number
    if tag == "l" or tag == "s" or tag == "d":  # (made before what they hold, in the order encode met them)
        new: Any = {"l": list, "s": set, "d": dict}[tag]()
        if made is not None:
            made.append(new)
        if tag == "d":
            pairs = [(_dec(k, handle, depth + 1, objects), _dec(v, handle, depth + 1, objects)) for k, v in x[1]]
            if len(pairs) > MAX_SHARED_HASHES:
                _spread([k for k, _ in pairs])
            new.update(pairs)
            return new
        items = [_dec(e, handle, depth + 1, objects) for e in x[1]]
        if tag == "s" and len(items) > MAX_SHARED_HASHES:
            _spread(items)
        (new.extend if tag == "l" else new.update)(items)
        return new
    if tag == "N" and len(x) == 4 and type(x[3]) is list:
        kind = _named(x[1], x[2])
        items = [_dec(e, handle, depth + 1, objects) for e in x[3]]
        return tuple(items) if kind is None or len(items) != len(x[2]) else tuple.__new__(kind, items)
    if tag in ("t", "z"):
        items = [_dec(e, handle, depth + 1, objects) for e in x[1]]
        if tag == "z" and len(items) > MAX_SHARED_HASHES:
            _spread(items)
        return tuple(items) if tag == "t" else frozenset(items)
    if tag == "^" and made is not None and len(x) == 2 and type(x[1]) is int and 0 <= x[1] < len(made):
        return made[x[1]]
    if tag in ("b", "y"):
        raw = base64.b64decode(x[1])
        if tag == "y" and made is not None:
            made.append(bytearray(raw))
            return made[-1]
        return raw if tag == "b" else bytearray(raw)
    if tag == "c":  # (its parts are numbers, or ``["f", text]``: never kept in the table)
        return complex(*(float(p[1]) if type(p) is list and len(p) == 2 and p[0] == "f" else _dec(p, None, depth + 1)
                         for p in x[1:3]))
    if tag == "x" and len(x) == 3 and type(x[1]) is str:
        return _stdlib_decode(x[1], x[2], handle, depth, objects)
    if tag == "r":
        return range(int(x[1]), int(x[2]), int(x[3]))
    if tag == "p" and len(x) == 2 and type(x[1]) is list and len(x[1]) == 3:
        return slice(*(_dec(e, handle, depth + 1, objects) for e in x[1]))
    if tag == "T" and len(x) == 2 and type(x[1]) is str and x[1] in _BUILTIN:
        return _BUILTIN[x[1]]
    if tag == "@" and objects is not None and len(x) == 2 and type(x[1]) is int and 0 <= x[1] < len(objects):
        return objects[x[1]]
    if tag == "k" and _LENT[0] is not None and len(x) == 3 and type(x[1]) is int and type(x[2]) is int:
        return _LENT[0](x[1], x[2])
    given = _GIVEN[0]
    if tag == "a" and given is not None and len(x) == 2 and type(x[1]) is str:
        found = given.find(x[1])
        if found is not None:
            return found
    if tag == "m" and given is not None and len(x) == 3 and type(x[1]) is str and "." in x[1]:
        found = given.find(x[1])
        new = _dec(x[2], handle, depth + 1, objects)
        if found is None or not isinstance(found, type(new)):  # (the tests' object may be of a subclass of theirs,
            raise ValueError("malformed value: a changed argument the call was not given")  # which crossed as its data)
        given.changed(found, new)
        return found
    if tag == "h" and handle is not None:
        if len(x) < 4:
            return handle(int(x[1]), str(x[2]))
        if len(x) == 4:
            return handle(int(x[1]), str(x[2]), str(x[3]))
        return handle(int(x[1]), str(x[2]), None if x[3] is None else str(x[3]), int(x[4]))
    raise ValueError(f"unknown value tag {tag!r}")
