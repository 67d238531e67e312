"""math: LaTeX/boxed/plain answers checked for mathematical equivalence by math-verify, in the worker pool.

math-verify parses with sympy and can run for a very long time on adversarial input; its own timeout uses SIGALRM,
which fails off the main thread. So ``score`` runs in crossgym's worker-process pool (isolation "process") with
math-verify's timeouts off: the pool kills a worker at the deadline and ``verify`` returns ``Verdict.timeout``,
from any thread.
"""

from __future__ import annotations

import functools
import logging
import math as _math
import re
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import strip_think

_MV: Any = None
log = logging.getLogger(__name__)


def _math_verify() -> Any:
    """math_verify, imported once, with its one-time "timeout disabled" warning silenced (we own the deadline)."""
    global _MV
    if _MV is None:
        try:
            import math_verify
            import math_verify.grader
            import math_verify.parser
        except ImportError as exc:
            raise VerifierError("verifier 'math' needs math-verify (fix: pip install 'crossgym[verifiers]')") \
                from exc
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        _MV = math_verify
    return _MV


def parse_answer(text: str, fast: bool = True) -> list[Any]:
    """math-verify's default extraction (LaTeX + plain expressions, any match) with its timeout off. With ``fast``,
    answers whose extraction is a plain number are built without math-verify's LaTeX parser (``fast_parse``)."""
    if fast:
        quick = fast_parse(text)
        if quick is not None:
            return quick
    return _math_verify().parse(text, parsing_timeout=None)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------------------
# The fast path. math-verify's extraction is two steps: regexes find candidate answers (cheap), then each candidate,
# best first, is normalised and parsed into sympy by latex2sympy's ANTLR grammar (or sympy's parse_expr), the first
# that parses is the answer, and the first candidate's text is appended as a fallback string. The parse costs about
# 1 ms a candidate, 80-95% of a verdict. fast_parse runs math-verify's own regexes (in its order and tie-breaking)
# and its own LaTeX normaliser, and only when the FIRST candidate is a plain number (an integer, a decimal, a simple
# fraction, optionally a percentage) builds the sympy value the parser would have built, directly. Everything
# else (more than one candidate joined by "and"/",", expressions, anything not matched below) returns None: the
# caller runs math-verify itself. The comparison is math-verify's own verify() either way, so a verdict can only
# differ if fast_parse built a different value, which tests/verifiers/test_math_fast.py and bench/math_fast_path.py
# check against math-verify's parse on its regression cases and on generated answers. Versions other than the
# ones it was checked against turn it off (``FAST_VERSIONS``).

#: the math-verify and latex2sympy2_extended releases fast_parse was checked against (major.minor)
FAST_VERSIONS = {"math-verify": ("0.9",), "latex2sympy2_extended": ("1.11",)}
#: plain numbers longer than this go to math-verify (no int() digit limits, no precision questions)
_MAX_DIGITS = 30
_LATEX_INT = re.compile(r"-?[0-9]+")
_LATEX_THOUSANDS = re.compile(r"-?[1-9][0-9]{0,2}(?:,[0-9]{3})+")  # "1,234": latex2sympy drops the commas
_LATEX_DEC = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_LATEX_FRAC = re.compile(r"(-?)\\frac\{(0|[1-9][0-9]*)\}\{([1-9][0-9]*)\}")
_LATEX_PCT = re.compile(r"(0|[1-9][0-9]*)\\%")
#: LaTeX that math-verify's normaliser provably leaves as the bare number (every rewrite it makes needs a
#: backslash, a letter, "$", "/", "{", "^", quotes or a leading "."; and it extracts the one \\boxed{..}), except
#: "0.5", which it rewrites to \\frac{1}{2}
_PLAIN_LATEX = re.compile(r"[ \t\n]*(?:\\boxed\{[ \t\n]*(-?[0-9]+(?:\.[0-9]+)?)[ \t\n]*\}|(-?[0-9]+(?:\.[0-9]+)?))[ \t\n]*")
_FAST: Any = None  # (priority groups of (pattern, is_latex), normalisation configs), or False when off


