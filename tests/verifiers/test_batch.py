"""verify_many: order kept, mixed isolation kinds, one bad pair never spoils another."""

from __future__ import annotations

import pytest

from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.batch import verify_many


def t(name, answer, **params):
    return Task(id=f"{name}-{answer}", prompt="q", answer=answer, verifier=VerifierSpec(name, params))


def test_mixed_batch_in_order():
    pytest.importorskip("math_verify")
    pairs = []
    expect = []
    for i in range(12):
        pairs.append((t("numeric", i), f"Answer: {i}"))
        expect.append(True)
        pairs.append((t("math", f"\\frac{{{i}}}{{2}}", timeout=30.0), f"$\\boxed{{{i / 2}}}$"))
        expect.append(True)
        pairs.append((t("exact_match", "yes"), "no"))
        expect.append(False)
    pairs.append((t("math", "(x+1)^2", timeout=1.0), "The answer is $9^{9^{9^{9}}}$"))  # hangs sympy
    expect.append("timeout")
    pairs.append((t("math", "3", timeout=30.0), "$\\boxed{3}$"))
    expect.append(True)
    out = verify_many(pairs, workers=2, chunksize=4)
    got = [v.error if v.error else v.passed for v in out]
    assert got == expect


def test_bad_pairs_are_isolated():
    pairs = [
        (t("exact_match", "a"), "a"),
        (t("no_such_verifier", "a"), "a"),
        (t("numeric", "x", rel_tol=-1), "1"),
        (None, "a"),
        (t("exact_match", "a"), None),
        (t("exact_match", "a"), Completion.from_text("a")),
        (t("math", "1"), "bad \ud800"),
    ]
    out = verify_many(pairs)
    assert out[0].passed and out[5].passed
    assert out[1].error_kind == "exception" and "no_such_verifier" in out[1].reason
    assert out[2].error_kind == "exception" and "rel_tol" in out[2].reason
    assert out[3].error_kind == "malformed" and out[4].error_kind == "malformed"
    assert out[6].error_kind == "malformed"


def test_empty_and_deterministic():
    assert verify_many([]) == []
    pairs = [(t("instructions", [{"type": "lowercase"}]), "abc"), (t("json_valid", None), "{}")] * 3
    assert [v.to_dict() for v in verify_many(pairs)] == [v.to_dict() for v in verify_many(pairs)]
