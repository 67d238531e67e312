"""The solution's side of a test run: processes forked before the tests are read, which hold the
solution and answer the harness's calls with plain values.

The harness (the task's first process) keeps the test source, the expected values and the private
result pipe; none of them ever exists in these processes.
"""

from __future__ import annotations

import builtins
import collections
import fcntl
import math
import operator
import os
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import child, cleanup, codec, confine, landlock, prelude, wire

MAX_MESSAGE = 1000
MAX_PARTS = 16  # arguments, and attributes, of a raised exception sent to the harness
REQ_FD, REP_FD = 3, 4  # a solution process's only fds besides 0-2


def fork_solution(conf: confine.Confinement, parent: str, rlimits: list[Any] | None = None,
                  stdin: bool = False, shared: bool = False, own: str | None = None, rules: int | None = None
                  ) -> tuple[int, int, int, int, int, str]:
    """Fork a process that will hold one solution: (pid, fd to send requests, fd to read replies, its stdout, its
    stderr, its directory). It keeps nothing of the harness's or of any sibling's: fresh pipes for its requests, replies, stdout and
    stderr (a flood, O_NONBLOCK or a shrunken pipe is its own), and a fresh directory of its own below ``parent``
    (its cwd, HOME, TMPDIR and sys.path[0]) in a Landlock domain that reaches no other (no sibling's files, no
    signals to the harness or a sibling). Its parent did :func:`prepare` (a spawner) or :func:`enter_state` (a task,
    then ``stdin``: its stdin is the payload pipe). ``rlimits``: a task's :func:`confine.rlimit_plan`, for a child of
    the slot's spawner. ``shared``: it works in ``parent`` itself, in its parent's domain nested once more (a call
    with seed files, which has one solution: the files and the tests' checks on them are there). The child does as
    little as it can before the solution: each page it touches is a copy."""
    if shared:
        own, rules = parent, None
    elif own is None or rules is None:  # ``own``, ``rules``: what the slot's zygote made (or kept) for it
        if own is None:
            own = os.path.join(parent, "s" + os.urandom(6).hex())
            os.mkdir(own, 0o700)
        rules = conf.own_ruleset(own)
    else:
        rules = os.dup(rules)  # closed below, like one made here
    restrict = None if rules is None else landlock.restrictor(rules)  # made here: fewer pages touched there
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if stdin:
                stdin_from_null()
            if rlimits:
                confine.apply_rlimits(rlimits)
            os.chdir(own)
            if os.environ.get("HOME") != own:  # (reading costs no copy of a page its parent has)
                os.environ["HOME"] = os.environ["TMPDIR"] = own
            if sys.path[0] != own:
                sys.path[0] = own
            if restrict is not None:  # its own domain: it cannot signal the harness, the zygote or siblings
                restrict()
            else:
                conf.nest()
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            if min(req_r, rep_w) <= REP_FD:
                req_r, rep_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (req_r, rep_w))
            os.dup2(req_r, REQ_FD)
            os.dup2(rep_w, REP_FD)
            os.closerange(REP_FD + 1, 1 << 16)  # nothing else: not the harness's result and status pipes, not the
            _serve(REQ_FD, REP_FD)  # spawner's sockets, not another solution's pipes
        finally:
            os._exit(0)
    for fd in (req_r, rep_w, out_w, err_w) + (() if rules is None else (rules,)):
        os.close(fd)
    DIRS[pid] = own
    return pid, req_w, rep_r, out_r, err_r, own


DIRS: dict[int, str] = {}  # solution pid -> its own directory (in the process that forked it)


def wipe(conf: confine.Confinement, pid: int, budget_s: float) -> None:
    """Without Landlock a solution's directory is reachable from the next: empty it (within ``budget_s``) once
    what the solution left has been killed. With Landlock nothing needs doing until the task ends (no later
    solution can reach it)."""
    path = DIRS.pop(pid, None)
    if path is not None and not conf.landlock_abi:
        cleanup.empty_dir(path, budget_s)


