"""math: math-verify equivalence in the worker pool; hard timeouts from threads; list-many-answers hacks."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("math_verify")

from crossgym.protocol.errors import VerifierError  # noqa: E402
from crossgym.protocol.task import Completion  # noqa: E402
from crossgym.verifiers.batch import verify_many  # noqa: E402
from crossgym.verifiers.math import Math, parse_gold  # noqa: E402

HANG = "The answer is $9^{9^{9^{9}}}$"  # sympy tries to evaluate the tower: never finishes


def run(answer, text, **params):
    params.setdefault("timeout", 30.0)  # generous: a loaded CI box must not turn slow sympy into a failure
    return Math(**params).verify(Math.task(answer, params=params), Completion.from_text(text))


PASSING = [
    ("\\frac{1}{2}", "The probability is $\\boxed{\\frac{1}{2}}$."),
    ("\\frac{1}{2}", "The answer is $0.5$"),
    ("0.5", "$\\boxed{\\frac12}$"),
    ("2\\sqrt{2}", "$\\sqrt{8}$"),
    ("(x+1)^2", "So it is $x^2+2x+1$."),
    ("x^2+2x+1", "Final answer: $(x+1)^2$"),
    ("\\{1,2\\}", "The solutions are $\\{2, 1\\}$"),
    ("(1,2)", "The interval is $(1, 2)$"),
    ("\\pi/2", "The angle is $\\boxed{\\frac{\\pi}{2}}$"),
    ("3", "After simplifying, the final answer is $3$."),
    ("3", "\\boxed{3}"),
    (3, "\\boxed{3}"),
    ("1000", "The answer is $1{,}000$"),
    ("10\\%", "$\\boxed{10\\%}$"),
    ("x=3", "$\\boxed{x=3}$"),
    ("$-\\frac{3}{4}$", "$\\boxed{-0.75}$"),
    ("\\boxed{5}", "$\\boxed{5}$"),
    (["4", "\\frac{8}{2}"], "$\\boxed{4}$"),
]
FAILING = [
    ("3", "The answer is $\\boxed{4}$."),
    ("\\frac{1}{2}", "$\\boxed{\\frac{1}{3}}$"),
    ("(x+1)^2", "$x^2+1$"),
    ("2", "It is $1$ or $2$ or $3$."),  # many candidates parse as a set, not as 2
    ("2", "$\\boxed{1, 2, 3}$"),
    ("2", "$\\boxed{2}$ or $\\boxed{3}$"),
    ("2", "<think>The answer is $\\boxed{2}$</think>The answer is $\\boxed{3}$"),  # reasoning is not the answer
]


def _batch(cases):
    return verify_many([(Math.task(g, params={"timeout": 30.0}), t) for g, t in cases], workers=2, chunksize=4)


def test_equivalent_answers_pass():
    wrong = [(c, v) for c, v in zip(PASSING, _batch(PASSING), strict=True) if not (v.passed and v.error is None)]
    assert not wrong, wrong


def test_wrong_or_hedged_answers_fail():
    wrong = [(c, v) for c, v in zip(FAILING, _batch(FAILING), strict=True) if v.passed or v.error is not None]
    assert not wrong, wrong


@pytest.mark.parametrize("text", ["", "   ", "I do not know.", "<think>hmm, maybe 3", "no math here at all"])
def test_malformed(text):
    v = run("3", text)
    assert v.error_kind == "malformed", v


def test_bare_latex_gold_is_read_as_math():
    # math-verify's plain-expression extraction would read 2\sqrt{2} as 2: the bare gold is wrapped in $..$
    assert str(parse_gold("2\\sqrt{2}")[0]) == "2*sqrt(2)"
    assert run("2\\sqrt{2}", "$2$").passed is False
    assert run("5 dollars", "The answer is $5$").passed


def test_unparsable_gold_is_an_exception():
    v = run("", "$3$")
    assert v.error_kind == "exception" and "bad task" in v.reason
    assert run(None, "$3$").error_kind == "exception"


def test_a_hanging_answer_from_a_thread_is_stopped_and_the_pool_goes_on():
    """The power tower keeps sympy busy: stopped at the CPU budget (CPU_SHARE of the timeout), the model's fault."""
    out = {}

    def worker():
        t0 = time.monotonic()
        out["v"] = run("(x+1)^2", HANG, timeout=1.5)
        out["dt"] = time.monotonic() - t0

    t = threading.Thread(target=worker)
    t.start()
    t.join(60)
    assert out["v"].error_kind in ("malformed", "timeout"), out  # (the CPU budget, or a loaded machine's deadline)
    assert out["dt"] < 30  # returned at the deadline (plus worker start-up), not after sympy finished
    assert run("3", "$\\boxed{3}$").passed  # the killed worker was replaced


