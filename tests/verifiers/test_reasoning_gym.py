"""reasoning_gym verifier: reasoning-gym's own score_answer on the entry it generated."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

from crossgym.api import load_verifier  # noqa: E402
from crossgym.environments.sources.reasoning_gym import reasoning_gym  # noqa: E402
from crossgym.protocol.errors import VerifierError  # noqa: E402
from crossgym.protocol.task import Completion, Task, VerifierSpec  # noqa: E402
from crossgym.verifiers.reasoning_gym import ReasoningGym, dataset_for, jsonable  # noqa: E402


def inline(**params: object) -> ReasoningGym:
    """The verifier scoring in this thread (run_score), so tests need no worker processes."""
    return ReasoningGym(**params)


def run(v: ReasoningGym, task: Task, text: str):
    return v.run_score(task, Completion.from_text(text), 30.0)


@pytest.mark.parametrize("dataset, config", [
    ("basic_arithmetic", {}),
    ("chain_sum", {"min_terms": 2, "max_terms": 3}),
    ("word_sorting", {}),
    ("spell_backward", {}),
    ("letter_counting", {}),
])
def test_own_answers_score_one_and_wrong_answers_score_less(dataset: str, config: dict) -> None:
    v = inline()
    for task in reasoning_gym(dataset, n=3, seed=5, config=config):
        entry = dataset_for(dataset, task.metadata["reasoning_gym"]["config"])[task.metadata["reasoning_gym"]["index"]]
        good = run(v, task, f"thinking...\n<answer>{entry['answer']}</answer>")
        assert good.reward == 1.0 and good.passed, (task.id, good)
        bad = run(v, task, "<answer>definitely not it</answer>")
        assert bad.reward < 1.0 and not bad.passed


def test_matches_reasoning_gym_scoring_exactly() -> None:
    v = inline()
    for task in reasoning_gym("basic_arithmetic", n=5, seed=1):
        meta = task.metadata["reasoning_gym"]
        ds = dataset_for("basic_arithmetic", meta["config"])
        entry = ds[meta["index"]]
        for guess in (entry["answer"], "0", ""):
            got = run(v, task, f"<answer>{guess}</answer>")
            assert got.reward == ds.score_answer(guess, entry)
        longer = run(v, task, f"<answer>{entry['answer']}0</answer>")  # its substring credit is not paid
        assert 0 < ds.score_answer(entry["answer"] + "0", entry) < 1 and longer.reward == 0.0, longer


def test_last_answer_tag_counts_and_think_is_skipped() -> None:
    task = next(iter(reasoning_gym("basic_arithmetic", n=1, seed=2)))
    right = task.answer
    v = inline()
    assert run(v, task, f"<answer>0</answer> no wait <answer>{right}</answer>").passed
    assert run(v, task, f"<think><answer>0</answer></think><answer>{right}</answer>").passed
    assert run(v, task, f"The answer is {right}").error_kind == "malformed"
    assert inline(extract="marker").run_score(task, Completion.from_text(f"The answer is {right}"), 30).passed
    assert run(v, task, "").error_kind == "malformed"


def test_stored_entry_is_used_when_regeneration_is_off() -> None:
    task = next(iter(reasoning_gym("chain_sum", n=1, seed=3)))
    d = task.to_dict()
    d["metadata"]["reasoning_gym"]["index"] = None  # cannot regenerate: the stored JSON entry is scored
    t2 = Task.from_dict(d)
    assert run(inline(), t2, f"<answer>{task.answer}</answer>").passed
    assert run(inline(regenerate=False), task, f"<answer>{task.answer}</answer>").passed


def test_bad_tasks_are_exceptions() -> None:
    t = Task(id="x", prompt="?", answer="1", verifier=VerifierSpec("reasoning_gym"))
    assert run(inline(), t, "<answer>1</answer>").error_kind == "exception"
    t = Task(id="x", prompt="?", answer="1", verifier=VerifierSpec("reasoning_gym"),
             metadata={"reasoning_gym": {"dataset": "no_such_dataset", "config": {}, "index": 0}})
    assert run(inline(), t, "<answer>1</answer>").error_kind == "exception"


def test_bad_params() -> None:
    with pytest.raises(VerifierError):
        ReasoningGym(extract="telepathy")
    with pytest.raises(VerifierError):
        ReasoningGym(threshold=0)


def test_through_the_registry_in_the_process_pool() -> None:
    """The registered verifier runs in crossgym's worker pool; a few calls, then the examples."""
    v = load_verifier(VerifierSpec("reasoning_gym"))
    task = next(iter(reasoning_gym("basic_arithmetic", n=1, seed=9)))
    assert v.verify(task, Completion.from_text(f"<answer>{task.answer}</answer>")).passed
    for ex in ReasoningGym.examples():
        assert ex.matches(v.verify(ex.task, ex.completion)), ex.note


