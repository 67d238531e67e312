"""No text from a solution runs as code in the tests' process.

The harness judges a GRPO group's solutions in one process; code that ran there could write any sibling's verdict.
The tests never run the solution's code there, but they might run its *text*: ``doctest`` on a function's
docstring, ``eval`` of a string it returned, ``pickle.loads`` of its bytes. While the tests run, an audit hook
refuses to compile source that is not part of the tests (or the problem's prompt), to unpickle anything but plain
data classes and to unmarshal code, before any of it runs. What compiles generated source from names it checked
(``collections.namedtuple``, ``dataclasses``, ``unittest.mock``'s signatures, ``ast.parse``, which only parses,
and the harness itself) is let through, ``timeit`` where the statements it was given are the tests' own, and
importlib for modules under the harness's path only (not a file the solution wrote, loaded by its location). The
unit that asked fails whatever the tests do with the error (see :data:`REFUSED`).
"""

from __future__ import annotations

import os
import re
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any


class RefusedText(BaseException):
    """The tests asked to run text that is not theirs (a BaseException: no ``except Exception`` of the tests takes
    it for an answer)."""


#: the reason of the refusal the running unit met, taken (and cleared) when the unit ends: it fails even where
#: the tests caught the error
REFUSED: list[str | None] = [None]
_ARMED = [False]
_INSTALLED = [False]
_TEXT: list[frozenset[str]] = [frozenset()]
_EVENTS = frozenset({"compile", "pickle.find_class", "marshal.loads", "marshal.load"})
_STDLIB = os.path.dirname(os.__file__)
_HERE = os.path.dirname(os.path.abspath(__file__))
#: (file, function) of the standard library's code generators that build their source from checked names
_GENERATORS = frozenset((os.path.join(_STDLIB, *path), name) for path, name in (
    (("collections", "__init__.py"), "namedtuple"), (("dataclasses.py",), "_create_fn"),
    (("unittest", "mock.py"), "_set_signature"), (("ast.py",), "parse")))
#: timeit.Timer's constructor, whose source is the text it was given (checked as the tests', see _timed)
_TIMEIT = (os.path.join(_STDLIB, "timeit.py"), "__init__")
#: the directories importlib may compile and unmarshal modules from (the harness's path when armed: the standard
#: library's; never the solution's directory, a path the tests add, or a file loaded by its location)
_ROOTS: list[tuple[str, ...]] = [(_HERE + os.sep,)]
#: what ``pickle.loads`` may find: plain data (no function, no class that acts when it is made)
_PICKLED = {
    "builtins": frozenset({"bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset", "int", "list",
                           "object", "range", "set", "slice", "str", "tuple", "Ellipsis", "NotImplemented"}),
    "copyreg": frozenset({"_reconstructor", "__newobj__", "__newobj_ex__"}),
    "_codecs": frozenset({"encode"}),
    "collections": frozenset({"OrderedDict", "deque", "Counter", "defaultdict", "UserDict", "UserList", "UserString",
                              "ChainMap"}),
    "datetime": frozenset({"date", "datetime", "time", "timedelta", "timezone"}),
    "decimal": frozenset({"Decimal"}), "fractions": frozenset({"Fraction"}),
    "array": frozenset({"array", "_array_reconstructor"}),
    # (the other value types that cross as themselves, codec._STDLIB_VALUES: made from their fields, nothing runs)
    "types": frozenset({"SimpleNamespace"}), "time": frozenset({"struct_time"}), "os": frozenset({"stat_result"}),
}


def arm(*texts: Any) -> None:
    """Install the hook (once a process) and let it refuse from now on, to the process's end (a finaliser of the
    tests' may run late); ``texts``: the tests' and prompt's source and the string literals of their code, each
    of which the tests may compile whole (not a piece of one: ``eval(f(...))`` of a solution that returns "6"
    passed where the tests' text holds a 6), with the examples of every doctest among them."""
    if not _INSTALLED[0]:
        sys.addaudithook(_hook)
        _INSTALLED[0] = True
    _TEXT[0] = frozenset(t.strip() for t in texts if type(t) is str)
    # the tests' own doctests (each example as doctest compiles it, read from the literal as written): found only
    # when something is compiled that is no whole text (a HumanEval prompt always holds ">>>")
    _DOCTESTS[:] = [t for t in texts if type(t) is str and ">>>" in t]
    _ROOTS[0] = tuple({os.path.realpath(p).rstrip(os.sep) + os.sep for p in sys.path if type(p) is str and p}
                      | {_HERE + os.sep})
    _ARMED[0] = True


#: doctest's own pattern of an example's source: a ">>>" line and its "..." lines (doctest.DocTestParser's)
_EXAMPLE = re.compile(r"^(?P<indent>[ ]*)>>>[ ]?.*(?:\n[ ]*\.\.\..*)*", re.MULTILINE)
_DOCTESTS: list[str] = []


def _examples(text: str) -> set[str]:
    """The source of each doctest example in ``text`` (stripped), as doctest reads them: each line without its
    indentation and four characters of prompt (doctest itself is not imported: it loads pdb, unittest...)."""
    found = set()
    for m in _EXAMPLE.finditer(text):
        cut = len(m.group("indent")) + 4
        found.add("\n".join(line[cut:] for line in m.group(0).split("\n")).strip())
    return found