def _fast_setup() -> Any:
    global _FAST
    if _FAST is None:
        _FAST = False
        try:
            from importlib.metadata import version

            ok = all(any(version(d) == v or version(d).startswith(v + ".") for v in vs)
                     for d, vs in FAST_VERSIONS.items())
            if ok:
                _FAST = _fast_tables()
        except Exception:  # not installed, or internals moved: the fast path stays off
            log.debug("math fast path off", exc_info=True)
    return _FAST


def _fast_tables() -> Any:
    import dataclasses
    from itertools import groupby

    from latex2sympy2_extended.latex2sympy2 import normalize_latex

    mv = _math_verify()
    latex, expr = mv.LatexExtractionConfig(), mv.ExprExtractionConfig()  # parse()'s default targets
    found = mv.parser.get_extraction_regexes([latex, expr])
    flat = [(pattern, target is latex, priority) for patterns, target in found for pattern, priority in patterns]
    flat.sort(key=lambda x: x[2])  # stable, as math-verify groups them
    groups = [[(p, is_latex) for p, is_latex, _ in grp] for _, grp in groupby(flat, key=lambda x: x[2])]
    boxed_last = dataclasses.replace(latex.normalization_config, boxed="last")
    return groups, latex.normalization_config, boxed_last, normalize_latex


def fast_parse(text: str) -> list[Any] | None:
    """What ``math_verify.parse(text)`` returns, when that needs no LaTeX parsing; else None (ask math-verify).

    ``[]`` when no candidate matches at all; ``[value, text]`` when the best candidate is a plain number."""
    tables = _fast_setup()
    if not tables:
        return None
    groups = tables[0]
    for group in groups:
        best = None
        for pattern, is_latex in group:
            for m in pattern.finditer(text):
                key = (m.end(), -m.start())
                if best is None or key > best[0]:  # math-verify: rightmost end, then leftmost start, first wins
                    best = (key, m, is_latex)
        if best is not None:
            if not best[1][0].isascii():
                return None  # other digits ("١٢", "１２") match the regexes' \d, but math-verify's parser refuses them
            try:
                return _fast_latex(best[1], tables) if best[2] else _fast_expr(best[1])
            except Exception:  # whatever math-verify's own code would do with it, it decides
                return None
    return []


def _fast_latex(m: re.Match[str], tables: Any) -> list[Any] | None:
    gd = m.groupdict()
    found = [(name, val) for name, val in gd.items() if val and "_latex" in name]
    if len(found) != 1 or not found[0][0].startswith("first_latex"):
        return None  # several answers ("$1$ and $2$") make a set: math-verify's job
    name, latex = found[0]
    _, config, boxed_last, normalize_latex = tables
    plain = _PLAIN_LATEX.fullmatch(latex)
    norm = plain[1] or plain[2] if plain else ""
    if not norm or norm == "0.5":
        norm = normalize_latex(latex, config=boxed_last if name == "first_latexBoxed" else config)
    value = _latex_number(norm)
    if value is None:
        return None
    if gd.get("first_percent"):
        value = _pct(value)
    return [value, norm]


def _latex_number(s: str) -> Any:
    import sympy

    if len(s) > _MAX_DIGITS + 12 or sum(c.isdigit() for c in s) > _MAX_DIGITS:
        return None
    if _LATEX_INT.fullmatch(s):
        return sympy.Integer(int(s))
    if _LATEX_THOUSANDS.fullmatch(s):
        return sympy.Integer(int(s.replace(",", "")))
    if _LATEX_DEC.fullmatch(s):
        return sympy.Float(s)
    m = _LATEX_FRAC.fullmatch(s)
    if m:
        return sympy.Rational(int(m[2]) * (-1 if m[1] else 1), int(m[3]))
    m = _LATEX_PCT.fullmatch(s)
    if m:
        return _pct(sympy.Integer(int(m[1])))
    return None


_DECIMAL = re.compile(r"-?([0-9]+)\.([0-9]+)")


