"""Turn test source into numbered units: every statement that asserts something is one unit.

Accepted shapes: a list of snippets (one unit each, e.g. MBPP's ``test_list``); a module whose top-level
statements assert; a ``check(candidate)`` function (HumanEval), whose asserting statements are the units;
``def test_*()`` functions, one unit each; test classes (``unittest.TestCase`` subclasses, as BigCodeBench's, or
pytest's ``class Test*``), one unit per ``test*`` method (see CASE_RUNNER), with the module's ``setUpModule`` /
``setup_module`` run once before the first test and its tear-down hook after the last. Each statement is wrapped so a failure is recorded and the next
unit still runs. A statement checks something (is a unit) when it asserts (``assert False`` in a branch too),
raises, or calls a function of the tests that does; a failure anywhere else is counted too (see testing.verdict).

Every statement of the tests that calls something (at any depth: in loops, branches, ``check`` and the tests' own
helpers) is followed by ``__cg_flush__()``: what a call of the solution did to a list, dict, set or bytearray it was
given reaches the test's object there, at the end of the statement that made the call, so the rest of that
statement still sees the argument as it passed it (``assert f(xs) == sorted(xs)`` compares with the sorted
argument, whatever ``f`` did to it) and the next statement sees the change (``f(xs)`` then ``assert xs == [...]``).

A function the tests define (a helper; not ``check`` nor a top-level ``test_*``) is a frame of its own: its
statements flush with ``__cg_flush__(1)``, which logs what it applies, and what it returns or yields passes through
``__cg_out__`` (``__cg_m__ = __cg_in__()`` marks its start, an exception leaving it passes there too). A change
applied inside the helper that its result does not hold is undone there and waits for the end of the caller's
statement: a helper ``r = f(xs); return r`` gives its caller ``r`` with ``xs`` as the caller passed it, while
``f(xs); return xs`` hands the changed ``xs`` back (see harness.leave). The names end in ``__`` so that a method of
a class of the tests does not mangle them.
"""

from __future__ import annotations

import ast

try:  # in the caller's process: the lock every parse there holds (many threads plan and score at once)
    from crossgym.text.pyast import LOCK as _AST_LOCK
except ImportError:  # in the sandbox's own processes, which see only this package (and plan in one thread)
    import _thread

    _AST_LOCK = _thread.allocate_lock()

if False:  # annotations only: the server does not import typing
    from typing import Any, TypeVar

    _Node = TypeVar("_Node", bound=ast.AST)


def build(tests: str | list[str], entry: str | None) -> tuple[Any, list[str], list[str]]:
    """(code object, unit names, kind per wrapped statement: "unit" or "setup"). Holds the process's AST lock:
    ``ast`` is not safe from several threads at once before Python 3.13 (see crossgym.text.pyast)."""
    with _AST_LOCK:
        return _build(tests, entry)