def test_many_threads_at_once_are_correct_and_deterministic():
    cases = [("\\frac{1}{2}", "$0.5$", True), ("3", "$4$", False), ("(x+1)^2", "$x^2+2x+1$", True)] * 2
    results = [None] * len(cases)

    def go(i):
        g, t, _ = cases[i]
        results[i] = run(g, t)

    ts = [threading.Thread(target=go, args=(i,)) for i in range(len(cases))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert [r.passed for r in results] == [c[2] for c in cases]
    assert len({(r.reward, r.reason) for r in results[::3]}) == 1


def test_params_validated():
    for bad in ({"float_rounding": 0}, {"numeric_precision": "x"}, {"timeout": -1}, {"nope": 1}):
        with pytest.raises(VerifierError):
            Math(**bad)


@pytest.mark.parametrize("gold,right,wrong", [
    ("\\$18.90", "The answer is $\\boxed{18.90}$", "The answer is $\\boxed{19.90}$"),  # MATH's escaped dollar
    ("x=3 and y=4", "$\\boxed{x=3, y=4}$", "$\\boxed{4}$"),  # read as the last number, 4, it paid half an answer
    (1e-07, "$\\boxed{0.0000001}$", "$\\boxed{e}$"),  # repr "1e-07" read as Euler's number times ...
    (1e20, "$\\boxed{100000000000000000000}$", "$\\boxed{20}$"),
    ("5 dollars", "The answer is $5$", "The answer is $6$"),
])
def test_references_are_read_as_written(gold, right, wrong):
    """rt3: an escaped \\$ was taken for a math delimiter, "x=3 and y=4" for 4, the float 1e-07 for 'e'."""
    assert run(gold, right).passed, run(gold, right)
    v = run(gold, wrong)
    assert not v.passed and v.error is None, v


@pytest.mark.parametrize("text,passed", [
    ("$\\boxed{Paris}$", True), ("$\\boxed{\\text{Paris}}$", True), ("The capital is $\\boxed{paris}$.", True),
    ("$\\boxed{sirap}$", False), ("$\\boxed{Pairs}$", False), ("$\\boxed{aiPrs}$", False),
    ("$\\boxed{Pa^1ris}$", False), ("$\\boxed{Lyon}$", False),
])
def test_a_word_reference_is_compared_as_text_not_as_a_product_of_letters(text, passed):
    """math-verify reads "Paris" as P*a*r*i*s, so every anagram of it passed."""
    v = run("Paris", text)
    assert v.passed is passed and v.error is None, (text, v)


def test_short_letter_answers_stay_algebra():
    assert run("xy", "$\\boxed{yx}$").passed and run("x", "$\\boxed{x}$").passed
    assert run(["Paris", "\\frac{1}{2}"], "$\\boxed{0.5}$").passed  # a list mixing a word and a number
    assert not run(["Paris", "\\frac{1}{2}"], "$\\boxed{sirap}$").passed


@pytest.mark.parametrize("gold", ["x=3, y=-1", "x=3 \\text{ and } y=-1", "$x = 3, y = -1$"])
def test_a_reference_that_assigns_variables_matches_unnamed_values_in_its_order_only(gold):
    """math-verify keeps the values of ``x=3, y=-1`` as a set, so (-1, 3), which says x=-1, passed."""
    for right in ("$\\boxed{(3, -1)}$", "$\\boxed{3, -1}$", "$\\boxed{x=3, y=-1}$", "$\\boxed{y=-1, x=3}$",
                  "$x = 3$ and $y = -1$"):
        assert run(gold, right).passed, (gold, right)
    for wrong in ("$\\boxed{(-1, 3)}$", "$\\boxed{-1, 3}$", "$\\boxed{\\{-1, 3\\}}$", "$\\boxed{x=-1, y=3}$"):
        assert not run(gold, wrong).passed, (gold, wrong)
    assert run("a=1, b=2, c=5", "$\\boxed{(1, 2, 5)}$").passed
    assert not run("a=1, b=2, c=5", "$\\boxed{(5, 2, 1)}$").passed
    assert run("x=3", "$\\boxed{3}$").passed  # one variable: its value, as before


@pytest.mark.parametrize("text", ["$\\boxed{" + "{" * 20 + "2" + "}" * 21 + "$", "$\\boxed{5!!!!!!}$",
                                  "$" + "(" * 50 + "2" + ")" * 50 + "$",
                                  "$\\boxed{" + "\\{" * 20 + "2" + "\\}" * 20 + "}$"])
def test_answers_the_parser_would_take_minutes_on_are_malformed_at_once(text):
    """Each held a worker to its deadline (a timeout: the machine's failure, masked under on_error none)."""
    t0 = time.monotonic()
    v = run("2", text)
    assert v.error_kind == "malformed" and "not parsed" in v.reason, v
    assert time.monotonic() - t0 < 2.0
    assert run("\\frac{\\sqrt{2}}{2}", "$\\boxed{\\frac{\\sqrt{\\frac{1}{2}}}{1}}$").passed  # ordinary nesting


def test_an_answer_that_takes_the_cpu_budget_is_malformed_not_a_timeout():
    """``\\binom{10^9}{10^5}`` kept sympy busy past the 5 s deadline: a timeout, the machine's fault (masked under
    on_error none). Scoring stops at CPU_SHARE of the timeout in CPU time and the answer is the model's fault."""
    t0 = time.monotonic()
    v = run("2", "$\\boxed{\\binom{10^9}{10^5}}$", timeout=2.0)
    assert v.error_kind in ("malformed", "timeout"), v  # malformed where it got the CPU (a loaded CI box may not)
    assert v.error_kind == "timeout" or "s of CPU" in v.reason, v
    assert time.monotonic() - t0 < 20
    assert run("3", "$\\boxed{3}$", timeout=2.0).passed  # the worker goes on


def test_a_tuple_of_names_states_which_value_is_which():
    """``(x, y) = (-1, 3)`` says x=-1: math-verify kept the values only and passed it against x=3, y=-1."""
    for wrong in ("The solution is $(x, y) = (-1, 3)$.", "$\\boxed{(a,b)=(-1,3)}$", "$\\boxed{(y,x)=(3,-1)}$"):
        assert not run("x=3, y=-1", wrong).passed, wrong
    for right in ("$\\boxed{(x,y)=(3,-1)}$", "$\\boxed{(y,x)=(-1,3)}$"):
        assert run("x=3, y=-1", right).passed, right


def test_a_long_run_of_numbers_is_malformed_at_once():
    """math-verify's expression pattern is quadratic on "1 1 1 ...": 22 KB took 3 s of CPU (a timeout when loaded)."""
    v = run("3", "1 " * 11000)
    assert v.error_kind == "malformed" and "digits, dots and spaces" in v.reason, v
    listed = "The values: " + " ".join(str(i) for i in range(300)) + ". So the answer is $\\boxed{3}$."
    assert run("3", listed).passed


@pytest.mark.parametrize(("gold", "answer", "ok"), [
    ("1.6 \\times 10^{-19}", "\\boxed{0.0}", False),  # math-verify rounds both to 6 decimals: 0 == 0
    ("6.62607015 \\times 10^{-34}", "\\boxed{0}", False),
    ("0.0000004", "\\boxed{-0.0000001}", False),
    ("0.0000003", "\\boxed{0.000}", False),
    ("1.6 \\times 10^{-19}", "\\boxed{1.6 \\times 10^{-19}}", True),
    ("1.6 \\times 10^{-19}", "\\boxed{1.60 \\times 10^{-19}}", True),
    ("1.602 \\times 10^{-19}", "\\boxed{1.6 \\times 10^{-19}}", False),  # as 1.602 and 1.6 differ
    ("0.0000003", "\\boxed{3 \\times 10^{-7}}", True),
    ("0", "\\boxed{0.0}", True),
    ("\\frac{1}{3}", "\\boxed{0.333333}", True),  # a number near 1: math-verify's 6 decimals, as before
])
def test_a_tiny_reference_is_compared_to_six_significant_digits(gold, answer, ok):
    v = Math().run_score(Math.task(gold), Completion.from_text(answer))
    assert v.passed is ok and v.error is None, v


@pytest.mark.parametrize(("gold", "answer", "ok", "malformed"), [
    ("2", "\\boxed{3 = 2}", False, True),  # math-verify compared the last side: a false statement passed
    ("3", "\\boxed{1+1 = 3}", False, True),
    ("2", "\\boxed{1+1 = 2}", True, False),  # the computation, then the result
    ("2", "\\boxed{x = 2}", True, False),
    ("3.14", "\\boxed{\\frac{22}{7} = 3.14}", True, False),  # a rounding on the way is no false statement
    ("2", "\\boxed{x = 5 = 2}", False, True),  # math 8: a chain with a false link
    ("2", "\\boxed{5 = 2.5 = 2}", False, True),
    ("2", "\\boxed{\\infty = 2}", False, True),  # a finite number equal to an infinite one
    ("2", "\\boxed{\\frac{1}{0} = 2}", False, True),
    ("2", "\\boxed{x = 1 + 1 = 2}", True, False),  # a true chain is an answer
])
def test_a_false_equation_is_no_answer(gold, answer, ok, malformed):
    v = Math().run_score(Math.task(gold), Completion.from_text(answer))
    assert v.passed is ok and (v.error_kind == "malformed") is malformed, v


@pytest.mark.parametrize("text", ["$\\boxed{\\operatorname{zeros}(12000, 12000)}$", "$\\operatorname{eye}(12000)$",
                                  "The answer is $\\operatorname { ones }(100000, 100000)$."])
def test_a_sized_matrix_builder_is_malformed_not_gigabytes(text):
    """``\\operatorname{zeros}(12000, 12000)`` (44 characters) took a pool worker to 4.5 GB in 5 s: sympy fills the
    matrix at once. The builders are not parsed (and the pool's memory budget bounds what else gets through)."""
    t0 = time.monotonic()
    v = run("1", text)
    assert v.error_kind == "malformed" and "matrix" in v.reason, v
    assert time.monotonic() - t0 < 2.0
    assert run("1", "$\\boxed{\\operatorname{rank}(1)}$").error_kind != "malformed"  # other operator names parse


@pytest.mark.parametrize(("gold", "answer", "ok", "malformed"), [
    ("\\frac{1}{3}", "\\boxed{\\int_0^1 x^2\\,dx}", False, True),  # math 8: the question's integral passed its value
    ("x^2", "\\boxed{\\int 2x\\, dx}", False, True),
    ("5050", "The answer is $\\sum_{k=1}^{100} k$", False, True),
    ("120", "\\boxed{\\prod_{k=1}^{5} k}", False, True),
    ("1", "\\boxed{\\lim_{x \\to 0} \\frac{\\sin x}{x}}", False, True),
    ("6x", "\\boxed{\\frac{d}{dx} 3x^2}", False, True),
    ("2x", "\\boxed{\\frac{\\partial}{\\partial x} x^2}", False, True),
    ("\\frac{1}{3}", "\\boxed{\\frac{1}{3}}", True, False),
    ("\\frac{d}{2}", "\\boxed{\\frac{d}{2}}", True, False),  # a variable d is no derivative
    ("10", "\\boxed{\\binom{5}{2}}", True, False),
])
def test_an_answer_that_writes_out_the_operation_is_no_answer(gold, answer, ok, malformed):
    """math-verify's parser evaluates integrals, sums, products, limits and derivatives, so an answer that copied
    the question's operation passed its value."""
    v = Math().run_score(Math.task(gold), Completion.from_text(answer))
    assert v.passed is ok and (v.error_kind == "malformed") is malformed, v


@pytest.mark.parametrize(("gold", "answer", "ok"), [
    ("12.5\\%", "12.5", True),  # math 9: failed, while 25\% passed 25 (math-verify's integer-only rule)
    ("7.5\\%", "\\boxed{7.5}", True),
    ("12.5", "\\boxed{12.5\\%}", True),
    ("12.5\\%", "0.125", True),
    ("12.5\\%", "\\boxed{12.5\\%}", True),
    ("25\\%", "\\boxed{25.0}", True),
    ("25\\%", "25", True),
    ("12.5\\%", "12.6", False),
    ("12.5\\%", "1.25", False),
    ("7.5\\%", "\\boxed{75}", False),
    ("7.5\\%", "\\boxed{7.4\\%}", False),
    ("12.5\\%", "\\boxed{x}", False),
])
def test_a_decimal_percentage_matches_its_number(gold, answer, ok):
    """A percentage is its number or its hundredth (MATH's graders drop the sign; math-verify took 9\\% for 9 but
    12.5\\% only for 0.125)."""
    for fast in (True, False):
        v = Math(fast_path=fast).run_score(Math.task(gold), Completion.from_text(answer))
        assert v.passed is ok and v.error_kind is None, (fast, v)