def _plain_decimal(parsed: Any, places: int) -> Any:
    """The Decimal a parse result stands for when it is exactly ``[Float(s), s]`` with s a plain decimal of at most
    ``places`` decimals and 15 significant digits, else None. For two such results math-verify's verify() is
    True exactly when the decimals are equal: 15 digits survive a 53-bit Float, and rounding to ``places`` (its
    float_rounding) keeps distinct values distinct (checked against verify() by tests/verifiers/test_math_fast.py
    and bench/math_fast_path.py)."""
    import sympy

    if not isinstance(parsed, (list, tuple)) or len(parsed) != 2 or type(parsed[0]) is not sympy.Float:
        return None
    s = parsed[1]
    m = _DECIMAL.fullmatch(s) if isinstance(s, str) else None
    if m is None or len(m[2]) > places or len((m[1].lstrip("0") + m[2]).lstrip("0")) > 15:
        return None
    value = parsed[0]
    if value._prec != 53 or value != sympy.Float(s):
        return None
    from decimal import Decimal

    return Decimal(s)


#: how far apart (relatively) the two sides of a numeric equation must be to make it false: a rounded value
#: ("22/7 = 3.14", "1/3 = 0.333") is what a model writes on its way to the answer
FALSE_EQUATION_REL = 0.01


def _false_equation(pred: Any) -> bool:
    """The answer is an equation, or a chain of them (``x = 5 = 2``), stating two real numbers more than
    ``FALSE_EQUATION_REL`` apart (``\\boxed{3 = 2}``), or a finite number equal to an infinite one (``\\infty = 2``,
    ``\\frac{1}{0} = 2``): math-verify compares its last side, so a false statement passed the reference 2. An
    equation naming a variable (x = 2) is an answer, and so is a rounding ("22/7 = 3.14")."""
    import sympy

    try:
        first = pred[0]
        if isinstance(first, sympy.And) and all(isinstance(a, sympy.Equality) for a in first.args):
            equations = list(first.args)  # (a chain: math-verify makes it And(Eq(x, 5), Eq(5, 2)))
        elif isinstance(first, sympy.Equality):
            equations = [first]
        else:
            return False
        return any(_sides_differ(eq.lhs, eq.rhs) for eq in equations)
    except Exception:  # noqa: BLE001 - sympy cannot compare them: math-verify's verdict stands
        return False


def _sides_differ(lhs: Any, rhs: Any) -> bool:
    """Both sides are numbers and differ: one infinite (or undefined) and the other finite, or two reals more than
    ``FALSE_EQUATION_REL`` apart."""
    import sympy

    if not (lhs.is_number and rhs.is_number):
        return False
    left, right = sympy.N(lhs, 30), sympy.N(rhs, 30)
    if left.is_finite is not right.is_finite and None not in (left.is_finite, right.is_finite):
        return True
    if not (left.is_real and right.is_real):
        return False
    return bool(abs(left - right) > FALSE_EQUATION_REL * max(abs(left), abs(right)))


#: operations whose value the answer should state, not the operation itself: integrals, sums, products, limits and
#: derivatives, in LaTeX (\\int, \\sum, \\lim, \\frac{d}{dx}, \\partial) or as sympy names (Integral(...))
_OPERATION = re.compile(r"\\(?:i{1,3}nt|oint|sum|prod|lim|limsup|liminf|partial)(?![A-Za-z])"
                        r"|\\frac\s*\{\s*(?:\\mathrm\s*\{\s*d\s*\}|d)(?:\^\{?\d+\}?)?\s*[A-Za-z]?\s*\}"
                        r"\s*\{\s*(?:\\mathrm\s*\{\s*d\s*\}|d)\s*[A-Za-z]"  # (d/dx, dy/dx; not d/2)
                        r"|(?<![A-Za-z])(?:Integral|Derivative|Limit|Sum|Product)\s*\(")


def unevaluated_operation(text: str) -> str | None:
    """The integral, sum, product, limit or derivative ``text`` writes out, else None. math-verify's parser
    evaluates them, so an answer that copied the question's ``\\int_0^1 x^2\\,dx`` passed its value 1/3."""
    m = _OPERATION.search(text)
    return m.group(0).rstrip("({ ") if m else None