def _build(tests: str | list[str], entry: str | None) -> tuple[Any, list[str], list[str]]:
    names: list[str] = []
    kinds: list[str] = []
    body: list[ast.stmt] = []
    calls = _Calls()
    if isinstance(tests, list):
        for snippet in tests:
            stmts = ast.parse(snippet, "tests.py").body
            body.append(_wrap(_flushing(stmts, calls), _register(kinds, names, "unit", snippet)))
    else:
        lines = tests.splitlines()
        module = ast.parse(tests, "tests.py")
        has_check = any(isinstance(s, ast.FunctionDef) and s.name == "check" for s in module.body)
        checkers = _checkers(module)
        test_funcs = []
        test_classes: list[tuple[str, list[str]]] = []
        for stmt in module.body:
            if entry and has_check and _calls(stmt, "check"):
                continue  # the harness calls check itself, with the solution's entry point
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "check":
                stmt.body = [part for s in stmt.body for part in _wrapped_statement(
                    s, calls, _register(kinds, names, _kind(s, checkers), _text(lines, s)))]
                body.append(_wrap([stmt], _register(kinds, names, "setup", _text(lines, stmt))))
                continue  # (its statements are flushed already)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
                test_funcs.append(stmt.name)
                stmt.body = _flushing(stmt.body, calls)  # a unit's own frame, as check's: not a helper
                body.append(_wrap([stmt], _register(kinds, names, "setup", _text(lines, stmt))))
                continue
            methods = _test_methods(stmt)
            if methods:
                test_classes.append((stmt.name, methods))  # type: ignore[attr-defined]
                stmt.body = [part for s in stmt.body  # type: ignore[attr-defined]
                             for part in (_unit_frame(s, calls) if _is_test(s) else _flushing([s], calls))]
                body.append(_wrap([stmt], _register(kinds, names, "setup", _text(lines, stmt))))
                continue
            body += _wrapped_statement(stmt, calls, _register(kinds, names, _kind(stmt, checkers), _text(lines, stmt)))
        last = body[-1] if body else None
        hooks = {s.name: s for s in module.body if isinstance(s, ast.FunctionDef)
                 and s.name in ("setUpModule", "setup_module", "tearDownModule", "teardown_module")}
        gate = ""  # what each test runs first: nothing, or the check that the module's set-up did not fail
        for hook in ("setUpModule", "setup_module"):  # once, before the first test (unittest's, pytest's order)
            if hook in hooks and (test_funcs or test_classes):
                if not gate:
                    body.append(_wrap(_located(ast.parse(MODULE_GATE).body, last),
                                      _register(kinds, names, "setup", "module set-up")))
                    gate = "__cg_module__(None)\n"
                call = _located(ast.parse(f"__cg_module__(lambda: {_hook_call(hooks[hook])})").body, last)
                body.append(_wrap(_flushing(call, calls), _register(kinds, names, "setup", f"{hook}()")))
        if entry and has_check:
            call = _located(ast.parse(f"check({entry})").body, last)
            body.append(_wrap(_flushing(call, calls), _register(kinds, names, "setup", "check")))
        for name in test_funcs:
            call = _located(ast.parse(f"{gate}{name}()").body, last)
            body.append(_wrap(_flushing(call, calls), _register(kinds, names, "unit", f"{name}()")))
        if test_classes:
            body.append(_wrap(_located(ast.parse(CASE_RUNNER).body, last), _register(kinds, names, "setup", "cases")))
        for cls, methods in test_classes:
            for name in methods:
                call = _located(ast.parse(f"{gate}__cg_case__({cls}, {name!r})").body, last)
                body.append(_wrap(_flushing(call, calls), _register(kinds, names, "unit", f"{cls}.{name}()")))
            call = _located(ast.parse(f"__cg_case__({cls}, None)").body, last)  # its tearDownClass
            body.append(_wrap(_flushing(call, calls), _register(kinds, names, "setup", f"{cls} teardown")))
        for hook in ("tearDownModule", "teardown_module"):  # after the last
            if hook in hooks and (test_funcs or test_classes):
                call = _located(ast.parse(_hook_call(hooks[hook])).body, last)
                body.append(_wrap(_flushing(call, calls), _register(kinds, names, "setup", f"{hook}()")))
    code = compile(ast.Module(body=body, type_ignores=[]), "tests.py", "exec", dont_inherit=True, optimize=0)
    return code, names, kinds  # optimize=0: asserts stay whatever flags (-O) the compiling process has


def imports(tests: str | list[str], prelude: str | None) -> list[str]:
    """The top-level packages the tests and the prelude import in their leading block of imports (the statements
    before anything else runs: a docstring may come first), in order. The harness checks that its interpreter has
    each before judging: a suite written for one process with site-packages (HumanEval+'s and MBPP+'s ``import
    numpy as np``) failed every solution at its set-up, a task's fault scored as a wrong answer. An import after
    other code is that code's business: a module the solution writes or a path the tests add first
    (``stamp('planted.py')`` then ``import planted``) is judged as the unit runs. Text that does not parse is the
    planner's to report: nothing here."""
    found: list[str] = []
    with _AST_LOCK:
        for text in (*(tests if isinstance(tests, list) else [tests]), prelude or ""):
            try:
                body = ast.parse(text, "tests.py").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            for n, stmt in enumerate(body):
                if isinstance(stmt, ast.Import):
                    heads = [alias.name for alias in stmt.names]
                elif isinstance(stmt, ast.ImportFrom) and not stmt.level:
                    heads = [stmt.module or ""] if stmt.module != "__future__" else []
                elif n == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    continue  # a docstring
                else:
                    break  # the leading imports end here
                found += [h.split(".")[0] for h in heads if h and h.split(".")[0] not in found]
    return found


