"""The scoring core: one framework-free home for the rule "Verdict -> reward", its metric names, provenance and
the rollout record format. Every reward path (TRL reward functions and the generated plain-TRL script, veRL's
reward module and agent loop, OpenRLHF's reward file and agent, every serve route, verify_many, eval) calls it, so
a reward means the same on every backend by construction, not by copies checked by tests.

- ``rule``: :class:`RewardRule` (on_error, task_weight, extra terms) -> :class:`Scored`; ``safe_verify``, ``judge``.
- ``metrics``: the per-sample metric keys every backend logs (``crossgym/passed``, ``crossgym/extra/<name>``...).
- ``provenance``: :class:`Provenance`, typed and versioned; reads every shape crossgym ever wrote.
- ``records``: the rollout record writer and reader (`crossgym reverify` reads every file any command writes).
- ``failure``: whose failure a Verdict is (``fault``: infra / model / none; ``cause``): what masks a sample.
"""

from __future__ import annotations

from crossgym.scoring.failure import Fault, cause, fault, is_infra
from crossgym.scoring.metrics import METRIC_KEYS, extra_key, sample_metrics
from crossgym.scoring.provenance import PROVENANCE_SCHEMA, Provenance, VerifierRef
from crossgym.scoring.records import (
    RecordWriter,
    append_records,
    dumps_record,
    iter_records,
    provenance_of,
    read_rollouts,
    rollout_record,
)
from crossgym.scoring.rule import (
    ExtraTerm,
    OnError,
    RewardRule,
    Scored,
    extra_task,
    judge,
    reward_from_verdict,
    safe_verify,
)

__all__ = [
    "METRIC_KEYS", "PROVENANCE_SCHEMA", "ExtraTerm", "Fault", "OnError", "Provenance", "RecordWriter", "RewardRule",
    "Scored", "VerifierRef", "append_records", "cause", "dumps_record", "extra_key", "extra_task", "fault", "is_infra",
    "iter_records", "judge", "provenance_of", "read_rollouts", "reward_from_verdict", "rollout_record", "safe_verify",
    "sample_metrics",
]