def _tiny_apart(gold: Any, pred: Any, places: int) -> bool:
    """The reference is a real number other than 0 below ``10**-places`` in size and the answer a number more than
    ``10**-places`` of it apart, relatively. math-verify rounds numbers to ``places`` decimals (float_rounding)
    before comparing them, so every such number equalled 0 and any other: "0.0" passed 1.6 x 10^-19 and
    "-0.0000001" passed 0.0000004. Those are compared to ``places`` significant digits instead, as a number near 1
    is compared to ``places`` decimals."""
    import sympy

    try:
        g, p = gold[0], pred[0]
        if not (isinstance(g, sympy.Expr) and isinstance(p, sympy.Expr) and g.is_number and p.is_number):
            return False
        gv, pv = sympy.N(g, 30), sympy.N(p, 30)
        if not (gv.is_real and pv.is_real) or gv == 0:
            return False
        unit = sympy.Float(10, 30) ** -places
        return bool(abs(gv) < unit and abs(gv - pv) > unit * abs(gv))
    except Exception:  # noqa: BLE001 - an expression sympy cannot evaluate: math-verify's verdict stands
        return False


def _pct_value(expr: Any) -> Any:
    """X for latex2sympy's percentage ``X%`` (``Mul(X, UnevaluatedExpr(1/100))``) of a number X, else None."""
    import sympy

    if (isinstance(expr, sympy.Mul) and len(expr.args) == 2 and isinstance(expr.args[0], sympy.Number)
            and expr.args[1] == sympy.UnevaluatedExpr(sympy.Rational(1, 100))):
        return expr.args[0]
    return None


def _readings(gold: Any, pred: Any) -> list[tuple[Any, Any]]:
    """The (gold, prediction) pairs compared: as parsed, and, where one is a percentage of a number and the other a
    bare number, also with the percentage's number for it ("12.5\\%" against "12.5"). math-verify takes an integer
    percentage for its number (9\\% == 9) but a decimal one only for its hundredth, so 12.5 failed 12.5\\%
    (0.125 passes either way)."""
    import sympy

    pairs = [(gold, pred)]
    try:
        g, p = gold[0], pred[0]
        gv, pv = _pct_value(g), _pct_value(p)
        if (gv is None) != (pv is None) and isinstance(p if pv is None else g, sympy.Number):
            pairs.append(([g if gv is None else gv], [p if pv is None else pv]))
    except (IndexError, TypeError):
        pass
    return pairs


def _pct(value: Any) -> Any:
    import sympy

    return sympy.Mul(value, sympy.UnevaluatedExpr(sympy.Rational(1, 100)), evaluate=False)


def _fast_expr(m: re.Match[str]) -> list[Any] | None:
    import sympy

    gd = m.groupdict()
    integer = next((v for k, v in gd.items() if k.startswith("integer") and v), "")
    decimal = next((v for k, v in gd.items() if k.startswith("decimal") and v), "")
    if not integer and not decimal:
        return None  # an expression ("1/2", "3*4"): sympy's parse_expr, math-verify's job
    integer = integer.replace(",", "").replace(" ", "").lstrip("0") or "0"
    if (integer.startswith("-0") and (integer != "-0" or not decimal)) or len(integer) + len(decimal) > _MAX_DIGITS:
        return None  # "-05" or "-0": sympy's own reading of them decides
    decimal = decimal.replace(",", ".")
    number = f"{integer}{decimal}"
    value = sympy.Float(number) if decimal else sympy.Integer(int(integer))
    if gd.get("percent"):
        value = _pct(value)
    return [value, number]


_DELIMS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")
_BARE_WORD = re.compile(r"(?<![\\a-zA-Z])(?!and(?![a-zA-Z]))[a-zA-Z]{3,}")
_GOLD_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")


