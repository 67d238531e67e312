"""The reasoning-gym bridge: any reasoning-gym dataset (offline, procedural) as crossgym tasks scored by the
``reasoning_gym`` verifier, i.e. by the dataset's own ``score_answer``."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from crossgym.environments.sources.common import check_count, check_int
from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task, VerifierSpec
from crossgym.verifiers.reasoning_gym import INSTALL, jsonable


def _rg() -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise BackendUnavailable("reasoning_gym", "reasoning-gym is not installed", INSTALL) from None
    return reasoning_gym


def dataset_names() -> list[str]:
    """Every dataset reasoning-gym registers."""
    from reasoning_gym.factory import DATASETS

    _rg()
    return sorted(DATASETS)


def reasoning_gym(dataset: str = "basic_arithmetic", n: int = 100, seed: int = 0,
                  config: Mapping[str, Any] | None = None, system_prompt: str | None = "default",
                  extract: str = "reasoning_gym", start: int = 0) -> Iterator[Task]:
    """Tasks ``start..start+n-1`` of reasoning-gym dataset ``dataset`` built with ``config`` (its difficulty knobs)
    and ``seed``. ``system_prompt``: a reasoning-gym prompt name (default, simple, direct, DeepSeekZero,
    chain_of_draft), literal text, or None."""
    rg = _rg()
    from reasoning_gym.factory import DATASETS
    from reasoning_gym.utils import SYSTEM_PROMPTS

    src = "reasoning_gym"
    check_count(n, src)
    check_int(seed, "seed", src, lo=0)
    check_int(start, "start", src, lo=0)
    if dataset not in DATASETS:
        close = difflib.get_close_matches(str(dataset), list(DATASETS), n=1)
        raise ConfigError(f"task source 'reasoning_gym': unknown dataset {dataset!r}",
                          fix=f"did you mean {close[0]!r}?" if close else "see reasoning_gym.factory.DATASETS")
    full_config = {**dict(config or {}), "seed": seed, "size": max(start + n, 1)}
    try:
        ds = rg.create_dataset(dataset, **full_config)
    except (TypeError, ValueError, AssertionError) as exc:
        raise ConfigError(f"task source 'reasoning_gym': cannot build {dataset!r} with config {dict(config or {})}: "
                          f"{exc}", fix="use the fields of the dataset's config dataclass") from None
    system = SYSTEM_PROMPTS.get(system_prompt, system_prompt) if system_prompt else None
    params = {} if extract == "reasoning_gym" else {"extract": extract}
    spec = VerifierSpec("reasoning_gym", params)
    for i in range(start, start + n):
        entry = ds[i]
        prompt = ([Message(role="system", content=system)] if system else []) + \
            [Message(role="user", content=str(entry["question"]))]
        meta = {"family": "reasoning_gym", "reasoning_gym": {"dataset": dataset, "config": jsonable(full_config),
                                                             "index": i, "entry": jsonable(entry)}}
        yield Task(id=f"rg-{dataset}-{seed}-{i}", prompt=tuple(prompt), answer=jsonable(entry.get("answer")),
                   verifier=spec, metadata=meta)
