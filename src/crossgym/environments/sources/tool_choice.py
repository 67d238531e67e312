"""tool_choice: pick and call the right tool among several (the ``utilities`` toolset).

``mode="env"``: a ``tool_use`` episode; the model calls tools, then answers in ``<answer></answer>``, scored by
``numeric`` or ``exact_match`` on the final answer. ``mode="call"``: one reply whose tool call(s) the
``tool_call`` verifier checks (name and arguments), nothing executed. difficulty 1: the right tool and two others;
2: all eight tools; 3: two calls (chained in env mode: a capital's weather; parallel in call mode).
The tools rebuild from ``metadata["toolset"] = "utilities"`` in any process.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from typing import Any

from crossgym.environments import toolsets as ts
from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.environments.tools import tool_spec
from crossgym.protocol.messages import ToolSpec
from crossgym.protocol.task import Task

#: (question, expected calls [(tool, args)], final answer, answer verifier) for one draw
Draw = tuple[str, list[tuple[str, dict[str, Any]]], Any, str]
WORDS = ["banana", "mississippi", "bookkeeper", "parallel", "committee", "raspberry", "assessment", "coffee"]


def _capital(rng: random.Random) -> Draw:
    country = rng.choice(sorted(ts.CAPITALS))
    return (f"What is the capital of {country}?", [("get_capital", {"country": country})],
            ts.CAPITALS[country], "exact_match")


def _weather(rng: random.Random) -> Draw:
    city = rng.choice(sorted(ts.WEATHER))
    return (f"What is the temperature in {city} today, in degrees Celsius?", [("get_weather", {"city": city})],
            ts.WEATHER[city][0], "numeric")


def _units(rng: random.Random) -> Draw:
    table = rng.choice([ts.LENGTH, ts.MASS, ts.VOLUME])
    src, dst = rng.sample(sorted(table), 2)
    value = rng.randint(2, 250)
    return (f"Convert {value} {src} to {dst}.", [("convert_units", {"value": value, "from_unit": src, "to_unit": dst})],
            ts.convert_units(value, src, dst), "numeric")


def _currency(rng: random.Random) -> Draw:
    src, dst = rng.sample(sorted(ts.RATES), 2)
    amount = rng.randint(5, 500)
    return (f"How much is {amount} {src} in {dst} at today's rates?",
            [("convert_currency", {"amount": amount, "from_currency": src, "to_currency": dst})],
            ts.convert_currency(amount, src, dst), "numeric")  # type: ignore[arg-type]


def _days(rng: random.Random) -> Draw:
    start = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
    end = start + dt.timedelta(days=rng.randint(5, 400))
    return (f"How many days are there from {start.isoformat()} to {end.isoformat()}?",
            [("days_between", {"start": start.isoformat(), "end": end.isoformat()})], (end - start).days, "numeric")


def _letters(rng: random.Random) -> Draw:
    word = rng.choice(WORDS)
    letter = rng.choice(sorted(set(word)))
    return (f"How many times does the letter '{letter}' occur in the word '{word}'?",
            [("count_letter", {"text": word, "letter": letter})], word.count(letter), "numeric")


def _multiply(rng: random.Random) -> Draw:
    a, b = rng.randint(101, 999), rng.randint(101, 999)
    return (f"What is {a} times {b}?", [("multiply", {"a": a, "b": b})], a * b, "numeric")


SINGLE: tuple[Callable[[random.Random], Draw], ...] = (_capital, _weather, _units, _currency, _days, _letters,
                                                         _multiply)


def _chained(rng: random.Random) -> Draw:
    country = rng.choice(sorted(ts.CAPITALS))
    capital = ts.CAPITALS[country]
    return (f"What is the temperature today, in degrees Celsius, in the capital of {country}?",
            [("get_capital", {"country": country}), ("get_weather", {"city": capital})],
            ts.WEATHER[capital][0], "numeric")


def _parallel(rng: random.Random) -> Draw:
    a, b = rng.sample(sorted(ts.WEATHER), 2)
    return (f"What is the weather in {a} and in {b} today?",
            [("get_weather", {"city": a}), ("get_weather", {"city": b})], None, "numeric")


SPECS: dict[str, ToolSpec] = {f.__name__: tool_spec(f) for f in ts.UTILITIES}


def _offer(rng: random.Random, needed: list[str], difficulty: int) -> tuple[ToolSpec, ...]:
    names = sorted(SPECS)
    if difficulty == 1:
        others = rng.sample([n for n in names if n not in needed], 2)
        names = sorted(set(needed) | set(others))
    return tuple(SPECS[n] for n in names)


def tool_choice(n: int = 100, seed: int = 0, difficulty: int = 1, mode: str = "env", max_turns: int = 4,
                system_prompt: str | None = None) -> Iterator[Task]:
    """Questions that need one of several tools (``mode`` env: run them; call: just make the call)."""
    src = "tool_choice"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(mode, "mode", src, ("env", "call"))
    check_int(max_turns, "max_turns", src, lo=2)
    for i in range(n):
        rng = rng_for(src, seed, difficulty, mode, i)
        if difficulty == 3:
            question, calls, final, vname = (_chained if mode == "env" else _parallel)(rng)
        else:
            question, calls, final, vname = rng.choice(SINGLE)(rng)
        tools = _offer(rng, [c[0] for c in calls], difficulty)
        meta: dict[str, Any] = {"toolset": "utilities", "difficulty": difficulty,
                                "expected_calls": [{"name": c, "arguments": a} for c, a in calls]}
        if mode == "env":
            prompt = f"{question} Use the tools, then give the final answer inside <answer></answer>."
            params = {"rel_tol": 1e-4} if vname == "numeric" else {}
            meta["max_turns"] = max_turns
            yield make_task(src, i, seed, prompt, final, vname, params, env="tool_use", tools=tools,
                            tag=f"{mode}-d{difficulty}", system=system_prompt, metadata=meta)
        else:
            answer = [{"name": c, "arguments": a} for c, a in calls]
            prompt = f"{question} Call the right tool{'s' if len(calls) > 1 else ''} to find out."
            yield make_task(src, i, seed, prompt, answer, "tool_call", {}, env="single_turn", tools=tools,
                            tag=f"{mode}-d{difficulty}", system=system_prompt, metadata=meta)
