"""One run's verdicts, each computed once: the conformance checks (examples, determinism's first pass, frozen,
the in-process side of the fresh-process check) and the parity references score the same samples with the same
cached verifier instance (``crossgym.load_verifier(spec)``), so a run scores each of them once, not four times.
"""

from __future__ import annotations

import time
from typing import Any

from crossgym.compat_tests.corpus import Sample
from crossgym.protocol.task import Verdict


class VerdictCache:
    """Verdicts of ``load_verifier(sample.task.verifier).verify(task, completion)`` by sample, with their seconds."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], tuple[Verdict, float]] = {}
        self.hits = 0

    @staticmethod
    def _key(s: Sample) -> tuple[str, str, str]:
        return s.key, s.task.verifier.key(), s.task.id

    def timed(self, s: Sample) -> tuple[Verdict, float]:
        """The sample's verdict (computed now unless this run already has it) and how long computing it took.
        Raises what ``verify`` raises (conformance reports it); a raise is not cached."""
        key = self._key(s)
        got = self._seen.get(key)
        if got is not None:
            self.hits += 1
            return got
        from crossgym.api import load_verifier

        start = time.monotonic()
        v = load_verifier(s.task.verifier).verify(s.task, s.completion)
        if isinstance(v, Verdict):  # a broken verifier's non-Verdict is reported by the check, not kept
            self._seen[key] = (v, time.monotonic() - start)
        return v, time.monotonic() - start

    def verdict(self, s: Sample) -> Any:
        return self.timed(s)[0]


def verdict_of(s: Sample, cache: VerdictCache | None) -> Any:
    """``cache.verdict(s)``, or a direct call when there is no cache."""
    if cache is not None:
        return cache.verdict(s)
    from crossgym.api import load_verifier

    return load_verifier(s.task.verifier).verify(s.task, s.completion)