# A unit per test method of a top-level test class (one that subclasses a ``TestCase``, or is named ``Test*`` as
# pytest collects them; the class's own methods, not inherited ones): unittest's order of set-up and tear-down around each (setUpClass once, setUp, the method,
# tearDown, cleanups; tearDownClass and the class's cleanups after the class's last), pytest's setup_class/setup_method
# hooks for a plain class (``setup_method(self)`` without the method too, as pytest calls it). A cleanup that fails
# (``addCleanup``, ``addClassCleanup``) fails the test, as unittest counts it (``doCleanups()`` swallowed it: a
# ``self.addCleanup(os.remove, path)`` of a file the solution never wrote passed). A skip (``@unittest.skip*``,
# ``self.skipTest``) passes, as unittest's wasSuccessful() counts it; an exception of the solution's is a
# SolutionError, never a SkipTest. ``ready`` lives as long as this namespace: one solution's run.
CASE_RUNNER = """
def __cg_case__(cls, name, ready={}):
    import sys
    ut = sys.modules.get("unittest")
    unit = ut is not None and isinstance(cls, type) and issubclass(cls, ut.TestCase)
    if name is None:
        if ready.pop(cls, False):
            try:
                getattr(cls, "tearDownClass" if unit else "teardown_class", lambda: None)()
            finally:
                if unit:
                    cls.doClassCleanups()  # (it keeps what each raised, as unittest's suite reads it)
                    if cls.tearDown_exceptions:
                        raise cls.tearDown_exceptions[0][1]
        return
    if unit and getattr(cls, "__unittest_skip__", False):
        return
    if cls not in ready:
        ready[cls] = False
        getattr(cls, "setUpClass" if unit else "setup_class", lambda: None)()
        ready[cls] = True
    elif not ready[cls]:
        raise RuntimeError(f"the set-up of {cls.__name__} failed")
    if not unit:
        def hook(fn, arg):  # pytest passes the method only to a hook that takes an argument
            code = getattr(fn, "__code__", None)
            if code is None or code.co_argcount - hasattr(fn, "__self__") > 0:
                fn(arg)
            else:
                fn()
        obj = cls()
        method = getattr(obj, name)
        hook(getattr(obj, "setup_method", lambda m: None), method)
        try:
            method()
        finally:
            hook(getattr(obj, "teardown_method", lambda m: None), method)
        return
    case = cls(name)
    expecting = getattr(getattr(case, name), "__unittest_expecting_failure__", False)
    try:
        case.setUp()
        try:
            if expecting:  # @expectedFailure: it passes when the method fails, as unittest counts it
                try:
                    getattr(case, name)()
                except ut.SkipTest:
                    raise
                except Exception:
                    return
                raise AssertionError(f"unexpected success: {name} is marked @expectedFailure and passed")
            getattr(case, name)()
        finally:
            case.tearDown()
    except ut.SkipTest:
        pass
    finally:
        failed = None
        while case._cleanups:  # as doCleanups runs them (the last added first, every one), what failed counted
            function, args, kwargs = case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except ut.SkipTest:
                pass
            except Exception as exc:
                failed = failed or exc
        if failed is not None and sys.exc_info()[1] is None:  # (the test's own failure, when it failed, is its error)
            raise failed
"""


# A module's set-up hook (``setUpModule``, pytest's ``setup_module``) that fails fails every test after it, as
# unittest runs none of them and pytest errors each: its exception is kept and raised again by each test's first
# statement (the tests used to run on, so a solution that broke the set-up kept the credit of the tests that did
# not need it). Only an Exception is kept: a unit's timeout (a BaseException) stays the harness's to handle.
MODULE_GATE = """
def __cg_module__(hook, failed=[]):
    if hook is None:
        if failed:
            raise failed[0]
        return
    try:
        hook()
    except Exception as exc:
        failed.append(exc)
        raise
"""


def _hook_call(hook: ast.FunctionDef) -> str:
    """The call of a module's set-up or tear-down hook: pytest's setup_module may take the module (None here)."""
    takes = len(hook.args.posonlyargs) + len(hook.args.args) - len(hook.args.defaults)
    return f"{hook.name}({'None' if takes > 0 else ''})"


