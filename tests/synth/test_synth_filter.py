"""crossgym.synth.filter: the verifier gate, with real verifiers."""

from __future__ import annotations

import pytest

from crossgym.api import load_verifier
from crossgym.protocol import Completion, Message, Task, VerifierSpec
from crossgym.synth.filter import REASONS, judge, normalized


def _task(answer: object, verifier: str = "numeric", **params: object) -> Task:
    return Task(id="t", prompt=(Message("user", "q"),), answer=answer, verifier=VerifierSpec(verifier, dict(params)))


@pytest.mark.parametrize(("task", "solution", "wrong", "kept", "reason"), [
    (_task(7), "3 + 4 = <answer>7</answer>", "<answer>8</answer>", True, None),
    (_task(7), "<answer>9</answer>", "<answer>8</answer>", False, "solution_rejected"),
    (_task(7), "", "<answer>8</answer>", False, "solution_rejected"),  # a malformed solution is no solution
    (_task(7), "<answer>7</answer>", "<answer>7.0</answer>", False, "wrong_accepted"),
    (_task(7), "<answer>7</answer>", "no idea", False, "wrong_unscored"),
    (_task("seven"), "<answer>7</answer>", "<answer>8</answer>", False, "bad_task"),
    (_task("Paris", "exact_match"), "<answer>Paris</answer>", "<answer>Lyon</answer>", True, None),
    (_task({"answer": "B", "options": ["1", "2", "3"]}, "multiple_choice"), "<answer>B</answer>", "<answer>C</answer>",
     True, None),
    (_task("Z", "multiple_choice"), "<answer>Z</answer>", "<answer>A</answer>", False, "bad_task"),
])
def test_judge(task: Task, solution: str, wrong: str, kept: bool, reason: str | None) -> None:
    d = judge(task, Completion.from_text(solution), Completion.from_text(wrong), load_verifier(task.verifier))
    assert (d.kept, d.reason) == (kept, reason), d.detail
    assert d.detail
    if kept:
        assert d.solution.passed and not d.wrong.passed and d.wrong.error is None
    else:
        assert reason in REASONS


def test_normalized_prompts() -> None:
    assert normalized("  Compute 3 +\n 4. ") == normalized("compute 3 + 4.")
