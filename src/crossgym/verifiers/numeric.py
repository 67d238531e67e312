"""numeric: one number in the answer, compared with the reference within tolerances."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import check_extract, locate_answer

#: number tokens longer than this are refused (int() of huge digit strings is quadratic)
MAX_NUMBER_CHARS = 200

# signs, thousands separators (1,234,567), decimals, exponents (1e5, 3 \times 10^{8}), a/b fractions, LaTeX
# \frac{a}{b} and \frac12 with their sign, percent
_NUM = re.compile(
    r"(?=[-+$€£¥.\d\\])"  # a cheap first-character test keeps the scan fast on prose
    r"(?:(?:(?<![\w).\]}])(?P<fsign>[-+])\s?)?"
    r"(?P<frac>\\[dt]?frac\s*(?:\{\s*(?P<fn>[-+]?\d+(?:\.\d+)?)\s*\}|(?P<fn1>\d))"
    r"\s*(?:\{\s*(?P<fd>[-+]?\d+(?:\.\d+)?)\s*\}|(?P<fd1>\d)))"
    r"|(?:(?<![\w).\]}])(?P<sign>[-+])\s?)?(?:(?P<cur>[$€£¥])\s?)?"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:\s?/\s?(?P<den>\d+(?:\.\d+)?)(?![\d.]))?"
    r"(?:(?P<exp>[eE][-+]?\d{1,4})|\s*(?:\\times|\\cdot|[×·⋅])\s*10\s*\^\s*(?:\{\s*(?P<texp>[-+]?\d{1,4})\s*\}"
    r"|(?P<texp1>[-+]?\d{1,4})))?"
    r"(?P<pct>\s?%)?)"
)
#: what makes a number an operand of an expression numeric does not evaluate (\sqrt{2}, 3\pi, 2^{10}, \log 8,
#: 2\times 3): the answer is then not that number
_OPERATOR_BEFORE = re.compile(
    r"(?:\^|_|\\(?:sqrt(?:\[[^\]]{0,10}\])?|log|ln|lg|exp|sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan|sinh|cosh"
    r"|tanh|binom|cdot|times|div|pm|mp|pi|[dt]?frac))\s*\{?\s*$|\}\s*\{\s*$"
    # the same operators written in Unicode or plain text (version 7): √9, ±3, 2 × 2, 2·2, 2*2, sqrt(3), log 8, π/2
    r"|(?:[√∛∜]|(?<![A-Za-z])(?:sqrt|cbrt|log|ln|exp|sin|cos|tan))\s*\(?\s*$|[±∓×·⋅÷\u207a\u207b]\s*$"
    r"|(?:[\w)]\*|[\w)][ \t]+\*[ \t]+|\d\s*x\s*)$|(?:[^\W\d_]|[)\]}])\s*/\s*$")
#: a digit right before \frac{1}{2}: a mixed number (2\frac{1}{2}), which numeric does not read
_MIXED = re.compile(r"\d\s*$")
_OPERATOR_AFTER = re.compile(
    r"\s*(?:\^(?!\s*\{?\s*\\circ)|\\(?:pi|sqrt|cdot|times|div|pm|mp|log|ln|binom)(?![a-zA-Z])"
    r"|\\[dt]?frac\s*\{?\s*\d)"  # 2\frac{1}{2}, not a unit: 3\frac{m}{s}
    # in Unicode or plain text (version 7): 3π, 2√2, a superscript left after _clean (3ⁿ), 3 ± 1, 2 × 2, 2·2, 2 ÷ 2,
    # 2*2 and 2 * 2 (not **bold** or *italic*) and 2 x 2, an operator followed by an operand (3× alone is a ratio)
    r"|\s*[π√∛∜\u00b2\u00b3\u00b9\u2070-\u207f]|(?:\s*[±∓×·⋅÷]\s*|\*|[ \t]+\*[ \t]+|\s*x\s*)(?=[\d(\\√π.])"
    # a factorial where the text is math (version 8): 5! before the end of $...$, \(...\), \[...\] or a brace; in
    # prose "5!" is an exclamation (math-verify reads $5!$ as 120 and "The answer is 5!" as 5)
    r"|!(?!=)(?=\s*(?:\$|\\[)\]]|\}))")
#: a factorial (5!, not 5 != 4): in a \\boxed{} answer, which is math, never an exclamation
_FACTORIAL = re.compile(r"\d\s*\}*\s*!(?!=)")
_CLEAN = [("{,}", ","), ("\\,", ""), ("\\!", ""), ("\\%", "%"), ("\\$", "$")]


def _vulgar_fractions() -> dict[int, str]:
    """½ ⅓ ¾ ... (and ↉) as \\frac{a}{b}: read as the fraction alone, a mixed number after a digit (3½: malformed,
    as 3\\frac{1}{2} is); NFKC would write ½ as 1⁄2, and "3½" as 31/2."""
    import unicodedata

    out = {}
    for c in "¼½¾⅐⅑⅒⅓⅔⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞↉":
        num, den = unicodedata.normalize("NFKC", c).split("\u2044")
        out[ord(c)] = f"\\frac{{{num}}}{{{den}}}"
    return out


#: one character each: every minus sign (− – － ﹣ ‒; version 6: "－5" read 5; version 7: the hyphens ‐ ‑, the modifier
#: and heavy minus ˗ ➖, so "‑5" was 5), fraction and division slashes (1⁄2 is 1/2), thin spaces dropped (1 234.5)
_CLEAN_CHARS: dict[int, str] = {
    **{ord(c): "-" for c in "−–\uff0d\ufe63\u2012\u2010\u2011\u02d7\u2796"},
    **{ord(c): "/" for c in "\u2044\u2215"}, ord("\u202f"): "", ord("\u2009"): "", **_vulgar_fractions()}
_CLEAN_HINT = re.compile("[" + "".join(map(chr, _CLEAN_CHARS)) + "\u00b2\u00b3\u00b9\u2070-\u2079]")
_SUPERSCRIPT_POWER = re.compile("(?<=\\d)([\u207a\u207b]?[\u00b2\u00b3\u00b9\u2070\u2074-\u2079]+)")
_SUPERSCRIPT_DIGITS = str.maketrans("\u207a\u207b\u00b2\u00b3\u00b9\u2070\u2074\u2075\u2076\u2077\u2078\u2079",
                                    "+-2310456789")


def _power(m: re.Match[str]) -> str:
    return "^{" + m.group(1).translate(_SUPERSCRIPT_DIGITS) + "}"


def _clean(text: str) -> str:
    for a, b in _CLEAN:
        if a in text:
            text = text.replace(a, b)
    if text.isascii() or _CLEAN_HINT.search(text) is None:
        return text
    # superscript digits right after a digit are a power, as ^{..} is (version 7): 3² is no 3 (it passed a
    # reference of 3) and 3 × 10⁸ is 3e8; after a letter they belong to a unit (25 m²) and are left alone
    return _SUPERSCRIPT_POWER.sub(_power, text).translate(_CLEAN_CHARS)


def _to_fraction(tok: str) -> Fraction:
    if len(tok) > MAX_NUMBER_CHARS:
        raise Malformed(f"a number in the answer is over {MAX_NUMBER_CHARS} characters")
    return Fraction(tok.replace(",", ""))


#: the last character before a number, past spaces, that an _OPERATOR_BEFORE match can end with (its operators, a
#: macro's or function's last letter, an opening brace or bracket), and the first after it that an _OPERATOR_AFTER
#: match can start with: any other one rules them out without running the patterns (a marked answer of 490,000
#: numbers ran them all, 3x slower than before version 7)
_ENDS_BEFORE = frozenset("^_{]([√∛∜±∓×·⋅÷\u207a\u207b*/" + string.ascii_letters)
_STARTS_AFTER = frozenset("!^\\π√∛∜±∓×·⋅÷*x\u00b2\u00b3\u00b9" + "".join(map(chr, range(0x2070, 0x2080))))


def _operand(m: re.Match[str]) -> bool:
    """The number ``m`` found stands inside an expression numeric does not evaluate."""
    text = m.string
    start, end = m.start(), m.end()
    lo = max(0, start - 24)
    i = start - 1
    while i >= lo and text[i].isspace():
        i -= 1
    j, n = end, len(text)
    while j < n and text[j].isspace():
        j += 1
    return ((i >= lo and text[i] in _ENDS_BEFORE and _OPERATOR_BEFORE.search(text, lo, start) is not None)
            or (j < n and text[j] in _STARTS_AFTER and _OPERATOR_AFTER.match(text, end) is not None)
            or (m.group("frac") is not None and _MIXED.search(text, lo, start) is not None))


def _value(m: re.Match[str]) -> tuple[Fraction, bool, str]:
    """(value, is_percent, source text) of one number match; Malformed when it is an operand of an expression."""
    _standalone(m)
    return _convert(m)


def _standalone(m: re.Match[str]) -> None:
    """Malformed when the number ``m`` found is an operand of an expression."""
    if _operand(m):
        raise Malformed(f"{clip(_context(m), 40)!r} is an expression, not a number (the math verifier reads those)")


def _list_marker(m: re.Match[str]) -> bool:
    """The sign ``m`` found starts a line after a line break (and indentation) and a space follows it: a markdown
    list's "- ", not a minus ("Answer:\n- 18" is 18, as math-verify reads it; "x = - 18" stays -18). The start of
    an answer span is no line start ("Answer: - 18" stays -18); the whole text's is (``Numeric`` reads it after a
    line break)."""
    group = "fsign" if m.group("frac") else "sign"
    at = m.start(group)
    if at < 0 or m.group(group) != "-":
        return False
    text = m.string
    if at + 1 >= len(text) or text[at + 1] not in " \t":
        return False
    line = text.rfind("\n", 0, at)
    return line >= 0 and not text[line + 1:at].strip(" \t")


def _convert(m: re.Match[str]) -> tuple[Fraction, bool, str]:
    """``_value`` without the expression check: its value and percent sign are a function of ``m.groups()`` and
    ``_list_marker(m)``."""
    negative = m.group("fsign" if m.group("frac") else "sign") == "-" and not _list_marker(m)
    if m.group("frac"):
        num = _to_fraction(m.group("fn") or m.group("fn1"))
        den = _to_fraction(m.group("fd") or m.group("fd1"))
        if den == 0:
            raise Malformed("division by zero in the answer")
        return (-num / den if negative else num / den), False, _shown_source(m, negative)
    val = _to_fraction(m.group("num"))
    if m.group("den"):
        den = _to_fraction(m.group("den"))
        if den == 0:
            raise Malformed("division by zero in the answer")
        val = val / den
    exp = m.group("exp")
    exp = exp[1:] if exp else m.group("texp") or m.group("texp1")
    if exp:
        e = int(exp)
        if abs(e) > 400:
            raise Malformed("an exponent in the answer is out of range")
        val = val * Fraction(10) ** e
    if negative:
        val = -val
    return val, bool(m.group("pct")), _shown_source(m, negative)


def _shown_source(m: re.Match[str], negative: bool) -> str:
    """The number as written, for the reason (without a list marker taken for its sign)."""
    text = m.group(0).strip()
    return text if negative or text[:1] != "-" else text[1:].lstrip()


def _on_its_own_line(text: str, span: str) -> bool:
    """The answer tag's body ``span`` (stripped) starts a line of ``text``: a line break, then only spaces, before
    its last occurrence ("<answer>\n- 18\n</answer>" holds a list item; "<answer>- 18</answer>" a minus)."""
    at = text.rfind(span)
    if at <= 0:
        return False
    before = text[:at].rstrip(" \t")
    return before.endswith("\n")


def _context(m: re.Match[str]) -> str:
    """The number with the characters around it, for the reason."""
    return m.string[max(0, m.start() - 12):m.end() + 12].strip()


def numbers_in(text: str) -> list[tuple[Fraction, bool, str]]:
    """Every number in ``text`` as (value, is_percent, source text), in order. Linear time."""
    return [_value(m) for m in _NUM.finditer(_clean(text))]


#: a character no number match can hold (outside _NUM's digits, whitespace, signs, currencies, separators,
#: exponents with \times/\cdot/×/· 10^, percent and \[dt]frac{..}{..}): a window starting right after one cuts no match
_OUTSIDE = re.compile(r"[^\s\d\\{}acdefimorstE.,/%$€£¥+\-^×·⋅]")


def _window_start(text: str, start: int) -> int:
    """``start`` moved back to just after the nearest character no number match can hold (0 if none): the matches
    at or after it are exactly the full scan's. Linear in the distance walked."""
    step = 256
    while start > 0:
        lo = max(0, start - step)
        last = None
        for last in _OUTSIDE.finditer(text, lo, start):  # noqa: B007
            pass
        if last is not None:
            return last.end()
        start, step = lo, step * 4
    return 0


