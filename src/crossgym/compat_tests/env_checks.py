"""Environment conformance, wrapping ``crossgym.environments.conformance`` (reset/step contract, done semantics,
determinism, JSON round trip, scripted rewards, the env's own completion(), concurrency); and the scripted
episodes of those cases as multi-turn samples for reward parity."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from crossgym.compat_tests.corpus import Sample
from crossgym.compat_tests.results import CheckResult

log = logging.getLogger(__name__)


def check_names() -> list[str]:
    from crossgym.environments.conformance import CHECKS

    return list(CHECKS)


def builtin_env_cases() -> list[Any]:
    """One EnvCase per built-in environment (empty, with a warning, when a case cannot be built here)."""
    from crossgym.environments.conformance import builtin_cases

    try:
        return list(builtin_cases())
    except Exception as exc:  # e.g. an optional task source is missing
        log.warning("built-in environment cases unavailable: %s", exc)
        return []


def check_environment(case: Any, checks: Sequence[str] | None = None) -> dict[str, CheckResult]:
    """Each conformance check on one EnvCase, as CheckResults."""
    from crossgym.environments.conformance import run_conformance

    report = run_conformance(case, list(checks) if checks else None)
    out = {}
    for row in report["checks"]:
        res = CheckResult(row["check"], checked=1, extra={"seconds": row.get("seconds")})
        if not row["ok"]:
            res.fail(str(row["error"]))
        out[row["check"]] = res
    return out


def episode_samples(cases: Sequence[Any], verifiers: Sequence[str] | None = None) -> list[Sample]:
    """The correct and wrong scripted episodes of each case (only cases scored by ``verifiers``, when given) as
    (task, multi-turn completion) samples."""
    from crossgym.environments.conformance import run_episode

    out = []
    for case in cases:
        if verifiers is not None and case.task.verifier.name not in verifiers:
            continue
        for label, actions in (("correct", case.correct), ("wrong", case.wrong)):
            try:
                ep = run_episode(case.make_env(), case.task, actions, seed=case.seed, score=False)
            except Exception as exc:  # conformance reports it; parity just has one sample fewer
                log.warning("episode %s/%s failed: %s", case.name, label, exc)
                continue
            out.append(Sample(source="episode", id=f"{case.name}:{label}", task=case.task,
                              completion=ep.completion, note=f"scripted {label} episode of {case.name}"))
    return out