@functools.lru_cache(maxsize=8192)
def parse_gold(gold: str, fast: bool = True) -> tuple[Any, ...]:
    """The reference, parsed like a prediction when it carries math delimiters ($..$, \\(..\\), \\boxed{..};
    an escaped dollar, MATH's "\\$18.90", is none). A bare reference (MATH-style "2\\sqrt{2}", "(1,2)",
    "x=3 and y=4") is read as ``$gold$`` first, since math-verify's plain expression extraction would take
    "2\\sqrt{2}" as 2 and "x=3 and y=4" as 4. Prose around one number ("5 dollars", which ``$..$`` would read as
    a product of letters) is read as it is first: with one number in it, that reading drops no other value."""
    if any(d in gold.replace("\\$", "") for d in _DELIMS):
        return tuple(parse_answer(gold, fast))
    prose = "\\" not in gold and _BARE_WORD.search(gold) and len(_GOLD_NUMBER.findall(gold)) <= 1
    order = [gold, f"${gold}$"] if prose else [f"${gold}$", gold]
    for text in order:
        parsed = parse_answer(text, fast)
        if parsed:
            return tuple(parsed)
    return ()


#: brackets nested deeper than this in a completion are not parsed: math-verify's LaTeX parser takes time that grows
#: about 2.2x a level (``\boxed{{{{...}}}}``: 0.7 s at 10 levels, 6.6 s at 14, 31 s at 16; fifty parentheses
#: ran out of time), so a 48-character answer held a worker to its deadline and scored as the machine's failure
MAX_NESTING = 10
_OPENERS, _CLOSERS = frozenset("([{"), frozenset(")]}")
#: three or more factorial signs in a row (``5!!!!!!``): sympy evaluates the multifactorial chain without end
_FACTORIALS = re.compile(r"!\s*!\s*!")
#: a run this long of only digits, dots and spaces: math-verify's expression pattern takes quadratic time on it
#: ("1 " * 11000 took 3 s of CPU, a masked timeout on a loaded machine)
MAX_NUMBER_RUN = 4000
_NUMBER_RUN = re.compile(rf"(?<![\d.\s])[\d.\s]{{{MAX_NUMBER_RUN},}}|^[\d.\s]{{{MAX_NUMBER_RUN},}}")


#: latex2sympy's sized matrix builders (``\operatorname{zeros}(r, c)``, ``ones``, ``eye(n)``): sympy fills the matrix
#: at once, so ``\operatorname{zeros}(12000, 12000)`` (44 characters) took a worker to 4.5 GB in 5 s; under the
#: pool's memory budget math-verify swallows the MemoryError and the answer read as its text. An answer writes its
#: matrix out (``\begin{pmatrix}..``)
_MATRIX_BUILDER = re.compile(r"\\operatorname\s*\{\s*(?:zeros|ones|eye)\s*\}")


def too_hard_to_parse(text: str) -> str | None:
    """Why ``text`` is not handed to math-verify (nesting past MAX_NESTING, a chain of factorials, a sized matrix
    builder), else None."""
    if _FACTORIALS.search(text):
        return "a chain of three or more factorial signs"
    if "operatorname" in text and _MATRIX_BUILDER.search(text):
        return "a matrix built by \\operatorname{zeros}, {ones} or {eye} (write the matrix out)"
    if len(text) >= MAX_NUMBER_RUN and _NUMBER_RUN.search(text):
        return f"a run of {MAX_NUMBER_RUN:,} or more digits, dots and spaces"
    if _brackets_nest_deeper(text, MAX_NESTING):
        return f"brackets nested more than {MAX_NESTING} deep"
    return None


def _brackets_nest_deeper(text: str, limit: int) -> bool:
    """Whether ``(``, ``[`` and ``{`` (one kind: any closer closes any opener) nest more than ``limit`` deep in
    ``text``; a closer with nothing open is ignored. Linear: three ``str.count`` passes, then (only when more than
    ``limit`` openers appear at all) one pass that stops at the first level too deep. Not ``json_depth_ok``: that one
    skips brackets inside JSON strings and ignores ``(``, which math-verify's LaTeX parser nests on."""
    if sum(text.count(c) for c in _OPENERS) <= limit:
        return False
    depth = 0
    for ch in text:
        if ch in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif ch in _CLOSERS and depth:
            depth -= 1
    return False