def _test_methods(stmt: ast.stmt) -> list[str]:
    """The test methods of a top-level test class (its own ``def test*``), else []."""
    if not isinstance(stmt, ast.ClassDef):
        return []
    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in stmt.bases]
    unit = any(str(b).endswith("TestCase") for b in bases)
    if not unit and not stmt.name.startswith("Test"):
        return []
    names = [s.name for s in stmt.body if _is_test(s)]  # type: ignore[attr-defined]
    return sorted(names) if unit else names  # unittest runs a class's tests by name, pytest in their order


def _is_test(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test")


def _unit_frame(fn: ast.stmt, calls: _Calls) -> list[ast.stmt]:
    """A test method: a unit's own frame, as a top-level ``test_*`` function's (not a helper)."""
    fn.body = _flushing(fn.body, calls)  # type: ignore[attr-defined]
    return [fn]


_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _Calls:
    """Whether a node holds a call at any depth, each node looked at once per plan (asked of a statement after its
    bodies were flushed, and again of the statements around it: a flush is added only after a statement that holds
    a call, so the answer is the one the statement as written gives)."""

    def __init__(self) -> None:
        self._known: dict[int, bool] = {}
        self._kept: list[ast.AST] = []  # the nodes asked about stay alive: no id is reused within one plan

    def __call__(self, node: ast.AST) -> bool:
        known = self._known.get(id(node))
        if known is None:
            known = isinstance(node, ast.Call) or any(self(child) for child in ast.iter_child_nodes(node))
            self._known[id(node)] = known
            self._kept.append(node)
        return known


def _flushing(stmts: list[ast.stmt], calls: _Calls, helper: bool = False) -> list[ast.stmt]:
    """``stmts`` with ``__cg_flush__()`` after each one that calls something, in every body they hold (a ``return``,
    ``raise``, ``break`` or ``continue`` leaves its change pending for the statement it ends in); in a helper's
    body (``helper``) the flush is ``__cg_flush__(1)``, and every function defined in them is made a helper."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        checks_if = isinstance(stmt, ast.If) and any(isinstance(s, (ast.Raise, ast.Assert))
                                                      for s in stmt.body + stmt.orelse)
        if isinstance(stmt, ast.FunctionDef):
            _helper(stmt, calls)
        elif isinstance(stmt, ast.AsyncFunctionDef):
            stmt.body = _flushing(stmt.body, calls, True)  # (a coroutine's changes are not undone at its return)
        else:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if inner and isinstance(inner, list) and isinstance(inner[0], ast.stmt):
                    setattr(stmt, field, _flushing(inner, calls, helper))
            for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:  # except clauses, cases
                part.body = _flushing(part.body, calls, helper)
        flushed = not isinstance(stmt, _ENDS) and calls(stmt)  # (asked of the statement as written)
        if _is_check(stmt):
            out.append(_checking(stmt))
        elif checks_if:
            out += _checking_condition(stmt)  # type: ignore[arg-type]
        else:
            out.append(stmt)
        if flushed:
            out.append(_flush(getattr(stmt, "end_lineno", None) or stmt.lineno, helper))
    return out


def _checking_condition(stmt: ast.If) -> list[ast.stmt]:
    """A check written as ``if <condition>: raise ...`` (or ``else: assert False``): its condition is evaluated,
    truth included, as a marked check (``__cg_t__ = not not (<condition>)`` in :func:`_checking`), so what it
    raises on the solution's answer is a failed check too; the ``if`` then tests ``__cg_t__``."""
    test = stmt.test
    truth = ast.UnaryOp(ast.Not(), ast.UnaryOp(ast.Not(), test))
    assign = _placed(ast.Assign(targets=[ast.Name("__cg_t__", ast.Store())], value=truth), test.lineno, test)
    stmt.test = _placed(ast.Name("__cg_t__", ast.Load()), test.lineno)
    return [_checking(assign), stmt]


def _is_check(stmt: ast.stmt) -> bool:
    """An ``assert``, or a call of an assertion helper as a statement (``self.assertEqual(...)``,
    ``assert_equal(...)``, ``np.testing.assert_allclose(...)``)."""
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        fn = stmt.value.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        return name.startswith("assert")
    return False


def _checking(stmt: ast.stmt) -> ast.stmt:
    """``try: <check> except BaseException as __cg_x__: __cg_checked__(__cg_x__); raise``: whatever a check
    raises (a TypeError of ``led.total() + 0 == 7`` when the solution answered None) is marked as a failed
    check, which no context manager of the solution may swallow (harness._suppressible): an ``__exit__`` that
    returns True made every unit inside its block pass, in one process too."""
    mark = ast.Expr(_call("__cg_checked__", ast.Name("__cg_x__", ast.Load())))
    handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name="__cg_x__",
                                body=[mark, ast.Raise(exc=None, cause=None)])
    return _placed(ast.Try(body=[stmt], handlers=[handler], orelse=[], finalbody=[]), stmt.lineno, stmt)


