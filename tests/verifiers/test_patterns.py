"""regex: search, fullmatch, extract-then-compare; catastrophic patterns time out instead of hanging."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.patterns import Regex


def run(answer, text, **params):
    return Regex(**params).verify(Regex.task(answer, params=params), Completion.from_text(text))


def test_search_and_fullmatch():
    assert run(r"\bPython\b", "I like Python a lot").passed
    assert not run(r"\bPython\b", "I like Pythonic code").passed
    assert run(r"\d{3}-\d{4}", " 555-1234 \n", mode="fullmatch").passed
    assert not run(r"\d{3}-\d{4}", "call 555-1234", mode="fullmatch").passed
    assert run("hello", "HELLO", flags="i").passed
    assert not run("hello", "HELLO").passed
    assert run(None, "order #123", pattern=r"#\d+").passed


def test_extract_then_compare():
    p = {"mode": "extract", "pattern": r"(?i)answer:\s*(\w+)"}
    assert run("blue", "answer: red\n...\nAnswer: BLUE", **p).passed  # the last match counts
    assert not run("blue", "Answer: blue\nanswer: red", **p).passed
    assert run("blue", "Answer: blue\nanswer: red", which="first", **p).passed
    assert not run("blue", "Answer: BLUE", case_sensitive=True, **p).passed
    assert run(["red", "blue"], "Answer: red", **p).passed
    assert run("x", "nothing here", **p).error_kind == "malformed"
    named = {"mode": "extract", "pattern": r"ID=(?P<id>\d+)", "group": "id"}
    assert run("42", "ID=42", **named).passed
    opt = {"mode": "extract", "pattern": r"a(b)?c", "group": 1}
    assert run("b", "ac", **opt).error_kind == "malformed"


def test_think_is_ignored_unless_asked():
    assert not run("secret", "<think>secret</think>public").passed
    assert run("secret", "<think>secret</think>public", think=False).passed


def test_a_completion_that_makes_the_pattern_backtrack_fails_from_a_thread():
    evil = r"^(a|aa)+$"  # exponential backtracking even in the regex package
    text = "a" * 60 + "!"
    out = {}

    def go():
        t0 = time.monotonic()
        out["v"] = run(evil, text, timeout=0.3)
        out["dt"] = time.monotonic() - t0

    t = threading.Thread(target=go)
    t.start()
    t.join(30)
    assert out["v"].error is None and out["v"].reward == 0.0 and "s of CPU" in out["v"].reason, out
    assert out["dt"] < 10


def test_bad_patterns():
    with pytest.raises(VerifierError):
        Regex(pattern="(unclosed")
    with pytest.raises(VerifierError):
        Regex(mode="extract")
    with pytest.raises(VerifierError):
        Regex(pattern="x", flags="q")
    assert run("(unclosed", "x").error_kind == "exception"
    assert run(7, "x").error_kind == "exception"
    assert run(None, "x").error_kind == "exception"
    assert run("x", "x", mode="extract", pattern="x", group=3).error_kind == "exception"


def test_other_threads_cpu_does_not_time_out_a_match():
    """regex times out on the process's CPU clock; threads busy outside the GIL must not fail a match that fits.

    Bounded: three hashing threads for as long as the verdict takes (a few seconds at most), in this process only.
    """
    text = "2024-05-17 " * 90_000  # a linear search with no match, under the 1M-character cap: about 0.1 s
    pattern = r"\d{4}-\d{2}-\d{2}X"
    alone = 0.0
    for _ in range(3):  # the slowest of three: a cold first run or a busy machine must not shrink the budget
        t0 = time.thread_time()
        assert run(pattern, text, timeout=30).reason == "pattern not found"
        alone = max(alone, time.thread_time() - t0)
    stop = threading.Event()
    block = b"\0" * (256 << 20)

    def burn() -> None:
        while not stop.is_set():
            hashlib.sha256(block).digest()  # releases the GIL: CPU on the process's clock, not this thread's

    burners = [threading.Thread(target=burn, daemon=True) for _ in range(3)]
    for b in burners:
        b.start()
    try:
        time.sleep(0.05)
        verdicts = [run(pattern, text, timeout=max(0.05, 2.5 * alone)) for _ in range(3)]
    finally:
        stop.set()
        for b in burners:
            b.join(30)
    assert [v.reason for v in verdicts] == ["pattern not found"] * 3, [v.to_dict() for v in verdicts]


def test_an_extracted_group_growing_past_the_nfkc_cap_is_malformed():
    """Comparing a 1 MB group of U+FDFA (18 MB in NFKC) took 1.4 s against the 1 s timeout."""
    v = run("x", "Answer: " + "\ufdfa" * 120_000, mode="extract", pattern=r"Answer: (.*)", which="first")
    assert v.error_kind == "malformed" and "NFKC" in v.reason, v
    assert run("صلى الله عليه وسلم", "Answer: \ufdfa", mode="extract", pattern=r"Answer: (.*)").passed