def test_jsonable() -> None:
    assert jsonable({"a": (1, 2), "b": {3, 1}, 4: float("nan")}) == {"a": [1, 2], "b": [1, 3], "4": "nan"}


def test_two_upstream_scorers_that_reward_anything_are_corrected() -> None:
    """game_of_life_halting's score_answer is ``bool(answer) == bool(entry["answer"])``: "banana" and the wrong
    truth value scored 1.0. coin_flip divided its prefix credit by the shorter string: "0" scored 1.0 against
    0.234375, more than an honest 0.5."""
    v = inline()
    for task in reasoning_gym("game_of_life_halting", n=3, seed=3, config={"size": 8}):
        meta = task.metadata["reasoning_gym"]
        right = str(dataset_for("game_of_life_halting", meta["config"])[meta["index"]]["answer"])
        wrong = {"True": "False", "False": "True"}[right]
        assert run(v, task, f"<answer>{right}</answer>").passed
        assert run(v, task, f"<answer>{right.lower()}</answer>").passed
        assert run(v, task, f"<answer>{wrong}</answer>").reward == 0.0
        assert run(v, task, "<answer>banana</answer>").reward == 0.0
    for task in reasoning_gym("coin_flip", n=6, seed=3):
        meta = task.metadata["reasoning_gym"]
        right = str(dataset_for("coin_flip", meta["config"])[meta["index"]]["answer"])
        assert run(v, task, f"<answer>{right}</answer>").reward == 1.0
        if 0.01 <= float(right) < 1 and len(right) > 3:  # (a prefix of it: credit for its share of the digits)
            assert run(v, task, "<answer>0</answer>").reward < 0.5
            assert run(v, task, f"<answer>{right[:3]}</answer>").reward < 1.0


@pytest.mark.parametrize("dataset, hedge", [
    ("course_schedule", "{right}{wrong}"), ("syllogism", "YesNo"), ("gcd", "-{right}"), ("basic_arithmetic", "{right}0"),
    ("letter_counting", "1 2 3 4 5 6 7 8 9 {right}"), ("tsumego", "{right} A1 B2"),
])
def test_an_answer_holding_the_oracle_among_other_text_earns_nothing(dataset: str, hedge: str) -> None:
    """reasoning-gym pays len(oracle) / len(answer) to an answer containing the oracle (its default scorer, ~35
    datasets inherit it, and tsumego's own): "TrueFalse" earned ~0.5 on any yes/no task, "-3" 0.5 for 3."""
    v = inline()
    for task in reasoning_gym(dataset, n=3, seed=1):
        meta = task.metadata["reasoning_gym"]
        ds = dataset_for(dataset, meta["config"])
        entry = ds[meta["index"]]
        right = str(entry["answer"])
        wrong = {"True": "False", "False": "True", "Yes": "No", "No": "Yes"}.get(right, "0")
        text = hedge.format(right=right, wrong=wrong)
        if dataset == "syllogism" and right not in ("Yes", "No"):
            continue
        assert 0 < ds.score_answer(text, entry) < 1  # what reasoning-gym pays it
        got = run(v, task, f"<answer>{text}</answer>")
        assert got.reward == 0.0 and not got.passed and "not paid" in got.reason, got
        assert run(v, task, f"<answer>{right}</answer>").reward == 1.0