class _Server:
    """Holds the solution's namespace and the objects handed out as handles."""

    def __init__(self, scratch: str) -> None:
        self.ns: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
        self.handles: dict[int, Any] = {}
        self.scratch = scratch
        self.classes: dict[str, Any] = {}  # the solution's top-level classes by name, as it loaded them
        self.raised: dict[int, tuple[Any, list[str]]] = {}  # id -> (class, names): its own exception classes
        self.effects: list[Any] | None = None  # what the last call did before it raised: [mutated, back]
        self.exact: dict[int, tuple[Any, str]] = {}  # id -> (class, its first name): its top-level classes
        self.values: dict[str, Any] = {}  # its value classes (the harness's ``share_values``), by name
        self.stepping: dict[int, Any] = {}  # handle id -> the asyncio task of its awaited coroutine, not done yet
        self.watched: dict[str, list[Any]] = {}  # its globals the tests name -> [value, its encoding as last told]
        self.lent: dict[int, Any] = {}  # stand-ins of the tests' objects lent to it, by their id there
        self.fetched: dict[tuple[int, str], Any] = {}  # (handle, name) -> the mutable attribute the tests last read
        self.told: dict[tuple[int, str], Any] = {}  # (handle, name) -> how such an attribute stood when they got it
        self.req = self.rep = -1  # the pipes to the harness (``ask`` writes on them during a call)

    def handle(self, obj: Any) -> Any:
        if issubclass(_TYPE(obj), _Lent):  # (a stand-in: the tests get their own object back)
            return codec.Lent(object.__getattribute__(obj, "_cg_rid"), object.__getattribute__(obj, "_cg_caps"))
        return self._handle(obj)

    def _handle(self, obj: Any) -> Any:
        """The id the harness names ``obj`` by; ``[id, name]`` for an object of exactly one of its top-level classes
        (the tests' class for it: ``type(x) is Stack``), ``[0, name]`` for such a class itself (the tests' name for
        it; ``f(Stack)`` arrives as the class, and goes back as it); ``(name, attributes)`` for an object of a value
        class (it crosses as its attributes)."""
        if self.values:
            kind = _TYPE(obj)
            if self.values.get(_NAME(kind)) is kind:
                return _NAME(kind), codec.state(obj)
        if self.exact:
            kept = self.exact.get(id(obj))
            if kept is not None and kept[0] is obj:
                return [0, kept[1]]
            kept = self.exact.get(id(_TYPE(obj)))
            if kept is not None and kept[0] is _TYPE(obj):
                self.handles[id(obj)] = obj
                return [id(obj), kept[1]]
        self.handles[id(obj)] = obj
        return id(obj)

    def enc(self, value: Any, same: dict[int, str] | None = None) -> Any:
        return codec.encode(value, self.handle, True, same)

    def dec(self, tree: Any) -> Any:
        return codec.decode(tree, lambda hid, _t, cls=None, *_: self.classes[cls] if hid == 0 else self.handles[hid],
                            self._make if self.values else None, lent=self.lend)

    def _make(self, name: str) -> Any:
        kind = self.values.get(name)
        if kind is None:
            raise ValueError(f"the solution defines no class {name!r} for the tests' objects of it")
        return object.__new__(kind)

    def lend(self, rid: int, caps: int) -> Any:
        """The stand-in for an object the tests lent (see codec.Lent), one per object."""
        obj = self.lent.get(rid)
        if obj is None:
            obj = object.__new__(_lent_class(caps & _LENT_CAPS))
            for slot, value in (("_cg_server", self), ("_cg_rid", rid), ("_cg_caps", caps & _LENT_CAPS)):
                object.__setattr__(obj, slot, value)
            self.lent[rid] = obj
        return obj

    def ask(self, op: str, rid: int, args: Any, kwargs: dict[str, Any]) -> Any:
        """Call (iterate, ...) an object the tests lent, in their process; what they ask meanwhile (their
        function calls one of the solution's) is answered here first."""
        frame = wire.pack(["lent", op, rid, [self.enc(a) for a in args], {k: self.enc(v) for k, v in kwargs.items()}])
        _flush_streams()
        wire.write_all(self.rep, frame)
        while True:
            msg = wire.read_obj(self.req)
            if type(msg) is list and msg[:1] == ["lent-ok"] and len(msg) == 2:
                return self.dec(msg[1])
            if type(msg) is list and msg[:1] == ["lent-raise"] and len(msg) == 3:
                kind = getattr(builtins, str(msg[1]), None)
                if not (isinstance(kind, type) and issubclass(kind, Exception)):
                    kind = Exception
                raise kind(str(msg[2]))
            wire.write_all(self.rep, _answer(self, msg))

    def init(self, source: str, prelude_text: str | None = None) -> Any:
        """Load the solution; ``prelude_text``: the problem's prompt, run first in the solution's namespace, as in one
        process where the prompt precedes the completion (a solution that is the completion alone uses the prompt's
        imports and classes; one that repeats the prompt defines them again). Its failure is the harness's to
        report, not the solution's."""
        if type(prelude_text) is str and prelude_text:
            try:
                exec(prelude.compile_prelude(prelude_text), self.ns)
            except BaseException:
                pass
        code = compile(source, "solution.py", "exec", dont_inherit=True, optimize=0)
        try:
            exec(code, self.ns)
        except SystemExit as exc:  # leaving at import time is an error, never a pass
            raise RuntimeError(f"the solution called exit({exc.code!r}) while loading") from None
        manifest: dict[str, list[Any]] = {}
        for name, value in list(self.ns.items()):
            if name.startswith("__"):
                continue
            if type(value).__name__ == "module":
                manifest[name] = ["m", getattr(value, "__name__", name)]
            elif callable(value):
                manifest[name] = ["f"]
                if _TYPE(value) is _FUNCTION:  # a function of its own: one in the tests too, with its docstring
                    manifest[name] = self.function(value)
                if issubclass(_TYPE(value), type):  # a class (its real type: not what __class__ says)
                    self.classes[name] = value
                    self.exact.setdefault(id(value), (value, name))
                    doc = _class_doc(value)
                    notes = _TYPE.__dict__["__dict__"].__get__(value).get("__annotations__")
                    manifest[name] = ["c", codec.capabilities(value), doc[:_MAX_DOC] if type(doc) is str else None,
                                      codec.capabilities(_TYPE(value)),  # (its metaclass's: an Enum iterates)
                                      self.notes(notes, self.ns) if type(notes) is dict else {}]
            else:  # a value: sent now when small; a large or deep one only if the tests name it (see "global")
                try:
                    manifest[name] = ["v", codec.encode(value, self.handle, True, limit=_MAX_SENT_ITEMS)]
                except codec.Unencodable:
                    manifest[name] = ["v"]
        for name, cls in self.classes.items():  # its exception classes: their built-in base and own ancestors
            mro = _MRO(cls)
            if not any(k is BaseException for k in mro):
                continue
            base = next((k for k in mro if _TYPE(k) is type and getattr(builtins, k.__name__, None) is k), None)
            if base is None or base is cls:  # (a built-in class under another name, ``Invalid = ValueError``,
                continue  # stays a class: every ValueError would be one)
            self.raised.setdefault(id(cls), (cls, []))[1].append(name)
            manifest[name] = ["e", base.__name__, [], _std_kind(cls)]
        for name, kind in manifest.items():  # the names of its own classes each derives from, nearest first
            if kind[0] == "e":
                for k in _MRO(self.classes[name])[1:]:
                    kept = self.raised.get(id(k))
                    if kept is not None and kept[0] is k:
                        kind[2] += kept[1]
        return manifest

    def function(self, fn: Any, depth: int = 0) -> list[Any]:
        """How the tests' stand-in for the solution's function ``fn`` reads (see harness ``_function``): ``["f",
        doc, 1, name, qualname, shape, more]``; ``more``: its annotations that cross (``{"a": int, "return":
        "Node"}``) and, for a wrapper made by ``functools.wraps``, the function it wraps (``[handle, entry]``:
        ``inspect.signature`` follows it, and the tests may call it), as in one process."""
        doc = fn.__doc__
        more: dict[str, Any] = {}
        try:
            notes = fn.__annotations__
        except Exception:
            notes = None
        if type(notes) is dict and notes:
            more["ann"] = self.notes(notes, fn.__globals__)
        inner = fn.__dict__.get("__wrapped__") if type(fn.__dict__) is dict else None
        if inner is not None and _TYPE(inner) is _FUNCTION and depth < 8:
            more["wrapped"] = [self._handle(inner), self.function(inner, depth + 1)]
        return ["f", doc[:_MAX_DOC] if type(doc) is str else None, 1, fn.__name__[:_MAX_DOC],
                fn.__qualname__[:_MAX_DOC], self.shape(fn), more]

    def notes(self, notes: dict[Any, Any], scope: Any) -> dict[str, Any]:
        """The annotations of a function or class that cross, encoded: plain values and classes (``{"x": int,
        "tree": Tree}``); ``List[int]`` and other objects do not (no handle is made for them). An annotation
        written as a string (``"Node"``, or any under ``from __future__ import annotations``) crosses as the class
        it names in ``scope`` (the function's globals) or the builtins, else not at all: the tests' process never
        holds the solution's text where ``typing.get_type_hints`` or ``inspect.signature(eval_str=True)`` would
        evaluate it there."""
        told = {}
        for key, note in list(notes.items())[:_MAX_PARAMS]:
            if type(key) is str:
                if isinstance(note, str):
                    note = _named_class(note, scope)
                    if note is None:
                        continue
                try:
                    told[key] = codec.encode(note, self._class_only, True)
                except (codec.Unencodable, RecursionError):
                    pass
        return told

    def _class_only(self, obj: Any) -> Any:
        if not issubclass(_TYPE(obj), type):
            raise codec.Unencodable("no class")
        return self.handle(obj)

    def shape(self, fn: Any) -> list[Any] | None:
        """A function's parameters as the tests' stand-in for it takes them (see harness ``_shaped``): [positional
        names, how many of them are positional-only, the ``*`` name or None, keyword-only names, the ``**`` name or
        None, the positional defaults, the keyword-only defaults, its kind: 0 a function, 1 a generator function, 2 a
        coroutine function (``async def``), 3 an async generator function]. A default is
        ``[1, value]``, or ``[0]`` where its value does not cross (too large, or no plain value): the stand-in then
        leaves it to this process. None for a function with more parameters than any test needs."""
        code = fn.__code__
        flags, n, k = code.co_flags, code.co_argcount, code.co_kwonlyargcount
        names = code.co_varnames
        if n + k > _MAX_PARAMS:
            return None
        star = names[n + k] if flags & _CO_VARARGS else None
        starstar = names[n + k + (star is not None)] if flags & _CO_VARKEYWORDS else None
        kwdefaults = fn.__kwdefaults__ or {}
        kind = next((i for i, flag in enumerate(_CO_KINDS, 1) if flags & flag), 0)
        return [list(names[:n]), code.co_posonlyargcount, star, list(names[n:n + k]), starstar,
                [self._default(d) for d in fn.__defaults__ or ()],
                {key: self._default(d) for key, d in kwdefaults.items() if type(key) is str}, kind]

    def _default(self, value: Any) -> list[Any]:
        if _TYPE(value) in _SIZED and len(value) > _MAX_DEFAULT_ITEMS:
            return [0]
        try:
            return [1, self.enc(value)]
        except codec.Unencodable:
            return [0]

    def call(self, target: list[Any], args: list[Any], kwargs: dict[str, Any], shared: Any = None) -> Any:
        self.effects = None
        fn = self.ns[target[1]] if target[0] == "n" else self.handles[target[1]]
        if type(shared) is dict:
            _take_shared(shared)
            self.take_globals(shared)
        env = child.environ_now()
        pargs = [self.dec(a) for a in args]
        kw = {k: self.dec(v) for k, v in kwargs.items()}
        given = [(str(i), a, args[i]) for i, a in enumerate(pargs)] + [("=" + k, v, kwargs[k]) for k, v in kw.items()]
        inner = _inner(given)  # the lists, dicts, sets and bytearrays inside them, as the tests hold them
        try:
            result = fn(*pargs, **kw)
        except BaseException:
            # what it did before it raised stays done, as in one process (a transfer that moves the money, then
            # raises on the overdraft, fails the tests' check that a refused transfer changes nothing; it passed)
            try:
                mutated, _, back = self._effects(given, inner, env)
                self.effects = [mutated, back] if mutated or back else None
            except BaseException:  # (an argument now unsendable: the exception alone, its effects as before)
                self.effects = None
            raise
        mutated, same, back = self._effects(given, inner, env)
        out = [self.enc(result, same), mutated]  # an argument it returns unchanged: the tests' own object
        return out + [back] if back else out

    def _effects(self, given: list[Any], inner: Any, env: Any) -> tuple[dict[str, Any], dict[int, str],
                                                                                      dict[str, Any]]:
        """What a call did to the tests' arguments (``mutated``), the arguments it left as they were (``same``, by
        id), and what it changed of the state the tests share with it (``back``)."""
        mutated = {}  # what the call did to a list, dict, set or bytearray argument (positional "0", keyword "=k")
        same: dict[int, str] = {}  # those it did not change, by key: the tests' own objects where it returns them
        for key, now, sent in given:
            if (type(now) in _MUTABLE or type(now) in _LIBRARY_MUTABLE or type(now) in codec.VIEWS
                    or (type(now) is tuple and inner and any(k.startswith(key + ".") for k, _ in inner.values()))):
                after = self.enc(now)
                if after == sent:
                    if type(now) is not tuple:
                        same[id(now)] = key
                    same.update({i: k for i, (k, _) in (inner or {}).items() if k.startswith(key + ".")})
                else:
                    mutated[key] = self._changed(key, now, sent, after, inner, same)
            elif inner:
                same.update({i: k for i, (k, _) in inner.items() if k.startswith(key + ".")})
        back: dict[str, Any] = {}  # what the call changed of the state the tests share with it in one process
        if child.environ_now() != env:
            now, was = dict(os.environ), child.environ_text(env)
            back["env"] = [{k: v for k, v in now.items() if was.get(k) != v}, [k for k in was if k not in now]]
        if self.watched:
            changed = self.changed_globals()
            if changed:
                back["globals"] = changed
        if self.told:
            moved = self.moved()
            if moved:
                back["attrs"] = moved
        return mutated, same, back

    def _changed(self, key: str, now: Any, sent: Any, after: Any, inner: dict[int, tuple[str, Any]] | None,
                 same: dict[int, str]) -> Any:
        """What an argument the call changed is now, for the tests: each list, dict, set or bytearray the tests
        hold inside it is named by its key, unchanged (``["a", key]``) or with its new contents (``["m", key,
        ...]``), so a test's ``inner`` in ``f([inner])`` is changed, not replaced, and one moved (a sort of rows)
        is still its object (adds the unchanged ones to ``same``, for the result)."""
        if not inner or type(sent) is not list or sent[:1] == ["g"]:  # (none inside, or objects of value classes)
            return after
        kept: dict[int, str] = {}
        moved: dict[int, str] = {}
        for ident, (path, obj) in inner.items():
            if path.startswith(key + "."):
                try:
                    was = _subtree(sent, path[len(key) + 1:])
                    (kept if was is not None and self.enc(obj) == was else moved)[ident] = path
                except codec.Unencodable:
                    moved[ident] = path
        if not kept and not moved:
            return after
        same.update(kept)
        return codec.encode(now, self.handle, True, kept, moved)

    def take_globals(self, shared: dict[str, Any]) -> None:
        """The names of its globals the tests use (once a process), and the values the tests gave them since the
        last call (see harness Remote.watch)."""
        names = shared.get("watch")
        if type(names) is list:
            for name in names[:512]:
                if type(name) is str and not name.startswith("__"):
                    value = self.ns.get(name, _UNSET)
                    if value is _UNSET or _shared_value(value):
                        self.watched[name] = [value, self._told(value)]
        given = shared.get("globals")
        if type(given) is dict:
            for name, tree in given.items():
                if type(name) is str and name in self.watched:
                    value = self.dec(tree)
                    self.ns[name] = value
                    self.watched[name] = [value, self._told(value)]

    def changed_globals(self) -> dict[str, Any]:
        """Its watched globals this call rebound or changed in place, encoded."""
        changed: dict[str, Any] = {}
        for name, kept in self.watched.items():
            value = self.ns.get(name, _UNSET)
            if value is _UNSET or (value is kept[0] and type(value) in _SCALARS) or not _shared_value(value):
                continue
            try:
                tree = self.enc(value)
            except codec.Unencodable:
                continue
            if tree != kept[1]:
                changed[name] = tree
                kept[:] = [value, tree]
        return changed

    def _told(self, value: Any) -> Any:
        if value is _UNSET:
            return None
        try:
            return self.enc(value)
        except codec.Unencodable:
            return None

    def op(self, name: str, hid: int, args: list[Any]) -> Any:
        if name == "isinstance" or name == "issubclass":
            return self.classcheck(name, hid, args)
        if name == "classattr":
            return self.enc(getattr(self.classes[str(args[0])], str(args[1])))
        if name == "classop":  # ``list(Color)``, ``len(Color)``, ``Color["RED"]``: a class whose metaclass iterates
            kind, what = self.classes[str(args[0])], str(args[1])
            if what == "fields":
                return self.enc(codec.dataclass_layout(kind, self.enc))
            if what == "dir":
                return self.enc(_names(dir(kind)))
            if what == "len":
                return _exact(len(kind), int)
            if what == "getitem":
                return self.enc(kind[self.dec(args[2])])
            members: list[Any] = []
            for member in kind:
                if len(members) == _MAX_SENT_ITEMS:
                    raise codec.Unencodable(f"{args[0]} has more than {_MAX_SENT_ITEMS} members")
                members.append(member)
            return self.enc(members)
        if name == "global":  # a large global the tests name: its value, or where it cannot cross, a handle of it
            value = self.ns[str(args[0])]
            try:
                return self.enc(value)
            except codec.Unencodable:
                found: Any = self.handle(value)  # (an id, or [id, the name of its class])
                hid, exact = (found, None) if type(found) is int else (found[0], found[1])
                return ["h", hid, codec.type_name(_TYPE(value)), exact, codec.capabilities(_TYPE(value))]
        if name == "values":  # the tests' value classes it defines too: their objects cross as attributes
            module = str(self.ns.get("__name__"))
            self.values = {n: self.classes[n] for n in args if type(n) is str and n in self.classes
                           and codec.value_class(self.classes[n], module) and _NAME(self.classes[n]) == n}
            return self.enc(sorted(self.values))
        obj = self.handles[hid]
        if name == "getattr":
            value = getattr(obj, args[0])
            tree = self.enc(value)
            if _TYPE(value) in _MUTABLE:  # the tests' copy of it may be changed in place: see "update"
                self._fetched(hid, str(args[0]), value, tree)
            return tree
        if name == "update":  # the tests changed their copy of a mutable attribute in place: so changes the object
            held = self.fetched.get((hid, str(args[0])))  # they read (one object in one process), unless this
            try:  # process changed it since (its change is kept); never an error of the request it goes before
                if held is not None and self.enc(held) == args[1]:
                    new = self.dec(args[2])
                    if _TYPE(held) is _TYPE(new):
                        if _TYPE(held) is list or _TYPE(held) is bytearray:
                            held[:] = new
                        else:
                            held.clear()
                            held.update(new)
                        if (hid, str(args[0])) in self.told:
                            self.told[(hid, str(args[0]))] = args[2]
            except Exception:
                pass
            return None
        if name == "setattr":  # the tests set an attribute: its class decides (a frozen one raises)
            value = self.dec(args[1])
            setattr(obj, str(args[0]), value)
            if _TYPE(value) in _MUTABLE:  # the tests' object, in one process: their changes to it follow (update)
                self._fetched(hid, str(args[0]), value, args[1])
            return None
        if name == "delattr":
            delattr(obj, str(args[0]))
            return None
        if name == "setitem":
            obj[self.dec(args[0])] = self.dec(args[1])
            return None
        if name == "delitem":
            del obj[self.dec(args[0])]
            return None
        if name == "iter":
            return self.enc(iter(obj))
        if name == "next":
            return self.enc(next(obj))
        if name == "throw":  # the tests' ``g.throw(exc)`` on its generator: the exception, made here
            return self.enc(obj.throw(self._exception(args)))
        if name == "contains":  # ``x in obj`` for a class with its own __contains__ (the harness checks it)
            return _exact(bool(_TYPE(obj).__contains__(obj, self.dec(args[0]))), bool)
        if name == "enter":  # ``with obj``: its class's __enter__ and __exit__, looked up on its real type
            return self.enc(_TYPE(obj).__enter__(obj))
        if name == "exit":
            exc = self._exception(args) if args else None
            return _exact(bool(_TYPE(obj).__exit__(obj, None if exc is None else _TYPE(exc), exc, None)), bool)
        if name == "format":
            return _exact(format(obj, str(args[0])), str)[:100_000]
        if name == "close":  # the tests closed its generator or let theirs go: so it is here, unless this process
            if sys.getrefcount(obj) > 3:  # holds it too (then only their copy went; 3: the handles, ``obj``, the
                return False  # argument)
            obj.close()
            del self.handles[hid]  # (closed: let go, so its id may be another object's next: the harness forgets it)
            return True
        if name == "getitem":
            return self.enc(obj[self.dec(args[0])])
        if name == "len":
            return _exact(len(obj), int)
        if name == "bool":
            return _exact(bool(obj), bool)
        if name == "eq":  # its class's own __eq__ with another object of the solution's (see codec.OWN_EQ)
            other = self.dec(args[0])
            try:
                everything = bool(obj == _Stranger())  # (an object no solution can know of: equal to everything?)
            except Exception:  # noqa: BLE001 - it looks at what it is given: no sign of that
                everything = False
            if everything:  # (or an __eq__ that compares what the other has, empty here: by their state instead;
                kind = _TYPE(obj)  # an object with no state at all is equal only to itself, as before)
                mine = _dataclass_state(obj, kind, [])
                return bool(mine) and _TYPE(other) is kind and mine == _dataclass_state(other, kind, [])
            return _exact(bool(obj == other), bool)
        if name == "operator":  # ``-h``, ``int(h)``, ``h1 + h2``, ``h1 < h2`` in the tests: by Python's rules, here
            return self.operate(obj, str(args[0]), [self.dec(a) for a in args[1:]])
        if name == "compared":  # a dataclass's compared (or hashed) fields, by its real class (see codec.DATACLASS_EQ)
            kind = _TYPE(obj)
            names = codec.dataclass_fields(kind, _DATACLASS_METHODS[str(args[0])])
            return self.enc([id(kind), _dataclass_state(obj, kind, names)])
        if name == "fields":  # ``dataclasses.fields(obj)``: its class's (see codec.DATACLASS)
            return self.enc(codec.dataclass_layout(_TYPE(obj), self.enc))
        if name == "copy" or name == "deepcopy":  # ``copy.copy(obj)`` in the tests: made here, as in one process
            import copy
            return self.enc(copy.copy(obj) if name == "copy" else copy.deepcopy(obj))
        if name == "hash":  # its class's own __hash__ beside a dataclass's __eq__
            return _exact(hash(obj), int)
        if name == "dir":  # ``dir(s)``: as the object answers it here
            return self.enc(_names(dir(obj)))
        if name == "await":  # ``await fetch(1)`` in the tests: [done, its value], stepped here (see _step)
            return self.enc(self._step(hid, lambda: obj, float(args[0])))
        if name == "anext":  # ``async for`` over an async generator of the solution's: [done, [item, ended]]
            try:
                done, item = self._step(hid, obj.__anext__, float(args[0]))
            except StopAsyncIteration:
                return self.enc([True, [None, True]])
            return self.enc([done, [item, False] if done else None])
        if name == "acancel":  # the tests' side was cancelled (``asyncio.wait_for`` ran out) or closed: so is this
            task = self.stepping.pop(hid, None)
            if task is not None and not task.done():
                import asyncio

                task.cancel()
                _event_loop().run_until_complete(asyncio.wait([task], timeout=_CANCEL_S))  # its finally blocks run
            return None
        if name == "take":  # the harness's ``in``: up to n items of an iterator, and whether it ended
            items = []
            for _ in range(int(args[0])):
                try:
                    items.append(next(obj))
                except StopIteration:
                    return self.enc([items, True])
            return self.enc([items, False])
        if name in ("repr", "str"):
            return _exact((repr if name == "repr" else str)(obj), str)[:100_000]
        raise ValueError(f"unknown operation {name!r}")

    def operate(self, obj: Any, name: str, operands: list[Any]) -> Any:
        """An operator of the tests on ``obj`` (see harness._operator): a unary one's value; a binary one's (with
        another object of this process) as ``[True, value]``, or ``[False, None]`` where it also answers for an
        object no solution can know of, so for everything (a ``__lt__`` that says True to it, an ``__add__`` that
        takes it; an in-place one, ``v += w``, is not asked: it could keep what it was given)."""
        unary = _UNARY.get(name)
        if unary is not None:
            return self.enc(unary(obj, *operands[:1]))
        binary, flipped = _BINARY[name]
        pair = [obj, operands[0]]
        if flipped:  # (``__radd__``: the other operand is on the left)
            pair.reverse()
        ordering = binary in _ORDERINGS
        probes = () if name.startswith("__i") else ([pair[0], _Stranger()], [_Stranger(), pair[1]])  # (an in-place
        for probe in probes:  # one is not asked first: ``self.items.append(other)`` would keep the probe)
            try:
                told = binary(*probe)
                answers = bool(told) if ordering else True  # (an ordering that says False tells nothing)
            except Exception:  # noqa: BLE001 - it looks at what it is given: no sign of that
                answers = False
            if answers:
                return self.enc([False, None])
        return self.enc([True, binary(*pair)])

    def _step(self, hid: int, awaitable: Any, seconds: float) -> tuple[bool, Any]:
        """Run this process's event loop for at most ``seconds`` on the awaitable of handle ``hid`` (made by
        ``awaitable()`` the first time, then the same task each time the tests' side asks again): (True, its value)
        when it is done (its exception raised), else (False, None). Between two steps the tests' loop runs, so
        ``asyncio.wait_for`` can cut a slow coroutine short and the coroutines of one ``asyncio.gather`` all go on
        here at once, as in one process (the loop here runs every task it holds, whichever one is stepped)."""
        import asyncio

        loop = _event_loop()
        task = self.stepping.pop(hid, None)
        if task is None:
            task = asyncio.ensure_future(awaitable(), loop=loop)
        if not task.done():
            loop.run_until_complete(asyncio.wait([task], timeout=max(0.0, min(seconds, 1.0))))
        if not task.done():
            self.stepping[hid] = task
            return False, None
        return True, task.result()

    def _exception(self, args: list[Any]) -> BaseException:
        """The exception the tests throw into a generator: [built-in class name, the name of its own class the tests'
        class stands for or None, plain arguments]."""
        kind = self.classes.get(args[1]) if type(args[1]) is str else None
        if kind is None or not any(k is BaseException for k in _MRO(kind)):
            kind = getattr(builtins, str(args[0]), None)
            if not (_TYPE(kind) is type and issubclass(kind, BaseException)):
                kind = Exception
        values = self.dec(args[2])
        return kind(*values) if type(values) is list else kind()

    def _fetched(self, hid: int, name: str, value: Any, tree: Any) -> None:
        """Remember the mutable attribute the tests hold a copy of (the latest _MAX_FETCHED), and, for the latest
        _MAX_TOLD small ones, how it stood (``tree``): see :meth:`moved`."""
        key = (hid, name)
        self.fetched.pop(key, None)
        if len(self.fetched) >= _MAX_FETCHED:
            self.told.pop(next(iter(self.fetched)), None)
            self.fetched.pop(next(iter(self.fetched)))
        self.fetched[key] = value
        self.told.pop(key, None)
        if len(wire.pack(tree)) <= _MAX_TOLD_BYTES:
            if len(self.told) >= _MAX_TOLD:
                self.told.pop(next(iter(self.told)))
            self.told[key] = tree

    def moved(self) -> list[Any]:
        """The mutable attributes the tests hold a copy of that this call changed in place (``self.items.append``
        in a method): [[handle, name, now], ...], so the tests' copy follows, as in one process where it is one
        object."""
        out: list[Any] = []
        for key, tree in self.told.items():
            try:
                now = self.enc(self.fetched[key])
            except (codec.Unencodable, KeyError):
                continue
            if now != tree:
                self.told[key] = now
                out.append([key[0], key[1], now])
        return out

    def classcheck(self, name: str, hid: int, args: list[Any]) -> bool:
        """``isinstance(handle, C)``, ``issubclass(handle, C)`` and ``issubclass(D, C)`` of the tests, for C (and
        D) classes the solution defined: read from the real type and MRO (``type(obj)``, never ``obj.__class__``,
        never a metaclass's ``__instancecheck__`` or ``__subclasscheck__``), of the classes as the solution
        loaded them (never what its names are rebound to later)."""
        cls = self.classes[str(args[0])]
        if name == "isinstance":
            kind = _TYPE(self.handles[hid])
        else:
            kind = self.classes[str(args[1])] if len(args) > 1 else self.handles[hid]
            if not issubclass(_TYPE(kind), type):
                raise TypeError("issubclass() arg 1 must be a class")
        return any(k is cls for k in _MRO(kind))

    def own_classes(self, exc: BaseException) -> list[str]:
        """The names of the solution's own exception classes that ``exc`` is an instance of, nearest first (the
        harness rebuilds it as the tests' class of that name, when they name one)."""
        if not self.raised:
            return []
        names: list[str] = []
        for k in _MRO(_TYPE(exc)):
            kept = self.raised.get(id(k))
            if kept is not None and kept[0] is k:
                names += kept[1]
        return names[:64]


