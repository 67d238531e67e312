"""loads_strict's orjson fast path reads every text exactly as json's path does: the same value (types, key order,
-0.0 and big integers included) or the same MalformedJSON message. Hand-picked edges, then a generated set."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from crossgym.text import json_text
from crossgym.text.json_text import MalformedJSON, loads_strict

pytest.importorskip("orjson")
loads_strict("{}")  # the fast path's first call imports orjson


def outcome(fn: Any, text: str, unique: bool) -> tuple[str, str]:
    try:
        return "ok", repr(fn(text, unique))
    except MalformedJSON as exc:
        return "err", str(exc)


def fast(text: str, unique: bool) -> Any:
    return loads_strict(text, unique_keys=unique)


def reference(text: str, unique: bool) -> Any:
    if not json_text.json_depth_ok(text):
        raise MalformedJSON(f"JSON nests deeper than {json_text.MAX_JSON_DEPTH} levels")
    return json_text._json_loads(text, unique)


EDGES = [
    "18446744073709551616", "-9223372036854775809", "9223372036854775808", "1234567890123456789", "1e400",
    "-1e400", "1.7976931348623157e309", "0.1e-400", "-0", "-0.0", "1.0", "1E2", "01", "1.", ".5", "+1", "-",
    "NaN", "Infinity", "-Infinity", "nan", "true", "True", "null", "null ", " \t\n\r{} ", "\x0c{}", "\u00a0{}",
    "{}\u2028", "\ufeff{}", "[1,]", '{"a":1,}', '"\t"', '"\x7f"', '"\x00"', '"\\ud800"', '"\\ud83d\\ude00"',
    '"\ud800"', '"\\u003a"', '{"a":1,"a":2}', '{"a":1,"b":{"c":1,"c":2}}', '{"a:b":1,"a:b":2}', '{"a":"x:y"}',
    '{"a":1,"a":"\\u003a","b":2}', '{"a":1, "b":"\\u003a"}', '[{"k":1},{"k":1,"k":2}]', '{"":1,"":2}',
    '{"a":{"a":{"a":1}}}', '[' * 201 + ']' * 201, '[' * 199 + ']' * 199, '{"a":1}{"b":2}', '{"a":1} x',
    '"' + "x" * 5000 + '"', '{"n": 123456789012345678901234567890.5}', '[1e5, 1E-5, -0e0, 2.5e+3]', "",
    "   ", '{"a" : 1 , "b" : [ 1 , 2 ] }', '{"a":"\\"}:"}', '{"\\\\":1,"\\\\":2}', "[true,false,null]",
]


@pytest.mark.parametrize("unique", [False, True])
@pytest.mark.parametrize("text", EDGES)
def test_edges_read_as_json_reads_them(text: str, unique: bool) -> None:
    assert outcome(fast, text, unique) == outcome(reference, text, unique)


def test_duplicate_keys_are_refused_at_any_depth() -> None:
    with pytest.raises(MalformedJSON, match="duplicate key 'c'"):
        loads_strict('{"a":1,"b":[{"c":1,"c":"x:y"}]}', unique_keys=True)
    with pytest.raises(MalformedJSON, match="duplicate key 'a'"):
        loads_strict('{"a":1,"a":"\\u003a","b":2}', unique_keys=True)  # an escaped ':' cannot hide the duplicate
    assert loads_strict('{"a":1,"a":2}') == {"a": 2}


ALPHABET = list('{}[]",:0123456789.-+eE \\ntrufalsN\u00e9\x00\t') + ['\\u003a', '\\ud800', '"a"', '"a":1,']


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([0, -1, 7, 2**63, -(2**63) - 1, 2**64, 10**30, 123456789])
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, 1e-300, 1e300, 3.141592653589793, -2.5e-8])
    if kind == 2:
        return "".join(rng.choice("ab:é😀\"\\\n/\u2028") for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return rng.choice(["x", "a:b", ""])
    if kind in (6, 7):
        return {rng.choice(["a", "b", "c:d", "é", ""]): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _text(rng: random.Random) -> str:
    text = json.dumps(_value(rng, 0), ensure_ascii=rng.random() < 0.3,
                      separators=rng.choice([(",", ":"), (", ", ": "), (" , ", " : ")]))
    if rng.random() < 0.3 and "{" in text:  # a duplicated member
        i = text.index("{") + 1
        j = text.find(",", i)
        if j > 0:
            text = text[:i] + text[i:j] + "," + text[i:]
    for _ in range(rng.choice([0, 0, 1, 2])):  # a random edit
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(3)
        if op == 0:
            text = text[:i] + rng.choice(ALPHABET) + text[i:]
        elif op == 1:
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + rng.choice(ALPHABET) + text[i + 1:]
    return text


def test_a_generated_set_reads_as_json_reads_it() -> None:
    rng = random.Random(20261201)
    texts = [_text(rng) for _ in range(20_000)]
    differ = [(t, u) for t in texts for u in (False, True) if outcome(fast, t, u) != outcome(reference, t, u)]
    assert not differ, differ[:5]
    oks = sum(outcome(fast, t, True)[0] == "ok" for t in texts)
    assert 0.2 * len(texts) < oks < 0.95 * len(texts)  # the set holds both readable and broken texts
    answered = sum(json_text._fast_loads(t, True) is not None for t in texts)
    assert answered > 0.6 * oks  # and the fast path, not json's, read most of the readable ones
