"""synthesize() end to end with arithmetic seeds; the model's replies are scripted (scripted_model.ScriptedModel)."""

from __future__ import annotations

import json

import pytest
from scripted_model import ScriptedModel

from crossgym.api import load_tasks, load_verifier
from crossgym.protocol import Completion, ConfigError, Task
from crossgym.synth import synthesize
from crossgym.synth.filter import REASONS


def _draft(prompt: str, answer: object, wrong: str) -> str:
    return json.dumps({"prompt": prompt, "answer": answer, "wrong_answer": wrong})


SEEDS = load_tasks("arithmetic", n=6, seed=1)
ASK = "Give the final answer inside <answer></answer>."
DRAFTS = [
    _draft(f"Compute 12 + 30. {ASK}", 42, "<answer>41</answer>"),            # kept
    "Sure! Here is a new task: compute 5 + 5.",                              # unparseable
    '{"question": "Compute 2 + 2.", "answer": 4}',                           # bad_fields
    _draft(SEEDS[0].prompt[-1].content.upper(), SEEDS[0].answer, "0"),       # duplicate of a seed (case ignored)
    _draft(f"Compute 6 * 7. {ASK}", "forty-two", "<answer>41</answer>"),     # bad_task: numeric needs a number
    _draft(f"Compute 9 - 4. {ASK}", 5, "<answer>4</answer>"),                # solution_rejected (model says 6)
    _draft(f"Compute 8 / 2. {ASK}", 4, "<answer>4.0</answer>"),              # wrong_accepted
    _draft(f"Compute 3 * 3. {ASK}", 9, "I am not sure"),                     # wrong_unscored
    _draft(f"Compute 12 + 30. {ASK}", 42, "<answer>40</answer>"),            # duplicate of an earlier draft
    _draft(f"Compute 100 - 1. {ASK}", 99, "<answer>98</answer>"),            # kept
]
SOLUTIONS = {f"Compute 12 + 30. {ASK}": "12 + 30 = 42. <answer>42</answer>",
             f"Compute 6 * 7. {ASK}": "<answer>42</answer>", f"Compute 9 - 4. {ASK}": "<answer>6</answer>",
             f"Compute 8 / 2. {ASK}": "<answer>4</answer>", f"Compute 3 * 3. {ASK}": "<answer>9</answer>",
             f"Compute 100 - 1. {ASK}": "<answer>99</answer>"}


def test_every_reason_and_the_kept_tasks() -> None:
    model = ScriptedModel(DRAFTS, SOLUTIONS)
    res = synthesize("arithmetic", SEEDS, model, n=2, max_attempts=len(DRAFTS), batch_size=4, seed=3)
    assert [t.prompt[-1].content for t in res.tasks] == [f"Compute 12 + 30. {ASK}", f"Compute 100 - 1. {ASK}"]
    assert sorted(r["reason"] for r in res.rejects) == sorted(
        ["unparseable", "bad_fields", "duplicate", "bad_task", "solution_rejected", "wrong_accepted",
         "wrong_unscored", "duplicate"])
    assert set(REASONS) == {r["reason"] for r in res.rejects} | {"verifier_error"}
    c = res.counts()
    assert c["attempts"] == len(DRAFTS) and c["kept"] == 2 and c["rejected"] == 8 and c["surplus"] == 0
    assert c["duplicate"] == 2 and sum(v for k, v in c.items() if k in REASONS) == c["rejected"]
    # the kept tasks are crossgym Tasks, scored by the seeds' verifier, with provenance, exact through JSON
    numeric = load_verifier("numeric")
    for t in res.tasks:
        assert Task.from_json(t.to_json()) == t
        assert t.verifier == SEEDS[0].verifier and t.env == "single_turn" and t.id.startswith("synth-arithmetic-")
        p = t.metadata["synth"]
        assert t.metadata["family"] == "arithmetic"
        assert p["model"] == "scripted-model" and p["engine"] == "scripted" and p["family"] == "arithmetic"
        assert p["verifier"] == {"name": "numeric", "version": numeric.version}
        assert len(p["prompt_sha256"]) == 64 and len(p["seed_ids"]) == 3
        assert set(p["seed_ids"]) <= {s.id for s in SEEDS} and p["created"].endswith("+00:00")
        assert p["solution_verdict"]["passed"] is True and p["wrong_verdict"]["passed"] is False
        assert numeric.verify(t, Completion.from_text(p["reference_solution"])).passed
    # every reject says why and keeps what the model wrote
    for r in res.rejects:
        assert r["detail"] and r["output"] and len(r["prompt_sha256"]) == 64 and r["seed_ids"]
    wrong_acc = next(r for r in res.rejects if r["reason"] == "wrong_accepted")
    assert wrong_acc["wrong_verdict"]["passed"] is True and wrong_acc["task"]["answer"] == 4
    summary = res.summary()
    assert summary["counts"] == c and set(summary["reasons"]) == set(REASONS) - {"verifier_error"}


def test_stops_at_n_and_counts_the_surplus() -> None:
    drafts = [_draft(f"Compute {i} + 100. {ASK}", i + 100, f"<answer>{i}</answer>") for i in range(4)]
    sols = {f"Compute {i} + 100. {ASK}": f"<answer>{i + 100}</answer>" for i in range(4)}
    model = ScriptedModel(drafts, sols)
    res = synthesize("arithmetic", SEEDS, model, n=1, batch_size=4)
    assert len(res.tasks) == 1 and res.counts()["surplus"] == 3 and res.attempts == 4
    assert [k for k, _ in model.calls] == [4, 4]  # one draft batch, one solve batch


def test_drafts_sample_at_temperature_and_solutions_are_greedy() -> None:
    model = ScriptedModel([], {})
    res = synthesize("arithmetic", SEEDS, model, n=2, batch_size=8)  # the script runs dry: all unparseable
    assert res.attempts == 8 and res.counts()["unparseable"] == 8 and res.tasks == []
    assert model.calls[0][1].temperature == 1.0  # no solve call: nothing parsed


def test_seed_checks() -> None:
    model = ScriptedModel([], {})
    with pytest.raises(ConfigError, match="no seed task of family 'geometry'"):
        synthesize("geometry", SEEDS, model, n=1)
    mixed = [*SEEDS, *load_tasks("multiple_choice", n=2, seed=1)]
    assert len(synthesize("multiple_choice", mixed, model, n=1, max_attempts=1).rejects) == 1  # filtered by family
    untagged = [Task.from_dict({**t.to_dict(), "metadata": {}}) for t in mixed]
    with pytest.raises(ConfigError, match="2 different verifier specs"):
        synthesize("anything", untagged, model, n=1)