def _flush(line: int, helper: bool) -> ast.stmt:
    """``__cg_flush__()`` (``__cg_flush__(1)`` in a helper) at ``line``, its nodes placed as they are made."""
    def at(node: _Node) -> _Node:
        node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
        node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
        return node

    args: list[ast.expr] = [at(ast.Constant(1))] if helper else []
    return at(ast.Expr(at(ast.Call(at(ast.Name("__cg_flush__", ast.Load())), args, []))))


def _helper(fn: ast.FunctionDef, calls: _Calls) -> None:
    """Make a function of the tests a frame of its own (module doc): its flushes logged, its results and yields
    passed through ``__cg_out__``, an exception leaving it too. One that calls nothing is left as it is."""
    fn.body = _flushing(fn.body, calls, True)
    if not any(calls(stmt) for stmt in fn.body):
        return
    doc = fn.body[:1] if (isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
                          and isinstance(fn.body[0].value.value, str)) else []
    rest = [_Results().visit(stmt) for stmt in fn.body[len(doc):]]
    line = fn.body[0].lineno
    mark = ast.Name("__cg_m__", ast.Load())
    enter = ast.Assign([ast.Name("__cg_m__", ast.Store())], _call("__cg_in__"))
    leave = ast.Return(_call("__cg_out__", mark, ast.Constant(None)))
    failed = ast.ExceptHandler(ast.Name("BaseException", ast.Load()), None,
                               [ast.Expr(_call("__cg_out__", mark, ast.Constant(None))), ast.Raise()])
    guarded = ast.Try(body=[], handlers=[_placed(failed, line)], orelse=[], finalbody=[])
    _placed(guarded, line)
    guarded.body = rest + [_placed(leave, line)]  # (``rest`` is placed already: not walked again)
    fn.body = [*doc, _placed(enter, line), guarded]


class _Results(ast.NodeTransformer):
    """``return X`` -> ``return __cg_out__(__cg_m__, X)``; ``yield X`` -> ``__cg_back__(__cg_m__, (yield
    __cg_out__(__cg_m__, X)))`` (a generator's frame is left at each yield and entered again after it). Not inside
    the functions, lambdas and classes it defines (each is its own frame, or none)."""

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        value = node.value if node.value is not None else ast.Constant(None)
        node.value = ast.copy_location(_call("__cg_out__", ast.Name("__cg_m__", ast.Load()), value), node)
        return _placed(node, node.lineno)

    def visit_Yield(self, node: ast.Yield) -> ast.AST:
        self.generic_visit(node)
        value = node.value if node.value is not None else ast.Constant(None)
        node.value = _call("__cg_out__", ast.Name("__cg_m__", ast.Load()), value)
        back = _call("__cg_back__", ast.Name("__cg_m__", ast.Load()), node)
        return _placed(back, node.lineno)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _placed(node: _Node, line: int, parsed: ast.AST | None = None) -> _Node:
    """Give ``node`` and what it holds that has no location yet the line ``line``; ``parsed``, a node it holds that
    came from the parse (located, all of it), is not walked (a check's whole expression was, once per wrapper)."""
    todo: list[ast.AST] = [node]
    while todo:
        part = todo.pop()
        if part is parsed:
            continue
        if "lineno" in part._attributes and not hasattr(part, "lineno"):
            part.lineno = part.end_lineno = line  # type: ignore[attr-defined]
            part.col_offset = part.end_col_offset = 0  # type: ignore[attr-defined]
        todo.extend(ast.iter_child_nodes(part))
    return node


