"""math against the graders users compare it with: generated MATH-style (gold, completion) cases, each judged by
crossgym's ``math`` and by a reimplementation of each grader's rule.

    OMP_NUM_THREADS=1 python bench/math_reference.py [--show 6] [--ref-path DIRS]

The graders, reimplemented from their public source (no code of theirs is used). Each reads the last
``\\boxed{..}`` of the completion (found by brace counting) unless said otherwise:

- ``hendrycks``: hendrycks/math ``is_equiv``: both sides through ``_strip_string`` (line breaks, ``\\!``, tfrac/dfrac,
  ``\\left``/``\\right``, ``^\\circ``, ``\\$``, everything from a ``\\text{ `` on (units), ``%``, a leading "."
  gets a 0, a ``k=`` of at most two characters dropped, ``\\sqrt3``/``\\frac12`` braced, spaces dropped, "0.5" made
  ``\\frac{1}{2}``, an integer ``a/b`` made ``\\frac{a}{b}``), then compared as strings.
- ``prm800k``: openai/prm800k ``grade_answer``: equal after the MATH normalisation (an enclosing ``\\text{}`` first
  unwrapped), else its ``_normalize`` (``\\text{}`` unwrapped, ``$``/``%`` dropped, " and "/" or " to commas,
  million/billion, its unit words and ``^\\circ`` dropped, pylatexenc's latex-to-text, mixed numbers "7 3/4" as
  7+3/4, braces and spaces dropped, lower case, integers canonical), then element-wise over a bracketed tuple
  (brackets must match): two fractions ``a/b`` must be equal as text, an integer against a non-integer fails,
  else sympy ``simplify(gold - given) == 0`` (not tried on more than two unknown letters or on ``^{``).
  Needs pylatexenc (``--ref-path``).
- ``qwen``: QwenLM/Qwen2.5-Math ``math_equal`` on both sides through its ``strip_string`` (matrix and relation
  spellings, ``\\text{..}`` at the end dropped, its unit words, ``$``, x=/y=/z=, "and", trailing ".000", ``k=``),
  the answer taken by its ``extract_answer`` (last "boxed"): case-insensitive equality, a letter choice, numbers
  within 1e-4 relative (also x100 and /100: ``include_percentage``), bracket-stripped text equality, element-wise
  lists and matrices, equations (``x=5`` vs ``5``), then sympy (``parse_latex``, ``parse_expr``, latex2sympy:
  equal, ``simplify(a-b)==0``, numerically within 1e-4). word2number is left out (number words stay words);
  latex2sympy is latex2sympy2_extended's (the venv has no latex2sympy2).
- ``minerva``: lm-evaluation-harness ``minerva_math`` ``is_equiv`` on both sides through ``normalize_final_answer``
  (text after the last "=", its substitutions and removed unit words, ``\\text{}``/``\\boxed{}`` unwrapped,
  shorthand fractions and roots braced, commas dropped from an integer), then sympy's ``parse_latex`` on each and
  ``simplify(a - b) == 0``. It reads the boxed answer (lm-eval reads "Final Answer: The final answer is X. I hope
  it is correct.", which these completions do not write); a case whose either side ``parse_latex`` refuses is not
  read by it. Needs antlr4-python3-runtime 4.11 (``--ref-path``; the venv's 4.13 is refused by sympy).

The references run in a subprocess whose ``PYTHONPATH`` starts with ``--ref-path`` (default
``/tmp/antlr411:/tmp/refdeps``, made with ``pip install --target``); crossgym runs in this process, on the venv.

Every case has an intent: ``right`` (an honest right answer in another spelling) or ``wrong`` (close to right: off
by one, a sign, a swapped tuple, a wrong unit value). Per grader it prints crossgym's agreement, then the classes
where crossgym disagrees with every grader that read the case, split by the intent: ``crossgym misses`` (all
pass a right answer, crossgym does not), ``crossgym fooled`` (all fail a wrong one, crossgym passes), ``graders
strict`` / ``graders fooled`` (crossgym follows the intent, every grader does not) and ``refused on purpose``
(crossgym's malformed verdicts from its hardening: a false equation, an unevaluated operation, too hard to parse). Not a timing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------------------------
# cases

_LEADS = ["Therefore, the answer is $\\boxed{%s}$.", "So we get\n\\[\\boxed{%s}\\]",
          "Putting it together, the final answer is $\\boxed{%s}$", "Hence $\\boxed{%s}$ is the answer."]


@dataclass(frozen=True)
class Case:
    cls: str
    gold: str
    answer: str
    intent: str  # "right" or "wrong"

    @property
    def text(self) -> str:
        lead = _LEADS[sum(map(ord, self.answer + self.gold)) % len(_LEADS)]
        return "We compute the value step by step and simplify.\n" + lead % self.answer


def _cases() -> list[Case]:
    spec: dict[str, list[tuple[str, list[str], list[str]]]] = {
        "integer": [("42", ["42", "42.0", "042"], ["41", "43", "-42"]),
                    ("-7", ["-7", "- 7"], ["7", "-6"]), ("0", ["0", "0.0"], ["1"]),
                    ("1024", ["1024", "2^{10}"], ["1023", "1025"])],
        "fraction": [("\\frac{3}{4}", ["\\frac{3}{4}", "\\dfrac{3}{4}", "3/4", "0.75", "\\tfrac34", "\\frac{6}{8}"],
                      ["\\frac{4}{3}", "\\frac{3}{5}", "-\\frac{3}{4}"]),
                     ("-\\frac{2}{3}", ["-\\frac{2}{3}", "\\frac{-2}{3}", "-2/3"], ["\\frac{2}{3}", "-\\frac{3}{2}"]),
                     ("\\frac{1}{2}", ["\\frac12", "0.5", "1/2"], ["\\frac{1}{3}", "2"]),
                     ("\\frac{7}{2}", ["\\frac{7}{2}", "3.5", "3\\frac{1}{2}"], ["\\frac{2}{7}", "\\frac{5}{2}"])],
        "mixed number": [("7\\frac{3}{4}", ["7\\frac{3}{4}", "\\frac{31}{4}", "7.75"], ["6\\frac{3}{4}", "\\frac{21}{4}"]),
                         ("2\\frac{1}{3}", ["2\\frac{1}{3}", "\\frac{7}{3}"], ["\\frac{2}{3}", "3\\frac{1}{3}"])],
        "decimal": [("3.14", ["3.14", "3.140"], ["3.15", "3.41"]), ("0.25", ["0.25", ".25", "\\frac{1}{4}"], ["0.52", "2.5"]),
                    ("-1.5", ["-1.5", "-\\frac{3}{2}"], ["1.5", "-1.6"])],
        "percent": [("25\\%", ["25\\%", "25"], ["26\\%", "2.5\\%"]), ("12.5\\%", ["12.5\\%", "12.5"], ["125\\%", "13\\%"])],
        "units": [("12\\text{ cm}", ["12\\text{ cm}", "12", "12 \\text{cm}"], ["13\\text{ cm}", "11"]),
                  ("45^\\circ", ["45^\\circ", "45", "45^{\\circ}", "45 \\text{ degrees}"], ["135^\\circ", "44"]),
                  ("30", ["30\\text{ minutes}", "30 \\text{ min}"], ["31 \\text{ minutes}"]),
                  ("90^\\circ", ["90", "90^\\circ"], ["180^\\circ"])],
        "money": [("\\$18.90", ["\\$18.90", "18.90", "18.9", "\\$ 18.90"], ["\\$19.80", "\\$18.09"]),
                  ("\\$1{,}200", ["1200", "\\$1200", "1,200"], ["\\$1100", "12,000"]),
                  ("5", ["\\$5", "5\\text{ dollars}"], ["\\$6"])],
        "interval": [("[2,5)", ["[2,5)", "[2, 5)", "\\left[2,5\\right)"], ["(2,5)", "[2,5]", "[5,2)"]),
                     ("(-\\infty, 3]", ["(-\\infty, 3]", "(-\\infty,3]"], ["(-\\infty, 3)", "[3, \\infty)"]),
                     ("(-2,3)\\cup(4,\\infty)", ["(-2,3)\\cup(4,\\infty)", "(-2, 3) \\cup (4, \\infty)"],
                      ["(-2,3)\\cup[4,\\infty)", "(-3,2)\\cup(4,\\infty)"])],
        "set/list": [("1, 2", ["1, 2", "1,2", "2, 1", "\\{1, 2\\}"], ["1, 3", "1"]),
                     ("-3, 5", ["-3, 5", "5, -3", "-3,5"], ["3, -5", "-3"]),
                     ("\\frac{1}{2}, -1", ["\\frac12, -1", "-1, \\frac{1}{2}"], ["\\frac{1}{2}, 1"])],
        "tuple": [("(1, 2)", ["(1, 2)", "(1,2)", "\\left(1, 2\\right)"], ["(2, 1)", "(1, -2)", "(1, 3)"]),
                  ("(3, -1, 2)", ["(3,-1,2)", "(3, -1, 2)"], ["(3, 1, 2)", "(-1, 3, 2)"]),
                  ("\\left( 2, \\frac{\\pi}{3} \\right)", ["\\left( 2, \\frac{\\pi}{3} \\right)", "(2, \\frac{\\pi}{3})",
                                                            "(2,\\pi/3)"], ["(2, \\frac{\\pi}{6})", "(\\frac{\\pi}{3}, 2)"])],
        "matrix": [("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
                    ["\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
                     "\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}"],
                    ["\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}"]),
                   ("\\begin{pmatrix} 2 \\\\ -1 \\end{pmatrix}", ["\\begin{pmatrix}2\\\\-1\\end{pmatrix}"],
                    ["\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 2 \\\\ 1 \\end{pmatrix}"])],
        "radical": [("\\frac{\\sqrt{2}}{2}", ["\\frac{\\sqrt{2}}{2}", "\\sqrt{2}/2", "\\frac{\\sqrt2}{2}", "\\frac{1}{\\sqrt{2}}",
                                              "\\dfrac{\\sqrt{2}}{2}"], ["\\sqrt{2}", "\\frac{\\sqrt{3}}{2}"]),
                    ("2\\sqrt{5}", ["2\\sqrt{5}", "\\sqrt{20}", "2\\sqrt5"], ["5\\sqrt{2}", "\\sqrt{10}"]),
                    ("3\\sqrt{3}", ["3\\sqrt{3}", "\\sqrt{27}"], ["3\\sqrt{2}", "9"])],
        "pi": [("6\\pi", ["6\\pi", "6 \\pi", "\\pi \\cdot 6"], ["3\\pi", "6", "12\\pi"]),
               ("\\frac{\\pi}{4}", ["\\frac{\\pi}{4}", "\\pi/4", "\\frac14\\pi"], ["\\frac{\\pi}{2}", "\\frac{4}{\\pi}"]),
               ("18+2\\pi", ["18+2\\pi", "2\\pi+18"], ["18+\\pi", "20\\pi"])],
        "scientific": [("3.2\\times 10^{5}", ["3.2\\times 10^{5}", "320000", "3.2 \\times 10^5", "320{,}000"],
                        ["3.2\\times 10^{4}", "32000"]),
                       ("5\\times10^{-3}", ["0.005", "5\\times 10^{-3}"], ["0.05", "5\\times 10^{3}"])],
        "equation": [("5", ["x=5", "x = 5"], ["x=6", "x = -5"]), ("x=5", ["5", "x=5"], ["4", "x=4"]),
                     ("y=2x+3", ["y=2x+3", "y = 3 + 2x"], ["y=3x+2", "y=2x-3"]),
                     ("k=-4", ["-4", "k=-4"], ["4"])],
        "inequality": [("x > 3", ["x>3", "x > 3", "3 < x"], ["x < 3", "x \\ge 3"]),
                       ("-2 \\le x \\le 5", ["-2 \\le x \\le 5", "-2\\leq x\\leq 5"], ["-2 < x < 5", "-5 \\le x \\le 2"])],
        "infinity": [("\\infty", ["\\infty", "+\\infty"], ["-\\infty", "0"]), ("(0,\\infty)", ["(0, \\infty)"], ["[0,\\infty)"])],
        "plus/minus": [("\\pm 3", ["\\pm 3", "3, -3", "-3, 3"], ["3", "-3"]),
                       ("1 \\pm \\sqrt{2}", ["1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}"], ["1 + \\sqrt{2}", "-1 \\pm \\sqrt{2}"])],
        "text": [("\\text{(C)}", ["\\text{(C)}", "(C)", "C", "\\textbf{(C)}"], ["\\text{(D)}", "B"]),
                 ("\\text{Monday}", ["\\text{Monday}", "Monday", "\\text{monday}"], ["\\text{Tuesday}", "Sunday"]),
                 ("\\text{odd}", ["\\text{odd}", "odd"], ["\\text{even}", "even"])],
        "thousands": [("10,080", ["10,080", "10080", "10{,}080", "10\\,080"], ["10,800", "1008"]),
                      ("1,000,000", ["1000000", "1,000,000", "10^6"], ["100000", "1,000,001"])],
        "more numbers": [("15", ["15", "15.00", "\\frac{30}{2}", "3 \\cdot 5"], ["16", "14", "-15", "5"]),
                         ("\\frac{5}{12}", ["\\frac{5}{12}", "5/12", "\\dfrac{10}{24}"], ["\\frac{12}{5}", "\\frac{5}{13}", "0.42"]),
                         ("0.6", ["0.6", "\\frac{3}{5}", "0.60", ".6"], ["0.06", "6", "0.7"]),
                         ("-\\frac{1}{8}", ["-\\frac18", "-0.125", "-1/8"], ["\\frac{1}{8}", "-8"]),
                         ("7.5\\%", ["7.5\\%", "7.5"], ["75\\%", "7.4\\%"]),
                         ("40\\%", ["40\\%", "40"], ["60\\%", "4\\%"]),
                         ("2.5", ["2.5", "\\frac{5}{2}", "2\\frac12"], ["2.05", "5/2 + 1"])],
        "more structures": [("(-4, 7)", ["(-4,7)", "\\left(-4, 7\\right)"], ["(7, -4)", "(4, 7)", "(-4, -7)"]),
                            ("\\left( \\frac{1}{2}, 3 \\right)", ["(\\frac12, 3)", "(0.5, 3)", "\\left(\\frac{1}{2},3\\right)"],
                             ["(3, \\frac{1}{2})", "(\\frac{1}{2}, -3)"]),
                            ("[-1, 4]", ["[-1,4]", "[-1, 4]"], ["(-1, 4)", "[-1, 4)", "[1, 4]"]),
                            ("2, 3, 7", ["2, 3, 7", "2,3,7", "7, 3, 2"], ["2, 3", "2, 3, 8"]),
                            ("\\sqrt{3}", ["\\sqrt{3}", "\\sqrt3", "3^{1/2}", "\\frac{3}{\\sqrt{3}}"], ["3", "\\sqrt{2}", "-\\sqrt{3}"]),
                            ("4\\sqrt{2}", ["4\\sqrt{2}", "\\sqrt{32}", "4\\sqrt2"], ["2\\sqrt{4}", "4\\sqrt{3}", "8"]),
                            ("100\\pi", ["100\\pi", "100 \\pi"], ["10\\pi", "100"]),
                            ("\\frac{3\\sqrt{3}}{2}", ["\\frac{3\\sqrt3}{2}", "\\frac{3}{2}\\sqrt{3}", "1.5\\sqrt{3}"],
                             ["\\frac{3\\sqrt{2}}{2}", "\\frac{2\\sqrt{3}}{3}"])],
        "more text": [("\\text{(A)}", ["\\text{(A)}", "A", "(A)"], ["\\text{(B)}", "E"]),
                      ("\\text{Friday}", ["\\text{Friday}", "Friday"], ["\\text{Thursday}"]),
                      ("8\\text{ inches}", ["8\\text{ inches}", "8"], ["9\\text{ inches}", "7"]),
                      ("2016", ["2016", "2{,}016", "2,016"], ["2015", "2017"])],
        "expression": [("x^2+2x+1", ["(x+1)^2", "x^2 + 2x + 1", "1+2x+x^2"], ["x^2+1", "(x-1)^2"]),
                       ("\\frac{x+2}{7}", ["\\frac{x}{7}+\\frac{2}{7}", "\\frac{x+2}{7}"], ["\\frac{x+2}{5}", "\\frac{x-2}{7}"])],
    }
    out = []
    for cls, items in spec.items():
        for gold, rights, wrongs in items:
            out += [Case(cls, gold, a, "right") for a in rights]
            out += [Case(cls, gold, a, "wrong") for a in wrongs]
    return out


# ---------------------------------------------------------------------------------------------------------------
# extraction shared by the references (brace-counted last \boxed / \fbox)

def last_boxed(text: str) -> str | None:
    idx = text.rfind("\\boxed")
    if "\\boxed " in text:
        return text.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = text.rfind("\\fbox")
        if idx < 0:
            return None
    depth, i = 0, idx
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                inner = text[idx:i + 1]
                return inner[inner.index("{") + 1:-1]
        i += 1
    return None


# ---------------------------------------------------------------------------------------------------------------
# hendrycks/math

def _hx_fix_fracs(s: str, guard_empty: bool = False) -> str:
    parts = s.split("\\frac")
    out = parts[0]
    for sub in parts[1:]:
        out += "\\frac"
        if (len(sub) > 0 or not guard_empty) and sub[:1] == "{":
            out += sub
            continue
        if len(sub) < 2:
            return s
        a, b, rest = sub[0], sub[1], sub[2:]
        out += "{" + a + "}{" + b + "}" + rest if b != "{" else "{" + a + "}" + b + rest
    return out


def _hx_a_slash_b(s: str, allow_sqrt: bool = False) -> str:
    parts = s.split("/")
    if len(parts) != 2:
        return s
    a, b = parts
    try:
        ai: object = a if allow_sqrt and "sqrt" in a else int(a)
        bi: object = b if allow_sqrt and "sqrt" in b else int(b)
        if s != f"{ai}/{bi}":
            return s
        return "\\frac{" + str(ai) + "}{" + str(bi) + "}"
    except ValueError:
        return s


def _hx_units(s: str) -> str:
    if "\\text{ " in s:
        parts = s.split("\\text{ ")
        if len(parts) != 2:
            raise ValueError("two unit texts")
        return parts[0]
    return s


def _hx_sqrt(s: str) -> str:
    if "\\sqrt" not in s:
        return s
    parts = s.split("\\sqrt")
    out = parts[0]
    for p in parts[1:]:
        out += "\\sqrt{" + p[0] + "}" + p[1:] if p[:1] != "{" else "\\sqrt" + p  # (p[0] on "" raises, as there)
    return out


def hendrycks_strip(s: str) -> str:
    s = s.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac").replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("\\$", "")
    s = _hx_units(s)
    s = s.replace("\\%", "").replace("%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    if len(s.split("=")) == 2 and len(s.split("=")[0]) <= 2:
        s = s.split("=")[1]
    s = _hx_sqrt(s).replace(" ", "")
    s = _hx_fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _hx_a_slash_b(s)


def hendrycks(gold: str, text: str) -> bool | None:
    pred = last_boxed(text)
    if pred is None:
        return False
    try:
        return hendrycks_strip(gold) == hendrycks_strip(pred)
    except Exception:  # noqa: BLE001 - is_equiv falls back to raw equality
        return gold == pred


# ---------------------------------------------------------------------------------------------------------------
# openai/prm800k

def _prm_mathd(s: str) -> str:
    s = s.strip()
    m = re.search(r"^\\text\{(?P<text>.+?)\}$", s)
    if m:
        s = m.group("text").strip()
    try:
        return hendrycks_strip(s)
    except Exception:  # noqa: BLE001
        return s


def _prm_strip_commas(s: str) -> str:
    pat = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
    while True:
        nxt = pat.sub(r"\1\3\4", s)
        if nxt == s:
            return nxt
        s = nxt


def _prm_is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _prm_str_is_int(s: str) -> bool:
    try:
        x = float(_prm_strip_commas(s))
        return abs(x - int(round(x))) <= 1e-7
    except (ValueError, OverflowError):
        return False


_PRM_UNITS = ["degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week", "month",
              "year", "foot", "feet", "inch", "yard"]


def _prm_latex_text(s: str) -> str:
    from pylatexenc import latex2text

    s = s.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac").replace("\\frac", " \\frac")
    s = latex2text.LatexNodes2Text().latex_to_text(s)
    for a, b in (("√", "sqrt"), ("π", "pi"), ("∞", "inf"), ("∪", "U"), ("·", "*"), ("×", "*")):
        s = s.replace(a, b)
    return s.strip()


def _prm_normalize(s: str) -> str:
    m = re.search(r"^\\text\{(?P<text>.+?)\}$", s)
    if m:
        s = m.group("text")
    s = s.replace("\\%", "%").replace("\\$", "$").replace("$", "").replace("%", "")
    s = s.replace(" or ", " , ").replace(" and ", " , ")
    s = s.replace("million", "*10^6").replace("billion", "*10^9").replace("trillion", "*10^12")
    for unit in _PRM_UNITS:
        s = re.sub(f"{unit}(es)?(s)? *(\\^[0-9]+)?", "", s)
    s = re.sub(r"\^ *\\circ", "", s)
    if s and s[0] == "{" and s[-1] == "}":
        s = s[1:-1]
    s = re.sub(r",\\! *", "", s)
    if _prm_is_float(s) and abs(float(s) - round(float(s))) <= 1e-7:
        s = str(int(round(float(s))))
    if "\\" in s:
        try:
            s = _prm_latex_text(s)
        except Exception:  # noqa: BLE001
            pass
    s = re.sub("- *", "-", s)
    s = re.sub("([0-9]) +([0-9])", r"\1+\2", s)
    s = s.replace(" ", "").replace("{", "").replace("}", "").lower()
    if _prm_str_is_int(s):
        s = str(int(float(s.replace(",", ""))))
    return s


def _prm_sympy_equal(a: str, b: str) -> bool:
    import sympy
    from sympy.parsing import sympy_parser

    expr = f"({a})-({b})"
    letters = {c for c in expr.replace("sqrt", "").replace("frac", "") if c.isalpha()}
    if len(letters) > 2 or "^{" in expr or "^(" in expr or re.search(r"\^[0-9]+\^|\^[0-9][0-9]+", expr):
        return False
    try:
        tr = sympy_parser.standard_transformations + (sympy_parser.implicit_multiplication_application,)
        return bool(sympy.simplify(sympy_parser.parse_expr(expr.replace("^", "**"), transformations=tr)) == 0)
    except Exception:  # noqa: BLE001
        return False


def _prm_split(s: str) -> list[str]:
    s = _prm_strip_commas(s)
    if not s:
        return []
    if len(s) > 2 and s[0] in "()[]" and s[-1] in "()[]" and all(c not in s[1:-1] for c in "()[]"):
        return [e.strip() for e in s[1:-1].split(",")]
    return [s]


def prm800k(gold: str, text: str) -> bool | None:
    given = last_boxed(text)
    if given is None:
        return False
    if _prm_mathd(gold) == _prm_mathd(given):
        return True
    g, p = _prm_normalize(gold), _prm_normalize(given)
    if g == p:
        return True
    if not p:
        return False
    ge, pe = _prm_split(g), _prm_split(p)
    if len(ge) > 1 and (g[0] != p[0] or g[-1] != p[-1]):
        return False
    if len(ge) != len(pe):
        return False
    frac = re.compile(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$")
    for a, b in zip(ge, pe, strict=True):
        if frac.search(a) and frac.search(b):
            ok = a == b
        elif _prm_str_is_int(a) != _prm_str_is_int(b):
            ok = False
        else:
            ok = _prm_sympy_equal(a, b)
        if not ok:
            return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# QwenLM/Qwen2.5-Math

_QW_UNITS = ["east", "degree", "mph", "kmph", "ft", "m sqaure", " m east", "sq m", "deg", "mile", "q .", "monkey",
             "prime", "ratio", "profit of rs", "rd", "o", "gm", "p . m", "lb", "tile", "per", "dm", "lt", "gain", "ab",
             "way", "west", "a .", "b .", "c .", "d .", "e .", "f .", "g .", "h .", "t", "a", "h", "no change", "men",
             "soldier", "pie", "bc", "excess", "st", "inches", "noon", "percent", "by", "gal", "kmh", "c", "acre",
             "rise", "a . m", "th", "π r 2", "sq", "mark", "l", "toy", "coin", "sq . m", "gallon", "° f", "profit",
             "minw", "yr", "women", "feet", "am", "pm", "hr", "cu cm", "square", "v â € ™", "are", "rupee", "rounds",
             "cubic", "cc", "mtr", "s", "ohm", "number", "kmph", "day", "hour", "minute", "min", "second", "man",
             "woman", "sec", "cube", "mt", "sq inch", "mp", "∏ cm ³", "hectare", "more", "sec", "unit", "cu . m",
             "cm 2", "rs .", "rs", "kg", "g", "month", "km", "m", "cm", "mm", "apple", "liter", "loss", "yard", "pure",
             "year", "increase", "decrease", "d", "less", "Surface", "litre", "pi sq m", "s .", "metre", "meter",
             "inch"]
_QW_UNITS += [u + "s" for u in _QW_UNITS]


def qwen_strip(s: str) -> str:
    s = str(s).strip().replace("\n", "").rstrip(".").replace("\\!", "")
    s = re.sub(r"\\begin\{array\}\{.*?\}", r"\\begin{pmatrix}", s)
    s = re.sub(r"\\end\{array\}", r"\\end{pmatrix}", s).replace("bmatrix", "pmatrix")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\{", "{").replace("\\}", "}")
    t = re.sub(r"\\text{.*?}$", "", s).strip()
    if t != "" and t != s:
        s = t
    for _ in range(2):
        for unit in _QW_UNITS:
            t = re.sub(r"(^|\W)" + unit + r"($|\W)", r"\1\2", s)
            if t != "":
                s = t
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\(", "").replace("\\)", "")
    s = re.sub(r"\\text\{(.*?)\}", r"\1", s)
    for key in ["x=", "y=", "z=", "x\\in", "y\\in", "z\\in", "x\\to", "y\\to", "z\\to"]:
        s = s.replace(key, "")
    s = s.replace("\\emptyset", r"{}").replace("(-\\infty,\\infty)", "\\mathbb{R}")
    s = s.replace("\\%", "").replace("%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.isalnum() and ((s[:1], s[-1:]) in (("{", "}"), ("(", ")"), ("[", "]"))):
        s = s[1:-1]
    s = s.replace("infinity", "\\infty")
    if "\\infty" not in s:
        s = s.replace("inf", "\\infty")
    s = s.replace("+\\inity", "\\infty").replace("and", "").replace("\\mathbf", "")
    s = re.sub(r"\\mbox{.*?}", "", s)
    if "j" in s and "i" not in s:
        s = s.replace("j", "i")
    s = re.sub(r"(\d+)\.0*([^\d])", r"\1\2", s)
    s = re.sub(r"(\d+)\.0*$", r"\1", s)
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    if len(s.split("=")) == 2 and len(s.split("=")[0]) <= 2:
        s = s.split("=")[1]
    s = re.sub(r"\\sqrt(\w+)", r"\\sqrt{\1}", s).replace(" ", "")
    s = _hx_fix_fracs(s, guard_empty=True)
    return _hx_a_slash_b(s, allow_sqrt=True)


def _qw_extract(text: str) -> str:
    if "boxed" in text:
        ans = text.split("boxed")[-1]
        if not ans:
            return ""
        if ans[0] == "{":
            depth, a = 1, ""
            for c in ans[1:]:
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        break
                a += c
        else:
            a = ans.split("$")[0].strip()
        pred = a
    else:
        nums = re.findall(r"-?\d*\.?\d+", text.replace(",", ""))
        pred = nums[-1] if nums else ""
    pred = re.sub(r"\n\s*", "", pred)
    if pred[:1] == ":":
        pred = pred[1:]
    if pred[-1:] in (".", "/"):
        pred = pred[:-1]
    return qwen_strip(pred)


def _qw_digits(x: str) -> float | None:
    x = x.replace(",", "")
    try:
        return float(x)
    except ValueError:
        if x.endswith("%"):
            x = x[:-1].rstrip("\\") if x[:-1].endswith("\\") else x[:-1]
            try:
                return float(x) / 100
            except ValueError:
                pass
    return None


def _qw_close(a: float, b: float) -> bool:
    import math

    return math.isclose(b, a, rel_tol=1e-4)


def _qw_symbolic(a: str, b: str) -> bool:
    import sympy
    from latex2sympy2_extended import latex2sympy
    from sympy.parsing.latex import parse_latex
    from sympy.parsing.sympy_parser import parse_expr

    def parse(s: str) -> object:
        for f in (parse_latex, parse_expr, latex2sympy):
            for arg in (s.replace("\\\\", "\\"), s):
                try:
                    return f(arg)
                except BaseException:  # noqa: BLE001 - as there (a bare except)
                    pass
        return s

    x, y = parse(a), parse(b)
    checks = [lambda: str(x) == str(y) or x == y,
              lambda: x.equals(y) or sympy.simplify(x - y) == 0,  # type: ignore[attr-defined,operator]
              lambda: abs(x.lhs - x.rhs).equals(abs(y.lhs - y.rhs)),  # type: ignore[attr-defined]
              lambda: _qw_close(float(sympy.N(x)), float(sympy.N(y)))]  # type: ignore[arg-type]
    for check in checks:
        try:
            if check():
                return True
        except Exception:  # noqa: BLE001
            pass
    try:
        if x.shape == y.shape:  # type: ignore[attr-defined]
            if x.applyfunc(lambda v: round(v, 3)).equals(y.applyfunc(lambda v: round(v, 3))):  # type: ignore[attr-defined]
                return True
    except Exception:  # noqa: BLE001
        pass
    return False


def qwen_math_equal(pred: str, ref: str) -> bool:
    if pred.strip().lower() == ref.strip().lower():
        return True
    if ref in ["A", "B", "C", "D", "E"]:
        p = pred.strip("\n").rstrip(".").rstrip("/").strip(" ").lstrip(":")
        letters = re.findall(r"\b(A|B|C|D|E)\b", p.upper())
        if (letters[-1] if letters else p.strip().strip(".")).rstrip(".").rstrip("/") == ref:
            return True
    pv, rv = _qw_digits(pred), _qw_digits(ref)
    if pv is not None and rv is not None and any(_qw_close(pv, r) for r in (rv / 100, rv, rv * 100)):
        return True
    if not pred:
        return False
    ref, pred = ref.strip(), pred.strip()
    if "pmatrix" in pred and "pmatrix" not in ref:
        ref = ", ".join("\\begin{pmatrix}" + m.strip("{}").replace(",", "\\") + "\\end{pmatrix}"
                        for m in re.findall(r"\{.*,.*\}", ref))
    ps, rs = pred, ref
    if ((ps.startswith("[") and ps.endswith("]") and not (rs.startswith("(") and rs.endswith(")")))
            or (ps.startswith("(") and ps.endswith(")") and not (rs.startswith("[") and rs.endswith("]")))):
        ps, rs = ps.strip("[]()"), rs.strip("[]()")
    for br in "{}()":
        ps, rs = ps.replace(br, ""), rs.replace(br, "")
    if ps.lower() == rs.lower():
        return True
    listy = re.compile(r"(\(|\[).+(\)|\])")
    if listy.match(pred) and listy.match(ref):
        pp, rp = pred[1:-1].split(","), ref[1:-1].split(",")
        return len(pp) == len(rp) and all(qwen_math_equal(a, b) for a, b in zip(pp, rp, strict=True))
    mat = ("\\begin{pmatrix}", "\\end{pmatrix}")

    def is_mat(s: str) -> bool:
        return s.startswith(("\\begin{pmatrix}", "\\begin{bmatrix}")) and s.endswith(("\\end{pmatrix}", "\\end{bmatrix}"))

    if is_mat(pred) and is_mat(ref):
        pl = [x.strip() for x in pred[len(mat[0]):-len(mat[1])].split("\\\\") if x.strip()]
        rl = [x.strip() for x in ref[len(mat[0]):-len(mat[1])].split("\\\\") if x.strip()]
        if len(pl) != len(rl):
            return False
        for a, b in zip(pl, rl, strict=True):
            ap, bp = a.split("&"), b.split("&")
            if len(ap) != len(bp) or not all(qwen_math_equal(x, y) for x, y in zip(ap, bp, strict=True)):
                return False
        return True

    def simple_eq(s: str) -> bool:
        return s.count("=") == 1 and len(s.split("=")[0].strip()) <= 2

    if pred.count("=") == 1 and ref.count("=") == 1:
        def fmt(s: str) -> str:
            left, right = s.split("=")
            return f"{left.strip()} - ({right.strip()})"
        return _qw_symbolic(fmt(pred), fmt(ref)) or _qw_symbolic(f"-({fmt(pred)})", fmt(ref))
    if simple_eq(pred) and "=" not in ref:
        return qwen_math_equal(pred.split("=")[1], ref)
    if simple_eq(ref) and "=" not in pred:
        return qwen_math_equal(pred, ref.split("=")[1])
    return _qw_symbolic(pred, ref)


def qwen(gold: str, text: str) -> bool | None:
    return qwen_math_equal(_qw_extract(text), qwen_strip(gold))


# ---------------------------------------------------------------------------------------------------------------
# lm-evaluation-harness minerva_math

_MN_SUBS = [("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""), ("mbox", "text"),
            (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}")]
_MN_REMOVED = ["square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", "\\ldots", "sue",
               "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals",
               "edges", "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}",
               "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", r"\mathrm{th}", r"^\circ", r"^{\circ}", r"\;",
               r",\!", "{,}", '"', "\\dots"]


def minerva_normalize(s: str) -> str:
    s = s.split("=")[-1]
    for a, b in _MN_SUBS:
        s = s.replace(a, b)
    for e in _MN_REMOVED:
        s = s.replace(e, "")
    s = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", s)
    s = re.sub(r"(\\text\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\textbf\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\overline\{)(.*?)(\})", "\\2", s)
    s = re.sub(r"(\\boxed\{)(.*)(\})", "\\2", s)
    s = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", s)
    s = re.sub(r"(sqrt)([^{])", "sqrt{\\2}", s)
    s = s.replace("$", "")
    if s.replace(",", "").isdigit():
        s = s.replace(",", "")
    return s


def minerva(gold: str, text: str) -> bool | None:
    import sympy
    from sympy.parsing.latex import parse_latex

    pred = last_boxed(text)
    if pred is None:
        return False
    a, b = minerva_normalize(pred), minerva_normalize(gold)
    try:
        x, y = parse_latex(a), parse_latex(b)
    except ImportError:
        raise
    except Exception:  # noqa: BLE001 - "couldn't parse": the case is not read by this grader
        return None
    try:
        return bool(sympy.simplify(x - y) == 0)
    except Exception:  # noqa: BLE001
        return False


GRADERS = {"hendrycks": hendrycks, "prm800k": prm800k, "qwen": qwen, "minerva": minerva}


def run_references(cases: list[Case]) -> dict[str, list[bool | None]]:
    import signal

    def alarm(*_: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, alarm)
    out: dict[str, list[bool | None]] = {}
    for name, grader in GRADERS.items():
        res: list[bool | None] = []
        for c in cases:
            signal.alarm(5)
            try:
                res.append(grader(c.gold, c.text))
            except TimeoutError:
                res.append(False)
            finally:
                signal.alarm(0)
        out[name] = res
    return out


# ---------------------------------------------------------------------------------------------------------------
# crossgym and the report

def run_crossgym(cases: list[Case]) -> list[str]:
    from crossgym.protocol.task import Completion
    from crossgym.verifiers.base import Malformed
    from crossgym.verifiers.math import Math

    m = Math()
    out = []
    for c in cases:
        try:
            v = m.score(m.task(c.gold), Completion.from_text(c.text))
            out.append("pass" if v.passed else "fail")
        except Malformed as exc:
            out.append("malformed: " + str(exc)[:60])
    return out


_ON_PURPOSE = ("false equation", "states an operation", "not parsed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", type=int, default=6, help="cases shown per disagreement class")
    ap.add_argument("--ref-path", default="/tmp/antlr411:/tmp/refdeps", help="PYTHONPATH head for the references")
    ap.add_argument("--references", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    cases = _cases()
    if args.references:
        json.dump(run_references(cases), sys.stdout)
        return
    env = dict(os.environ, PYTHONPATH=args.ref_path + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, __file__, "--references"], env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode:
        sys.exit(f"references failed (need pylatexenc and antlr4-python3-runtime 4.11 on --ref-path):\n{proc.stderr}")
    refs: dict[str, list[bool | None]] = json.loads(proc.stdout)
    ours = run_crossgym(cases)
    passed = [o == "pass" for o in ours]
    n = len(cases)
    print(f"{n} cases ({sum(c.intent == 'right' for c in cases)} right, {sum(c.intent == 'wrong' for c in cases)} "
          f"wrong) in {len({c.cls for c in cases})} classes")
    print(f"crossgym: {sum(p == (c.intent == 'right') for p, c in zip(passed, cases, strict=True))}/{n} match the "
          f"intent; malformed {sum(o.startswith('malformed') for o in ours)}")
    for name, res in refs.items():
        read = [i for i, r in enumerate(res) if r is not None]
        agree = sum(passed[i] == res[i] for i in read)
        intent = sum(res[i] == (cases[i].intent == "right") for i in read)
        print(f"  {name:9s} read {len(read):3d}  agrees with crossgym {agree:3d}/{len(read)} "
              f"({100 * agree / max(1, len(read)):.1f}%)  matches intent {intent}/{len(read)}")
    groups: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for i, c in enumerate(cases):
        votes = [res[i] for res in refs.values() if res[i] is not None]
        if not votes or len(set(votes)) != 1 or votes[0] == passed[i]:
            continue
        if ours[i].startswith("malformed") and any(k in ours[i] for k in _ON_PURPOSE):
            kind = "refused on purpose"
        elif passed[i] == (c.intent == "right"):
            kind = "graders strict (crossgym right)" if votes[0] is False else "graders fooled (crossgym right)"
        else:
            kind = "crossgym misses" if votes[0] else "crossgym fooled"
        groups[(kind, c.cls)].append(i)
    print("\ncrossgym against every grader that read the case:" + ("" if groups else " no disagreement"))
    for (kind, cls), idx in sorted(groups.items()):
        print(f"  {kind} / {cls}: {len(idx)}")
        for i in idx[:args.show]:
            c = cases[i]
            print(f"      gold {c.gold!r} answer {c.answer!r} ({c.intent}): crossgym {ours[i]}")


if __name__ == "__main__":
    main()
