"""Scoring from many threads gives the verdicts scoring one at a time gives: every frozen corpus sample of every
verifier, shuffled, from 8 threads with a 10 us switch interval. A trainer's reward function and verify_many score
from threads; CPython's own ``ast`` once turned a right code_tests answer into an exception verdict there (see
crossgym.text.pyast)."""

from __future__ import annotations

import math
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from crossgym.compat_tests.corpus import Sample, default_corpus_dir, verifier_corpus
from crossgym.protocol import Verdict
from crossgym.verifiers.safe import build_verifier


def _outcome(v: Verdict) -> tuple[Any, ...]:
    return (None if math.isnan(v.reward) else v.reward, v.passed, v.error)


def test_verdicts_from_many_threads_equal_one_at_a_time() -> None:
    corpus = default_corpus_dir()
    assert corpus is not None
    samples: list[Sample] = [s for path in sorted((corpus / "verifiers").glob("*.jsonl"))
                             for s in verifier_corpus(path.stem, corpus)]
    built = {key: build_verifier(s.task.verifier) for s in samples if (key := s.task.verifier.key())}

    def score(s: Sample) -> tuple[Any, ...]:
        v = built[s.task.verifier.key()]
        return _outcome(v if isinstance(v, Verdict) else v.verify(s.task, s.completion))

    alone = {s.key: score(s) for s in samples}
    order = samples[:]
    random.Random(0).shuffle(order)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        with ThreadPoolExecutor(8) as pool:
            together = dict(zip((s.key for s in order), pool.map(score, order), strict=True))
    finally:
        sys.setswitchinterval(interval)
    assert len(samples) > 1000
    differ = {k: (alone[k], together[k]) for k in alone if alone[k] != together[k]}
    assert differ == {}