def last_number(text: str) -> tuple[Fraction, bool, str] | None:
    """The last number in ``text`` (only that one is converted), or None: the last match of the full scan
    (``numbers_in``). Scans a window from the end, widened while it holds no number; the window starts after a
    character no number can hold, so it never cuts one (a window edge inside "\\frac{1}{2}" or "1 / 2" read 2)."""
    text = _clean(text)
    size = 256
    while True:
        start = _window_start(text, max(0, len(text) - size))
        last = None
        for last in _NUM.finditer(text, start):  # noqa: B007
            pass
        if start == 0 or last is not None:
            return None if last is None else _value(last)
        size *= 4


def single_number(text: str) -> tuple[Fraction, bool, str] | None:
    """The one number in ``text``; Malformed when it holds two different ones (stops at the second). A number
    written as one before is not converted again (500,000 of "1%" in an answer took 1.5 s, 125,000 of "1e400"
    as long): each is still checked for being an expression's operand."""
    first: tuple[Fraction, bool, str] | None = None
    seen: set[tuple[Any, ...]] = set()
    for m in _NUM.finditer(_clean(text)):
        _standalone(m)
        written = (*m.groups(), _list_marker(m))
        if written in seen:
            continue  # the same groups convert to the same value: equal to the first, or it had raised
        seen.add(written)
        v = _convert(m)
        if first is None:
            first = v
        elif (v[0], v[1]) != (first[0], first[1]):
            raise Malformed(f"several different numbers in the answer ({clip(first[2], 20)}, {clip(v[2], 20)})")
    return first


