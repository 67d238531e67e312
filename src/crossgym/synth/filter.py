"""Keep a drafted task only when its verifier accepts the reference solution and rejects the known-wrong answer."""

from __future__ import annotations

from dataclasses import dataclass

from crossgym.protocol.interfaces import Verifier
from crossgym.protocol.task import Completion, Task, Verdict

#: why a draft was rejected (the codes in rejects files and summaries), in the order they are checked
REASONS: dict[str, str] = {
    "unparseable": "the reply held no JSON object",
    "bad_fields": "the JSON lacked prompt, answer or wrong_answer, or one was empty",
    "duplicate": "the prompt repeats a seed's or an earlier task's",
    "bad_task": "the verifier cannot use the drafted answer (wrong form for this verifier)",
    "verifier_error": "the verifier failed or timed out on the reference solution or the wrong answer",
    "solution_rejected": "the model's own reference solution does not pass",
    "wrong_accepted": "the known-wrong answer passes too: the task does not tell right from wrong",
    "wrong_unscored": "the known-wrong answer is malformed for the verifier, so it checks nothing",
}


@dataclass(frozen=True)
class Decision:
    """Keep or reject, with the code (a key of REASONS) and the verdicts behind it."""

    kept: bool
    reason: str | None
    detail: str
    solution: Verdict
    wrong: Verdict


def _failure(v: Verdict) -> str | None:
    if v.error_kind in ("exception", "timeout"):
        return "bad_task" if "bad task" in (v.error or "") else "verifier_error"
    return None


def judge(task: Task, solution: Completion, wrong: Completion, verifier: Verifier) -> Decision:
    """The decision for one drafted task (the verifier never raises, so neither does this)."""
    sv = verifier.verify(task, solution)
    wv = verifier.verify(task, wrong)
    for v, which in ((sv, "reference solution"), (wv, "wrong answer")):
        code = _failure(v)
        if code:
            return Decision(False, code, f"{which}: {v.error}", sv, wv)
    if not sv.passed:
        why = sv.error or sv.reason or f"reward {sv.reward}"
        return Decision(False, "solution_rejected", f"reference solution: {why}", sv, wv)
    if wv.passed:
        return Decision(False, "wrong_accepted", f"wrong answer: {wv.reason or wv.reward}", sv, wv)
    if wv.error_kind == "malformed":
        return Decision(False, "wrong_unscored", f"wrong answer: {wv.error}", sv, wv)
    return Decision(True, None, f"solution {sv.reward:g}, wrong answer {wv.reward:g}", sv, wv)


def normalized(text: str) -> str:
    """A prompt compared for duplicates: case and whitespace ignored."""
    return " ".join(text.casefold().split())
