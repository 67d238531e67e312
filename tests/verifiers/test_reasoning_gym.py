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


def rg_task(dataset: str, config: dict, index: int) -> tuple[Task, dict]:
    entry = dataset_for(dataset, config)[index]
    meta = {"reasoning_gym": {"dataset": dataset, "config": config, "index": index, "entry": jsonable(entry)}}
    task = Task(id=f"{dataset}-{index}", prompt="q", answer=jsonable(entry["answer"]),
                verifier=VerifierSpec("reasoning_gym"), metadata=meta)
    return task, entry


def test_complex_arithmetic_pays_nothing_for_nan() -> None:
    """Its score is min(1.0, exp(-distance)): "nan" makes the distance NaN and min(1.0, nan) is 1.0, so "nan"
    earned 1.0 on every task (version 6)."""
    v, config = inline(), {"seed": 3, "size": 8}
    ds = dataset_for("complex_arithmetic", config)
    for i in range(4):
        task, entry = rg_task("complex_arithmetic", config, i)
        for junk in ("nan", "nan+nanj", "NaN", "(nan)", "inf"):
            if junk != "inf":
                assert ds.score_answer(junk, entry) == 1.0  # what reasoning-gym pays it
            got = run(v, task, f"<answer>{junk}</answer>")
            assert got.reward == 0.0 and not got.passed, (junk, got)
        assert run(v, task, f"<answer>{entry['answer']}</answer>").reward == 1.0
        assert 0 < run(v, task, "<answer>0</answer>").reward < 1.0  # (its distance credit, as before)


def test_propositional_logic_pays_a_tautology_what_a_wrong_conclusion_earns() -> None:
    """It pays 0.25 for a "trivial" valid conclusion and 0.05 for one that does not follow: "(P ∨ ¬P)" follows from
    any premises, so it earned 0.25 on every task, five times an honest wrong conclusion (version 6)."""
    v, config = inline(), {"seed": 3, "size": 8}
    ds = dataset_for("propositional_logic", config)
    for i in range(4):
        task, entry = rg_task("propositional_logic", config, i)
        p = entry["metadata"]["variables"][0]
        for tautology in (f"({p} ∨ ¬{p})", f"({p} → {p})", f"(({p} ∧ {p}) ↔ {p})"):
            assert ds.score_answer(tautology, entry) == 0.25
            assert run(v, task, f"<answer>{tautology}</answer>").reward == 0.05, tautology
        assert run(v, task, f"<answer>{entry['metadata']['example_answer']}</answer>").reward == 1.0
    task, entry = rg_task("propositional_logic", config, 1)  # premises Q, (P ∨ P), Q: an atom that follows
    assert run(v, task, "<answer>P</answer>").reward == ds.score_answer("P", entry) == 0.25


def test_coin_flip_tolerance_is_no_licence_to_answer_zero() -> None:
    """Its tolerance is 1e-4 of probability: every probability below it (15 heads in a row: 1/32768) passed "0",
    and any other guess under 1e-4 (version 6: also within 5% of the probability)."""
    v, config = inline(), {"seed": 3, "size": 8}
    ds = dataset_for("coin_flip", config)
    tiny = [i for i in range(8) if float(ds[i]["answer"]) < 1e-4]
    assert tiny
    for i in tiny:
        task, entry = rg_task("coin_flip", config, i)
        p = float(entry["answer"])
        for guess in ("0", "0.00001", "1e-9"):
            assert ds.score_answer(guess, entry) == 1.0  # what reasoning-gym pays it
            assert run(v, task, f"<answer>{guess}</answer>").reward < 0.1, guess
        exact = "1/32768" if abs(p - 1 / 32768) < 1e-12 else entry["answer"]
        for honest in (entry["answer"], f"{p:.3g}", f"{p:.6f}", exact):
            assert run(v, task, f"<answer>{honest}</answer>").reward == 1.0, honest
    for i in range(8):  # probabilities over 0.01 keep reasoning-gym's own tolerance
        task, entry = rg_task("coin_flip", config, i)
        if float(entry["answer"]) >= 0.01:
            near = f"{float(entry['answer']) + 9e-5:.6f}"
            assert run(v, task, f"<answer>{near}</answer>").reward == ds.score_answer(near, entry) == 1.0


def task_of(dataset: str, index: int = 0, seed: int = 1) -> Task:
    meta = {"reasoning_gym": {"dataset": dataset, "config": {"seed": seed, "size": 20}, "index": index,
                              "entry": None}}
    return Task(id=f"{dataset}-{index}", prompt="q", answer=None, verifier=VerifierSpec("reasoning_gym", {}),
                metadata=meta)