_TYPE = type
_NAME = type.__dict__["__name__"].__get__
_MRO = type.__dict__["__mro__"].__get__  # a class's real MRO (a metaclass's own ``__mro__`` attribute is not it)


_MUTABLE = (list, dict, set, bytearray)
# the standard library's mutable value types (codec._STDLIB_VALUES): a change a call makes to one the tests gave it
# (``counts[w] += 1`` on their Counter, ``queue.append(x)`` on their deque) is sent back too, and made to their object
_LIBRARY_MUTABLE = (collections.Counter, collections.OrderedDict, collections.defaultdict, collections.deque)
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_FUNCTION = type(lambda: None)
_DATACLASS_METHODS = {"eq": "__eq__", "order": "__lt__", "hash": "__hash__"}
# the tests' operators on the solution's objects (see _Server.operate; their names: codec.BINARY_OPERATORS,
# ORDERINGS and UNARY_OPERATORS), taken before any solution runs
_UNARY: dict[str, Any] = {"__neg__": operator.neg, "__pos__": operator.pos, "__abs__": operator.abs,
                          "__invert__": operator.invert, "__int__": int, "__float__": float, "__complex__": complex,
                          "__index__": operator.index, "__round__": round, "__trunc__": math.trunc,
                          "__floor__": math.floor, "__ceil__": math.ceil}