def taken() -> str | None:
    """The refusal the unit that just ended met, if any (cleared)."""
    reason, REFUSED[0] = REFUSED[0], None
    return reason


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in _EVENTS or not _ARMED[0]:
        return
    try:
        frame: Any = sys._getframe(1)
    except ValueError:  # (no Python frame asked: nothing to trust)
        frame = None
    caller = _hook.__code__ if frame is None else frame.f_code
    where = "" if caller is _hook.__code__ else caller.co_filename
    if event == "compile":
        if (where, caller.co_name) in _GENERATORS or where.startswith(_HERE):
            return
        if where.startswith("<frozen importlib") and _module_file(args[1] if len(args) > 1 else None):
            return  # (importlib: a module of the harness's path, the standard library's, with no .pyc)
        if _shown(args[0], args[1] if len(args) > 1 else None):
            return
        source = args[0]
        if type(source) is bytes:
            source = source.decode("utf-8", "replace")
        if type(source) is str and (_theirs(source) or (where, caller.co_name) == _TIMEIT and _timed(frame, source)):
            return
        _refuse("the tests compiled text that is not in the tests (a docstring's examples, a string or repr "
                "from the solution?); it does not run in the tests' process")
    elif event == "pickle.find_class":
        module, name = args
        if name in _PICKLED.get(module, ()) or module == "tests":
            return
        _refuse(f"the tests unpickled {module}.{name}, which is no plain data (from the solution's bytes?); only "
                "plain values are unpickled in the tests' process")
    elif not (where.startswith("<frozen importlib") and _module_file(_local(frame, "bytecode_path")
                                                                     or _local(frame, "source_path"))):
        # marshal.loads of anything but the code of a module imported from the harness's path
        _refuse("the tests unmarshalled code (from the solution's bytes or files?); it does not run in the tests' "
                "process")


def _theirs(text: str) -> bool:
    """The text is the tests' (or the prompt's): their whole source, one of their string literals or one of their
    doctest examples."""
    wanted = text.strip()
    if wanted in _TEXT[0]:
        return True
    if _DOCTESTS:  # (once, at the first text that is no whole one)
        found = set(_TEXT[0])
        for doc in _DOCTESTS:
            found.update(_examples(doc))
        _TEXT[0], _DOCTESTS[:] = frozenset(found), []
        return wanted in found
    return False


def _shown(source: Any, path: Any) -> bool:
    """The interpreter's own traceback display (C code in 3.11 and 3.12: the default ``threading.excepthook`` of a
    thread that died, an exception ignored in a ``__del__``) parses the piece of each line it shows, for its carets,
    with the file's name: a piece of a line of a file under the harness's path (the standard library's, the harness's)
    is no text of a solution's, and it is only parsed. Refused, it failed whatever unit ran meanwhile (a thread of the
    tests whose call of the solution raised, as honest code may: the tests' main thread failed its unit)."""
    if type(source) is str:
        source = source.encode("utf-8", "surrogatepass")
    if type(source) is not bytes or not source.strip() or b"\n" in source.strip() or not _module_file(path):
        return False
    try:
        with open(path, "rb") as fh:
            return any(source in line for line in fh)
    except OSError:
        return False


def _local(frame: Any, name: str) -> Any:
    try:
        return frame.f_locals.get(name) if frame is not None else None
    except Exception:  # noqa: BLE001 - (a frame without locals to read: nothing to trust)
        return None


def _module_file(path: Any) -> bool:
    """``path`` (what importlib compiles or unmarshals) is a file under the harness's path as it was armed."""
    if type(path) is bytes:
        path = os.fsdecode(path)
    if type(path) is not str or not path:
        return False
    return os.path.realpath(path).startswith(_ROOTS[0])


def _timed(frame: Any, source: str) -> bool:
    """``timeit.Timer(stmt, setup)`` compiling what it was given: ``setup``, ``setup`` + newline + ``stmt``, or its
    template around the two (re-indented), where each one given as text is the tests'. A string the solution gave
    (``timeit.timeit(snippet(10))``) ran as code here before."""
    import timeit

    loc = _local(frame, "self") is not None and frame.f_locals
    if not loc:
        return False
    stmt, setup, init = loc.get("stmt"), loc.get("setup"), loc.get("init", "")
    given = ("pass", "_stmt()", "_setup()")
    if type(setup) is not str:
        return False
    if source == setup and "stmtprefix" not in loc:  # (its first check: setup alone)
        return setup in given or _theirs(setup)
    if type(stmt) is not str or type(init) is not str:
        return False
    if "src" in loc:  # the template, its parts re-indented
        parts = [stmt.replace("\n" + " " * 8, "\n"), setup.replace("\n" + " " * 4, "\n")]
        template = getattr(timeit, "template", None)
        return type(template) is str and source == loc["src"] == template.format(stmt=stmt, setup=setup,
                                                                                 init=init) and \
            all(p in given or _theirs(p) for p in parts)
    prefix = loc.get("stmtprefix")
    if type(prefix) is str and source == prefix + stmt:  # (its second: setup then stmt)
        return (not prefix or prefix[:-1] in given or _theirs(prefix[:-1])) and (stmt in given or _theirs(stmt))
    return False


def _refuse(reason: str) -> None:
    REFUSED[0] = reason
    raise RefusedText(reason)
