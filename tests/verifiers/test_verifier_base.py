"""BaseVerifier: the never-raise guarantee, input checks, and deadlines for inline, thread and process isolation."""

from __future__ import annotations

import os
import pickle
import threading
import time

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.verifiers.base import MAX_CHARS, BadTask, BaseVerifier, Malformed, check_inputs, time_left


class Echo(BaseVerifier):
    """Behaviour picked by the completion text, so one class covers every path."""

    name = "echo_test"
    default_timeout = 1.0

    def __init__(self, *, bonus: float = 0.0, **params):
        super().__init__(**params)
        self.bonus = bonus

    def score(self, task: Task, completion: Completion) -> Verdict:
        t = completion.text
        if t == "spin":
            end = time.monotonic() + 30
            while time.monotonic() < end:
                pass
        if t == "sleep":
            time.sleep(30)
        if t == "spin-unstoppable":  # busy where the CPU budget's signal cannot reach (as in one long C call)
            import signal

            signal.signal(signal.SIGPROF, signal.SIG_IGN)
            end = time.monotonic() + 30
            while time.monotonic() < end:
                pass
        if t == "raise":
            raise ValueError("boom")
        if t == "malformed":
            raise Malformed("no answer")
        if t == "badtask":
            raise BadTask("answer missing")
        if t == "recurse":
            def f(n):
                return f(n + 1)
            f(0)
        if t == "nan":
            return Verdict.ok(float("nan"))
        if t == "notaverdict":
            return 1.0  # type: ignore[return-value]
        if t == "left":
            return Verdict.ok(1.0 if 0 < time_left() <= self.timeout else 0.0)
        if t == "pid":
            return Verdict.ok(1.0, reason=str(os.getpid()))
        return Verdict.ok(1.0 if t == task.answer else self.bonus)


class EchoThread(Echo):
    isolation = "thread"


class EchoProcess(Echo):
    isolation = "process"


def task(answer="yes"):
    return Echo.task(answer)


def comp(text):
    return Completion.from_text(text)


@pytest.mark.parametrize("cls", [Echo, EchoThread, EchoProcess])
def test_paths_map_to_verdicts(cls):
    v = cls()
    assert v.verify(task(), comp("yes")).passed
    assert not v.verify(task(), comp("no")).passed
    assert v.verify(task(), comp("raise")).error == "exception: ValueError: boom"
    assert v.verify(task(), comp("malformed")).error == "malformed: no answer"
    bad = v.verify(task(), comp("badtask"))
    assert bad.error_kind == "exception" and "bad task" in bad.reason
    assert v.verify(task(), comp("recurse")).error_kind == "malformed"
    assert v.verify(task(), comp("nan")).error_kind == "exception"
    assert v.verify(task(), comp("notaverdict")).error_kind == "exception"
    assert v.verify(task(), comp("left")).passed


@pytest.mark.parametrize("t,c", [
    (None, comp("x")), (task(), None), (task(), "yes"), ("task", comp("x")), (task(), 42),
    (task(), Completion(messages=(Message(role="assistant", content="x" * (MAX_CHARS + 1)),))),
    (task(), Completion(messages=tuple(Message(role="user", content="x") for _ in range(10_001)))),
    (task(), comp("bad \ud800 surrogate")),
])
@pytest.mark.parametrize("cls", [Echo, EchoThread])
def test_bad_inputs_are_malformed(cls, t, c):
    assert cls().verify(t, c).error_kind == "malformed"


def test_check_inputs_counts_every_message():
    many = Completion(messages=(Message(role="user", content="x" * 600_000),
                                Message(role="assistant", content="y" * 600_000)))
    assert check_inputs(task(), many) is not None
    assert check_inputs(task(), comp("ok")) is None


def test_thread_deadline_from_a_thread():
    out = {}

    def go():
        t0 = time.monotonic()
        out["v"] = EchoThread(timeout=0.3).verify(task(), comp("sleep"))
        out["dt"] = time.monotonic() - t0

    th = threading.Thread(target=go)
    th.start()
    th.join(10)
    assert out["v"].error == "timeout" and out["dt"] < 3


def test_process_deadline_kills_and_heals():
    v = EchoProcess(timeout=0.5)
    first = int(v.verify(task(), comp("pid")).reason)
    results = {}

    def go(i, text):
        results[i] = v.verify(task(), comp(text))

    ths = [threading.Thread(target=go, args=(i, t)) for i, t in enumerate(["sleep", "yes", "sleep", "no"])]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    assert time.monotonic() - t0 < 20
    assert [results[i].error for i in range(4)] == ["timeout", None, "timeout", None]
    assert results[1].passed and not results[3].passed
    assert v.verify(task(), comp("yes")).passed  # the pool healed
    assert first != os.getpid()
    # a busy completion through the pool: stopped by its CPU budget (malformed), or on a machine too loaded to give
    # it that much CPU before the deadline, a timeout (which of the two depends on the load, not on the code)
    for text in ("spin", "spin-unstoppable"):
        assert EchoProcess(timeout=1.0).verify(task(), comp(text)).error_kind in ("malformed", "timeout")


