"""Whose failure a Verdict is (crossgym.scoring.failure): one rule behind the scoring rule, the records and serve."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crossgym.api import load_verifier
from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.protocol import Completion, Message, Task, Verdict, VerifierSpec
from crossgym.rollout.driver import Episode
from crossgym.rollout.store import RolloutStore
from crossgym.scoring import Provenance, RecordWriter, RewardRule, cause, fault, iter_records, rollout_record
from crossgym.scoring.failure import fault_of_dict, is_infra


def _task(answer: Any = "Paris", verifier: str = "exact_match") -> Task:
    return Task(id="t", prompt="Capital of France?", answer=answer, verifier=VerifierSpec(verifier))


class Buggy(BaseEnvironment):
    name = "buggy"
    default_max_turns = 3

    def respond(self, action: Message) -> Reply:
        raise ZeroDivisionError("bug in the environment")


def _env_failure() -> Verdict:
    """The Verdict the episode driver gives an environment whose step raises."""
    ep = Episode(task=_task(), env=Buggy(), env_name="buggy")
    ep.start(None)
    while not ep.done:
        ep.take(Message(role="assistant", content="Paris"))
    assert ep.error is not None
    return ep.verdict(load_verifier("exact_match"))


def _verdicts() -> dict[str, Verdict]:
    exact = load_verifier("exact_match")
    return {
        "passed": exact.verify(_task(), Completion.from_text("Paris")),
        "wrong": exact.verify(_task(), Completion.from_text("Rome")),
        "malformed": exact.verify(_task(), Completion.from_text("")),
        # tool_call refuses a task whose answer is not a call: the verifier cannot score it
        "verifier_exception": load_verifier("tool_call").verify(_task(answer=7, verifier="tool_call"),
                                                                Completion.from_text("x")),
        "verifier_timeout": Verdict.timeout(0.5),
        "environment": _env_failure(),
        # the code verifiers' shape when the sandbox cannot run the harness (raised inside score)
        "sandbox": Verdict.exception("RuntimeError: sandbox: bubblewrap is not installed"),
    }


EXPECTED = {"passed": ("none", None), "wrong": ("model", "wrong"), "malformed": ("model", "malformed"),
            "verifier_exception": ("infra", "verifier_exception"), "verifier_timeout": ("infra", "verifier_timeout"),
            "environment": ("infra", "environment"), "sandbox": ("infra", "sandbox")}


def test_fault_and_cause_of_every_kind_of_verdict() -> None:
    verdicts = _verdicts()
    assert verdicts["malformed"].error_kind == "malformed" and verdicts["verifier_exception"].error_kind == "exception"
    for name, v in verdicts.items():
        assert (fault(v), cause(v)) == EXPECTED[name], (name, v)
        assert is_infra(v) is (EXPECTED[name][0] == "infra")
        assert fault_of_dict(v.to_dict()) == EXPECTED[name][0]
    assert fault_of_dict("not a verdict") is None and fault_of_dict({"error": 3}) is None


@pytest.mark.parametrize("on_error", ["none", 0.0, -1.0])
def test_the_scoring_rule_gives_on_error_exactly_to_infra_faults(on_error: Any) -> None:
    rule = RewardRule(on_error=on_error)
    for name, v in _verdicts().items():
        scored = rule.combine(v, {})
        if EXPECTED[name][0] == "infra":
            assert scored.reward == (None if on_error == "none" else on_error), name  # masked under "none"
            assert scored.metrics["crossgym/verifier_error"] == 1.0
        else:
            assert scored.reward == v.reward, name  # the model's own reward, zero included: never masked
            assert scored.metrics["crossgym/verifier_error"] == 0.0


def test_every_record_writer_carries_the_fault(tmp_path: Any) -> None:
    verdicts = _verdicts()
    rule = RewardRule(on_error="none")
    task = _task()
    # training's rollouts.jsonl (RecordWriter -> append_records)
    writer = RecordWriter(tmp_path / "rollouts.jsonl", backend="trl", model="tiny")
    writer.write(writer.record(task, Completion.from_text("x"), rule.combine(v, {})) for v in verdicts.values())
    # eval's store (RolloutStore.append_docs)
    store = RolloutStore(tmp_path / "eval.jsonl")
    prov = Provenance.new(task.verifier, None, source="eval")
    store.append_docs([rollout_record(task, Completion.from_text("x"), v, provenance=prov) for v in verdicts.values()])
    store.close()
    for name in ("rollouts.jsonl", "eval.jsonl"):
        docs = list(iter_records(tmp_path / name))
        assert [d["verdict"]["fault"] for d in docs] == [EXPECTED[k][0] for k in verdicts], name
    masked = [d for d in iter_records(tmp_path / "rollouts.jsonl") if d["verdict"]["fault"] == "infra"]
    assert len(masked) == 4 and all(d["provenance"].get("reward_seen") is None for d in masked)
    line = (tmp_path / "eval.jsonl").read_text().splitlines()[0]
    assert json.loads(line)["verdict"] == {**verdicts["passed"].to_dict(), "fault": "none"}
