"""Failure modes on hand-built rollouts with known reasons: errors apart from honest failures, reasons grouped into
classes, failed components, shares per source, examples from several sources; the report shows them first."""

from __future__ import annotations

import pytest

from crossgym.eval.failures import failure_modes, reason_class
from crossgym.eval.metrics import compute_metrics, task_source
from crossgym.eval.report import pick_samples, write_report
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec


def _r(tid: str, source: str, verdict: Verdict, text: str = "reply") -> Rollout:
    task = Task(id=tid, prompt="p", answer=None, verifier=VerifierSpec("json_answer"), metadata={"source": source})
    return Rollout(task=task, completion=Completion.from_text(text), verdict=verdict)


def _comps(value: float) -> dict[str, float]:
    return {"format": 1.0, "value": value}


def _rollouts() -> list[Rollout]:
    return [
        _r("a1", "arith", Verdict.ok(0.5, passed=False, reason="answer 12 (expected 7)", components=_comps(0.0)),
           "the answer is 12"),
        _r("a2", "arith", Verdict.ok(0.5, passed=False, reason="answer -3.5 (expected 40)", components=_comps(0.0))),
        _r("a3", "arith", Verdict.ok(1.0, reason="right", components=_comps(1.0))),
        _r("a3", "arith", Verdict.ok(0.5, passed=False, reason="answer 1e3 (expected 2)", components=_comps(0.5))),
        _r("l1", "logic", Verdict.ok(0.5, passed=False, reason="answer 0 (expected 1)", components=_comps(0.0))),
        _r("l2", "logic", Verdict.ok(0.0, passed=False, reason="no 'answer' key in {\"x\": 1}")),
        _r("l3", "logic", Verdict.ok(0.0, passed=False, reason="no 'result' key in {\"y\": 22}")),
        _r("l4", "logic", Verdict.malformed("empty reply"), ""),
        _r("l5", "logic", Verdict.timeout(5.0)),
        _r("a4", "arith", Verdict.timeout(2.5)),
        _r("a5", "arith", Verdict.exception("ZeroDivisionError: division by zero\nTraceback ...")),
    ]


def test_reason_classes_strip_numbers_and_quoted_values():
    assert reason_class("answer 12 (expected 7)") == reason_class("answer -3.5 (expected 40)") \
        == "answer <n> (expected <n>)"
    assert reason_class("no 'answer' key in {\"x\": 1}") == "no <s> key in {<s>: <n>}"
    assert reason_class("verification exceeded 2.5 s") == "verification exceeded <n> s"
    assert reason_class("v2 of test_1 failed at 0x1f") == "v2 of test_1 failed at <n>"  # names keep their digits
    assert reason_class("first line\nsecond") == "first line" and reason_class("") == "(no reason given)"


def test_failures_grouped_by_kind_reason_and_component():
    fm = failure_modes(_rollouts(), task_source)
    assert (fm["n_rollouts"], fm["failed"], fm["honest_failures"], fm["errors_total"]) == (11, 10, 6, 4)
    assert fm["by_kind"] == {"fail": 6, "timeout": 2, "malformed": 1, "exception": 1}
    top = fm["failures"]["modes"][0]
    assert top["reason"] == "answer <n> (expected <n>)" and top["count"] == 4
    assert top["share"] == pytest.approx(4 / 11)
    assert top["by_source"] == {"arith": {"count": 3, "share": pytest.approx(3 / 6)},
                                "logic": {"count": 1, "share": pytest.approx(1 / 5)}}
    assert {e["source"] for e in top["examples"]} == {"arith", "logic"}  # examples from both sources
    first = top["examples"][0]
    assert first == {"task": "a1", "source": "arith", "reward": 0.5, "completion": "the answer is 12",
                     "reason": "answer 12 (expected 7)"}
    assert fm["failures"]["modes"][1] == {**fm["failures"]["modes"][1], "reason": "no <s> key in {<s>: <n>}",
                                          "count": 2}
    errors = {(m["kind"], m["reason"]): m["count"] for m in fm["errors"]["modes"]}
    assert errors == {("timeout", "verification exceeded <n> s"): 2, ("malformed", "empty reply"): 1,
                      ("exception", "ZeroDivisionError: division by zero"): 1}
    # whose failure: the timeouts and the exception are the infrastructure's (masked in training), the rest the model's
    assert fm["by_fault"] == {"infra": 3, "model": 7}
    assert {m["kind"]: m["fault"] for m in fm["errors"]["modes"]} == {"timeout": "infra", "exception": "infra",
                                                                      "malformed": "model"}
    comps = {(m["verifier"], m["component"]): m["count"] for m in fm["components"]["modes"]}
    # value at 0 in a1, a2, l1; at 0.5 in a3's failure, below the 1.0 the same task reached: 4; format never failed
    assert comps == {("json_answer", "value"): 4}


def test_metrics_and_report_put_failure_modes_first(tmp_path):
    rollouts = _rollouts()
    m = compute_metrics(rollouts)
    assert m["failure_modes"]["failed"] == 10
    text = write_report(tmp_path, m, rollouts, run_info={"model": "tiny", "engine": "hf", "environment": None}).read_text()
    assert text.index("Failure modes") < text.index("<h2>Summary")
    assert "answer &lt;n&gt; (expected &lt;n&gt;)" in text and "ZeroDivisionError" in text
    assert "null" not in text and "&quot;tiny&quot;" not in text  # the header shows values, not JSON
    assert "Wilson" in text and "bootstrap" in text


def test_sample_rollouts_hold_passes_failures_and_errors_from_several_sources():
    picked = pick_samples(_rollouts(), 6)
    assert len(picked) == 6
    assert any(r.verdict.passed for r in picked)
    assert any(r.verdict.error is not None for r in picked)
    assert any(not r.verdict.passed and r.verdict.error is None for r in picked)
    assert {task_source(r) for r in picked} == {"arith", "logic"}


def test_report_writes_a_lone_surrogate_as_its_escape(tmp_path):
    """Issue 20: a completion (or a task id) holding a lone surrogate, as a model served over JSON can return it,
    was stored, but report.html died on it (UnicodeEncodeError at the end of `crossgym eval`, after every rollout
    was made): it is written as its escape."""
    rollouts = [_r("s-\ud800", "arith", Verdict.ok(0.0, passed=False, reason="answer 1 (expected 2)"),
                   "the answer is 1 \ud800"), *_rollouts()]
    text = write_report(tmp_path, compute_metrics(rollouts), rollouts, run_info={"model": "tiny"}).read_text()
    assert "s-\\ud800" in text
