"""Whose failure a Verdict is, once: the infrastructure's (the reward measures nothing: mask the sample) or the
model's (the reward is real evidence about the policy, zero included).

- ``infra``: the verifier raised, could not be built or returned garbage, timed out, its sandbox failed, or the
  environment broke in reset or step (an ``exception`` or ``timeout`` Verdict, or any error kind but
  ``malformed``). The scoring rule gives these ``on_error`` (``none``: masked), and a NeMo Gym reply says
  ``mask_sample: true``.
- ``model``: the completion was judged and did not pass: a wrong answer, or malformed output (a ``malformed``
  Verdict is the completion's fault: it keeps its own reward, never masked, so garbage is never excused).
- ``none``: it passed.

:func:`fault` is the one place this is decided; the scoring rule, every record writer (eval's store, training's
rollouts.jsonl, verify-batch --out), every serve reply and eval's failure modes call it. :func:`cause` names the
part that failed, for people and for NeMo Gym's ``failure_kind`` vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from crossgym.protocol.task import Verdict

Fault = Literal["infra", "model", "none"]
Cause = Literal["verifier_exception", "verifier_timeout", "sandbox", "environment", "malformed", "wrong"]
FAULTS: tuple[Fault, ...] = ("infra", "model", "none")
#: the episode driver's and serve's "environment 'name' reset failed / step N failed: ..."
_ENVIRONMENT = re.compile(r"environment '[^']*' (?:reset|step \d+) failed\b")
#: the code verifiers' "sandbox: ..." (as raised: "RuntimeError: sandbox: ..."; from a group call: "sandbox: ...")
_SANDBOX = re.compile(r"(?:[A-Za-z_][\w.]*: )?sandbox: ")
#: the key a record's (and a serve reply's) verdict object carries the fault under
FAULT_KEY = "fault"

__all__ = ["FAULTS", "FAULT_KEY", "Cause", "Fault", "cause", "fault", "fault_of_dict", "is_infra", "with_fault"]


def is_infra(verdict: Verdict) -> bool:
    """Whether the verdict measures nothing about the completion (the verifier, its sandbox or the environment
    failed): every error kind except ``malformed``."""
    return verdict.error is not None and verdict.error_kind != "malformed"


def fault(verdict: Verdict) -> Fault:
    """``infra``, ``model`` or ``none`` (see the module doc)."""
    if is_infra(verdict):
        return "infra"
    return "none" if verdict.passed and verdict.error is None else "model"


def cause(verdict: Verdict) -> Cause | None:
    """What failed: ``verifier_exception``, ``verifier_timeout``, ``sandbox`` (the code sandbox could not run the
    harness), ``environment`` (reset or step raised), ``malformed``, ``wrong``; None when it passed."""
    kind = fault(verdict)
    if kind == "none":
        return None
    if kind == "model":
        return "malformed" if verdict.error_kind == "malformed" else "wrong"
    if verdict.error_kind == "timeout":
        return "verifier_timeout"
    detail = (verdict.error or "").split(":", 1)[-1].strip()
    if _ENVIRONMENT.match(detail):
        return "environment"
    if _SANDBOX.match(detail):
        return "sandbox"
    return "verifier_exception"


def fault_of_dict(doc: Any) -> Fault | None:
    """The fault of a verdict as JSON (``Verdict.to_dict()``); None when it is not one."""
    if not isinstance(doc, Mapping):
        return None
    error = doc.get("error")
    if error is not None and not isinstance(error, str):
        return None
    return fault(Verdict(reward=0.0, passed=bool(doc.get("passed", False)), error=error))


def with_fault(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict's JSON with its ``fault`` (what every record and serve reply writes)."""
    out = dict(doc)
    kind = fault_of_dict(doc)
    if kind is not None:
        out[FAULT_KEY] = kind
    return out
