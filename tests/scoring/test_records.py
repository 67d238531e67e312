"""Provenance and rollout records: one shape written, every shape ever written read back (reverify included)."""

from __future__ import annotations

import json

from crossgym.eval.reverify import reverify
from crossgym.protocol import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring import Provenance, RecordWriter, RewardRule, append_records, read_rollouts, rollout_record
from crossgym.scoring.records import provenance_of


def _task(i: int) -> Task:
    return Task(id=f"t{i}", prompt="2+2?", answer="4", verifier=VerifierSpec("exact_match"))


def _old_records() -> list[dict]:
    """The three provenance shapes crossgym 0.1 wrote (eval, TRL/Unsloth training, OpenRLHF)."""
    c = Completion.from_text("4")
    base = {"completion": c.to_dict(), "verdict": Verdict.ok(1.0).to_dict(), "turns": 1, "timings": {}}
    return [
        {**base, "task": _task(0).to_dict(), "provenance": {
            "key": "t0#0@h", "verifier": {"name": "exact_match", "version": "1", "params": {}}}},
        {**base, "task": _task(1).to_dict(), "provenance": {
            "verifier": "exact_match", "verifier_version": "1", "verifier_params": {}, "crossgym_version": "0.1.0",
            "model": "m", "step": 3, "reward_seen": 1.0, "source": "train"}},
        {**base, "task": _task(2).to_dict(), "provenance": {
            "verifier": "exact_match", "verifier_params": {}, "crossgym_version": "0.1.0", "reward_seen": 1.0,
            "source": "train", "backend": "openrlhf"}},
    ]


def test_every_old_provenance_shape_reads_as_schema_2(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in _old_records()))
    provs = [provenance_of(r) for r in read_rollouts(path)]
    for p in provs:
        assert p.verifier is not None and p.verifier.name == "exact_match" and p.verifier.params == {}
    eval_, train, openrlhf = provs
    assert eval_.key == "t0#0@h" and eval_.verifier.version == "1"
    assert train.step == 3 and train.verifier.version == "1" and train.source == "train" and train.reward_seen == 1.0
    assert openrlhf.backend == "openrlhf" and openrlhf.verifier.version is None


def test_reverify_reads_training_and_openrlhf_files_of_0_1(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in _old_records()))
    doc = reverify(path)  # 0.1 died here: AttributeError: 'str' object has no attribute 'get'
    assert doc["ok"] and doc["checked"] == 3 and doc["changed"] == 0


def test_written_records_round_trip_through_reverify_with_zero_drift(tmp_path):
    rule = RewardRule()
    writer = RecordWriter(tmp_path / "train" / "rollouts.jsonl", backend="trl", model="m", step=lambda: 7)
    from crossgym.api import load_verifier

    records = []
    for i, text in enumerate(["4", "5", "", "four"]):
        task, c = _task(i), Completion.from_text(text)
        records.append(writer.record(task, c, rule.score(task, c), load_verifier(task.verifier)))
    writer.write(records)
    rollouts = read_rollouts(writer.path)
    assert [provenance_of(r).step for r in rollouts] == [7] * 4
    assert all(provenance_of(r).backend == "trl" and provenance_of(r).schema == 2 for r in rollouts)
    doc = reverify(writer.path)
    assert doc["ok"] and doc["checked"] == 4


def test_a_lone_surrogate_in_a_reason_still_writes_a_valid_utf8_line(tmp_path):
    task, c = _task(0), Completion.from_text("x")
    verdict = Verdict.exception("solution said \ud800")
    prov = Provenance.new(task.verifier, None, source="eval")
    n = append_records(tmp_path / "r.jsonl", [rollout_record(task, c, verdict, provenance=prov)])
    raw = (tmp_path / "r.jsonl").read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    assert n == 1 and read_rollouts(tmp_path / "r.jsonl")[0].verdict.reason == verdict.reason


def test_a_lone_surrogate_in_a_completion_reads_back_unchanged(tmp_path):
    task, c = _task(0), Completion.from_text("tool said \udcff")
    prov = Provenance.new(task.verifier, None, source="train")
    append_records(tmp_path / "r.jsonl", [rollout_record(task, c, Verdict.ok(0.0), provenance=prov)])
    (tmp_path / "r.jsonl").read_bytes().decode("utf-8")
    assert read_rollouts(tmp_path / "r.jsonl")[0].completion.text == "tool said \udcff"
