"""Helpers shared by the generators: parameter checks, seeded RNGs, and task construction."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolSpec
from crossgym.protocol.task import Task, VerifierSpec

#: the most tasks one source makes (its ``n``) and the most ``crossgym.load_tasks`` holds in memory at once: a
#: generated Task takes a few KiB, so a million is a few GiB. ``crossgym tasks`` streams, but refuses more too.
MAX_TASKS = 1_000_000


def check_int(value: Any, name: str, source: str, *, lo: int = 0, hi: int | None = None) -> int:
    """``value`` as an int in [lo, hi], or a ConfigError naming the source and param."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"task source {source!r}: {name} must be an integer {rng}, got {value!r}",
                          fix=f"pass {name}=<int in {rng}>")
    return value


def check_count(value: Any, source: str, name: str = "n") -> int:
    """How many tasks a source makes: an int in 0..MAX_TASKS (one line naming the field and the bound)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_TASKS:
        raise ConfigError(f"task source {source!r}: {name} must be at most {MAX_TASKS} (the most one source makes), "
                          f"got {value}", fix=f"pass {name} <= {MAX_TASKS}; other seeds give more tasks")
    return check_int(value, name, source, lo=0, hi=MAX_TASKS)


def check_choice(value: Any, name: str, source: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"task source {source!r}: {name} must be one of {', '.join(choices)}, got {value!r}",
                          fix=f"pass {name}={choices[0]!r}")
    return str(value)


def rng_for(family: str, seed: int, *salt: Any) -> random.Random:
    """A Random seeded from the family, seed and salt (stable across processes and Python versions)."""
    key = "|".join([family, str(seed), *map(str, salt)]).encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def make_task(family: str, index: int, seed: int, prompt: str | list[Message], answer: Any, verifier: str,
              params: dict[str, Any] | None = None, *, env: str = "single_turn", tools: tuple[ToolSpec, ...] = (),
              metadata: dict[str, Any] | None = None, system: str | None = None, tag: str = "") -> Task:
    """A Task with a stable id ``family[-tag]-seed-index`` and ``metadata["family"]`` set."""
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    if isinstance(prompt, str):
        messages.append(Message(role="user", content=prompt))
    else:
        messages.extend(prompt)
    meta = {"family": family, **(metadata or {})}
    task_id = f"{family}{'-' + tag if tag else ''}-{seed}-{index}"
    return Task(id=task_id, prompt=tuple(messages), answer=answer, verifier=VerifierSpec(verifier, dict(params or {})),
                env=env, tools=tools, metadata=meta)
