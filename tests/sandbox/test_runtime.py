"""Pure parts of the code that runs inside the sandbox: the strict value codec and the test planner."""

from __future__ import annotations

import math

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
