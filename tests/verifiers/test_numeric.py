"""numeric: number formats seen in GSM8K/MATH-style completions, tolerances, and list-many-answers hacks."""

from __future__ import annotations

from fractions import Fraction

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.numeric import Numeric, numbers_in


def run(answer, text, **params):
    return Numeric(**params).verify(Numeric.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("answer,text", [
    (18, "18"),
    (18, "Janet has 16 - 3 - 4 = 9 eggs. 9 * $2 = $18.\n#### 18"),
    (18, "The answer is 18 dollars."),
    (18, "<answer>18.0</answer>"),
    (1234567, "Final answer: 1,234,567"),
    (1234.5, "\\boxed{1{,}234.5}"),
    (0.5, "\\boxed{\\frac{1}{2}}"),
    (0.5, "Answer: 1/2"),
    (0.75, "\\boxed{\\dfrac{3}{4}}"),
    (-3, "x = −3, so the answer is -3"),
    (-3, "<answer>-3</answer>"),
    (25, "The discount is 25%."),
    (0.25, "Answer: 25%"),
    (1e-3, "Answer: 1e-3"),
    (3500, "Answer: 3.5e3"),
    (5, "Answer: $5"),
    (5, "The answer is: **5**"),
    ("12.5%", "Answer: 12.5%"),
    ("12.5%", "Answer: 0.125"),
    ("1/3", "Answer: 0.3333333"),  # within rel_tol 1e-6
    ([7, 7.0], "7"),
    (100, "<think>maybe 90? no, 80... or 100</think>The total is 100."),
])
def test_passes(answer, text):
    v = run(answer, text, rel_tol=1e-6 if answer != "1/3" else 1e-6)
    assert v.passed and v.error is None, v


@pytest.mark.parametrize("answer,text", [
    (18, "The answer is 17."),
    (18, "<answer>180</answer>"),
    (0.5, "Answer: 5"),
    (1000, "Answer: 1,001"),
    (-3, "Answer: 3"),
    (18, "I computed 18 first, but the answer is 19."),
])
def test_fails(answer, text):
    v = run(answer, text)
    assert not v.passed and v.error is None, v


@pytest.mark.parametrize("text", [
    "",
    "I don't know.",
    "\\boxed{17 or 18}",
    "<answer>17, 18, 19</answer>",
    "Answer: 17 18",
    "\\boxed{18}\\boxed{17}",
    "Answer: 1/0",
    "Answer: " + "9" * 500,
])
def test_malformed(text):
    v = run(18, text)
    assert v.error_kind == "malformed", v


def test_listing_many_numbers_in_full_text_judges_only_the_last():
    # GSM8K convention: without a marked answer the last number is the answer, so listing candidates cannot win
    assert not run(18, "17 18 19").passed
    assert run(18, "17 19 18").passed
    assert run(18, "17 18 19", fallback="none").error_kind == "malformed"


def test_tolerances():
    assert run(3.14159, "Answer: 3.1416", rel_tol=1e-4).passed
    assert not run(3.14159, "Answer: 3.1416").passed
    assert run(100, "Answer: 100.4", abs_tol=0.5).passed
    assert not run(100, "Answer: 100.6", abs_tol=0.5).passed
    assert run(10**30, "Answer: 1000000000000000000000000000000").passed  # exact for big integers
    assert not run(10**30, "Answer: 1000000000000000000000000000001", rel_tol=0).passed


def test_percent_modes():
    assert run(0.5, "Answer: 50%", percent="fraction").passed
    assert not run(50, "Answer: 50%", percent="fraction").passed
    assert run(50, "Answer: 50%", percent="value").passed
    assert not run(0.5, "Answer: 50%", percent="value").passed


def test_numbers_in_is_exact():
    vals = [v for v, _, _ in numbers_in("1,234.5 and 1/3 and \\frac{2}{4} and -7 and 2e2 and 12 %")]
    assert vals == [Fraction("1234.5"), Fraction(1, 3), Fraction(1, 2), Fraction(-7), Fraction(200), Fraction(12)]
    # a minus sign between numbers is subtraction, not a sign
    assert [v for v, _, _ in numbers_in("16-3")] == [16, 3]


def test_bad_tasks_and_params():
    assert run(None, "1").error_kind == "exception"
    assert run("twelve", "12").error_kind == "exception"
    assert run(float("nan"), "1").error_kind == "exception"
    for bad in ({"rel_tol": -1}, {"fallback": "first"}, {"percent": "x"}, {"abs_tol": "0.1"}):
        with pytest.raises(VerifierError):
            Numeric(**bad)


@pytest.mark.parametrize("number", ["\\frac{1}{2}", "1 / 2", "\\frac{ 1 }{ 2 }", "\\frac{" + " " * 300 + "1}{2}"])
def test_the_last_number_is_the_full_scans_wherever_the_window_edge_falls(number: str) -> None:
    """last_number scans a window from the end: an edge inside "\\frac{1}{2}" or "1 / 2" read the 2 alone (reward
    0 for a right 1/2, and 1 for a wrong "answer" 2). Every offset of the edge, against numbers_in's last."""
    from crossgym.verifiers.numeric import last_number

    for tail in range(220, 270 + len(number)):
        text = "We get x = " + number + "z" * tail
        assert last_number(text) == numbers_in(text)[-1], tail
    assert run(0.5, "So x = " + number + " and that is all" + "." * 250).reward == 1.0


@pytest.mark.parametrize("answer,text,reward", [
    (-0.5, "The answer is -\\frac{1}{2}", 1.0), (0.5, "The answer is -\\frac{1}{2}", 0.0),
    (-0.25, "x = -\\dfrac{1}{4}", 1.0), (0.5, "The answer is \\frac12", 1.0), (12, "The answer is \\frac12", 0.0),
    (0.75, "\\boxed{\\tfrac 3 4}", 1.0), (5, "x - \\frac12 = 5", 1.0),
    (3e8, "The answer is $3 \\times 10^{8}$ m/s", 1.0), (3e8, "c = 3\\times10^8", 1.0), (2e-3, "\\boxed{2 \\cdot 10^{-3}}", 1.0),
    (90, "The angle is $90^\\circ$", 1.0), (90, "\\boxed{90^{\\circ}}", 1.0), (8, "2^3 = 8", 1.0),
])
def test_signs_short_fractions_and_powers_of_ten(answer, text, reward):
    """-\\frac{1}{2} read as +1/2 (a wrong sign earned 1.0), \\frac12 as twelve, 3 \\times 10^{8} as 8."""
    v = run(answer, text)
    assert (v.reward, v.error) == (reward, None), v


@pytest.mark.parametrize("text", ["The answer is \\sqrt{2}", "The answer is 3\\pi", "\\boxed{2^3}", "so 2^{10}",
                                  "\\boxed{2\\frac{1}{2}}", "Answer: 2 \\times 3", "\\boxed{\\log 8}",
                                  "The answer is \\sqrt[3]{27}", "\\boxed{\\frac{\\sqrt{2}}{2}}", "Answer: 10^{3}"])
def test_a_number_inside_an_expression_is_not_the_answer(text):
    """\\sqrt{2} was read as 2, 3\\pi as 3: a gold 2 or 3 paid the wrong answer. Each of these numbers is an
    operand, so no number is the answer: malformed, whatever the reference."""
    from crossgym.verifiers.numeric import last_number

    for answer in (2, 3, 8, 1024, 1000, 6, 2.5):
        v = run(answer, text)
        assert v.error_kind == "malformed" and "expression" in v.reason, (answer, v)
    with pytest.raises(Exception, match="expression"):
        last_number(text)


def test_units_and_prose_around_a_number_keep_it():
    for answer, text in [(3, "v = 3\\,\\frac{m}{s}"), (5, "\\text{The answer is }5"), (3.14, "x \\approx 3.14"),
                         (20, "5 \\times 4 = 20"), (45, "The angle is 45^{\\circ}."), (75, "\\frac{3}{4} \\cdot 100 = 75")]:
        v = run(answer, text)
        assert v.reward == 1.0 and v.error is None, (text, v)


def test_a_tiny_reference_is_judged_by_the_relative_tolerance():
    """abs_tol's default (1e-9) applied to every reference: "Answer: 0", and any wrong answer below 1e-9,
    passed 6.62607015e-34. It now holds for a reference of 0 only, unless abs_tol is given."""
    h = 6.62607015e-34
    assert run(h, "Answer: 6.62607015e-34").passed
    assert not run(h, "Answer: 0").passed and not run(h, "Answer: 6.0e-34").passed
    assert run(0, "Answer: 1e-12").passed and not run(0, "Answer: 0.001").passed
    assert run(h, "Answer: 0", abs_tol=1e-9).passed  # (asked for: as before)


def test_a_reference_past_the_float_range_is_shown_not_raised():
    v = run("1e400", "Answer: 1e400")
    assert v.passed and v.error is None
    assert not run("1e400", "Answer: 5").passed and run("1e400", "Answer: 5").error is None


def test_every_minus_sign_is_a_minus():
    """Fullwidth, small and figure minus signs were dropped: "Answer: －5" passed 5 and failed -5; so were the hyphens
    ‐ and ‑ (U+2011, which chat models write in text) and the modifier and heavy minus signs ˗ ➖ (version 7)."""
    from crossgym.verifiers.numeric import Numeric

    for sign in ("\uff0d", "\ufe63", "\u2012", "\u2212", "\u2010", "\u2011", "\u02d7", "\u2796"):
        text = f"Answer: {sign}5"
        assert Numeric().verify(Numeric.task(-5), Completion.from_text(text)).passed, sign
        assert not Numeric().verify(Numeric.task(5), Completion.from_text(text)).passed, sign


def test_a_number_repeated_in_the_answer_is_converted_once(monkeypatch):
    """Every number of a marked answer was converted: 500,000 of "1%" took 1.5 s. The same writing converts once
    (each is still checked for being an expression's operand)."""
    from crossgym.verifiers import numeric

    calls = []
    convert = numeric._to_fraction
    monkeypatch.setattr(numeric, "_to_fraction", lambda tok: calls.append(tok) or convert(tok))
    v = run(0.01, "<answer>" + "1% " * 20_000 + "</answer>")
    assert v.passed and len(calls) == 1, (v, len(calls))
    assert run(1, "<answer>1 1.0 1</answer>").passed
    assert run(1, "<answer>1 1 2 1</answer>").error_kind == "malformed"
    assert run(1, "<answer>1 1 2^{1}</answer>").error_kind == "malformed"  # an operand, however often seen


@pytest.mark.parametrize("text", [
    "Answer: 3π", "Answer: 3 π", "Answer: √9", "Answer: ∛27", "Answer: ±3", "Answer: ∓3", "Answer: 3²", "Answer: 10³",
    "Answer: 3ⁿ", "Answer: ⁻3", "Answer: 2√2", "Answer: 2*sqrt(2)", "Answer: sqrt(3)", "Answer: log 8", "Answer: π/2",
    "Answer: n/2", "Answer: 2·2", "Answer: 2 ⋅ 2", "Answer: 2 × 2", "Answer: 2 ÷ 2", "Answer: 2 * 2", "Answer: 2*2",
    "Answer: 2 x 2", "Answer: 3½", "Answer: 1 ½", "so the area is 25π", "so it is 2√2",
])
def test_an_operator_written_in_unicode_or_plain_text_makes_an_operand(text):
    """Version 7: numeric refused \\sqrt{9}, 3\\pi, 3^{2}, \\pm 3 and 2\\times 2 but read √9 as 9, 3π as 3, 3² as 3,
    ±3 as 3, sqrt(3) as 3, π/2 as 2 and 2·2 as 2 (a number written twice is one answer), 3½ as 3: "Answer: 3π" passed
    a reference of 3 and "2√2" one of 2. The operand is no answer, as in LaTeX: malformed, whatever the reference."""
    from crossgym.verifiers.numeric import last_number

    for answer in (2, 3, 4, 8, 9, 25, 27, 1000, 1.5, 3.5, 1):
        v = run(answer, text)
        assert v.error_kind == "malformed" and "expression" in v.reason, (answer, v)
    with pytest.raises(Exception, match="expression"):
        last_number(text)


@pytest.mark.parametrize("answer,text", [
    (0.5, "Answer: ½"), (0.75, "\\boxed{¾}"), (0.5, "Answer: 1⁄2"), (3e8, "Answer: 3 × 10⁸"), (3e8, "c = 3×10⁸ m/s"),
    (1.5e-3, "Answer: 1.5 × 10⁻³"), (18, "Answer: 1.8·10^1"), (25, "Answer: 25 m²"), (8, "Answer: 8 cm³"),
    (3, "It is 3× faster. Answer: 3×"), (18, "**18**"), (18, "The answer is *18* dollars."), (18, "so 9 * 2 = 18."),
    (18, "She has 3 x 6 = 18 apples"), (18, "9 × 2 = 18"), (18, "Answer: 18\n* because 9 * 2 = 18"),
    (18, "Total:\n* 18 apples"), (18, "Answer: 18 km/h"), (2018, "It was signed on 12/25/2018"), (-5, "Answer: ‑5"),
])
def test_unicode_numbers_and_honest_markup_keep_their_value(answer, text):
    """What the version 7 operators leave alone: a vulgar fraction alone is its value (½ was no number), a
    superscript power of ten is an exponent (3 × 10⁸ read as 3 and 10, two numbers), a superscript after a unit
    is the unit's (25 m²), × with nothing after it is a ratio, and *italic*, **bold** and bullets are no
    multiplication."""
    v = run(answer, text)
    assert v.passed and v.error is None, (text, v)


@pytest.mark.parametrize(("answer", "text", "reward"), [
    (18, "The answer is:\n- 18", 1.0),  # a list item: read as math-verify reads it
    (18, "Steps:\n- 3 apples\n  - 18 pears", 1.0),
    (-18, "The answer is:\n- 18", 0.0),
    (-18, "x = - 18", 1.0),  # not at a line's start: a minus
    (-18, "Answer: - 18", 1.0),  # the answer span's start is no line start
    (-18, "<answer>- 18</answer>", 1.0),
    (18, "<answer>\n- 18\n</answer>", 1.0),  # the tag's body on lines of its own: a list item
    (18, "<answer>\n  - 18 apples\n</answer>", 1.0),
    (-18, "The answer:\n-18", 1.0),  # no space after it: a minus
    (0.5, "So:\n- \\frac{1}{2}", 1.0),
])
def test_a_dash_starting_a_line_is_a_list_marker(answer, text, reward):
    v = run(answer, text)
    assert v.reward == reward and v.error is None, v


@pytest.mark.parametrize(("answer", "text", "error"), [
    (5, "\\boxed{5!}", True),  # 5! is 120: never the reference 5
    (5, "The answer is $5!$", True),
    (5, "The answer is \\(5!\\)", True),
    (5, "The answer is 5!", False),  # prose: an exclamation
    (4, "Since 5 != 4, the answer is 4", False),
])
def test_a_factorial_in_math_is_an_expression(answer, text, error):
    v = run(answer, text)
    if error:
        assert v.error_kind == "malformed" and "expression" in v.reason and not v.passed, v
    else:
        assert v.passed, v


@pytest.mark.parametrize("text", [
    "48 + 24 = 72.\n#### 72\nThat took 2 steps.", "#### **72**\n\nSo 3 friends shared it.",
    "The answer is 72. She sold 24 of them in May.", "The answer is $72.00! That is 3 more than before.",
    "Answer: 72 clips. In May she sold 24.",
])
def test_gsm8k_answers_with_prose_after_them(text):
    """Version 10: lm-evaluation-harness's gsm8k strict match reads "#### 72" and gsm8k-cot's "The answer is 72.";
    crossgym read the prose after them (2) or found two numbers (malformed)."""
    v = Numeric().verify(Numeric.task(72), Completion.from_text(text))
    assert v.passed, (text, v)


@pytest.mark.parametrize("text,kind", [
    ("The answer is 72. Or maybe 73.", "malformed"), ("The answer is 72. Actually, it is 73.", "malformed"),
    ("The answer is 72 (48 + 24).", "malformed"), ("#### 2. Add the May sales\nThe total is 73", "fail"),
])
def test_a_later_sentence_taking_the_answer_back_stays_strict(text, kind):
    v = Numeric().verify(Numeric.task(72), Completion.from_text(text))
    assert not v.passed and (v.error_kind == "malformed") == (kind == "malformed"), (text, v)