def oracle(dataset: str, index: int = 0, seed: int = 1) -> dict:
    return dataset_for(dataset, {"seed": seed, "size": 20})[index]


#: scorers that hand the answer to Python: eval(answer), or sympy's parse_expr (eval after tokenising)
EVALUATING = ["string_insertion", "spiral_matrix", "binary_matrix", "n_queens", "puzzle24", "countdown",
              "simple_integration", "intermediate_integration", "polynomial_multiplication"]


@pytest.mark.parametrize("dataset", EVALUATING)
def test_an_answer_holding_code_is_malformed_and_runs_nothing(dataset: str, tmp_path) -> None:
    """reasoning-gym's scorers ran the answer as Python in crossgym's process: it wrote files, read the scorer's own
    variables ("oracle_answer") and could patch math_verify for every later verdict of the worker. Only plain
    expressions compile while a scorer runs; the honest answer keeps its score."""
    v, task = inline(), task_of(dataset)
    assert run(v, task, f"<answer>{oracle(dataset)['answer']}</answer>").reward == 1.0
    marker = tmp_path / "written"
    for code in (f'__import__("pathlib").Path({str(marker)!r}).touch()', "oracle_answer",
                 f'open({str(marker)!r}, "w")', "().__class__.__mro__", "[x for x in range(3)]",
                 'setattr(__import__("math_verify"), "verify", eval("lambda *a, **k: True"))'):
        got = run(v, task, f"<answer>{code}</answer>")
        assert got.reward < 1.0 and not marker.exists(), (code, got)
        # (puzzle24 and countdown: crossgym reads their arithmetic itself, without Python; parse_expr reads a bare
        # name as a symbol, eval as the scorer's variable)
        if dataset not in ("puzzle24", "countdown") and (code.startswith(("__import__", "open", "setattr"))
                                                         or dataset in EVALUATING[:4]):
            assert got.error_kind == "malformed" and "would run the answer as code" in got.reason, (code, got)


def test_code_in_one_answer_leaves_the_worker_pool_as_it_was() -> None:
    """Through the worker pool, as training scores: the answer that replaced math_verify.verify there made every
    later math verdict of that worker pass."""
    patch = 'setattr(__import__("math_verify"), "verify", eval("lambda *a, **k: True"))'
    rg = load_verifier(VerifierSpec("reasoning_gym", {}))
    for _ in range(4):  # (every worker of the pool, likely)
        assert rg.verify(task_of("string_insertion"), Completion.from_text(f"<answer>{patch}</answer>")).error_kind == \
            "malformed"
    math = Task(id="m", prompt="q", answer="3", verifier=VerifierSpec("math", {}))
    for _ in range(6):
        assert not load_verifier(math.verifier).verify(math, Completion.from_text("\\boxed{4}")).passed


def test_puzzle24_needs_the_puzzles_numbers_and_exactly_24() -> None:
    v, entry = inline(), oracle("puzzle24")
    assert run(v, task_of("puzzle24"), f"<answer>{entry['answer']}</answer>").reward == 1.0
    ds = dataset_for("puzzle24", {"seed": 1, "size": 20})
    for junk in ("1*2*3*4", "5*5-1/5", "(1+2+3)*4"):  # any four numbers, 24.8 cut to 24: its scorer paid 1.0
        assert ds.score_answer(junk, entry) == 1.0 or junk == "(1+2+3)*4"
        assert run(v, task_of("puzzle24"), f"<answer>{junk}</answer>").reward == 0.01, junk
    numbers = entry["metadata"]["numbers"]
    assert run(v, task_of("puzzle24"), f"<answer>{'+'.join(map(str, numbers))}</answer>").reward == \
        (1.0 if sum(numbers) == 24 else 0.01)


def test_countdown_takes_the_four_operations_on_the_given_numbers_only() -> None:
    v, entry = inline(), oracle("countdown")
    task = task_of("countdown")
    numbers, target = entry["metadata"]["numbers"], entry["metadata"]["target"]
    assert run(v, task, f"<answer>{entry['answer']}</answer>").reward == 1.0
    one = "(pi/pi)"
    junk = f"({'+'.join(map(str, numbers))})*(pi-pi)+" + "+".join([one] * 3)  # 3 from nothing: its scorer ran it
    ds = dataset_for("countdown", {"seed": 1, "size": 20})
    assert ds.score_answer(f"({'+'.join(map(str, numbers))})*(pi-pi)+{target}", entry) == 0.05  # (its own check)
    assert run(v, task, f"<answer>{junk}</answer>").reward == 0.01
    assert run(v, task, f"<answer>{'*'.join(map(str, numbers))}</answer>").reward in (0.05, 1.0)
    assert run(v, task, f"<answer>1**1*{entry['answer']}</answer>").reward <= 0.01  # no power


