"""json_addition: single-digit (or two-digit) addition answered as ``{"answer": N}``, scored by ``json_answer``.

The demo's task. Operand pairs are split once (split_seed) into a train pool and a held-out pool that never
overlap: ``split="train"`` samples the train pool with ``seed``; ``split="heldout"`` walks the held-out pool in order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task
from crossgym.protocol.task import Task

PROMPT = 'What is {a}+{b}? Reply with only a JSON object of the form {{"answer": <int>}} and nothing else.'
#: (operand range, held-out pairs) per digits setting
POOLS = {1: (range(0, 10), 36), 2: (range(10, 50), 400)}


def split_pairs(digits: int = 1, split_seed: int = 1234) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(train pairs, held-out pairs): disjoint, and fixed for a given split_seed."""
    ops, n_held = POOLS[digits]
    pairs = [(a, b) for a in ops for b in ops]
    random.Random(split_seed).shuffle(pairs)
    return pairs[n_held:], pairs[:n_held]


def json_addition(n: int | None = None, seed: int = 0, split: str = "train", digits: int = 1,
                  split_seed: int = 1234, system_prompt: str | None = None) -> Iterator[Task]:
    """Addition tasks for the JSON-answer demo (n defaults to 100 for train, the whole pool for heldout)."""
    src = "json_addition"
    check_choice(split, "split", src, ("train", "heldout"))
    check_int(digits, "digits", src, lo=1, hi=2)
    check_int(seed, "seed", src, lo=0)
    train, held = split_pairs(digits, split_seed)
    pool = train if split == "train" else held
    count = check_count(n if n is not None else (100 if split == "train" else len(pool)), src)
    rng = random.Random(seed + (0 if split == "train" else 99991))
    for i in range(count):
        a, b = rng.choice(pool) if split == "train" else pool[i % len(pool)]
        yield make_task(src, i, seed, PROMPT.format(a=a, b=b), a + b, "json_answer", system=system_prompt,
                        tag=f"{split}-d{digits}", metadata={"a": a, "b": b, "split": split, "digits": digits})
