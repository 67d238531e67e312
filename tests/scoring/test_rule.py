"""The reward rule: one home for safe verify, on_error, task_weight, extra terms and their metric names."""

from __future__ import annotations

import math

import pytest

from crossgym.protocol import Completion, ConfigError, Task, Verdict, VerifierSpec
from crossgym.scoring import RewardRule, extra_key, safe_verify
from crossgym.scoring.metrics import MALFORMED, PASSED, REWARD, TASK_REWARD, VERIFIER_ERROR


class _Run:  # the RunConfig fields the rule reads
    def __init__(self, verifiers=(), on_error=0.0, task_weight=1.0):  # type: ignore[no-untyped-def]
        from crossgym.config import RunConfig

        self.cfg = RunConfig.model_validate({
            "model": "m", "tasks": {"source": "arithmetic"}, "on_error": on_error, "task_weight": task_weight,
            "verifiers": list(verifiers)})


def _task(answer: object = "4") -> Task:
    return Task(id="t", prompt="2+2?", answer=answer, verifier=VerifierSpec("exact_match"))


def test_task_term_weighted_and_extra_terms_added():
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}, "weight": 0.5}], task_weight=2.0).cfg
    rule = RewardRule.from_run(run)
    s = rule.score(_task(), Completion.from_text("4"))
    assert s.extra_verdicts["length"].error is None and s.extras == {"length": 1.0}
    assert s.task_reward == 1.0 and s.reward == 2.0 * 1.0 + 0.5 * 1.0
    long = rule.score(_task(), Completion.from_text("4 is the sum"))
    assert long.extras == {"length": 0.0} and long.reward == 0.0  # exact_match fails too
    assert s.metrics[REWARD] == s.reward and s.metrics[TASK_REWARD] == 1.0 and s.metrics[PASSED] == 1.0
    assert extra_key("length") in s.metrics


def test_a_verifier_used_twice_gets_its_index_in_the_name():
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}}, {"name": "length", "params": {"max": 9, "unit": "chars"}},
                {"name": "format", "params": {}}]).cfg
    names = [t.name for t in RewardRule.from_run(run).extras]
    assert names == ["length_0", "length_1", "format"]


class _Raises:
    name = "raises"

    def verify(self, task, completion):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")


class _Returns:
    name = "returns"

    def __init__(self, value):  # type: ignore[no-untyped-def]
        self.value = value

    def verify(self, task, completion):  # type: ignore[no-untyped-def]
        return self.value


@pytest.mark.parametrize("verifier", [_Raises(), _Returns(0.5), _Returns(Verdict(reward=math.nan, passed=True)),
                                      _Returns(Verdict(reward=math.inf, passed=True))])
def test_a_broken_verifier_is_an_exception_verdict(verifier):
    v = safe_verify(verifier, _task(), Completion.from_text("4"))
    assert v.error_kind == "exception" and not v.passed and v.reward == 0.0


def test_on_error_scores_verifier_errors_but_malformed_keeps_its_reward():
    rule = RewardRule(on_error=-1.0, task_weight=1.0)
    err = rule.combine(Verdict.timeout(1.0), {})
    assert err.reward == -1.0 and err.metrics[VERIFIER_ERROR] == 1.0
    bad = rule.combine(Verdict.malformed("no answer"), {})
    assert bad.reward == 0.0 and bad.metrics[MALFORMED] == 1.0 and bad.metrics[VERIFIER_ERROR] == 0.0


def test_on_error_none_masks_a_term_and_leaves_it_out_of_the_sum():
    rule = RewardRule(on_error="none", task_weight=1.0)
    s = rule.combine(Verdict.exception("down"), {})
    assert s.reward is None and s.task_reward is None  # every term masked: the sample is masked
    assert REWARD not in s.metrics and TASK_REWARD not in s.metrics and s.metrics[VERIFIER_ERROR] == 1.0
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}, "weight": 0.5}], on_error="none").cfg
    rule = RewardRule.from_run(run)
    s = rule.combine(Verdict.timeout(1.0), {"length": Verdict.ok(1.0)})
    assert s.task_reward is None and s.reward == 0.5  # as TRL sums columns with NaN left out
    with pytest.raises(ConfigError, match="on_error 'none' cannot be honoured by verl"):
        rule.numeric("verl")


def test_score_error_scores_every_term_on_error():
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}, "weight": 0.5}], on_error=-1.0, task_weight=2.0).cfg
    s = RewardRule.from_run(run).score_error("no prompt prefix")
    assert s.reward == pytest.approx(-1.0 * 2.0 + -1.0 * 0.5) and s.verdict.error_kind == "exception"


def test_an_unknown_verifier_is_an_exception_verdict_not_a_raise():
    task = Task(id="t", prompt="p", answer=1, verifier=VerifierSpec("no_such_verifier"))
    s = RewardRule().score(task, Completion.from_text("1"))
    assert s.verdict.error_kind == "exception" and "no_such_verifier" in s.verdict.reason


def test_score_many_equals_score_one_by_one():
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}, "weight": 0.5}]).cfg
    rule = RewardRule.from_run(run)
    tasks = [_task("4"), _task("5"), Task(id="m", prompt="p", answer=2, verifier=VerifierSpec("math"))]
    comps = [Completion.from_text(t) for t in ("4", "four!", "\\boxed{2}")]
    assert [s.reward for s in rule.score_many(tasks, comps)] == [rule.score(t, c).reward
                                                                  for t, c in zip(tasks, comps, strict=True)]


def test_rule_round_trips_through_its_dict_and_reads_the_old_openrlhf_shape():
    run = _Run([{"name": "length", "params": {"max": 3, "unit": "chars"}, "weight": 0.5}], on_error=-1.0).cfg
    rule = RewardRule.from_run(run, override=VerifierSpec("exact_match"))
    assert RewardRule.from_dict(rule.to_dict()) == rule
    old = {"on_error": -1.0, "task_weight": 1.0, "extras": [{"name": "length", "params": {"max": 3, "unit": "chars"},
                                                            "weight": 0.5}], "override": ["exact_match", {}]}
    assert RewardRule.from_dict(old) == rule
