""""What to do next" (crossgym.eval.advice) on metrics computed from hand-built rollouts of known patterns, and the
report that shows it first, with one chart per source on its own scale."""

from __future__ import annotations

from crossgym.eval.advice import next_steps
from crossgym.eval.metrics import compute_metrics
from crossgym.eval.report import PLOTS, _panel_bins, write_report
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec


def _r(tid: str, source: str, verdict: Verdict, verifier: str = "numeric") -> Rollout:
    task = Task(id=tid, prompt="p", answer=1, verifier=VerifierSpec(verifier), metadata={"source": source})
    return Rollout(task=task, completion=Completion.from_text("x"), verdict=verdict)


def _patterns(rollouts: list[Rollout]) -> list[tuple[str, str]]:
    return [(s["pattern"], s["scope"]) for s in next_steps(compute_metrics(rollouts))]


def test_each_common_pattern_gives_its_line() -> None:
    fail, ok = Verdict.ok(0.0), Verdict.ok(1.0)
    assert _patterns([_r(f"t{i}", "a", fail) for i in range(6)]) == [("none_solved", "all")]
    assert _patterns([_r(f"t{i}", "a", ok) for i in range(6)]) == [("all_solved", "all")]
    malformed = [_r(f"t{i}", "a", Verdict.malformed("no <answer> tag")) for i in range(4)] + [_r("t9", "a", ok)]
    assert _patterns(malformed) == [("format_never_produced", "all")]
    erring = [_r("t0", "a", Verdict.timeout(2.0)), _r("t1", "a", Verdict.exception("ValueError: boom"))] \
        + [_r(f"t{i}", "a", ok if i % 2 else fail) for i in range(2, 12)]
    steps = next_steps(compute_metrics(erring))
    assert [(s["pattern"], s["scope"]) for s in steps] == [("verifier_erroring", "all")]
    assert "1 timeouts, 1 exceptions" in steps[0]["line"] and "`crossgym check numeric`" in steps[0]["line"]
    # a mixed run: nothing common overall
    mixed = [_r(f"t{i}", "a", ok if i % 2 else fail) for i in range(8)]
    assert _patterns(mixed) == [("none", "all")]


def test_a_pattern_of_one_source_is_said_for_that_source_only() -> None:
    ok, fail = Verdict.ok(1.0), Verdict.ok(0.0)
    rollouts = [_r(f"e{i}", "easy", ok) for i in range(6)] + [_r(f"h{i}", "hard", fail) for i in range(6)]
    steps = next_steps(compute_metrics(rollouts))
    assert [(s["pattern"], s["scope"]) for s in steps] == [("none_solved", "hard"), ("all_solved", "easy")]
    assert "'hard'" in steps[0]["line"] and "'easy'" in steps[1]["line"]


def test_panels_use_each_source_s_own_scale() -> None:
    xs_a, width_a, slot_a = _panel_bins([0.0, 0.5, 1.0])
    xs_b, width_b, slot_b = _panel_bins([0.0, 2.0])
    assert xs_a == [0.0, 0.5, 1.0] and xs_b == [0.0, 2.0] and width_b > width_a
    xs_c, _, slot_c = _panel_bins([i / 10 for i in range(30)])  # many distinct values: ten bins over its range
    assert len(xs_c) == 10 and slot_c(0.0) == 0 and slot_c(2.9) == 9


def test_the_report_says_what_to_do_first(tmp_path) -> None:
    rollouts = [_r(f"e{i}", "easy", Verdict.ok(1.0)) for i in range(4)] \
        + [_r(f"h{i}", "hard", Verdict.ok(1.5, passed=False)) for i in range(4)] \
        + [_r("x0", "hard", Verdict.exception("ValueError: boom"))]
    text = write_report(tmp_path, compute_metrics(rollouts), rollouts, run_info={"model": "tiny"}).read_text()
    assert text.index("What to do next") < text.index("Failure modes") < text.index("Health checks") \
        < text.index("each on its own scale") < text.index("<h2>Summary")
    assert "<code>crossgym check numeric</code>" in text  # the verifier erred on 1 of 9: fix it first
    assert "infrastructure: masked in training" in text and "<b>1 the infrastructure's</b>" in text
    png = (tmp_path / PLOTS["source_panels"]).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and f'src="{PLOTS["source_panels"]}"' in text


def test_metrics_json_and_the_cli_summary_carry_the_next_steps() -> None:
    from crossgym.eval.command import summary_lines

    rollouts = [_r(f"t{i}", "a", Verdict.malformed("no <answer> tag")) for i in range(4)]
    metrics = compute_metrics(rollouts)
    # every completion malformed: the format first, and nothing solved (in the order to deal with them)
    assert [s["pattern"] for s in metrics["next_steps"]] == ["format_never_produced", "none_solved"]
    metrics["run"] = {"model": "tiny", "engine": "hf"}
    nexts = [line for line in summary_lines(metrics) if line.startswith("  next: ")]
    assert nexts and "answer format is rarely produced" in nexts[0]