_BINARY: dict[str, tuple[Any, bool]] = {}
for _name in codec.BINARY_OPERATORS:
    _BINARY[f"__{_name}__"] = (getattr(operator, _name if _name not in ("and", "or") else _name + "_"), False)
    _BINARY[f"__r{_name}__"] = (_BINARY[f"__{_name}__"][0], True)
    _BINARY[f"__i{_name}__"] = (getattr(operator, f"i{_name}"), False)
_BINARY.update({"__divmod__": (divmod, False), "__rdivmod__": (divmod, True)})
_ORDERINGS = tuple(getattr(operator, name) for name in codec.ORDERINGS)
_BINARY.update({f"__{op.__name__}__": (op, False) for op in _ORDERINGS})


def _names(names: Any) -> list[str]:
    """What ``dir`` gave, as it crosses: its names (plain strings), at most 4,096 of them."""
    return [str.__str__(n) for n in list(names)[:4096] if isinstance(n, str)]


#: the most seconds an awaited coroutine of the solution is cancelled for before the tests go on (its finally blocks)
_CANCEL_S = 1.0


def _event_loop() -> Any:
    """The loop the solution's coroutines and async generators run in, one for the process (an async generator
    goes on across the tests' steps)."""
    if not _LOOP:
        import asyncio

        _LOOP.append(asyncio.new_event_loop())
        asyncio.set_event_loop(_LOOP[0])
    return _LOOP[0]


