"""length: a length budget (pass/fail) or a shaped penalty for going over or under it."""

from __future__ import annotations

from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed
from crossgym.verifiers.constraints import visible_chars, words
from crossgym.verifiers.extract import strip_think

UNITS = ("words", "chars", "tokens")


def _bound(v: Any, name: str, err: type[Exception]) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise err(f"length: {name} must be a non-negative integer, got {v!r} (fix: pass a whole number, e.g. 100)")
    return v


class Length(BaseVerifier):
    """The completion's length is within [min, max].

    answer: null (use the params) or {"min": M, "max": N} for this task.
    params: min (None), max (None; at least one of them is needed), unit ("words" | "chars" | "tokens": the
    completion's token_ids, required then), mode ("budget": 1.0 inside, 0.0 outside | "linear": 1.0 inside,
    falling linearly to 0.0 at max * (1 + slack) above and at min * (1 - slack) below), slack (0.5),
    count_think (True: the reasoning counts; False: only text after </think>). passed means inside the bounds.
    """

    name = "length"
    # 2: words are counted as IFEval counts them (runs of letters and digits: "well-known" is two words, so a
    # hyphen-chained reply is no longer one word) and each CJK character is a word (a run of them was one)
    # 3: words are counted in NFKC without invisible characters, and "_" and modifier letters (ʼ) separate words as
    # hyphens do ("_".join(["word"] * 200) is 200 words, not one); characters are counted as they show (NFKC,
    # zero-width padding not counted); 4: kana sound and length marks are no words, and letters drawn as a dot or
    # bar (ㆍ ٠ ǀ) beside Latin letters separate words ("wordㆍword" x 200 was one word); 5: letters and digits of
    # another script inside a word separate it (runic ᛁ, Tamil ஃ, Thai ๐ joined 26 words into one), and symbols
    # drawn as Latin letters (🅣🅗🅔, regional indicators) are those letters (90 words counted as none), unassigned
    # invisible code points are dropped and Latin letters drawn as punctuation (ꞌ ʔ ǂ) separate words; 6: text over
    # 2,000,000 characters in NFKC is malformed (1 MB of U+FDFA is 18 MB there: 8.5 s); 7: a combining mark is part
    # of its letter's word in scripts written with spaces ("q\u0301" x 100 was 100 words, "हिन्दी" 3)
    version = "7"
    description = "length budget in words/chars/tokens, or a linear over/under-length penalty"

    def __init__(self, *, min: int | None = None, max: int | None = None, unit: str = "words",  # noqa: A002
                 mode: str = "budget", slack: float = 0.5, count_think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        self.min, self.max = _bound(min, "min", VerifierError), _bound(max, "max", VerifierError)
        if unit not in UNITS:
            raise VerifierError(f"verifier 'length': unit={unit!r} must be one of {', '.join(UNITS)} "
                                "(fix: pass one of them, or leave it out for words)")
        if mode not in ("budget", "linear"):
            raise VerifierError(f"verifier 'length': mode={mode!r} must be 'budget' or 'linear' "
                                "(fix: pass one of them, or leave it out for budget)")
        if isinstance(slack, bool) or not isinstance(slack, (int, float)) or not 0 < slack <= 10:
            raise VerifierError(f"verifier 'length': slack must be in (0, 10], got {slack!r} (fix: pass e.g. 0.5)")
        self.unit, self.mode, self.slack, self.count_think = unit, mode, float(slack), bool(count_think)

    def _bounds(self, task: Task) -> tuple[int | None, int | None]:
        lo, hi = self.min, self.max
        if isinstance(task.answer, dict):
            lo = _bound(task.answer.get("min", lo), "min", BadTask)
            hi = _bound(task.answer.get("max", hi), "max", BadTask)
        elif task.answer is not None:
            raise BadTask("length answer must be null or {'min': M, 'max': N}")
        if lo is None and hi is None:
            raise BadTask("length needs a min or a max (params or task answer)")
        if lo is not None and hi is not None and lo > hi:
            raise BadTask(f"length min {lo} is over max {hi}")
        return lo, hi

    def measure(self, completion: Completion) -> int:
        if self.unit == "tokens":
            if completion.token_ids is None:
                raise Malformed("unit 'tokens' needs the completion's token_ids")
            return len(completion.token_ids)
        text = completion.text if self.count_think else strip_think(completion.text)
        return len(visible_chars(text)) if self.unit == "chars" else len(words(text))

    def score(self, task: Task, completion: Completion) -> Verdict:
        lo, hi = self._bounds(task)
        n = self.measure(completion)
        inside = (lo is None or n >= lo) and (hi is None or n <= hi)
        reward = 1.0 if inside else 0.0
        if not inside and self.mode == "linear":
            if hi is not None and n > hi:
                reward = max(0.0, 1.0 - (n - hi) / max(1.0, hi * self.slack))
            elif lo is not None and n < lo:
                reward = max(0.0, 1.0 - (lo - n) / max(1.0, lo * self.slack))
        bounds = f"[{lo if lo is not None else 0}, {hi if hi is not None else '∞'}]"
        return Verdict.ok(reward, passed=inside, components={self.unit: float(n)},
                          reason=f"{n} {self.unit} {'within' if inside else 'outside'} {bounds}")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example(None, "Short and sweet.", "pass", params={"max": 5}),
            cls.example(None, "This answer rambles on for far too many words.", "fail", params={"max": 5}),
            cls.example({"min": 3, "max": 10}, "word " * 12, "fail", "linear penalty gives 0.6",
                        params={"mode": "linear"}),
            cls.example(None, "hello", "malformed", "tokens without token_ids", params={"max": 5, "unit": "tokens"}),
        ]