def parse_reference(answer: Any) -> list[Fraction]:
    """The accepted values of a task answer: a number, a numeric string, or a list of either."""
    items = answer if isinstance(answer, list) else [answer]
    vals = []
    for a in items:
        if isinstance(a, bool) or a is None:
            raise BadTask(f"numeric answer must be a number or numeric string, got {a!r}")
        if isinstance(a, (Mapping, list, tuple, set)):  # (its text, "{'value': 5}", would read as 5: version 9)
            raise BadTask(f"numeric answer must be a number or numeric string, or a list of them, got "
                          f"{type(a).__name__} {clip(repr(a), 40)}")
        if isinstance(a, (int, float)):
            if not math.isfinite(a):
                raise BadTask(f"numeric answer must be finite, got {a!r}")
            vals.append(Fraction(a) if isinstance(a, int) else Fraction(repr(a)))
            continue
        try:
            found = numbers_in(str(a))
        except Malformed as exc:
            raise BadTask(f"reference {a!r}: {exc}") from None
        if len(found) != 1:
            raise BadTask(f"reference {a!r} must hold exactly one number, found {len(found)}")
        v, pct, _ = found[0]
        vals.append(v / 100 if pct else v)
    if not vals:
        raise BadTask("numeric answer list is empty")
    return vals


