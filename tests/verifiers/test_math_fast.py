"""math fast path: the same parse as math-verify's (type, value, text) or none, and the same Verdict, always.

Each case is checked against math-verify itself in this run (``fast_path=False`` / ``fast=False``), never against
a written-down answer. bench/math_fast_path.py runs the same comparison on large generated sets and on
math-verify's own regression cases.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("math_verify")

from sympy import Float, srepr  # noqa: E402

from crossgym.protocol.task import Completion  # noqa: E402
from crossgym.verifiers import math as vmath  # noqa: E402
from crossgym.verifiers.math import Math, fast_parse, parse_answer  # noqa: E402


def canon(parsed):
    return [("str", x) if isinstance(x, str) else (type(x).__name__, srepr(x)) for x in parsed]


FAST, SLOW = Math(), Math(fast_path=False)


def both(gold, text, **params):
    task, comp = Math.task(gold, params=params), Completion.from_text(text)
    fast, slow = (FAST, SLOW) if not params else (Math(**params), Math(fast_path=False, **params))
    return fast.run_score(task, comp).to_dict(), slow.run_score(task, comp).to_dict()


# the number forms whose reading is easy to get subtly wrong: separators, comma decimals, leading/trailing zeros,
# the 0.5 -> \frac{1}{2} rewrite, percentages inside and after the math, currency, signs, \dfrac, a/b
NUMBERS = ["42", "-42", "007", "-007", "0", "-0", "00", "0.5", ".5", "-0.5", "0.50", "-0.50", "2.0", "1000.0",
           "3.14159", "1,000", "-1,234", "12,345,678", "01,234", "1,2345", "1,234.5", "1{,}000", "1\\,000", "12 345", "1 000 000", "7,425,000", "1000,99", "0,111", "1,22",
           "10\\%", "12.5\\%", "\\frac{1}{2}", "\\frac12", "\\dfrac{3}{4}", "-\\frac{3}{4}", "\\frac{4}{2}",
           "\\frac{0}{5}", "\\frac{1}{0}", "\\frac{01}{2}", "3/4", "-3/4", "1e5", "2^{10}", "123456789012345678901234567890",
           "1234567890123456789012345678901234567890", "\\sqrt{2}", "2\\sqrt{2}", "x=3", "(1,2)", "\\pi", "\\infty"]
FORMS = ["{}", "${}$", "$${}$$", "\\[{}\\]", "\\({}\\)", "\\boxed{{{}}}", "$\\boxed{{{}}}$", "$\\boxed{{ {} }}$.",
         "The answer is ${}$.", "The final answer is ${}$. I hope it is correct.", "Final answer: {}",
         "so x = {}.", "It costs ${}", "{} apples", "${}$%", "{} percent", "$\\boxed{{{}}}$ and $\\boxed{{{}}}$",
         "${}$ or $7$", "Answer: \\({}\\) dollars", "\\boxed{{{}}}\\boxed{{{}}}", "We get {} m²."]


def texts():
    return [f.format(*[n] * f.count("{}")) for n in NUMBERS for f in FORMS]


def test_fast_path_is_on_for_the_installed_math_verify():
    assert vmath._fast_setup(), "math-verify/latex2sympy versions outside FAST_VERSIONS: fast path off"
    assert canon(fast_parse("The answer is $\\boxed{42}$")) == canon(parse_answer("The answer is $\\boxed{42}$",
                                                                                  fast=False))


def test_every_fast_parse_is_math_verify_parse():
    decided = 0
    for t in texts():
        quick = fast_parse(t)
        if quick is None:
            continue
        decided += 1
        assert canon(quick) == canon(parse_answer(t, fast=False)), t
    assert decided > len(texts()) // 3  # most plain-number forms are decided without the LaTeX parser


@pytest.mark.parametrize("text", ["$2\\sqrt{2}$", "$1$ and $2$", "$x = 3$", "The answer is 1/2", "$\\frac{1}{0}$",
                                  "$1234567890123456789012345678901234567890$", "It is -05.", "$2^{10}$",
                                  "$\\boxed{1, 2}$", "$(1, 2)$"])
def test_anything_but_a_plain_number_goes_to_math_verify(text):
    assert fast_parse(text) is None


@pytest.mark.parametrize("digits", ["\u0661\u0662", "\uff11\uff12", "\u0663", "1\u0662", "\u0967\u0968"])
def test_digits_other_than_ascii_are_math_verify_s_to_read(digits):
    # regexes' \d matches Arabic-Indic, fullwidth and Devanagari digits and int() reads them, but math-verify's
    # parser finds no answer in them: the fast path read "١٢" as 12 (a pass against "12", malformed by math-verify)
    for form in ("{}", "We get {} apples.", "The answer is ${}$.", "\\boxed{{{}}}", "Final answer: {}"):
        text = form.format(digits)
        assert fast_parse(text) is None or fast_parse(text) == [], text
        for gold in ("12", "3", digits):
            fast, slow = both(gold, text)
            assert fast == slow, (gold, text)


def test_no_candidate_at_all_is_malformed_both_ways():
    assert fast_parse("I do not know.") == [] == parse_answer("I do not know.", fast=False)
    fast, slow = both("3", "I do not know.")
    assert fast == slow and fast["error"].startswith("malformed")


def test_verdicts_identical_on_the_number_forms():
    golds = ["42", "1000", "0.5", "\\frac{1}{2}", "10\\%", "-0.5", "3.14159", "2", "x=3", "1,22", "7425000"]
    for k, gold in enumerate(golds):
        for t in texts()[k::15]:  # every text against about one gold in 1.4 (bounded: the slow side is ~3 ms each)
            fast, slow = both(gold, t)
            assert fast == slow, (gold, t)


def gen_pairs(n, rng):
    """Unseen (gold, completion) pairs: integers, decimals, fractions, percentages; 60% right."""
    out = []
    for _ in range(n):
        kind, right = rng.randrange(4), rng.random() < 0.6
        if kind == 0:
            v = rng.randint(-10**4, 10**9)
            gold, shown = str(v), f"{v if right else v + rng.randint(1, 9):,}"
        elif kind == 1:
            places = rng.randint(1, 7)
            v = round(rng.uniform(-999, 10**5), places)
            gold = f"{v:.{places}f}"
            shown = gold if right else f"{v + 10 ** -places:.{places}f}"
            shown += "0" * rng.randint(0, 2)
        elif kind == 2:
            p, q = rng.randint(0, 99), rng.randint(1, 99)
            gold, shown = f"\\frac{{{p}}}{{{q}}}", f"\\frac{{{2 * p if right else p + 1}}}{{{2 * q}}}"
        else:
            v = rng.randint(0, 999)
            gold, shown = rng.choice([f"{v}\\%", str(v)]), f"{v if right else v + 1}\\%"
        out.append((gold, rng.choice(FORMS[:14]).format(shown)))
    return out


def test_verdicts_identical_on_generated_unseen_answers():
    rng = random.Random(27)
    pairs = gen_pairs(300, rng)
    on_fast = sum(fast_parse(t) is not None for _, t in pairs)
    for gold, text in pairs:
        fast, slow = both(gold, text)
        assert fast == slow, (gold, text)
    assert on_fast > 0.7 * len(pairs)
    for gold, text in pairs[:60]:  # params reach both paths alike
        fast, slow = both(gold, text, float_rounding=2, strict=False)
        assert fast == slow, (gold, text)


def test_plain_latex_shortcut_is_what_the_normaliser_gives():
    from latex2sympy2_extended.latex2sympy2 import normalize_latex

    _, config, boxed_last, _ = vmath._fast_setup()
    rng = random.Random(5)
    raws = ["42", " 42 ", "\n-7\t", "0.5", "0.50", "\\boxed{12}", "\\boxed{ 3.25 }", " \\boxed{-0}", "00.5", "-0.5",
            "1.", ".5", "\\boxed{0.5}"]
    raws += [rng.choice(["", " ", "\\boxed{"]) + f"{rng.choice(['', '-'])}{rng.randint(0, 10**6)}"
             f"{rng.choice(['', '.' + str(rng.randint(0, 999))])}" for _ in range(300)]
    for raw in raws:
        raw = raw + "}" if raw.count("{") > raw.count("}") else raw
        m = vmath._PLAIN_LATEX.fullmatch(raw)
        if m is None or (m[1] or m[2]) == "0.5":
            continue
        assert (m[1] or m[2]) == normalize_latex(raw, config) == normalize_latex(raw, boxed_last), raw


def test_decimal_rule_is_verify_on_decimal_pairs():
    mv = vmath._math_verify()
    rng = random.Random(9)
    checked = 0
    for _ in range(1500):
        r = rng.choice([6, 2, 3])
        places = rng.randint(1, r)
        a = f"{rng.choice(['', '-'])}{rng.randint(0, 10 ** rng.randint(0, 15 - places) - 1)}.{rng.randint(0, 10 ** places - 1):0{places}d}"
        b = rng.choice([a, a + "0", f"{float(a) + 10 ** -places:.{places}f}", f"{float(a) - 10 ** -places:.{places}f}"])
        pa, pb = [Float(a), a], [Float(b), b]
        da, db = vmath._plain_decimal(pa, r), vmath._plain_decimal(pb, r)
        if da is None or db is None:
            continue
        checked += 1
        assert (da == db) == mv.verify(pa, pb, float_rounding=r, timeout_seconds=None), (a, b, r)
    assert checked > 1000
    assert vmath._plain_decimal([Float("1.2345678"), "1.2345678"], 6) is None  # more places than float_rounding
    assert vmath._plain_decimal([Float("0.5"), "0.25"], 6) is None  # value and text disagree: not ours to judge


def test_pool_path_gives_the_same_verdicts():
    from crossgym.verifiers.batch import verify_many

    pairs = gen_pairs(24, random.Random(3))
    fast = verify_many([(Math.task(g, params={"timeout": 30.0}), t) for g, t in pairs], workers=2, chunksize=4)
    slow = verify_many([(Math.task(g, params={"timeout": 30.0, "fast_path": False}), t) for g, t in pairs],
                       workers=2, chunksize=4)
    assert [v.to_dict() for v in fast] == [v.to_dict() for v in slow]