def _named_class(text: str, scope: Any) -> type | None:
    """The class an annotation written as a string names (``"Node"``, ``"int"``), read from the dictionaries
    ``scope`` and the builtins (no code runs); None for any other text (``"List[int]"``, ``"Node | None"``)."""
    name = str.strip(text)
    if len(name) > 2 and name[0] == name[-1] and name[0] in "'\"":  # (``"Node"`` under ``from __future__``)
        name = name[1:-1]
    if not str.isidentifier(name):
        return None
    for found in (scope if type(scope) is dict else {}, builtins.__dict__):
        if dict.__contains__(found, name):
            kind = dict.__getitem__(found, name)
            return kind if issubclass(_TYPE(kind), type) else None
    return None


def _dataclass_state(obj: Any, kind: type, names: list[str]) -> tuple[Any, ...]:
    """What a dataclass's ``__eq__`` (ordering, ``__hash__``) compares of ``obj``: the values of the fields
    ``names``, read from its ``__dict__`` or slots (no ``__getattribute__`` of the class answers for them). With no
    field compared (every field ``compare=False``, a class that only looks made by ``@dataclass``, an ``__eq__``
    equal to everything), its whole state by name: its ``__dict__`` and its slots."""
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        own = {}
    own = own if type(own) is dict else {}
    values: list[Any] = [own[n] if n in own else _slot(obj, kind, n) for n in names]
    if names:  # as @dataclass compares: its compared fields (a serial or a cache set after __init__ is not one)
        return tuple(values)
    # no field compared: every object equalled every other; compared by its state instead, in its __dict__, its
    # slots, and its fields that are declared compare=False
    for key in sorted(k for k in own if type(k) is str):
        values += [key, own[key]]
    for key in _slot_names(kind):
        if key not in own:
            values += [key, _slot(obj, kind, key)]
    return tuple(values)


