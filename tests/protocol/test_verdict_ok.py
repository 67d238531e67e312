"""Verdict.ok's fast construction: the same object the dataclass constructor builds, for every kind of field, and
verify()'s shortcut past _finite: the same Verdicts for long reasons, non-finite rewards and odd returns."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle

import pytest

from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.verifiers.base import MAX_REASON, BaseVerifier, _finite


@pytest.mark.parametrize("reward", [1.0, 0.0, 0.5, 1, True, 2.5, -1.0])
@pytest.mark.parametrize("passed", [None, True, False])
@pytest.mark.parametrize("reason", ["", "valid", "héllo", "bad \ud800 surrogate", "x" * 1000])
@pytest.mark.parametrize("components", [None, {}, {"a": 1.0}, {"k\udc80": 0.5}])
def test_ok_is_the_dataclass_constructor(reward, passed, reason, components):
    got = Verdict.ok(reward, passed=passed, reason=reason, components=components)
    r = float(reward)
    want = Verdict(reward=r, passed=r >= 1.0 if passed is None else passed, components=dict(components or {}),
                   reason=reason)
    assert got == want and type(got) is Verdict and got.__dict__ == want.__dict__
    assert type(got.reward) is float and got.error is None
    assert got.components is not components  # always a fresh dict the caller cannot change afterwards
    got.reason.encode("utf-8")  # lone surrogates scrubbed on either path


def test_fast_ok_is_still_a_frozen_dataclass():
    v = Verdict.ok(1.0, reason="valid")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.reward = 0.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(v)) == v == copy.deepcopy(v)
    assert dataclasses.replace(v, reward=0.5).reward == 0.5 and dataclasses.asdict(v)["reason"] == "valid"
    assert Verdict.from_dict(v.to_dict()) == v and repr(v).startswith("Verdict(reward=1.0, passed=True")

    class Mine(Verdict):
        pass

    assert type(Mine.ok(1.0, reason="x")) is Mine  # subclasses get their own constructor


class Returns(BaseVerifier):
    name = "returns_test"

    def score(self, task: Task, completion: Completion) -> Verdict:
        return {"long": Verdict.ok(1.0, reason="r" * (MAX_REASON + 50)), "inf": Verdict.ok(math.inf),
                "nan": Verdict(reward=math.nan, passed=False), "none": None, "str": "1.0",  # type: ignore[dict-item]
                "int": Verdict(reward=1, passed=True), "edge": Verdict.ok(1.0, reason="e" * MAX_REASON),
                "strreward": Verdict(reward="x", passed=True)}[completion.text]  # type: ignore[arg-type]


@pytest.mark.parametrize("case", ["long", "inf", "nan", "none", "str", "int", "edge", "strreward"])
def test_verify_gives_what_finite_gives(case):
    v = Returns()
    task = Returns.task(None)
    got = v.verify(task, Completion.from_text(case))
    try:
        want = _finite(v.score(task, Completion.from_text(case)))
    except Exception as exc:  # run_score maps an exception in the check to an exception Verdict
        want = Verdict.exception(f"{type(exc).__name__}: {exc}")
    assert got == want