def _located(stmts: list[ast.stmt], like: ast.stmt | None) -> list[ast.stmt]:
    """Statements we add get the line of the last real one (tracebacks stay in the tests' range)."""
    for stmt in stmts:
        for node in ast.walk(stmt):
            if like is not None and "lineno" in node._attributes:
                node.lineno = node.end_lineno = like.lineno  # type: ignore[attr-defined]
    return stmts


def _register(kinds: list[str], names: list[str], kind: str, text: str) -> int:
    kinds.append(kind)
    if kind == "unit":
        names.append(text)
    return len(kinds) - 1


def _kind(stmt: ast.stmt, checkers: frozenset[str] = frozenset()) -> str:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "setup"
    return "unit" if _asserts(stmt, checkers) else "setup"


def _asserts(node: ast.AST, checkers: frozenset[str] = frozenset()) -> bool:
    """True when the statement checks something: an assert (but ``assert True``, ``assert "note"``), a raise,
    or a call of one of ``checkers`` (the tests' own functions that do); nested defs do not count."""
    if isinstance(node, ast.Assert):
        return not (isinstance(node.test, ast.Constant) and node.test.value)
    if isinstance(node, ast.Raise):
        return True
    if (checkers and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in checkers):
        return True
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if _asserts(child, checkers):
            return True
    return False


def _checkers(module: ast.Module) -> frozenset[str]:
    """Names of the tests' helper functions (top level, or inside ``check``) that assert or raise, directly or
    through another such helper: a statement that calls one checks something."""
    defs = [s for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for stmt in list(defs):
        if stmt.name == "check":
            defs += [s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found: frozenset[str] = frozenset()
    while True:
        more = frozenset(d.name for d in defs if d.name != "check"
                         and any(_asserts(s, found) for s in d.body))
        if more <= found:
            return found
        found |= more


def _calls(stmt: ast.stmt, name: str) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == name)


def _text(lines: list[str], stmt: ast.stmt) -> str:
    return lines[stmt.lineno - 1].strip()[:160] if 0 < stmt.lineno <= len(lines) else type(stmt).__name__


def _wrapped_statement(stmt: ast.stmt, calls: _Calls, index: int) -> list[ast.stmt]:
    """One statement of ``check`` or of the module, wrapped; an assignment that fails then unbinds the names it
    assigns (``if __cg_lost__(i): del result``): ``result = candidate(x)`` raising left ``result`` from the call
    before, so the next ``assert result == ...`` passed on the stale value (a solution that raised earned more
    than one that answered wrong, where one process stops at the raise)."""
    out = [_wrap(_flushing([stmt], calls), index)]
    targets: list[str] = []
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            _names_bound(target, targets)
    if targets:
        forget = "".join(f"    try:\n        del {name}\n    except NameError:\n        pass\n"
                         for name in dict.fromkeys(targets))
        out += _located(ast.parse(f"if __cg_lost__({index}):\n{forget}").body, stmt)
    return out


def _names_bound(target: ast.expr, into: list[str]) -> None:
    if isinstance(target, ast.Name):
        into.append(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _names_bound(element, into)
    elif isinstance(target, ast.Starred):
        _names_bound(target.value, into)


def _wrap(stmts: list[ast.stmt], index: int) -> ast.stmt:
    """with __cg__(i) as __cg_go: if __cg_go: <stmts>  (the reporter records the outcome and stops any exception;
    past the run's deadline it answers False and records a timeout; a smaller tree than try/except/else, so
    planning compiles faster)"""
    line = stmts[0].lineno

    def at(node: _Node) -> _Node:
        node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
        node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
        return node

    unit = at(ast.Call(at(ast.Name("__cg__", ast.Load())), [at(ast.Constant(index))], []))
    run = at(ast.If(test=at(ast.Name("__cg_go", ast.Load())), body=stmts, orelse=[]))
    return at(ast.With(items=[ast.withitem(context_expr=unit, optional_vars=at(ast.Name("__cg_go", ast.Store())))],
                       body=[run]))