def _slot_names(kind: type) -> list[str]:
    """The names of the slots ``kind`` and its bases declare (``__slots__`` as each class's own dict holds it)."""
    out: list[str] = []
    for k in _MRO(kind):
        slots = _TYPE.__dict__["__dict__"].__get__(k).get("__slots__", ())
        for name in (slots,) if type(slots) is str else slots if type(slots) in (tuple, list) else ():
            if type(name) is str and name not in ("__dict__", "__weakref__") and name not in out:
                out.append(name)
    return sorted(out)


class _Slotted:
    __slots__ = ("slot",)


class _Stranger:
    """What an object's ``__eq__`` is asked about before its answer counts: one that says it equals this says so
    of everything (``_Any``: ``return True``)."""

    __slots__ = ()


_MEMBER_DESCRIPTOR = type(_Slotted.__dict__["slot"])  # (a slot's descriptor: ``types.MemberDescriptorType``)
_NO_FIELD_VALUE = "<unset field>"


def _slot(obj: Any, kind: type, name: str) -> Any:
    """A field's value held in a slot of ``obj`` (``@dataclass(slots=True)``), ``_NO_FIELD_VALUE`` where it has none."""
    for k in _MRO(kind):
        found = _TYPE.__dict__["__dict__"].__get__(k)
        if name in found:
            slot = found[name]
            if _TYPE(slot) is _MEMBER_DESCRIPTOR:
                try:
                    return slot.__get__(obj, kind)
                except AttributeError:
                    return _NO_FIELD_VALUE
            return _NO_FIELD_VALUE
    return _NO_FIELD_VALUE


