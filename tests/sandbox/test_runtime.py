"""Pure parts of the code that runs inside the sandbox: the strict value codec and the test planner."""

from __future__ import annotations

import ast
import math
import os
import pathlib

import pytest

from crossgym.sandbox._runtime import codec, plan


def test_codec_round_trips_plain_values_exactly() -> None:
    values = [None, True, 0, -(2 ** 80), 1.5, -0.0, "é\ud800", b"\x00", bytearray(b"ab"), [1, (2, 3)], {1: {2}},
              frozenset({"a"}), 3 + 4j, range(1, 9, 2), {(1, 2): [None]}]
    for value in values:
        back = codec.decode(codec.encode(value))
        assert back == value and type(back) is type(value)
    assert math.isnan(codec.decode(codec.encode(float("nan"))))
    assert codec.decode(codec.encode(float("-inf"))) == float("-inf")


def test_codec_refuses_lookalikes() -> None:
    class Int(int):
        pass

    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    for value in (Anything(), [1, Anything()], {"k": Anything()}):
        with pytest.raises(codec.Unencodable):
            codec.encode(value)

    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    subclassed: list[tuple[object, object]] = [(Int(3), 3), ({"k": Liar(1)}, {"k": 1}), ([Liar(0)], [0])]
    for sub, plain in subclassed:  # a subclass travels as its data
        back = codec.decode(codec.encode(sub))
        assert back == plain and type(back) is type(plain) and back != {"k": 2} and back != [5]
    handles: list[object] = []
    tree = codec.encode([1, Anything()], lambda obj: handles.append(obj) or 7)
    assert tree == ["l", [1, ["h", 7, "Anything"]]] and len(handles) == 1
    deep: list[object] = []
    for _ in range(500):
        deep = [deep]
    with pytest.raises(codec.Unencodable):
        codec.encode(deep)
    for bad in (["?", 1], ["h", 1, "x"], {"a": 1}):
        with pytest.raises(ValueError):
            codec.decode(bad)


def test_plan_counts_asserting_statements_only() -> None:
    _, names, kinds = plan.build(["assert f(1) == 1", "f(2)"], None)
    assert names == ["assert f(1) == 1", "f(2)"] and kinds == ["unit", "unit"]
    source = ("import math\n\n\ndef check(candidate):\n    import random\n    assert True, 'always'\n"
              "    assert candidate(1) == 2\n    for i in range(3):\n        assert candidate(i) == i + 1\n\n"
              "check(f)\n")
    _, names, kinds = plan.build(source, "f")
    assert names == ["assert candidate(1) == 2", "for i in range(3):"]
    assert kinds.count("unit") == 2
    _, names, _ = plan.build("def helper():\n    assert 1 == 2\n\ndef test_a():\n    assert helper() is None\n", None)
    assert names == ["test_a()"]
    with pytest.raises(SyntaxError):
        plan.build("assert (", None)


class _WalkedCalls:
    """The planner's call check done the plain way: walk the whole statement each time it is asked."""

    def __call__(self, node: ast.AST) -> bool:
        return any(isinstance(part, ast.Call) for part in ast.walk(node))


def _suites() -> list[tuple[str | list[str], str | None]]:
    """Real modules (the planner's own package and some of the standard library, with defs, classes, nested
    bodies, helpers, generators) and suites shaped like HumanEval's, MBPP's and pytest's."""
    here = pathlib.Path(plan.__file__).parent
    stdlib = pathlib.Path(os.__file__).parent
    modules = sorted(here.glob("*.py")) + [stdlib / n for n in ("bisect.py", "heapq.py", "textwrap.py", "shlex.py")]
    nested = "def check(candidate):\n" + "".join(
        "    " * (i + 1) + f"if candidate({i}) is not None or True:\n" for i in range(30)) + "    " * 31 + "pass\n"
    suites: list[tuple[str | list[str], str | None]] = [
        (nested, "f"),
        ("def h(xs):\n    r = f(xs)\n    return r\n\ndef g():\n    yield f(1)\n\ndef check(c):\n    assert h([2, 1]) == [1, 2]\n"
         "    for v in g():\n        assert v\n", "f"),
        (["assert f(1) == 2", "xs = [1]\nf(xs)\nassert xs == [2]", "for i in range(3):\n    assert f(i)"], "f"),
        ("class T:\n    def helper(self, x):\n        return f(x)\n\ndef test_a():\n    assert T().helper(1)\n", None),
    ]
    suites.append(("import unittest\n\nclass TestA(unittest.TestCase):\n    def setUp(self):\n        self.x = f(1)\n"
                   "    def test_b(self):\n        xs = [1]\n        f(xs)\n        self.assertEqual(xs, [2])\n"
                   "    def test_a(self):\n        for i in range(2):\n            with self.subTest(i=i):\n"
                   "                assert f(i)\n", "f"))
    for path in modules:
        text = path.read_text().replace("from __future__ import annotations", "")  # (first in a module only)
        suites += [(text, None), (text, "check")]
    return suites


def test_plan_is_the_one_a_full_walk_of_each_statement_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    suites = _suites()
    fast = [plan.build(tests, entry) for tests, entry in suites]
    monkeypatch.setattr(plan, "_Calls", _WalkedCalls)
    walked = [plan.build(tests, entry) for tests, entry in suites]
    assert len(suites) > 10
    for (tests, _), a, b in zip(suites, fast, walked, strict=True):
        assert a[0] == b[0] and a[1:] == b[1:], str(tests)[:80]  # code objects compare bytecode, lines, constants
