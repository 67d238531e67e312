"""math: LaTeX/boxed/plain answers checked for mathematical equivalence by math-verify, in the worker pool.

math-verify parses with sympy and can run for a very long time on adversarial input; its own timeout uses SIGALRM,
which fails off the main thread. So ``score`` runs in crossgym's worker-process pool (isolation "process") with
math-verify's timeouts off: the pool kills a worker at the deadline and ``verify`` returns ``Verdict.timeout``,
from any thread.
"""

from __future__ import annotations

import functools
import math as _math
import re
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import strip_think

_MV: Any = None


def _math_verify() -> Any:
    """math_verify, imported once, with its one-time "timeout disabled" warning silenced (we own the deadline)."""
    global _MV
    if _MV is None:
        try:
            import math_verify
            import math_verify.grader
            import math_verify.parser
        except ImportError as exc:
            raise VerifierError("verifier 'math' needs math-verify (fix: pip install 'crossgym[verifiers]')") \
                from exc
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        _MV = math_verify
    return _MV


def parse_answer(text: str) -> list[Any]:
    """math-verify's default extraction (LaTeX + plain expressions, any match) with its timeout off."""
    return _math_verify().parse(text, parsing_timeout=None)  # type: ignore[no-any-return]


_DELIMS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")
_BARE_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")


@functools.lru_cache(maxsize=8192)
def parse_gold(gold: str) -> tuple[Any, ...]:
    """The reference, parsed like a prediction when it carries math delimiters ($..$, \\(..\\), \\boxed{..}).
    A bare reference (MATH-style "2\\sqrt{2}", "(1,2)") is read as ``$gold$`` first, since math-verify's plain
    expression extraction would take "2\\sqrt{2}" as 2; bare prose ("5 dollars") is read as it is first."""
    if any(d in gold for d in _DELIMS):
        return tuple(parse_answer(gold))
    order = [gold, f"${gold}$"] if "\\" not in gold and _BARE_WORD.search(gold) else [f"${gold}$", gold]
    for text in order:
        parsed = parse_answer(text)
        if parsed:
            return tuple(parsed)
    return ()


def zygote_warm() -> None:
    """Called once in the worker pool's zygote, whose workers inherit what it warms: math-verify compiles its
    extraction regexes on first use, and sympy's first symbolic comparison imports and builds about 0.5 s of
    machinery that would otherwise count against the first job's deadline in every worker."""
    mv = _math_verify()
    mv.verify(list(parse_gold("\\frac{1}{2}")), parse_answer("The answer is $\\boxed{0.5}$"), timeout_seconds=None)
    mv.verify(list(parse_gold("(x+1)^2")), parse_answer("$x^2 + 2x + 1$"), timeout_seconds=None)


class Math(BaseVerifier):
    """The completion's final answer is mathematically equivalent to the reference (math-verify).

    answer: the reference as LaTeX or plain text ("\\frac{1}{2}", "$x^2+1$", "\\boxed{(1, 2)}", "0.5", 42);
    a list means any of them is accepted.
    params: float_rounding (6), numeric_precision (15), strict (True: variables must match),
    think (True: only text after the last </think> is read), timeout (5 s, enforced by killing the worker).
    Extraction is math-verify's default (LaTeX and plain expressions; \\boxed first, then "final answer is",
    then the last math); the gold is parsed the same way (a bare LaTeX gold such as "2\\sqrt{2}" is read as
    "$2\\sqrt{2}$"), and verify is called gold first. A completion that
    lists several candidate answers parses as a set and does not match a single gold value.
    """

    name = "math"
    version = "1"
    description = "mathematical equivalence of the final answer via math-verify (process pool, hard timeout)"
    isolation = "process"
    default_timeout = 5.0

    def __init__(self, *, float_rounding: int = 6, numeric_precision: int = 15, strict: bool = True,
                 think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        for k, v in (("float_rounding", float_rounding), ("numeric_precision", numeric_precision)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 100:
                raise VerifierError(f"verifier 'math': {k} must be an integer in 1..100, got {v!r}")
        self.float_rounding, self.numeric_precision = float_rounding, numeric_precision
        self.strict, self.think = bool(strict), bool(think)

    def _golds(self, answer: Any) -> list[tuple[str, tuple[Any, ...]]]:
        items = answer if isinstance(answer, list) else [answer]
        out = []
        for a in items:
            if isinstance(a, bool) or a is None or isinstance(a, (dict, list)):
                raise BadTask(f"math answer must be a string or number, got {type(a).__name__}")
            if isinstance(a, float) and not _math.isfinite(a):
                raise BadTask(f"math answer must be finite, got {a!r}")
            g = str(a)
            parsed = parse_gold(g)
            if not parsed:
                raise BadTask(f"math-verify cannot parse the reference {clip(g, 60)!r}")
            out.append((g, parsed))
        if not out:
            raise BadTask("math answer list is empty")
        return out

    def score(self, task: Task, completion: Completion) -> Verdict:
        golds = self._golds(task.answer)
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Malformed("empty completion")
        pred = parse_answer(text)
        if not pred:
            raise Malformed("no mathematical answer found in the completion")
        mv = _math_verify()
        shown = clip(str(pred[-1]), 60)
        for g, parsed in golds:
            if mv.verify(list(parsed), pred, float_rounding=self.float_rounding,
                         numeric_precision=self.numeric_precision, strict=self.strict, timeout_seconds=None):
                return Verdict.ok(1.0, reason=f"{shown!r} is equivalent to {clip(g, 60)!r}")
        return Verdict.ok(0.0, reason=f"{shown!r} is not equivalent to {clip(golds[0][0], 60)!r}")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example("\\frac{1}{2}", "So the probability is $\\boxed{0.5}$.", "pass", "0.5 == 1/2"),
            cls.example("(x+1)^2", "Expanding, we get $x^2 + 2x + 1$.", "pass", "symbolic equivalence"),
            cls.example("2\\sqrt{2}", "<think>sqrt 8...</think>The answer is $\\sqrt{8}$", "pass"),
            cls.example("3", "The answer is $\\boxed{4}$.", "fail"),
            cls.example("2", "It is $1$ or $2$ or $3$.", "fail", "listing candidates parses as a set"),
            cls.example("3", "I do not know.", "malformed", "no answer"),
        ]