#: the absolute tolerance for a reference of 0 when abs_tol is not given (rel_tol alone would need exactly 0)
ZERO_ABS_TOL = 1e-9


def _shown(r: Fraction) -> str:
    """A reference as a reason shows it (one past 1.8e308 has no float)."""
    try:
        return f"{float(r):g}"
    except OverflowError:
        return clip(str(r), 40)


#: GSM8K's answer line, "#### 72": a line holding only "####" and one number (a heading "#### 2. Costs" is none)
_HASHES = re.compile(r"^[ \t]*####[ \t]*(\**\$?[-+]?\d[\d.,]*\**)[ \t]*$", re.M)
#: the end of a marked answer's first sentence: ".", "!" or "?" before spaces and a capital letter
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")
#: a later sentence with one of these words may take the answer back ("The answer is 17. Or maybe 18.")
_HEDGE = re.compile(r"(?i)\b(?:or|maybe|perhaps|possibly|alternatively|actually|wait|but|however|not|instead)\b")


def _first_sentence(span: str) -> str:
    """A marked answer cut after its first sentence when that sentence holds a number and the rest takes nothing
    back (version 10): "The answer is 72. She sold 24 in May." is 72, where it was malformed (two numbers)."""
    end = _SENTENCE_END.search(span)
    if end is None or _HEDGE.search(span, end.end()) is not None:
        return span
    head = span[:end.start()]
    return head if _NUM.search(_clean(head)) is not None else span


