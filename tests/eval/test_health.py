"""Health checks on hand-built rollouts: truncation from token ids and max_tokens, empty and repetitive completions,
verifier error rate, zero-variance groups, and reward earned by format while the task stays unsolved."""

from __future__ import annotations

import pytest

from crossgym.eval.health import health_checks
from crossgym.eval.metrics import compute_metrics
from crossgym.eval.report import write_report
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec


def _r(tid: str, verdict: Verdict, *, text: str = "an answer", n_tokens: int | None = 5, max_tokens: int = 8,
       env_truncated: bool = False) -> Rollout:
    task = Task(id=tid, prompt="p", answer=None, verifier=VerifierSpec("json_answer"))
    ids = None if n_tokens is None else tuple(range(n_tokens))
    prov = {"schema": 2, "source": "eval", "sampling": {"max_tokens": max_tokens}}
    if env_truncated:
        prov["env_truncated"] = True
    return Rollout(task=task, completion=Completion(messages=({"role": "assistant", "content": text},), token_ids=ids),
                   verdict=verdict, provenance=prov)


def _format_only() -> Verdict:  # the format component earns the reward, the task's value never
    return Verdict.ok(0.5, passed=False, components={"format": 0.5, "value": 0.0}, reason="wrong value")


def test_health_counts_and_warnings():
    rollouts = [
        _r("t1", _format_only(), n_tokens=8), _r("t1", _format_only(), n_tokens=8),      # both at the cap
        _r("t2", _format_only(), n_tokens=3), _r("t2", _format_only(), text="   "),      # empty
        _r("t3", Verdict.timeout(5), n_tokens=None), _r("t3", _format_only(), text="ab" * 300),  # runaway
        _r("t4", Verdict.ok(1.0, components={"format": 0.5, "value": 0.5}), env_truncated=True),
        _r("t4", Verdict.ok(1.0, components={"format": 0.5, "value": 0.5})),
        _r("t5", Verdict.exception("boom")),
    ]
    h = health_checks(rollouts)
    assert h["n_rollouts"] == 9
    assert h["truncated"] == {"count": 2, "rate": pytest.approx(2 / 8), "known": 8, "max_tokens": [8]}
    assert h["env_truncated"]["count"] == 1
    assert h["empty"]["count"] == 1 and h["repetitive"]["count"] == 1
    assert h["verifier_errors"] == {"count": 2, "rate": pytest.approx(2 / 9)}
    z = h["zero_variance_groups"]  # t1, t2 all 0.5; t4 all 1.0; t3 0 vs 0.5 varies; t5 has one sample
    assert (z["groups"], z["count"], z["all_pass"], z["all_fail"]) == (4, 3, 1, 2)
    u = h["reward_without_pass"]
    assert u["share"] == pytest.approx(2.5 / 4.5) and u["pass_rate"] == pytest.approx(2 / 9)
    assert list(u["components"]) == ["json_answer.format"] and u["flag"] is False  # 22% pass: not flagged
    text = "\n".join(h["warnings"])
    assert "25% of completions hit max_tokens (8)" in text and "11% of completions are empty" in text
    assert "repeat themselves" in text and "verifier erred or timed out on 22%" in text
    assert "75% of tasks score all their samples alike" in text and "use easier tasks" in text


def test_format_without_the_task_is_flagged_and_shown_in_the_report(tmp_path):
    rollouts = [_r(f"t{i}", _format_only()) for i in range(10)] + [_r("t0", Verdict.ok(0.0))]
    rollouts += [_r("t1", Verdict.ok(0.0))]
    h = health_checks(rollouts)
    assert h["reward_without_pass"]["flag"] is True and h["reward_without_pass"]["share"] == 1.0
    assert any("learn the format without the task" in w and "json_answer.format" in w for w in h["warnings"])
    assert health_checks([_r("t", Verdict.ok(1.0, components={"format": 1.0})), _r("u", Verdict.ok(0.0))])[
        "warnings"] == []
    m = compute_metrics(rollouts)
    assert m["health"] == h
    page = write_report(tmp_path, m, rollouts).read_text()
    assert "Health checks" in page and "learn the format without the task" in page
    assert page.index("Failure modes") < page.index("Health checks") < page.index("<h2>Summary")


def test_format_never_produced_and_everything_solved_say_what_to_do():
    h = health_checks([_r(f"t{i}", Verdict.malformed("no number")) for i in range(3)] + [_r("t9", Verdict.ok(0.0))])
    assert any(w.startswith("75% of completions are malformed") for w in h["warnings"])
    h = health_checks([_r(f"t{i}", Verdict.ok(1.0)) for i in range(20)])
    assert h["warnings"] == ["100% of rollouts pass: little is left to learn from these tasks; use harder ones"]


def test_truncation_is_unknown_without_token_ids():
    h = health_checks([_r("t", Verdict.ok(1.0), n_tokens=None)])
    assert h["truncated"] == {"count": 0, "rate": 0.0, "known": 0, "max_tokens": []}
