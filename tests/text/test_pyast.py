"""``ast`` from several threads: before Python 3.13 two threads converting ASTs at once share one recursion counter
(CPython gh-106905) and one fails with ``SystemError: AST constructor recursion depth mismatch``; in CI that turned
a right code_tests answer into an exception verdict under verify_many's threads. crossgym's parses and the sandbox's
test planner hold one lock."""

from __future__ import annotations

import sys
import threading

from crossgym.sandbox._runtime import plan
from crossgym.text import pyast

SOURCE = "\n".join(f"def f{i}(x):\n    return [y for y in range({i}) if y % 2 == {i % 2}]\n" for i in range(60))
TESTS = "def check(candidate):\n" + "".join(f"    assert candidate({i}) == {i}\n" for i in range(40))


class _Finalised:
    """Garbage whose finaliser runs Python code: a collection inside a parse then switches threads."""

    def __del__(self) -> None:
        total = 0
        for i in range(30):
            total += i


def _hammer(work: object, errors: list[str], rounds: int = 60) -> None:
    for _ in range(rounds):
        for _ in range(100):
            a, b = _Finalised(), _Finalised()
            a.other, b.other = b, a  # type: ignore[attr-defined]  # a cycle: freed by the collector, mid-parse
        try:
            work()  # type: ignore[operator]
        except SystemError as exc:
            errors.append(str(exc))


def test_parsing_and_planning_from_many_threads_never_fails() -> None:
    errors: list[str] = []
    jobs = [lambda: pyast.parse("[" + ", ".join(map(str, range(300))) + "]", mode="eval"), lambda: plan.build(TESTS, "f"),
            lambda: pyast.parse(SOURCE), lambda: plan.build([f"assert f({i}) == {i}" for i in range(30)], None)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=_hammer, args=(job, errors)) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert plan.build(TESTS, "f")[1][:2] == ["assert candidate(0) == 0", "assert candidate(1) == 1"]
