"""Issue 27's realistic rollout mix, written as rollout records a line at a time (any size, constant memory).

    python bench/rollout_mix.py OUT.jsonl --n 1200000 [--seed 0]

Per 20 records, in a seeded shuffled order (every record's answer is distinct: nothing is a cache hit):

* 40% ``math``: integers, decimals, fractions and ~10% symbolic answers (``2\\sqrt{k}``, math-verify's slow path);
* 30% JSON and tool calls: ``json_schema`` objects and ``tool_call`` (Hermes ``<tool_call>`` syntax, checked
  against the tool's schema), in equal parts;
* 20% ``code_tests`` with 3 to 5 tests, in GRPO groups of 4 completions of one task (one failing member per group);
* 10% ``instructions`` (IFEval-style word-count and keyword constraints).

About a quarter of the answers are wrong. Every completion carries ~300 tokens of reasoning text and its 300 token
ids, as a stored rollout does. Records have the shape ``crossgym verify-batch`` and ``reverify`` read: ``task``,
``completion`` (messages and token_ids), ``verdict`` (a stale stored one) and ``provenance`` (a unique ``key``).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FILLER = " ".join(f"step {k}: we consider the quantity and simplify it carefully." for k in range(30))  # ~300 tokens
#: the share of each kind per 20 records (code counts completions: groups of 4)
SLOTS = ["math"] * 8 + ["json_schema"] * 3 + ["tool_call"] * 3 + ["code"] * 4 + ["instructions"] * 2
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                          "city": {"type": "string"}},
          "required": ["name", "age", "city"], "additionalProperties": False}
WEATHER = {"name": "get_weather", "description": "Today's weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {
               "type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}


def _task(key: str, verifier: str, answer: Any, **extra: Any) -> dict[str, Any]:
    return {"id": key, "prompt": [{"role": "user", "content": f"question {key}"}], "answer": answer,
            "verifier": {"name": verifier, "params": extra.pop("params", {})}, **extra}


def _math(i: int, wrong: bool, rng: random.Random) -> tuple[dict[str, Any], str]:
    kind = i % 10
    if kind < 5:
        ans, shown = str(1000 + i), str(1000 + i + wrong)
    elif kind < 7:
        ans, shown = f"{i}.25", f"{i}.{25 + wrong}"
    elif kind < 9:
        ans, shown = f"\\frac{{{i}}}{{{i + 7}}}", f"\\frac{{{i + wrong}}}{{{i + 7}}}"
    else:  # symbolic: math-verify's own path
        ans, shown = f"2\\sqrt{{{i}}}", f"\\sqrt{{{4 * i + wrong}}}"
    return _task(f"m{i}", "math", ans), f"{FILLER} So the answer is $\\boxed{{{shown}}}$."


def _json(i: int, wrong: bool, rng: random.Random) -> tuple[dict[str, Any], str]:
    doc = {"name": f"person{i}", "age": -1 if wrong else 20 + i % 60, "city": f"city{i}"}
    task = _task(f"j{i}", "json_schema", None, params={"schema": SCHEMA, "allow_surrounding": True})
    return task, f"{FILLER}\n```json\n{json.dumps(doc)}\n```"


def _tool(i: int, wrong: bool, rng: random.Random) -> tuple[dict[str, Any], str]:
    want = [{"name": "get_weather", "arguments": {"city": f"city{i}"}}]
    said = {"name": "get_weather", "arguments": {"city": f"city{i + wrong}"}}
    return (_task(f"t{i}", "tool_call", want, tools=[WEATHER]),
            f"{FILLER}\n<tool_call>\n{json.dumps(said)}\n</tool_call>")


def _code(i: int, rng: random.Random) -> list[tuple[dict[str, Any], str]]:
    """One code task (3-5 tests, distinct constants) and its GRPO group of 4 completions, the last one wrong."""
    k, n_tests = i % 997 + 1, 3 + i % 3
    tests = [f"assert shift({x}) == {x + k}" for x in range(n_tests)]
    task = _task(f"c{i}", "code_tests", {"tests": tests})
    good = f"{FILLER}\n```python\ndef shift(x):\n    return x + {k}\n```"
    bad = f"{FILLER}\n```python\ndef shift(x):\n    return x + {k} if x % 2 else x\n```"
    return [(task, good), (task, good), (task, good), (task, bad)]


def _instructions(i: int, wrong: bool, rng: random.Random) -> tuple[dict[str, Any], str]:
    word = f"garden{i}"
    spec = [{"type": "word_count", "max": 40}, {"type": "keywords_include", "keywords": [word]}]
    text = f"City gardens bring calm and food to a street; {word} shows how." if not wrong else FILLER
    return _task(f"i{i}", "instructions", spec), text


def records(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` rollout records of the mix, deterministic from ``seed``."""
    rng = random.Random(seed)
    made = 0
    block = 0
    while made < n:
        slots = SLOTS[:]
        rng.shuffle(slots)
        for slot_index, kind in enumerate(slots):
            i = block * len(SLOTS) + slot_index
            wrong = rng.random() < 0.25
            if kind == "code":
                if slot_index != slots.index("code"):  # one group of 4 per block fills the 4 code slots
                    continue
                pairs = _code(i, rng)
            else:
                pairs = [{"math": _math, "json_schema": _json, "tool_call": _tool,
                          "instructions": _instructions}[kind](i, wrong, rng)]
            for task, text in pairs:
                if made == n:
                    return
                ids = [(made * 31 + t) % 50_000 for t in range(300)]
                yield {"task": task, "completion": {"messages": [{"role": "assistant", "content": text}],
                                                    "token_ids": ids},
                       "verdict": {"reward": 1.0, "passed": True, "reason": "stored"},
                       "provenance": {"key": f"r{made}", "verifier": {"name": task["verifier"]["name"]}}}
                made += 1
        block += 1


def write(path: Path, n: int, seed: int = 0) -> int:
    """Write ``n`` records to ``path`` (JSONL, buffered writes); returns the bytes written."""
    size = 0
    with path.open("w", encoding="utf-8") as f:
        buf: list[str] = []
        for rec in records(n, seed):
            buf.append(json.dumps(rec, separators=(",", ":")) + "\n")
            if len(buf) == 4096:
                chunk = "".join(buf)
                size += len(chunk)
                f.write(chunk)
                buf = []
        chunk = "".join(buf)
        size += len(chunk)
        f.write(chunk)
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    size = write(args.out, args.n, args.seed)
    print(f"{args.n} records, {size / 2**20:.1f} MiB -> {args.out}")


if __name__ == "__main__":
    main()
