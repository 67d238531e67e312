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
    pairs.append((t("math", "(x+1)^2", timeout=1.0), "The answer is $9^{9^{9^{9}}}$"))  # hangs sympy: stopped at
    expect.append("malformed")  # its CPU budget, the model's fault
    pairs.append((t("math", "3", timeout=30.0), "$\\boxed{3}$"))
    expect.append(True)
    out = verify_many(pairs, workers=2, chunksize=4)
    got = [v.error_kind if v.error else v.passed for v in out]
    if got[-2] == "timeout":  # (the tower's CPU budget, or on a loaded machine its deadline)
        got[-2] = "malformed"
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


class _Grouper:
    """_groups only asks whether a verifier has verify_group; grouping is what is under test."""

    def verify_group(self, task, completions):  # pragma: no cover - never called by _groups
        raise AssertionError


def test_groups_linear_when_distinct_tasks_share_an_id():
    from crossgym.verifiers.batch import _groups

    n = 100_000
    spec = VerifierSpec("code_tests", {})
    tasks = [Task(id="0", prompt="q", answer=i // 2, verifier=spec) for i in range(0, n, 2)]  # 50k distinct
    items = [(tasks[i // 2], Completion.from_text("c")) for i in range(n)]  # each task twice, one shared id
    v = _Grouper()
    groups = _groups(items, [v] * n, list(range(n)))
    assert sorted(groups) == [[i, i + 1] for i in range(0, n, 2)]


def test_groups_equal_tasks_group_and_unequal_do_not():
    from crossgym.verifiers.batch import _groups

    spec = VerifierSpec("code_tests", {"x": 1})
    a1 = Task(id="t", prompt="q", answer=1, verifier=spec, metadata={"a": 1, "b": 2})
    a2 = Task(id="t", prompt="q", answer=1, verifier=VerifierSpec("code_tests", {"x": 1}), metadata={"b": 2, "a": 1})
    b = Task(id="t", prompt="q", answer=2, verifier=spec)
    other_id = Task(id="u", prompt="q", answer=1, verifier=spec, metadata={"a": 1, "b": 2})
    items = [(x, Completion.from_text("c")) for x in (a1, b, a2, other_id, b, a1)]
    v, w = _Grouper(), _Grouper()
    assert sorted(_groups(items, [v] * 6, list(range(6)))) == [[0, 2, 5], [1, 4]]
    assert _groups(items, [v, v, w, v, v, w], list(range(6))) == [[1, 4], [2, 5]]  # per verifier
