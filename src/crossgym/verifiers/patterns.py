"""regex: the completion matches a pattern (search, fullmatch), or a captured group equals the reference.

User patterns run on the ``regex`` package with its ``timeout=``: a catastrophically backtracking pattern stops at
the deadline instead of hanging the caller's thread, and the completion that made it backtrack fails.

The ``regex`` package measures that timeout with C's ``clock()``: CPU time of the whole process, all threads
together. In a trainer whose torch threads are busy, or a server judging many requests at once, a cheap match
would time out on CPU that other threads spent. ``within_cpu`` runs such a match again with what this thread has
left of its budget, so the deadline is this thread's own CPU time.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import normalize, strip_think

MODES = ("search", "fullmatch", "extract")
_FLAG_NAMES = {"i": "IGNORECASE", "m": "MULTILINE", "s": "DOTALL", "x": "VERBOSE"}


T = TypeVar("T")
MAX_ATTEMPTS = 8
MAX_SCALE = 64.0  # the process's clock may run this many times faster than this thread's


def within_cpu(budget: float, match: Callable[[float], T]) -> T:
    """``match(timeout)`` given ``budget`` seconds of this thread's CPU; TimeoutError once they are spent.

    ``regex`` counts its timeout on the process's clock. When that runs out before this thread's own budget,
    other threads were busy: the match runs again with the rest of the budget, scaled by how fast the process's
    clock ran against this thread's in the attempt that failed. A pattern that is slow on its own still fails
    after ``budget`` (one attempt when nothing else runs).

    ``match`` must do all its matching inside one call to ``regex`` (no Python between the steps of an iterator),
    so that it holds the GIL and gets the same result whatever other Python threads do meanwhile.
    """
    start = time.thread_time()
    scale = 1.0
    for _ in range(MAX_ATTEMPTS):
        left = budget - (time.thread_time() - start)
        if left <= 0:
            break
        before = time.thread_time()
        try:
            return match(left * scale)
        except TimeoutError:
            used = time.thread_time() - before
            scale = min(MAX_SCALE, max(scale, left * scale / max(used, 1e-6)))
    raise TimeoutError(f"pattern matching used {budget:g} s of CPU")


def _regex() -> Any:
    try:
        import regex
    except ImportError as exc:
        raise VerifierError("verifier 'regex' needs the regex package (fix: pip install regex)") from exc
    return regex


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str, flags: str) -> Any:
    """A compiled ``regex`` pattern; raises ValueError on a bad pattern or flag."""
    rx = _regex()
    f = 0
    for ch in flags:
        if ch not in _FLAG_NAMES:
            raise ValueError(f"unknown flag {ch!r} (use any of {''.join(_FLAG_NAMES)})")
        f |= getattr(rx, _FLAG_NAMES[ch])
    try:
        return rx.compile(pattern, f | rx.VERSION0)
    except rx.error as exc:
        raise ValueError(f"bad pattern {pattern!r}: {exc}") from None


class Regex(BaseVerifier):
    """The completion matches a regular expression.

    answer: for mode "search"/"fullmatch", the pattern (a string) or null to use the ``pattern`` param;
    for mode "extract", the reference string (or a list of accepted ones) that the captured group must equal.
    params: mode ("search" | "fullmatch" | "extract", default "search"), pattern (str: the pattern when the answer
    is not one, required for "extract"), flags ("" - any of i, m, s, x), group (1: the group compared in extract
    mode; 0 is the whole match), which ("last" | "first": which match extract uses), case_sensitive (False, extract
    comparison only), think (True: match only text after </think>), timeout (1 s of matching, enforced by regex).
    """

    name = "regex"
    # 2: a completion that makes the pattern run out of its CPU budget fails (it was a timeout); 3: an extracted
    # group over 2,000,000 characters in NFKC is malformed (1 MB of U+FDFA took 1.4 s against the 1 s timeout)
    version = "3"
    description = "pattern search/fullmatch, or extract a group and compare it (ReDoS-safe timeout)"
    default_timeout = 1.0

    def __init__(self, *, mode: str = "search", pattern: str | None = None, flags: str = "", group: int | str = 1,
                 which: str = "last", case_sensitive: bool = False, think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        if mode not in MODES:
            raise VerifierError(f"verifier 'regex': mode={mode!r} must be one of {', '.join(MODES)} "
                                "(fix: pass one of them, or leave it out for search)")
        if which not in ("first", "last"):
            raise VerifierError(f"verifier 'regex': which={which!r} must be 'first' or 'last' "
                                "(fix: pass one of them, or leave it out for last)")
        if mode == "extract" and not pattern:
            raise VerifierError("verifier 'regex': mode 'extract' needs a pattern param with a capture group "
                                "(fix: e.g. pattern: 'Answer: (\\d+)')")
        if pattern is not None:
            try:
                compile_pattern(str(pattern), str(flags))
            except ValueError as exc:
                raise VerifierError(f"verifier 'regex': {exc} (fix: correct the pattern; a literal ( ) [ ] {{ }} . * "
                                    "+ ? | or \\ needs a backslash before it)") from None
        self.mode, self.pattern, self.flags, self.group = mode, pattern, str(flags), group
        self.which, self.case_sensitive, self.think = which, bool(case_sensitive), bool(think)

    def _compiled(self, task: Task) -> Any:
        pat = self.pattern if self.mode == "extract" or task.answer is None else task.answer
        if pat is None:
            raise BadTask("no pattern: give one as the task answer or the pattern param")
        if not isinstance(pat, str):
            raise BadTask(f"the pattern must be a string, got {type(pat).__name__}")
        try:
            return compile_pattern(pat, self.flags)
        except ValueError as exc:
            raise BadTask(str(exc)) from None

    def score(self, task: Task, completion: Completion) -> Verdict:
        rx = _regex()
        pat = self._compiled(task)
        text = strip_think(completion.text) if self.think else completion.text
        budget = max(0.001, self.timeout)
        try:
            if self.mode == "search":
                hit = within_cpu(budget, lambda t: pat.search(text, timeout=t)) is not None
                return Verdict.ok(float(hit), reason="pattern found" if hit else "pattern not found")
            if self.mode == "fullmatch":
                body = text.strip()
                hit = within_cpu(budget, lambda t: pat.fullmatch(body, timeout=t)) is not None
                return Verdict.ok(float(hit), reason="whole answer matches" if hit else "answer does not match")
            return self._extract(task, pat, text, budget)
        except TimeoutError:  # (CPU time of this thread: the text's cost, not the machine's load) the completion
            # made the pattern backtrack: a failed answer, where a timeout (the machine's fault) was masked under
            # on_error none, a way out of a negative advantage
            return Verdict.ok(0.0, passed=False, components={"pattern_out_of_time": 1.0},
                              reason=f"matching took over {budget:g} s of CPU on this completion: judged failed")
        except (IndexError, rx.error) as exc:
            raise BadTask(f"pattern cannot be applied: {exc}") from None

    def _extract(self, task: Task, pat: Any, text: str, budget: float) -> Verdict:
        if self.which == "first":
            m = within_cpu(budget, lambda t: pat.search(text, timeout=t))
        else:  # the deque consumes the iterator in C, in one go
            last = within_cpu(budget, lambda t: collections.deque(pat.finditer(text, timeout=t), maxlen=1))
            m = last[0] if last else None
        if m is None:
            raise Malformed("the pattern finds no answer in the completion")
        got = m.group(self.group)
        if got is None:
            raise Malformed(f"group {self.group!r} did not take part in the match")
        refs = task.answer if isinstance(task.answer, list) else [task.answer]
        want = normalize(str(got), case_sensitive=self.case_sensitive)
        ok = any(want == normalize(str(r), case_sensitive=self.case_sensitive) for r in refs if r is not None)
        return Verdict.ok(float(ok), reason=f"extracted {clip(got, 60)!r}")

    @classmethod
    def examples(cls) -> list[Example]:
        iso = {"mode": "fullmatch"}
        ex = {"mode": "extract", "pattern": r"(?i)final answer:\s*([A-Za-z]+)"}
        return [
            cls.example(r"\d{4}-\d{2}-\d{2}", "2024-05-17", "pass", "ISO date, fullmatch", params=iso),
            cls.example(r"\d{4}-\d{2}-\d{2}", "May 17, 2024", "fail", params=iso),
            cls.example("blue", "Thinking...\nFinal answer: Blue", "pass", "extract then compare", params=ex),
            cls.example("blue", "Final answer: red", "fail", params=ex),
            cls.example("blue", "I refuse.", "malformed", "nothing to extract", params=ex),
        ]
