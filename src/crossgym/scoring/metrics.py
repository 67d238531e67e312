"""The one metric-naming scheme: per-sample values every backend logs under the same keys (and averages per step),
so a dashboard does not change when a run switches stacks.

TRL gets them through ``log_metric`` (one call per sample: TRL averages the values of a step), veRL as keys of the
reward dict (its reward_extra_info), OpenRLHF as ``extra_logs``. Extra verifiers are ``crossgym/extra/<term>``
where ``<term>`` is the name ``RewardRule.from_run`` gave the term (unique within a run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crossgym.protocol.task import Verdict

PREFIX = "crossgym/"
#: the weighted reward the trainer receives (task_weight x task term + sum of weight x extra term)
REWARD = "crossgym/reward"
#: the task verifier's term (Verdict.reward, or on_error for a verifier error)
TASK_REWARD = "crossgym/task_reward"
PASSED = "crossgym/passed"
MALFORMED = "crossgym/malformed"
#: a verifier error or timeout (scored on_error): the verifier's fault, not the completion's
VERIFIER_ERROR = "crossgym/verifier_error"
#: the keys every sample has, whatever the verifiers (extra terms add ``extra_key(name)``)
METRIC_KEYS = (REWARD, TASK_REWARD, PASSED, MALFORMED, VERIFIER_ERROR)


def extra_key(term: str) -> str:
    """The metric key of an extra term's reward."""
    return f"{PREFIX}extra/{term}"


def verdict_flags(verdict: Verdict) -> dict[str, float]:
    """passed / malformed / verifier_error (an infrastructure fault, crossgym.scoring.failure) as 0.0 or 1.0."""
    from crossgym.scoring.failure import is_infra

    kind = verdict.error_kind
    return {PASSED: float(bool(verdict.passed)), MALFORMED: float(kind == "malformed"),
            VERIFIER_ERROR: float(is_infra(verdict))}


def sample_metrics(verdict: Verdict, reward: float | None, task_reward: float | None,
                   extras: dict[str, float | None]) -> dict[str, float]:
    """Every metric of one sample; a masked value (None, on_error "none") is left out, so it is not averaged in."""
    out = verdict_flags(verdict)
    if reward is not None:
        out[REWARD] = float(reward)
    if task_reward is not None:
        out[TASK_REWARD] = float(task_reward)
    for name, value in extras.items():
        if value is not None:
            out[extra_key(name)] = float(value)
    return out
