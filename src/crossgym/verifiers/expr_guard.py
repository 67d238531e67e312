"""Scorers that evaluate the model's text as Python see plain expressions only.

Several of reasoning-gym's scorers hand the answer to Python: ``eval(answer)`` (string_insertion, spiral_matrix,
binary_matrix, n_queens) or sympy's ``parse_expr``, which is ``eval`` of the answer after tokenising it (puzzle24,
countdown, the integration and polynomial datasets). Run as they are, in crossgym's worker pool, an answer such as
``__import__("pathlib").Path("x").touch()`` wrote files on the trainer's machine, and one that replaced
``math_verify.verify`` made every later ``math`` verdict of that worker pass.

:func:`plain_expressions` guards such a call: while it runs in this thread, every ``compile`` of source text (what
``eval``, ``exec``, ``compile`` and ``parse_expr`` do with a string) is refused unless the source is a plain
expression: literals, arithmetic, comparisons, and calls by name of sympy's constructors and mathematical functions
(and Python's pow, abs, max, min...).

- No unevaluated operation (Integral, Derivative, Sum, Limit): an answer stating one restates the question.
- No repeated sequence ("'a' * 10**9").
- No attribute, subscript, lambda, comprehension or statement, and no name starting with ``_``.
- A bare name only for sympy's constants and, in sympy's parser, the sympy objects the scorer bound itself (its
  ``local_dict`` symbols).

A refusal raises :class:`RefusedCode` in the scorer and is remembered for the call, whatever the scorer does with the
exception: the answer is then malformed. Left alone: module code compiled from its file (an import), code the
standard library generates from names it checked (``namedtuple``, ``dataclasses``; ``ast.parse`` executes nothing,
and what it returns is checked when it is compiled) and code sympy generates from its own templates (monomial
arithmetic); sympy's parsers, lambdify and its other code generators are guarded. An audit hook
(``sys.addaudithook``, installed once per process on first use, a no-op outside a guarded call) does the checking.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: sympy's numbers and symbols as parse_expr writes them, its containers, relations and logic, beside the
#: mathematical functions of ``sympy.functions`` (added when sympy is installed)
CORE_CALLABLES = frozenset((
    "Integer", "Float", "Rational", "Symbol", "Function", "Number", "S", "Add", "Mul", "Pow", "Mod", "Abs",
    "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "And", "Or", "Not", "Xor", "Implies", "Equivalent", "Tuple", "FiniteSet",
    "Interval", "Union", "Intersection", "Complement", "Matrix", "Dummy", "Wild",
    # Python's own numeric functions, which sympy's parser keeps ("-6*pow(x, 3) + C" is an honest antiderivative)
    "pow", "abs", "max", "min", "round", "sum", "int", "float", "complex",
))
# Not callable: the unevaluated operations (Integral, Derivative, Sum, Product, Limit). An answer stating one is no
# answer: "Integral(2 - 18*x**2, x)" restated the question and passed both integration datasets, whose scorers
# differentiate the answer.
#: names parse_expr leaves bare: sympy's constants
CONSTANTS = frozenset(("pi", "E", "I", "oo", "zoo", "nan", "EulerGamma", "GoldenRatio", "Catalan",
                       "TribonacciConstant", "true", "false", "S"))
#: what sympy's parse_expr compiles for itself before the answer (its global namespace)
TRUSTED_SOURCES = frozenset(("from sympy import *",))
_OPERATORS = (ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)
_CONTAINERS = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.List, ast.Tuple,
               ast.Set, ast.Dict)
_STDLIB = os.path.dirname(os.__file__)
#: standard-library modules whose compiles build code from names they check (or, ast, only parse)
_STDLIB_GENERATORS = frozenset(os.path.join(_STDLIB, *name.split("/"))
                               for name in ("collections/__init__.py", "dataclasses.py", "ast.py"))


class RefusedCode(Exception):
    """The scorer asked Python to run text that is no plain expression (the model's answer, as code)."""


@functools.lru_cache(maxsize=1)
def callables() -> frozenset[str]:
    """The names a plain expression may call."""
    try:
        import sympy.functions
    except ImportError:
        return CORE_CALLABLES
    return CORE_CALLABLES | frozenset(sympy.functions.__all__)


def why_not_plain(tree: ast.AST, values: Callable[[str], bool] = lambda name: False) -> str:
    """"" when ``tree`` (a parsed source) is a plain expression, else what is not. ``values(name)``: whether a bare
    ``name`` (not one of ``CONSTANTS``) is a value the scorer bound itself (a sympy symbol in parse_expr's
    ``local_dict``)."""
    if isinstance(tree, ast.Module):
        if not all(isinstance(s, ast.Expr) for s in tree.body):
            return "a statement"
        nodes: list[ast.AST] = [s.value for s in tree.body]  # type: ignore[attr-defined]
    elif isinstance(tree, ast.Expression):
        nodes = [tree.body]
    else:
        return f"a {type(tree).__name__}"
    names = callables()
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                if func.id not in names:
                    return f"a call of {func.id!r}"
            elif not isinstance(func, ast.Call):  # Function('f')(x), as parse_expr writes f(x)
                return "a call of something other than a name"
            for kw in node.keywords:
                if kw.arg is None or kw.arg.startswith("_"):
                    return "a keyword argument by ** or starting with _"
                nodes.append(kw.value)
            if isinstance(func, ast.Call):
                nodes.append(func)
            nodes.extend(node.args)
            continue
        if isinstance(node, ast.Name):
            if node.id not in CONSTANTS and node.id not in names and not values(node.id):
                return f"the name {node.id!r}"
            continue
        if isinstance(node, ast.Starred):
            return "a starred argument"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (_sequence(node.left) or
                                                                              _sequence(node.right)):
            return "a repeated sequence"  # ("'a' * (4 * 10**9)" took 4 GB of the worker's memory)
        if not isinstance(node, _CONTAINERS) and not isinstance(node, _OPERATORS):
            return f"a {type(node).__name__}"
        nodes.extend(ast.iter_child_nodes(node))
    return ""


def _sequence(node: ast.AST) -> bool:
    """``node`` makes a string, bytes or a container (which ``*`` repeats: as long as the number asks)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return True
    return isinstance(node, ast.BinOp) and (_sequence(node.left) or _sequence(node.right))


_state = threading.local()
_install_lock = threading.Lock()
_installed = False


def _refuse(detail: str) -> None:
    _state.refused = detail
    raise RefusedCode(detail)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "compile" or not getattr(_state, "on", False):
        return
    source, filename = args
    if isinstance(filename, str) and filename.endswith(".py") and os.path.isfile(filename):
        return  # a module compiled from its file (an import without a cached .pyc)
    caller = sys._getframe(1)
    if caller.f_code.co_filename in _STDLIB_GENERATORS or _sympy_internal(caller.f_code.co_filename):
        return
    if isinstance(source, ast.AST):
        tree: ast.AST = source
    else:
        text = source.decode("utf-8", "replace") if isinstance(source, (bytes, bytearray)) else str(source)
        if text.strip() in TRUSTED_SOURCES:
            return
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return  # compiling it fails on its own: nothing runs
        except RecursionError:
            _refuse("an expression nested too deeply")
    why = why_not_plain(tree, _bound_by_sympy(caller))
    if why:
        _refuse(f"the scorer would run the answer as code ({why})")


def _bound_by_sympy(frame: Any) -> Callable[[str], bool]:
    """For a compile in sympy's parser (parse_expr, eval_expr): whether a name is bound, in the namespaces it
    evaluates in, to a sympy object such as the Symbol a scorer passed in ``local_dict`` (never a function)."""
    if not frame.f_code.co_filename.endswith(_SYMPY_PARSER):
        return lambda name: False
    spaces = [d for d in (frame.f_locals.get("local_dict"), frame.f_locals.get("global_dict")) if isinstance(d, dict)]

    def bound(name: str) -> bool:
        for space in spaces:
            if name in space:
                from sympy import Basic

                return isinstance(space[name], Basic)
        return False

    return bound


_SYMPY_PARSER = os.path.join("sympy", "parsing", "sympy_parser.py")
#: the parts of sympy that compile text from their input (its parsers, lambdify and the other code printers' users,
#: plotting, the interactive session): gated; the rest compiles code from its own templates (monomial arithmetic,
#: series), left alone
_SYMPY_GATED = ("parsing", "core/sympify.py", "utilities/lambdify.py", "utilities/matchpy_connector.py",
                "utilities/_compilation", "plotting", "printing", "interactive", "codegen")


@functools.lru_cache(maxsize=256)
def _sympy_internal(filename: str) -> bool:
    """``filename`` is sympy's own code, outside the parts of it that compile their input."""
    root = _sympy_root()
    if root is None or not filename.startswith(root):
        return False
    inner = filename[len(root):].replace(os.sep, "/")
    return not inner.startswith(_SYMPY_GATED)


def _sympy_root() -> str | None:
    """sympy's package directory, once it is imported (a compile in sympy's code means it is)."""
    path = getattr(sys.modules.get("sympy"), "__file__", None)
    return os.path.dirname(path) + os.sep if isinstance(path, str) else None


def _install() -> None:
    global _installed
    if _installed:
        return
    with _install_lock:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


@contextmanager
def plain_expressions() -> Iterator[Any]:
    """Within the block, only plain expressions compile in this thread (see the module docstring); afterwards
    ``.refused`` of the yielded state is why a compile was refused ("" when none was)."""
    _install()
    outer = getattr(_state, "on", False)
    _state.on, _state.refused = True, ""
    box = _Refusal()
    try:
        yield box
    finally:
        box.refused = _state.refused
        _state.on = outer


class _Refusal:
    """What :func:`plain_expressions` yields: ``refused`` is set when its block ends."""

    refused = ""