_ASSIGNED = re.compile(r"(?<![\\A-Za-z])([A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?)\s*=(?!=)")


def ordered_values(gold: str, parsed: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A reference that assigns two or more variables (``x=3, y=-1``) as the tuple of its values in the order it
    names them, for a prediction that names none: math-verify keeps only the values, as a set, so ``(-1, 3)``
    (x=-1, y=3) passed; read in order, it fails and ``(3, -1)`` passes. None for any other reference."""
    import sympy

    first = parsed[0] if parsed else None
    if not isinstance(first, (set, frozenset, sympy.FiniteSet)) or len(first) < 2:
        return None
    eqs = list(first)
    if not all(isinstance(e, sympy.Eq) and isinstance(e.lhs, sympy.Symbol) for e in eqs):
        return None
    names = [m.group(1).replace("{", "").replace("}", "") for m in _ASSIGNED.finditer(gold)]
    by_name = {str(e.lhs): e.rhs for e in eqs}
    if len(by_name) != len(eqs) or sorted(names) != sorted(by_name):
        return None
    values = ", ".join(sympy.latex(by_name[n]) for n in names)
    ordered = parse_gold(f"({values})", False)
    return ordered or None


def named_tuple(pred: list[Any]) -> list[Any]:
    """``(x, y) = (-1, 3)`` as the equations it states, {x = -1, y = 3}: math-verify keeps only the right side (an
    interval here), so against ``x=3, y=-1`` it compared values without names and passed. Else ``pred``."""
    import sympy

    first = pred[0] if pred else None
    if not isinstance(first, sympy.Eq) or not isinstance(first.lhs, sympy.Tuple):
        return pred
    names, rhs = list(first.lhs), first.rhs
    if isinstance(rhs, sympy.Interval) and rhs.left_open and rhs.right_open:
        values = [rhs.start, rhs.end]  # ((-1, 3) reads as an open interval)
    elif isinstance(rhs, sympy.Tuple):
        values = list(rhs)
    else:
        return pred
    if len(values) != len(names) or not all(isinstance(n, sympy.Symbol) for n in names):
        return pred
    return [sympy.FiniteSet(*(sympy.Eq(n, v) for n, v in zip(names, values, strict=True))), *pred[1:]]


def _names_variables(pred: list[Any]) -> bool:
    """The prediction says which value is which (an equation, or a set of them)."""
    import sympy

    first = pred[0] if pred else None
    if isinstance(first, (set, frozenset)):
        return any(isinstance(e, sympy.core.relational.Relational) for e in first)
    return isinstance(first, sympy.Basic) and bool(first.atoms(sympy.core.relational.Relational))


def zygote_warm() -> None:
    """Called once in the worker pool's zygote, whose workers inherit what it warms: math-verify compiles its
    extraction regexes on first use, and sympy's first symbolic comparison imports and builds about 0.5 s of
    machinery that would otherwise count against the first job's deadline in every worker."""
    mv = _math_verify()
    mv.verify(list(parse_gold("\\frac{1}{2}", False)), parse_answer("The answer is $\\boxed{0.5}$", False),
              timeout_seconds=None)
    mv.verify(list(parse_gold("(x+1)^2")), parse_answer("$x^2 + 2x + 1$"), timeout_seconds=None)
    fast_parse("The answer is $\\boxed{42}$")  # builds the fast path's tables once, for every worker


def _plain(x: float) -> str:
    """A float as a plain decimal: repr's exponent form ("1e-07", "1e+20") reads as Euler's number to math-verify."""
    r = repr(x)
    if "e" not in r:
        return r
    from decimal import Decimal

    return format(Decimal(r), "f")


#: a reference of letters only, in words (three letters at least): "Paris", "odd", "New York"
_WORD = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")
_TEXT_MACRO = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")


def _is_word(parsed: tuple[Any, ...]) -> bool:
    """The reference is a word or words that math-verify reads as a product of letters ("Paris" as P*a*r*i*s, so
    that "sirap" matched it): compared as text instead (an answer of one or two letters, x or xy, stays algebra)."""
    shown = parsed[-1] if parsed and isinstance(parsed[-1], str) else None
    if shown is None or not _WORD.fullmatch(shown) or sum(c.isalpha() for c in shown) < 3:
        return False
    return type(parsed[0]).__name__ == "Mul"


def _as_word(text: str) -> str:
    """A word answer as compared: text macros unwrapped, dollars, spaces and a final period dropped, case-folded."""
    t = _TEXT_MACRO.sub(r"\1", text)
    t = t.replace("$", "").replace("\\,", "").replace("\\ ", " ").replace("~", " ")
    return "".join(t.split()).rstrip(".").casefold()


class Math(BaseVerifier):
    """The completion's final answer is mathematically equivalent to the reference (math-verify).

    answer: the reference as LaTeX or plain text ("\\frac{1}{2}", "$x^2+1$", "\\boxed{(1, 2)}", "0.5", 42);
    a list means any of them is accepted.
    params: float_rounding (6), numeric_precision (15), strict (True: variables must match),
    think (True: only text after the last </think> is read), timeout (5 s, enforced by killing the worker),
    fast_path (True: answers that math-verify would extract as a plain number, such as 42, -3.5, 1,000,
    \\frac{3}{4} or 10\\%, are built without its LaTeX parser; the same verdicts, about 10x faster).
    Extraction is math-verify's default (LaTeX and plain expressions; \\boxed first, then "final answer is",
    then the last math); the gold is parsed the same way (a bare LaTeX gold such as "2\\sqrt{2}" is read as
    "$2\\sqrt{2}$"), and verify is called gold first. A completion that
    lists several candidate answers parses as a set and does not match a single gold value.
    """

    name = "math"
    # 3: references read as written: MATH's escaped "\\$18.90" is no delimiter, "x=3 and y=4" is not its last
    # number, a float reference 1e-07 is 0.0000001 (repr's exponent form read as Euler's number); 4: a reference
    # that is a word or words ("Paris", "odd") is compared as text, not as a product of letters (anagrams passed)
    # 5: a reference assigning several variables (x=3, y=-1) matches unnamed values in its order only ((-1, 3)
    # passed); brackets nested over 10 deep or a chain of factorials are malformed (they ran out of time), and so is
    # an answer whose scoring uses 80% of the timeout as CPU time (base.CPU_SHARE; it was a timeout); "(x, y) =
    # (-1, 3)" states x=-1, y=3 (math-verify kept the values), and a run of 4,000 digits and spaces is malformed
    # 6: a reference other than 0 below 10^-float_rounding is compared to that many significant digits (math-verify's
    # rounding made it 0: "0.0" passed 1.6 x 10^-19, as numeric's 0 did before its version 5); an equation between two
    # numbers that differ is malformed (\boxed{3 = 2} passed 2: math-verify compares the last side)
    # 7: \operatorname{zeros}, {ones} and {eye} (sized matrix builders) are malformed; scoring that needs more than the
    # pool worker's memory budget (pool.DEFAULT_WORKER_MEMORY) is malformed and its worker replaced
    # 8: a chain of equations with a false link (x = 5 = 2) or an equation of a finite number to an infinite one
    # (\infty = 2, \frac{1}{0} = 2) is a false equation, as 3 = 2 was in version 6 (each passed the reference 2);
    # an answer writing out an integral, sum, product, limit or derivative is malformed unless the reference does
    # (math-verify evaluates them: the question's own \int_0^1 x^2\,dx passed 1/3)
    # 9: a percentage of a decimal matches its number as one of an integer does (12.5 failed 12.5\%, 25 passed 25\%)
    version = "9"
    description = "mathematical equivalence of the final answer via math-verify (process pool, hard timeout)"
    isolation = "process"
    default_timeout = 5.0

    def __init__(self, *, float_rounding: int = 6, numeric_precision: int = 15, strict: bool = True,
                 think: bool = True, fast_path: bool = True, **params: Any) -> None:
        super().__init__(**params)
        for k, v in (("float_rounding", float_rounding), ("numeric_precision", numeric_precision)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 100:
                raise VerifierError(f"verifier 'math': {k} must be an integer in 1..100, got {v!r} "
                                     f"(fix: leave it out for math-verify's default)")
        self.float_rounding, self.numeric_precision = float_rounding, numeric_precision
        self.strict, self.think, self.fast_path = bool(strict), bool(think), bool(fast_path)

    def _golds(self, answer: Any) -> list[tuple[str, tuple[Any, ...]]]:
        items = answer if isinstance(answer, list) else [answer]
        out = []
        for a in items:
            if isinstance(a, bool) or a is None or isinstance(a, (dict, list)):
                raise BadTask(f"math answer must be a string or number, got {type(a).__name__}")
            if isinstance(a, float) and not _math.isfinite(a):
                raise BadTask(f"math answer must be finite, got {a!r}")
            g = _plain(a) if isinstance(a, float) else str(a)
            parsed = parse_gold(g, self.fast_path)
            if not parsed:
                raise BadTask(f"math-verify cannot parse the reference {clip(g, 60)!r}")
            out.append((g, parsed))
        if not out:
            raise BadTask("math answer list is empty")
        return out

    def score(self, task: Task, completion: Completion) -> Verdict:
        golds = self._golds(task.answer)
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Malformed("empty completion")
        hard = too_hard_to_parse(text)
        if hard is not None:
            raise Malformed(f"not parsed: {hard} (math-verify's parser would run out of time or memory)")
        pred = parse_answer(text, self.fast_path)
        if not pred:
            raise Malformed("no mathematical answer found in the completion")
        pred = named_tuple(pred)
        shown = clip(str(pred[-1]), 60)
        if _false_equation(pred):
            raise Malformed(f"{shown!r} is a false equation, not an answer (its last side is not what it says)")
        stated = unevaluated_operation(str(pred[-1]))
        if stated and not any(unevaluated_operation(g) for g, _ in golds):
            raise Malformed(f"{shown!r} states an operation ({stated}), not its value: it restates the question")
        mv = _math_verify()
        mine = _plain_decimal(pred, self.float_rounding) if self.fast_path else None
        for g, parsed in golds:
            if _is_word(parsed):  # ("Paris": as text, not a product of letters)
                if _as_word(str(pred[-1])) == _as_word(g):
                    return Verdict.ok(1.0, reason=f"{shown!r} is the word {clip(g, 60)!r}")
                continue
            theirs = None if mine is None else _plain_decimal(parsed, self.float_rounding)
            if theirs is None and "=" in g and not _names_variables(pred):
                parsed = ordered_values(g, parsed) or parsed  # (x=3, y=-1: the values in the order it names them)
            if theirs is not None:
                same = mine == theirs
            else:
                same = any(mv.verify(
                    list(g_side), p_side, float_rounding=self.float_rounding, numeric_precision=self.numeric_precision,
                    strict=self.strict, timeout_seconds=None) for g_side, p_side in _readings(parsed, pred)) \
                    and not _tiny_apart(parsed, pred, self.float_rounding)
            if same:
                return Verdict.ok(1.0, reason=f"{shown!r} is equivalent to {clip(g, 60)!r}")
        return Verdict.ok(0.0, reason=f"{shown!r} is not equivalent to {clip(golds[0][0], 60)!r}")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example("\\frac{1}{2}", "So the probability is $\\boxed{0.5}$.", "pass", "0.5 == 1/2"),
            cls.example("(x+1)^2", "Expanding, we get $x^2 + 2x + 1$.", "pass", "symbolic equivalence"),
            cls.example("2\\sqrt{2}", "<think>sqrt 8...</think>The answer is $\\sqrt{8}$", "pass"),
            cls.example("3", "The answer is $\\boxed{4}$.", "fail"),
            cls.example("2", "It is $1$ or $2$ or $3$.", "fail", "listing candidates parses as a set"),
            cls.example("3", "I do not know.", "malformed", "no answer"),
        ]