def test_a_completion_that_uses_its_cpu_budget_is_the_models_failure():
    """In a pool worker (here: this process's main thread, which is where the worker scores) a completion that
    uses CPU_SHARE of the timeout as CPU time is stopped and malformed; a job killed at its deadline is malformed
    when it had used CPU_FAULT_SHARE of it as CPU (busy with its input), a timeout when it had waited."""
    from crossgym.verifiers.base import CPU_FAULT_SHARE, _pool_score, timed_out
    from crossgym.verifiers.pool import _cpu_of

    v = _pool_score(EchoProcess, {}, task(), comp("spin"), 0.5)
    assert v.error_kind == "malformed" and "s of CPU" in v.reason, v
    assert _pool_score(EchoProcess, {}, task(), comp("yes"), 0.5).passed  # the budget is gone afterwards
    assert timed_out(2.0, CPU_FAULT_SHARE * 2.0).error_kind == "malformed"
    assert timed_out(2.0, 0.1).error == "timeout"
    assert _cpu_of(os.getpid()) > 0


def test_params_and_pickling():
    with pytest.raises(VerifierError, match="unknown params"):
        Echo(bogus=1)
    for bad in (0, -1, "1", float("inf"), True):
        with pytest.raises(VerifierError):
            Echo(timeout=bad)
    e = Echo(bonus=0.25, timeout=2)
    e2 = pickle.loads(pickle.dumps(e))
    assert e2.bonus == 0.25 and e2.timeout == 2.0 and e2.spec.params == {"bonus": 0.25, "timeout": 2}
    assert e2.verify(task(), comp("no")).reward == 0.25
    assert "bonus=0.25" in repr(e)


def test_deterministic():
    v = Echo()
    outs = {v.verify(task(), comp(t)).to_dict().__repr__() for t in ["yes"] * 5}
    assert len(outs) == 1


def test_not_implemented_score_is_an_exception_verdict():
    class Bare(BaseVerifier):
        name = "bare"

    assert Bare().verify(task(), comp("x")).error_kind == "exception"


class Outer(BaseVerifier):
    """Calls another verifier, then reads its own deadline: nesting must not clear it."""

    name = "outer_test"
    default_timeout = 5.0

    def score(self, task: Task, completion: Completion) -> Verdict:
        inner = Echo(timeout=1.0).verify(task, completion)
        left = time_left(default=-1.0)
        return Verdict.ok(1.0 if inner.passed and 1.0 < left <= 5.0 else 0.0, reason=f"{left:.2f}")


def test_nested_verifiers_keep_the_outer_deadline():
    assert Outer().verify(task(), comp("yes")).passed


def _through_json_carriers(task):  # type: ignore[no-untyped-def]
    """The task as serve's JSON and a rollout record bring it back (each a real writer and reader)."""
    import json

    from crossgym.protocol import Task
    from crossgym.scoring.records import dumps_record
    from crossgym.serve import jsonio

    served = Task.from_dict(jsonio.loads(jsonio.dumps(task.to_dict())))
    recorded = Task.from_dict(json.loads(dumps_record({"task": task.to_dict()}))["task"])
    return served, recorded


def test_a_task_json_cannot_carry_gets_its_carried_verdict_in_process():
    """NaN/infinities (a pandas missing answer), tuples and non-text keys come back from serve and rollout records
    as null, lists and text keys: judged in process they gave other verdicts (a NaN answer passed "nan" in
    exact_match, {"x": NaN} in json_match failed what serve passed, an infinity stayed one in records only)."""
    import dataclasses

    from crossgym.api import verify
    from crossgym.protocol.task import carried
    from crossgym.verifiers.batch import verify_many
    from crossgym.verifiers.json_checks import JsonMatch
    from crossgym.verifiers.text import ExactMatch

    nan, inf = float("nan"), float("inf")
    cases = [(ExactMatch.task(nan), "nan"), (ExactMatch.task([inf, "x"]), "inf"),
             (JsonMatch.task({"x": nan}), '{"x": null}'), (JsonMatch.task({"x": [inf, (1, 2)]}), '{"x": [null, [1, 2]]}'),
             (JsonMatch.task({1: "a", None: True}), '{"1": "a", "null": true}'),
             (dataclasses.replace(ExactMatch.task("Paris"), metadata={"w": nan}), "Paris")]
    for task, text in cases:
        here = verify(task, text)
        for other in _through_json_carriers(task):
            assert verify(other, text) == here, (task.answer, text)
        assert verify_many([(task, text)]) == [here]
    assert [verify(t, c).passed for t, c in cases] == [False, False, True, True, True, True]
    plain = {"a": [1, 2.5, "s", None, {"b": True}]}
    assert carried(plain) is plain  # nothing to change: the same object (identity caches still hit)


def test_nan_in_params_is_judged_as_json_carries_it():
    """A spec's NaN param is null once serve or a record carried it; built in process it stayed NaN: composite's
    threshold NaN never passed (reward >= NaN), while served it was null, the every-component rule."""
    import dataclasses

    from crossgym.api import verify
    from crossgym.protocol import VerifierSpec
    from crossgym.verifiers.composite import Composite

    ex = Composite.examples()[0]
    spec = VerifierSpec("composite", {**ex.task.verifier.params, "threshold": float("nan")})
    task = dataclasses.replace(ex.task, verifier=spec)
    here = verify(task, ex.completion)
    assert here.passed
    for other in _through_json_carriers(task):
        assert verify(other, ex.completion) == here