def _class_doc(kind: type) -> Any:
    """A class's own docstring, read from its dict (no metaclass property answers for it)."""
    return _TYPE.__dict__["__dict__"].__get__(kind).get("__doc__")


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08  # a code object's flags (``inspect.CO_VARARGS``, ...)
_CO_KINDS = (0x20, 0x80, 0x200)  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR: the kinds of shape()
_LOOP: list[Any] = []  # this process's event loop, made when the tests first await a coroutine of the solution
_MAX_PARAMS = 255
_MAX_DEFAULT_ITEMS = 1000
_MAX_DOC = 10_000
_MAX_FETCHED = 64
_MAX_SENT_ITEMS = 10_000  # a global larger than this is sent only if the tests name it (a sieve, a memo table)
_MAX_TOLD = 16  # attributes whose tests' copies follow the solution's changes (see _Server.moved): every call
_MAX_TOLD_BYTES = 16 << 10  # encodes each again, so only the latest few, and small ones
_LENT_CAPS = sum(1 << codec.CAPABILITIES.index(n) for n in ("__call__", "__iter__", "__next__", "__len__"))
_WALKED = (list, tuple, dict)  # what holds the objects :func:`_inner` looks for
_MAX_INNER = 1000


def _inner(given: list[tuple[str, Any, Any]]) -> dict[int, tuple[str, Any]] | None:
    """id -> (key, object) of every list, dict, set and bytearray inside the call's arguments (not the arguments
    themselves), keyed by where the tests hold it: the argument's key, then positions ("0.2.1"; in a dict, by the
    order of its values). Taken before the call, so an object the call moves or replaces is still known by where
    the tests hold it. None when an argument holds more than _MAX_INNER (only the arguments' own contents are then
    mirrored)."""
    found: dict[int, tuple[str, Any]] = {}
    stack = [(key, value) for key, value, _ in given if type(value) in _WALKED]
    while stack:
        key, value = stack.pop()
        items = dict.values(value) if type(value) is dict else value
        if set(map(type, items)).isdisjoint(_MUTABLE + _WALKED):  # (a list of numbers: nothing inside)
            continue
        for pos, item in enumerate(items):
            kind = type(item)
            if kind in _MUTABLE or kind is tuple:
                path = f"{key}.{pos}"
                if kind is not tuple:
                    if id(item) in found:
                        continue
                    found[id(item)] = (path, item)
                    if len(found) > _MAX_INNER:
                        return None
                if kind is not set and kind is not bytearray:
                    stack.append((path, item))
    return found


def _subtree(tree: Any, path: str) -> Any:
    """The part of an argument's tree (as the tests sent it) at ``path`` (positions), or None."""
    for part in path.split("."):
        if type(tree) is not list or len(tree) != 2 or tree[0] not in ("l", "t", "d") or type(tree[1]) is not list:
            return None
        index = int(part)
        if index >= len(tree[1]):
            return None
        tree = tree[1][index][1] if tree[0] == "d" else tree[1][index]
    return tree
_SCALARS = (int, float, str, bytes, bool, complex, type(None))  # a global of these changes only by rebinding
_UNSET = object()


def _shared_value(value: Any) -> bool:
    """Whether a global is a value the tests share (never a function, class or module: those are bound once)."""
    return not callable(value) and type(value).__name__ != "module"


def _take_shared(shared: dict[str, Any]) -> None:
    """The tests' ``random`` state and environment changes, before a call (see harness._Shared)."""
    state = shared.get("random")
    if type(state) is list and len(state) == 3:
        import random

        random.setstate((state[0], tuple(state[1]), state[2]))
    env = shared.get("env")
    if type(env) is list and len(env) == 2:
        for k, v in env[0].items():
            os.environ[str(k)] = str(v)
        for k in env[1]:
            os.environ.pop(str(k), None)


