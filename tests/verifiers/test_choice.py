"""multiple_choice: letters and option text from the phrasings models actually use."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.choice import MultipleChoice

OPTS = {"answer": "B", "options": ["Lyon", "Paris", "Nice", "Lille"]}


def run(answer, text, **params):
    return MultipleChoice(**params).verify(MultipleChoice.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("text", [
    "B", "b", "(B)", "B.", "B)", "[B]", "**B**", "`B`", "\\boxed{B}", "$\\boxed{\\text{B}}$", "<answer>B</answer>",
    "Answer: B", "The answer is B.", "The correct answer is (B).", "The correct option is **B**.",
    "I choose B.", "I'd go with option B", "Option B", "B) Paris", "B. Paris is the capital.",
    "Paris", "paris", "Answer: Paris", "Let me think. The answer should be (B).",
    "<think>A is Lyon, not the capital. C and D are not either.</think>\nB",
    "Looking at each option... Therefore, the answer is B because Paris is the capital.",
])
def test_picks_b(text):
    v = run(OPTS, text)
    assert v.passed and v.error is None, (text, v)


@pytest.mark.parametrize("text", ["A", "(C)", "Answer: D", "Lyon", "The answer is A."])
def test_wrong_letter_fails(text):
    v = run(OPTS, text)
    assert not v.passed and v.error is None, (text, v)


@pytest.mark.parametrize("text", [
    "", "I am not sure.", "Answer: A, B, C, D", "<answer>A or B</answer>", "\\boxed{AB}", "B) Lyon",
    "<answer>B</answer><answer>C</answer>", "It's Lyon or Paris",
])
def test_malformed(text):
    v = run(OPTS, text)
    assert v.error_kind == "malformed", (text, v)


def test_answer_forms():
    assert run("C", "C").passed
    assert run("(c)", "C").passed
    assert run({"answer": "Paris", "options": ["Lyon", "Paris"]}, "B").passed  # answer given as the text
    t = MultipleChoice.task("A", metadata={"options": ["yes", "no"]})
    assert MultipleChoice().verify(t, Completion.from_text("yes")).passed
    assert run("K", "K").error_kind == "exception"  # beyond A-J without options
    assert run("K", "K", num_options=12).passed
    assert run(["A"], "A").error_kind == "exception"
    with pytest.raises(VerifierError):
        MultipleChoice(num_options=1)


def test_roman_numeral_i_is_not_option_i_by_accident():
    assert run("A", "I think it is A.").passed
    assert run("A", "I am not sure").error_kind == "malformed"


@pytest.mark.parametrize("text", ["(A) (B) (C) (D)", "A. B. C. D.", "A) B) C)", "[A] [B]", "A: Paris, B: Lyon"])
def test_a_line_listing_the_options_picks_none(text):
    """"(A) (B) (C) (D)" read as A: listing every option earned 1.0 a quarter of the time."""
    for answer in "ABCD":
        v = run(answer, text)
        assert v.error_kind == "malformed" and "several options" in v.reason, (answer, v)
    assert run("B", "The options are (A) (B) (C) (D). Answer: B").reward == 1.0
    assert run("B", "The answer is: B").reward == 1.0


def test_an_answer_growing_past_the_nfkc_cap_is_malformed():
    """1 MB of U+FDFA is 18 MB in NFKC: reading it took 4.1 s."""
    v = run({"answer": "A", "options": ["Paris", "Lyon"]}, "\ufdfa" * 120_000)
    assert v.error_kind == "malformed" and "NFKC" in v.reason, v


@pytest.mark.parametrize("text", ["<answer>A\nB\nC\nD</answer>", "<answer>B\nA</answer>", "\\boxed{B\n(C)}",
                                  "<answer>B\n**C**</answer>", "<answer>(B)\nC.</answer>"])
def test_option_letters_one_a_line_in_the_answer_name_several_options(text):
    """Version 6: a marked answer whose first line is a letter was read from that line alone: "<answer>A\\nB\\nC\\nD
    </answer>" chose A, where "Answer: A, B, C, D" is malformed. Listing the options one a line names them all."""
    for answer in ("A", "B", "C", "D"):
        v = run(answer, text)
        assert v.reward == 0.0 and v.error_kind == "malformed" and "several" in v.reason, (answer, v)
    for honest in ("<answer>B\nBecause Paris is the capital.</answer>", "<answer>B\nB</answer>", "<answer>\nB\n</answer>",
                   "<answer>B\nA good answer.</answer>"):
        assert run(OPTS, honest).passed, honest


