"""Calling a verifier that may break its contract: the one implementation of "safe verify".

A verifier must never raise and must return a Verdict with a finite reward; third-party ones sometimes do not.
``safe_verify`` turns any such failure into an "exception" Verdict (a verifier error, which the reward rule scores
``on_error``), and ``build_verifier`` does the same for a spec that cannot be built. Every path that runs a
verifier (verify_many, serve, the scoring core behind every backend, reverify) calls these.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec

log = logging.getLogger(__name__)

#: the longest reason/error text kept from a broken verifier's exception
MAX_DETAIL = 400


def clip_detail(text: str, n: int = MAX_DETAIL) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def checked(value: Any, what: str = "verify") -> Verdict:
    """``value`` if it is a Verdict with a finite reward, else the "exception" Verdict saying what was wrong."""
    if not isinstance(value, Verdict):
        return Verdict.exception(f"{what} returned {type(value).__name__}, not a Verdict")
    if isinstance(value.reward, bool) or not isinstance(value.reward, (int, float)) or not math.isfinite(value.reward):
        return Verdict.exception(f"{what} returned a non-finite reward {value.reward!r}")
    return value


def safe_verify(verifier: Any, task: Task, completion: Completion) -> Verdict:
    """``verifier.verify`` that never raises: a broken verifier's exception or bad return is an "exception" Verdict."""
    try:
        verdict = verifier.verify(task, completion)
    except Exception as exc:  # a third-party verifier broke its contract: score it as a verifier error
        log.warning("verifier %s raised %s: %s", getattr(verifier, "name", verifier), type(exc).__name__, exc)
        return Verdict.exception(clip_detail(f"verify raised {type(exc).__name__}: {exc}"))
    return checked(verdict)


def build_verifier(spec: VerifierSpec) -> Any:
    """The verifier a spec names, or the "exception" Verdict saying why it cannot be built."""
    from crossgym.api import load_verifier

    try:
        return load_verifier(spec)
    except CrossgymError as exc:
        return Verdict.exception(clip_detail(f"cannot build verifier {spec.name!r}: {exc}"))
    except Exception as exc:  # a broken plugin
        return Verdict.exception(clip_detail(f"verifier {spec.name!r} failed to build: {type(exc).__name__}: {exc}"))


def judge(spec: VerifierSpec, task: Task, completion: Completion) -> Verdict:
    """The Verdict of the verifier ``spec`` names on (task, completion); never raises."""
    verifier = build_verifier(spec)
    if isinstance(verifier, Verdict):
        return verifier
    return safe_verify(verifier, task, completion)