def _exact(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise TypeError(f"expected a {kind.__name__}, got {type(value).__name__}")
    return value


def prepare(scratch: str) -> None:
    """What a solution process needs that is the same for all: stdin from /dev/null (never the task's payload
    pipe), the interpreter's path and argv as for ``python3 solution.py``, the sandbox's modules hidden, streams."""
    stdin_from_null()
    enter_state(scratch)
    if not child.READY.get("streams"):  # a slot's zygote made fresh ones for fds 0-2 (flushed after each reply)
        child.set_streams()


def stdin_from_null() -> None:
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def enter_state(scratch: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """sys.path, argv and sys.modules as a solution sees them; returns what :func:`leave_state` puts back (a task
    enters this state just while it forks its solution processes, so that none of them has to)."""
    saved: tuple[list[str], list[str], dict[str, Any]] = (list(sys.path), list(sys.argv), {})
    for name in child.READY.get("modules") or [m for m in sys.modules if m.split(".")[0] == "_runtime"]:
        if name not in KEEP and name in sys.modules:
            saved[2][name] = sys.modules.pop(name)  # kept alive: freeing them would copy shared pages
    child.HIDDEN.append(saved[2])
    sys.path[:] = child.READY.get("path") or [scratch] + confine.stdlib_path()
    sys.argv[:] = ["solution.py"]
    return saved


def leave_state(saved: tuple[list[str], list[str], dict[str, Any]]) -> None:
    sys.path[:], sys.argv[:] = saved[0], saved[1]
    sys.modules.update(saved[2])


KEEP = ("_runtime", "_runtime.solution", "_runtime.codec", "_runtime.wire")


def _serve(req: int, rep: int) -> None:
    """Answer the harness until it closes the request pipe."""
    server = _Server(os.getcwd())
    server.req, server.rep = req, rep
    while True:
        try:
            msg = wire.read_obj(req)
        except (EOFError, OSError, ValueError):
            break
        _flush_streams()
        wire.write_all(rep, _answer(server, msg))


def _answer(server: _Server, msg: Any) -> bytes:
    """The reply frame to one request of the harness (also one it makes while the solution calls the tests back)."""
    try:
        if msg[0] == "init":
            reply: list[Any] = ["ok", server.init(msg[1], msg[2] if len(msg) > 2 else None)]
        elif msg[0] == "call":
            reply = ["ok", server.call(msg[1], msg[2], msg[3], msg[4] if len(msg) > 4 else None)]
        else:
            reply = ["ok", server.op(msg[0], msg[1], msg[2])]
    except codec.Unencodable as exc:  # what it returned cannot be sent: the harness's limit, not a TypeError
        reply = ["untransportable", _message(exc)]
    except BaseException as exc:  # includes SystemExit: reported as an exception, never a pass
        reply = ["raise", *_kind(exc), _message(exc)]
        try:
            own = server.own_classes(exc)
        except BaseException:
            own = []
        parts = _parts(exc)
        std = _std_kind(exc)
        if std is not None:
            parts = {**(parts or {}), "std": std}
        effects = server.effects if msg[0] == "call" else None
        if own or parts or effects:
            reply.append(own)
        if parts or effects:
            reply.append(parts or {})
        if effects:
            reply.append(effects)  # [mutated, back]: what the call did before it raised
    try:
        data = wire.pack(reply)
    except BaseException as exc:
        data = wire.pack(["raise", "TypeError", "builtins", f"unsendable reply: {type(exc).__name__}"])
    _flush_streams()
    return data


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


class _Lent:
    """An object of the tests lent to the solution (``key=len``, a lambda, a generator of theirs): calling it,
    iterating it and its ``len`` are asked of the tests' process, as calling the solution is asked of this one;
    nothing else of it (no attribute: the tests' namespace stays theirs)."""

    __slots__ = ("_cg_server", "_cg_rid", "_cg_caps")

    def __repr__(self) -> str:
        return "<an object of the tests>"


class _LentCall:
    __slots__ = ()

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._cg_server.ask("call", self._cg_rid, args, kwargs)


class _LentIter:
    __slots__ = ()

    def __iter__(self: Any) -> Any:
        return self._cg_server.ask("iter", self._cg_rid, (), {})


class _LentNext:
    __slots__ = ()

    def __next__(self: Any) -> Any:
        return self._cg_server.ask("next", self._cg_rid, (), {})


class _LentLen:
    __slots__ = ()

    def __len__(self: Any) -> int:
        return self._cg_server.ask("len", self._cg_rid, (), {})  # type: ignore[no-any-return]


_LENT_MIXINS = {codec.CAPABILITIES.index(name): kind for name, kind in (
    ("__call__", _LentCall), ("__iter__", _LentIter), ("__next__", _LentNext), ("__len__", _LentLen))}
_LENT_CLASSES: dict[int, type] = {}


def _lent_class(caps: int) -> type:
    kind = _LENT_CLASSES.get(caps)
    if kind is None:
        bases = tuple(m for bit, m in _LENT_MIXINS.items() if caps >> bit & 1)
        kind = _LENT_CLASSES[caps] = type("function" if caps & 1 << codec.CAPABILITIES.index("__call__")
                                          else "iterator", (_Lent, *bases), {"__slots__": ()})
    return kind


def _kind(exc: BaseException) -> tuple[str, str]:
    """(class name, module) of ``exc`` for the harness, which rebuilds built-in exceptions only: a class of the
    solution's own is reported as the nearest built-in class it derives from, so the tests' ``except ValueError``
    catches a ``class ParseError(ValueError)`` as it would in one process (a solution could raise ValueError itself:
    nothing it could not do before)."""
    kind = type(exc)
    try:
        for base in kind.__mro__:
            if type(base) is type and getattr(builtins, base.__name__, None) is base:
                if base is not Exception and base is not BaseException:  # those say nothing: the class's own
                    return base.__name__, "builtins"  # name is kept (a SolutionError is an Exception already)
                break
    except BaseException:
        pass
    return kind.__name__, getattr(kind, "__module__", "")


def _std_kind(exc: Any) -> list[str] | None:
    """[module, qualified name] of the first standard library exception class ``exc`` (an exception, or its class)
    is of or derives from (see codec.STD_EXCEPTION_MODULES), or None."""
    try:
        for base in _MRO(exc if isinstance(exc, type) else _TYPE(exc)):
            module = _TYPE.__dict__["__module__"].__get__(base)
            if type(module) is not str or module == "builtins":
                return None
            if module.partition(".")[0] in codec.STD_EXCEPTION_MODULES:
                found: Any = sys.modules.get(module)
                qualname = _TYPE.__dict__["__qualname__"].__get__(base)
                for part in qualname.split("."):
                    found = getattr(found, part, None)
                if found is base:
                    return [module, qualname]
    except BaseException:
        pass
    return None


def _parts(exc: BaseException) -> dict[str, Any] | None:
    """The exception's arguments and instance attributes when every one is a plain value (None, a bool, a
    small int, a finite float, a short string), so the harness rebuilds what the tests may read of it
    (``e.args``, ``e.errno``, a solution's ``e.code``); None when there is nothing or something else."""
    out: dict[str, Any] = {}
    budget = [MAX_MESSAGE]
    try:
        args = exc.args
        if isinstance(exc, OSError) and exc.filename is not None:  # kept apart from args by OSError itself
            args = (exc.errno, exc.strerror, exc.filename) + (() if exc.filename2 is None else (None, exc.filename2))
        if type(args) is tuple and len(args) <= MAX_PARTS and all(_plain(a, budget) for a in args):  # () too
            out["args"] = list(args)
        attrs = getattr(exc, "__dict__", None)
        if type(attrs) is dict and attrs:
            kept = {}
            for n, (k, v) in enumerate(attrs.items()):
                if n == MAX_PARTS:
                    break
                if type(k) is str and k.isidentifier() and not k.startswith("_") and _plain(v, budget):
                    kept[k] = v
            if kept:
                out["attrs"] = kept
    except BaseException:
        return None
    return out or None


def _plain(value: Any, budget: list[int]) -> bool:
    kind = type(value)
    if value is None or kind is bool:
        return True
    if kind is int:
        return bool(-(1 << 62) < value < 1 << 62)
    if kind is float:
        return bool(value == value and value not in (float("inf"), float("-inf")))
    if kind is str:
        budget[0] -= len(value)
        return budget[0] >= 0
    return False


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        return "<unprintable>"
    return text[:MAX_MESSAGE] if type(text) is str else "<unprintable>"
