"""Eval metrics on hand-built rollouts: pass@k, rewards, errors by kind, per source and per verifier."""

from __future__ import annotations

import math

import pytest

from crossgym.eval.metrics import compute_metrics, reward_distribution
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec
from crossgym.rollout.passk import pass_at_k


def _r(task: str, verdict: Verdict, *, source: str = "a", verifier: str = "v1", version: str = "1",
       turns: int = 1) -> Rollout:
    t = Task(id=task, prompt="p", answer=None, verifier=VerifierSpec(verifier), metadata={"source": source})
    return Rollout(task=t, completion=Completion(messages=({"role": "assistant", "content": "x"},),
                                                 token_ids=(1, 2, 3)),
                   verdict=verdict, turns=turns, timings={"generate_s": 1.0, "verify_s": 0.5},
                   provenance={"verifier": {"name": verifier, "version": version}})


def _rollouts() -> list[Rollout]:
    ok, bad = Verdict.ok(1.0), Verdict.ok(0.0)
    return [
        # task t1 (source a, v1): 1 of 4 passes
        _r("t1", ok), _r("t1", bad), _r("t1", bad), _r("t1", Verdict.malformed("no answer")),
        # task t2 (source a, v1): 3 of 4
        _r("t2", ok), _r("t2", ok), _r("t2", ok), _r("t2", Verdict.ok(0.5, passed=False)),
        # task t3 (source b, v2): 0 of 4, with errors of each kind
        _r("t3", Verdict.timeout(5), source="b", verifier="v2"), _r("t3", Verdict.exception("boom"), source="b",
                                                                      verifier="v2", turns=3),
        _r("t3", bad, source="b", verifier="v2"), _r("t3", Verdict.malformed("x"), source="b", verifier="v2"),
    ]


def test_pass_at_k_rewards_and_errors():
    m = compute_metrics(_rollouts())
    assert m["n_tasks"] == 3 and m["n_rollouts"] == 12 and m["samples_per_task"] == {"min": 4, "max": 4}
    for k in (1, 2, 4):
        want = sum(pass_at_k(4, c, k) for c in (1, 3, 0)) / 3
        assert m["pass@k"][str(k)] == pytest.approx(want)
    assert m["pass@1"] == pytest.approx((1 + 3 + 0) / 12)
    assert m["mean_reward"] == pytest.approx((1 + 3 + 0.5) / 12)
    assert m["errors"] == {"timeout": 1, "exception": 1, "malformed": 2, "total": 4, "rate": pytest.approx(4 / 12)}
    assert m["mean_turns"] == pytest.approx(14 / 12) and m["mean_completion_tokens"] == 3
    assert m["timings"]["generate_s"] == pytest.approx(12.0)
    assert m["identical_rewards"] is False


def test_per_source_and_per_verifier():
    m = compute_metrics(_rollouts())
    a, b = m["by_source"]["a"], m["by_source"]["b"]
    assert (a["n_tasks"], a["n_rollouts"], b["n_tasks"]) == (2, 8, 1)
    assert a["pass@1"] == pytest.approx(0.5) and b["pass@1"] == 0.0
    assert b["errors"]["timeout"] == 1 and a["errors"]["malformed"] == 1
    assert m["by_verifier"]["v2"]["versions"] == ["1"] and m["by_verifier"]["v1"]["n_rollouts"] == 8


def test_reward_distribution():
    d = reward_distribution([0.0, 0.0, 0.5, 1.0, math.nan])
    assert d["values"] == {"0": 2, "0.5": 1, "1": 1} and d["nan"] == 1
    assert sum(d["histogram"]["counts"]) == 4 and d["histogram"]["edges"][0] == 0.0
    assert d["histogram"]["edges"][-1] == 1.0
    same = reward_distribution([0.0] * 5)
    assert same["histogram"] == {"edges": [0.0, 0.0], "counts": [5]} and same["std"] == 0.0
    spread = reward_distribution([i / 100 for i in range(100)])
    assert spread["values"] is None and spread["histogram"]["counts"] == [10] * 10
    m = compute_metrics([_r("t", Verdict.ok(0.0)), _r("t", Verdict.ok(0.0))])
    assert m["identical_rewards"] is True


def test_pass1_interval_holds_pass1_when_tasks_have_unequal_samples():
    # one task of 1 passing sample, one of 20 failing: pass@1 is 0.5 (mean of per-task rates), the pooled rate 1/21
    rollouts = [_r("t1", Verdict.ok(1.0))] + [_r("t2", Verdict.ok(0.0)) for _ in range(20)]
    m = compute_metrics(rollouts, ks=[2])  # pass@1 bootstrapped even when k = 1 is not asked for
    ci = m["intervals"]["pass@1"]
    assert m["pass@1"] is None  # (k = 1 not asked for)
    assert ci["method"] == "bootstrap" and (ci["successes"], ci["trials"]) == (1, 21)
    assert ci["low"] <= 0.5 <= ci["high"]
    full = compute_metrics(rollouts)
    assert full["pass@1"] == pytest.approx(0.5)
    assert full["intervals"]["pass@1"]["low"] <= 0.5 <= full["intervals"]["pass@1"]["high"]
    assert (full["intervals"]["pass@1"]["low"], full["intervals"]["pass@1"]["high"]) == pytest.approx(
        (full["intervals"]["pass@k"]["1"]["low"], full["intervals"]["pass@k"]["1"]["high"]))


def test_pass1_interval_is_wilson_with_equal_samples():
    m = compute_metrics(_rollouts())
    assert m["intervals"]["pass@1"]["method"] == "wilson"
