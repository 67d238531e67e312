"""expr_guard: while a scorer that evaluates the answer runs, only plain expressions compile."""

from __future__ import annotations

import collections
import dataclasses
import threading

import pytest

from crossgym.verifiers.expr_guard import RefusedCode, plain_expressions

sympy = pytest.importorskip("sympy")
from sympy.parsing.sympy_parser import parse_expr  # noqa: E402

PLAIN = ["1/2", "2*x + sin(y)/3 + pi + 1.5", "x**2 - 3*x + C", "[[1, 0], [0, 1]]", "'abc'", "(1, 2.5, -3)",
         "Abs(-2) + sqrt(2) + exp(1) + log(10)", "f(x) + g(x, y)", "Eq(x, 2)", "{1: 'a'}", "Lt(3, 4)", "-x",
         "-6*pow(x, 3) + abs(C) + max(x, 2)", "2 * 3"]
CODE = ['__import__("os").system("true")', "open('/etc/hostname').read()", "().__class__.__mro__",
        "[c for c in ().__class__.__mro__]", "lambda: 1", "getattr(1, 'real')", "x[0]", "eval('1')",
        "globals()", "exec('import os')", "(lambda f: f)(1)", "f'{1}'",
        "Integral(2 - 18*x**2, x)", "Derivative(x**2, x)", "'a' * (4 * 10**9)", "[0] * (5 * 10**8)",
        "(10**9) * ('a' + 'b')"]


def run(fn, source):
    with plain_expressions() as guard:
        try:
            value = fn(source)
        except RefusedCode:
            value = RefusedCode
        except Exception as exc:  # noqa: BLE001 - the parser's own refusal of text that is no expression
            value = type(exc)
    return value, guard.refused


@pytest.mark.parametrize("source", PLAIN)
def test_plain_expressions_evaluate_as_before(source: str) -> None:
    if "f(x)" in source:
        got, refused = run(parse_expr, source)
        assert not refused and got == parse_expr(source)
        return
    for fn in (parse_expr, lambda s: parse_expr(s, evaluate=False)):
        got, refused = run(fn, source)
        assert not refused, (source, refused)
        assert got == fn(source)


@pytest.mark.parametrize("source", CODE)
@pytest.mark.parametrize("how", ["eval", "parse_expr", "parse_expr_unevaluated", "compile"])
def test_code_is_refused_however_the_scorer_compiles_it(source: str, how: str) -> None:
    fn = {"eval": eval, "parse_expr": parse_expr,
          "parse_expr_unevaluated": lambda s: parse_expr(s, evaluate=False),
          "compile": lambda s: compile(s, "<answer>", "exec")}[how]
    got, refused = run(fn, source)
    assert got is not RefusedCode or refused, source
    if got is not RefusedCode:  # the parser refused it itself (a SyntaxError, say): nothing ran
        assert isinstance(got, type) and issubclass(got, Exception), (source, got)
    else:
        assert "would run the answer as code" in refused


def test_a_refusal_stands_whatever_the_scorer_does_with_it() -> None:
    with plain_expressions() as guard:
        try:
            eval("__import__('os')")  # noqa: S307 - what the guard refuses
        except Exception:  # noqa: BLE001, S110 - a scorer that swallows every error
            pass
        assert eval("1 + 1") == 2  # noqa: S307 - and goes on
    assert "'__import__'" in guard.refused


def test_outside_a_guard_and_in_other_threads_nothing_is_refused() -> None:
    assert eval("().__class__") is tuple  # noqa: S307 - nothing guarded here
    seen: list[object] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(5)
        seen.append(eval("().__class__"))  # noqa: S307 - another thread, while this one is guarded
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with plain_expressions() as guard:
        inside.set()
        done.wait(5)
    t.join(5)
    assert seen == [tuple] and not guard.refused


def test_code_generated_by_the_standard_library_and_sympy_itself_compiles() -> None:
    """namedtuple and dataclasses build code from names they check; sympy builds monomial arithmetic from its own
    templates. Its code printers' users (lambdify) stay guarded: they print the expression's symbols into code."""
    x, y = sympy.symbols("x y")
    with plain_expressions() as guard:
        point = collections.namedtuple("point", "a b")
        made = dataclasses.make_dataclass("Made", ["a"])
        product = sympy.Poly(x**2 + y, x, y) * sympy.Poly(x * y + 3, x, y)
    assert not guard.refused and point(1, 2).b == 2 and made(1).a == 1
    assert product.as_expr() == sympy.expand((x**2 + y) * (x * y + 3))
    with plain_expressions() as guard:
        with pytest.raises(RefusedCode):
            sympy.lambdify(x, x + 1)
    assert guard.refused


def test_guards_nest() -> None:
    with plain_expressions() as outer:
        with plain_expressions() as inner:
            assert eval("1") == 1  # noqa: S307
        with pytest.raises(RefusedCode):
            eval("globals()")  # noqa: S307 - still guarded after the inner block
    assert not inner.refused and "globals" in outer.refused