def test_prime_factorization_pays_half_credit_for_a_factorisation_only() -> None:
    v, entry = inline(), oracle("prime_factorization", 1)
    task = task_of("prime_factorization", 1)
    number = 1
    for f in entry["answer"].split("×"):
        number *= int(f)
    assert run(v, task, f"<answer>{entry['answer']}</answer>").reward == 1.0
    assert run(v, task, f"<answer>{number}</answer>").reward == 0.01  # its scorer paid 0.5
    assert run(v, task, f"<answer>1 × {number}</answer>").reward == 0.01
    first, *rest = [int(f) for f in entry["answer"].split("×")]
    partial = " × ".join(map(str, [first * rest[0], *rest[1:]]))  # two factors merged: some work done
    assert run(v, task, f"<answer>{partial}</answer>").reward == 0.5


@pytest.mark.parametrize(("dataset", "index", "answer", "reward"), [
    ("simple_integration", 1, "Integral(2 - 18*x**2, x)", 0.0),  # the question restated: its scorer paid 1.0
    ("intermediate_integration", 1, "Integral(2*x**3*sin(x), x)", 0.0),
    ("simple_integration", 1, "-6*pow(x, 3) + 2*x + C", 1.0),  # Python's pow, as sympy's parser reads it
    ("simple_integration", 1, "-6*x**3 + 2*x + abs(C)", 1.0),
    ("string_insertion", 0, "'a'*(4*10**9)", 0.0),  # 4 GB of the worker's memory
])
def test_unevaluated_operations_and_repeated_sequences_earn_nothing_and_python_numbers_pass(
        dataset: str, index: int, answer: str, reward: float) -> None:
    got = run(inline(), task_of(dataset, index), f"<answer>{answer}</answer>")
    assert got.reward == reward, got
    if reward == 0.0:
        assert got.error_kind == "malformed" and "would run the answer as code" in got.reason, got


def _constant_for(entry: dict) -> str:
    """One answer in the task's format, the same for every task of its kind (the middle of the range)."""
    return {"date": "50 days", "time": "12:00", "time_seconds": "12:00:00",
            "time_ms": "12:00:00.000"}.get(entry["metadata"]["task_type"], "50 days, 12:00")


@pytest.mark.parametrize("dataset, guess", [("time_intervals", None), ("rectangle_count", "6"),
                                            ("coin_flip", "0.5")])
def test_one_constant_answer_earns_next_to_nothing(dataset: str, guess: str | None) -> None:
    """Version 9: time_intervals paid closeness over its whole range ("50 days" earned 0.76 on average),
    rectangle_count counts within 4 ("6": 0.40), coin_flip the "0." every probability starts with ("0.5": 0.25)."""
    v, config = inline(), {"seed": 1, "size": 40}
    ds = dataset_for(dataset, config)
    ours, theirs = [], []
    for i in range(40):
        task, entry = rg_task(dataset, config, i)
        answer = guess or _constant_for(entry)
        if answer == entry["answer"]:
            continue
        theirs.append(ds.score_answer(answer, entry))
        ours.append(run(v, task, f"<answer>{answer}</answer>").reward)
        assert run(v, task, f"<answer>{entry['answer']}</answer>").reward == 1.0
    assert sum(theirs) / len(theirs) > 0.2 and sum(ours) / len(ours) < 0.05, (sum(theirs), sum(ours))


def test_near_misses_keep_partial_credit() -> None:
    """A day off of 100 earns 0.5 in time_intervals; a probability right to 3 of its 6 digits earns half."""
    v, config = inline(), {"seed": 1, "size": 40}
    ds = dataset_for("time_intervals", config)
    i = next(i for i in range(40) if ds[i]["metadata"]["task_type"] == "date")
    task, entry = rg_task("time_intervals", config, i)
    days = int(entry["answer"].split()[0])
    assert run(v, task, f"<answer>{days + 1} days</answer>").reward == pytest.approx(0.5)
    config = {"seed": 3, "size": 8}
    ds = dataset_for("coin_flip", config)
    i = next(i for i in range(8) if ds[i]["answer"] == "0.234375")
    task, entry = rg_task("coin_flip", config, i)
    assert run(v, task, "<answer>0.2349</answer>").reward == pytest.approx(0.5)
