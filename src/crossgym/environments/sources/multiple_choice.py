"""multiple_choice: questions with one right option and generated distractors, scored by ``multiple_choice``.

Kinds: arithmetic (near-miss distractors), capitals, unit conversion, and "which is largest". ``difficulty`` sets
the number of options (1: 3, 2: 4, 3: 5) and how close the distractors are.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator

from crossgym.environments.sources.common import check_count, check_int, make_task, rng_for
from crossgym.environments.toolsets import CAPITALS, LENGTH
from crossgym.protocol.task import Task

Question = Callable[[random.Random, int, int], tuple[str, str, list[str]]]


def _numeric_options(rng: random.Random, right: int, k: int, spread: int) -> list[str]:
    opts = {right}
    while len(opts) < k:
        delta = rng.choice([-1, 1]) * rng.randint(1, spread)
        opts.add(right + delta)
    return [str(o) for o in opts]


def _arith(rng: random.Random, k: int, difficulty: int) -> tuple[str, str, list[str]]:
    a, b = rng.randint(3, 9 + 10 * difficulty), rng.randint(3, 9 + 10 * difficulty)
    right = a * b
    return f"What is {a} × {b}?", str(right), _numeric_options(rng, right, k, max(2, 12 // difficulty))


def _capital(rng: random.Random, k: int, difficulty: int) -> tuple[str, str, list[str]]:
    country = rng.choice(sorted(CAPITALS))
    right = CAPITALS[country]
    others = rng.sample(sorted(set(CAPITALS.values()) - {right}), k - 1)
    return f"What is the capital of {country}?", right, [right, *others]


def _units(rng: random.Random, k: int, difficulty: int) -> tuple[str, str, list[str]]:
    value = rng.randint(1, 9) * rng.choice([1, 10, 100])
    src, dst = rng.choice([("km", "m"), ("m", "cm"), ("cm", "mm"), ("m", "mm"), ("km", "cm")])
    right = round(value * LENGTH[src] / LENGTH[dst])
    opts = {right}
    for f in (10, 100, 0.1, 1000, 0.01):
        if len(opts) >= k:
            break
        cand = round(right * f)
        if cand > 0:
            opts.add(cand)
    while len(opts) < k:
        opts.add(right + rng.randint(1, 9))
    return f"How many {dst} are in {value} {src}?", str(right), [str(o) for o in opts]


def _largest(rng: random.Random, k: int, difficulty: int) -> tuple[str, str, list[str]]:
    spread = 1000 // difficulty
    base = rng.randint(100, 5000)
    nums = rng.sample(range(base, base + spread), k)
    if difficulty >= 2:  # fractions of a unit make it harder to eyeball
        vals = [f"{n / 100:.2f}" for n in nums]
        right = f"{max(nums) / 100:.2f}"
    else:
        vals = [str(n) for n in nums]
        right = str(max(nums))
    return "Which of these numbers is the largest?", right, vals


KINDS: tuple[Question, ...] = (_arith, _capital, _units, _largest)


def multiple_choice(n: int = 100, seed: int = 0, difficulty: int = 1, system_prompt: str | None = None) -> Iterator[Task]:
    """Multiple-choice questions with ``difficulty + 2`` options."""
    src = "multiple_choice"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    k = difficulty + 2
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        question, right, options = rng.choice(KINDS)(rng, k, difficulty)
        rng.shuffle(options)
        letters = string.ascii_uppercase[:len(options)]
        letter = letters[options.index(right)]
        listing = "\n".join(f"{ltr}. {opt}" for ltr, opt in zip(letters, options, strict=True))
        prompt = f"{question}\n{listing}\nAnswer with the letter of the correct option inside <answer></answer>."
        yield make_task(src, i, seed, prompt, {"answer": letter, "options": options}, "multiple_choice",
                        tag=f"d{difficulty}", system=system_prompt, metadata={"difficulty": difficulty})