@pytest.mark.parametrize("text", [
    "Answer: B, because Paris is the capital.", "The answer is B because it is the capital.", "Answer: B (Paris)",
    "Answer: (B) Paris, since it is the capital.", "Answer: B because I know it.", "Answer: Definitely B",
    "Respuesta: B", "Réponse : (B)", "Antwort: B", "Resposta: B", "Risposta: B", "La respuesta correcta es B.",
    "逐项分析。\n答案：B", "答案是B", "Answer: Ｂ", "I'll go with B.", "I will choose B.",
    "Option A is wrong. B is the correct answer.", "<think>Lyon?</think>\nRespuesta: B",
])
def test_honest_answers_the_harnesses_read(text):
    """Version 7: simple-evals' "Answer: X" (and its multilingual spellings) or lm-evaluation-harness's flexible
    match read these (bench/choice_reference.py); crossgym found them malformed."""
    v = run("B", text)
    assert v.passed, (text, v)
    assert not run("C", text).passed, text


@pytest.mark.parametrize("text", [
    "Answer: B or C", "Answer: B (or possibly C)", "Answer: B/C", "Respuesta: B o C", "Answer: B, I think C",
    "<think>Answer: B</think>", "Answer: Both", "Answer: Definitely not B", "Answer: B (Lyon)",
])
def test_hedges_the_harnesses_pass_stay_unread(text):
    """simple-evals reads "Answer: B or C" as B and "Answer: Both" as B, and both read an answer left in <think>:
    multiple_choice never pays for a hedge (bench/choice_reference.py counts these apart)."""
    for answer in ("B", "C"):
        v = run(OPTS if answer == "B" else {**OPTS, "answer": "C"}, text)
        assert not v.passed and v.error_kind == "malformed", (text, answer, v)


def test_non_english_marker_in_marker_mode_and_english_first():
    assert run("B", "Respuesta: B", extract="marker").passed
    assert run("B", "no marker here", extract="marker").error_kind == "malformed"
    assert run("B", "Answer: B\nRespuesta: C").passed  # an English marker comes first, as before
    assert run("A", "Statement I is correct.").error_kind == "malformed"  # a roman numeral, not option I


@pytest.mark.parametrize("text", ["A is the correct answer or B is the correct answer",
                                  "I choose A or I choose B", "I pick A / I pick B",
                                  "A is the right answer and B is the right answer"])
def test_two_stated_choices_joined_in_one_sentence_are_a_hedge(text: str) -> None:
    """Each phrase alone is a choice ("B is the correct answer", version 7); two joined by or/and/"/" in one
    sentence hedge, whichever comes last (the last was taken: B, the gold here, passed)."""
    v = MultipleChoice()
    task = Task(id="t", prompt="q", answer="B", verifier=VerifierSpec("multiple_choice", {}))
    verdict = v.verify(task, Completion.from_text(text))
    assert verdict.error_kind == "malformed" and "several options: A, B" in verdict.reason


def test_a_later_sentence_that_chooses_again_is_a_change_of_mind() -> None:
    v = MultipleChoice()
    task = Task(id="t", prompt="q", answer="B", verifier=VerifierSpec("multiple_choice", {}))
    assert v.verify(task, Completion.from_text("I choose A. Actually, I choose B.")).passed