class Numeric(BaseVerifier):
    """The answer is one number equal to the reference within tolerance.

    answer: a number, a numeric string ("1/2", "3.5e3", "1,234", "12.5%") or a list of accepted values.
    params: rel_tol (1e-6), abs_tol (None: 1e-9 for a reference of 0, else none, so rel_tol alone judges
    answers to tiny references such as 6.62607015e-34; a number: that absolute tolerance for every reference), extract (as exact_match, default "auto"), tag ("answer"),
    fallback ("last_number" | "none", default "last_number": when no answer tag / box / "answer:" line exists,
    the last number of the text is the answer, as GSM8K graders do; "none" requires the marked span),
    percent ("either" | "value" | "fraction", default "either": "50%" matches 50 or 0.5).
    Units, currency signs, thousands separators and LaTeX spacing are ignored. A marked answer span with two
    different numbers (e.g. "\\boxed{3 or 4}") is malformed: listing candidates never earns reward.
    """

    name = "numeric"
    # 2: the answer marker in any case mix; 3: the last number is never cut by the scan window; 4: the sign of
    # -\frac{1}{2}, \frac12, 3 \times 10^{8}; a number inside an expression (\sqrt{2}, 3\pi, 2^{10}) is not the answer
    # 5: abs_tol's default applies to a reference of 0 only ("Answer: 0" passed 6.62607015e-34, and so did any
    # answer below 1e-9); a reference past 1.8e308 is shown, not an exception; 6: fullwidth, small and figure minus
    # signs are minus signs ("Answer: －5" read as 5); 7: operators in Unicode or plain text make operands, as in
    # LaTeX (3π, √9, ±3, 3², sqrt(3), π/2, 2·2, 2 × 2, 3½: "Answer: 3π" passed 3), the hyphens ‐ ‑ are minus signs,
    # ½ and 3 × 10⁸ are read; 8: a "- " starting a line after a line break is a list item's marker, not a minus
    # ("Answer:\n- 18" failed 18), and a factorial in math ($5!$, \boxed{5!}) makes an operand (\boxed{5!} passed 5)
    # 9: an answer that is an object or a list inside the list ({"value": 5}, [[5]]) is a bad task (an exception
    # verdict naming its type), as in exact_match: its text "{'value': 5}" was read as 5, so "<answer>5</answer>" passed;
    # an answer tag whose body sits on lines of its own starts a line too ("<answer>\n- 18\n</answer>" read -18)
    # 10: GSM8K's "#### 72" line is the answer when nothing else is marked (prose after it was read: "#### 72\nThat
    # took 2 steps." read 2), and a marked answer is its first sentence when that holds a number and the rest takes
    # nothing back ("The answer is 72. She sold 24 in May." was malformed)
    version = "10"
    description = "one number compared within absolute/relative tolerance (units, separators, %, fractions)"

    def __init__(self, *, rel_tol: float = 1e-6, abs_tol: float | None = None, extract: str = "auto",
                 tag: str = "answer", fallback: str = "last_number", percent: str = "either",
                 **params: Any) -> None:
        super().__init__(**params)
        for k, v in (("rel_tol", rel_tol), ("abs_tol", ZERO_ABS_TOL if abs_tol is None else abs_tol)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise VerifierError(f"verifier 'numeric': {k} must be a non-negative number, got {v!r} "
                                    f"(fix: pass a number >= 0, e.g. {k}: 1e-6, or leave it out)")
        if fallback not in ("last_number", "none"):
            raise VerifierError(f"verifier 'numeric': fallback={fallback!r} must be 'last_number' or 'none' "
                                "(fix: pass one of them, or leave it out for last_number)")
        if percent not in ("either", "value", "fraction"):
            raise VerifierError(f"verifier 'numeric': percent={percent!r} must be either, value or fraction "
                                "(fix: pass one of them, or leave it out for either)")
        self.rel_tol, self.abs_tol = float(rel_tol), None if abs_tol is None else float(abs_tol)
        self.extract = check_extract(extract, self.name)
        self.tag, self.fallback, self.percent = str(tag), fallback, percent

    def _prediction(self, text: str) -> tuple[Fraction, bool, str]:
        span, where = locate_answer(text, self.extract, tag=self.tag)
        if where == "full" and self.extract == "auto":
            last = None
            for last in _HASHES.finditer(span):  # noqa: B007
                pass
            if last is not None:  # GSM8K's "#### 72" line (version 10: prose after it was read instead)
                span, where = last.group(1), "marker"
        if where == "marker":
            span = _first_sentence(span)
        if where == "boxed" and _FACTORIAL.search(span):
            raise Malformed(f"{clip(span, 40)!r} is an expression (a factorial), not a number (the math verifier "
                            "reads those)")
        if where == "full" or (where == "answer_tag" and _on_its_own_line(text, span)):
            span = "\n" + span  # it starts a line: "- 18" there is a list item (_list_marker)
        found = last_number(span) if where == "full" and self.fallback == "last_number" else single_number(span)
        if found is None:
            raise Malformed(f"no number in the answer {clip(span, 60)!r}")
        return found

    def _close(self, a: Fraction, b: Fraction) -> bool:
        """math.isclose of answer ``a`` and reference ``b`` in exact rational arithmetic (floats would round big
        integers together)."""
        if a == b:
            return True
        absolute = self.abs_tol if self.abs_tol is not None else ZERO_ABS_TOL if b == 0 else 0.0
        return abs(a - b) <= max(Fraction(self.rel_tol) * max(abs(a), abs(b)), Fraction(absolute))

    def score(self, task: Task, completion: Completion) -> Verdict:
        refs = parse_reference(task.answer)
        val, pct, src = self._prediction(completion.text)
        cands = [val]
        if pct:
            cands = {"either": [val, val / 100], "value": [val], "fraction": [val / 100]}[self.percent]
        for r in refs:
            if any(self._close(c, r) for c in cands):
                return Verdict.ok(1.0, reason=f"{src} == {_shown(r)}")
        return Verdict.ok(0.0, reason=f"{clip(src, 40)} != {', '.join(_shown(r) for r in refs[:3])}")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example(1234.5, "The total is **$1,234.50**.\nFinal answer: $1,234.50", "pass", "currency, commas"),
            cls.example("0.5", "\\boxed{\\frac{1}{2}}", "pass", "LaTeX fraction"),
            cls.example(18, "Janet sells 16 - 3 - 4 = 9 eggs, earning 9 * 2 = 18 dollars.", "pass",
                        "GSM8K-style: last number"),
            cls.example(0.25, "Answer: 25%", "pass", "percent as fraction"),
            cls.example(18, "The answer is 17.", "fail"),
            cls.example(18, "\\boxed{17 or 18}", "malformed", "two candidates in the answer"),
            cls.example(18, "I am not sure.", "malformed", "no number"),
        ]
