"""Where a synthesized task came from: model, engine, seeds, prompt hash, time, verifier version, the checks it passed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.interfaces import Verifier
from crossgym.protocol.task import Task, Verdict

#: clip stored reference solutions and raw replies to this many characters
MAX_TEXT = 4_000


def now() -> str:
    """UTC time, ISO 8601 to the second."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def run_info(*, family: str, model: str, engine: str, verifier: Verifier, params: SamplingParams,
             solve_params: SamplingParams, seed: int, shots: int) -> dict[str, Any]:
    """What every task of one synth run shares."""
    from crossgym import __version__

    return {"family": family, "model": model, "engine": engine, "crossgym": __version__,
            "verifier": {"name": verifier.name, "version": str(verifier.version)},
            "sampling": params.to_dict(), "solve_sampling": solve_params.to_dict(), "seed": seed, "shots": shots}


def task_record(run: dict[str, Any], *, attempt: int, seeds: Sequence[Task], prompt_sha256: str, solution: str,
                wrong: str, solution_verdict: Verdict, wrong_verdict: Verdict) -> dict[str, Any]:
    """The ``metadata["synth"]`` of a kept task."""
    return {**run, "created": now(), "attempt": attempt, "seed_ids": [t.id for t in seeds],
            "prompt_sha256": prompt_sha256, "reference_solution": clip(solution), "wrong_answer": clip(wrong),
            "solution_verdict": solution_verdict.to_dict(), "wrong_verdict": wrong_verdict.to_dict()}
