"""The math verifier's fast path against math-verify: verdicts/s side by side and agreement counts, in one run.

    OMP_NUM_THREADS=1 python bench/math_fast_path.py [--n 20000] [--mv-tests DIR] [--json]

Unseen answers: ``--n`` generated (reference, completion) pairs per kind, every reference distinct (so nothing is
served from a cache), in the forms models write them (boxed, "The final answer is", inline $..$, \\[..\\], plain
text, thousand separators, trailing zeros, currency, percentages), 60% right, the rest off by a little. Per kind,
in this process on one core (CPU time, best of ``--repeat``):

* math-verify: its own loop (parse the reference as crossgym reads it, parse the completion, verify), no timeouts;
* crossgym slow: ``Math(fast_path=False)`` scoring, i.e. the same through crossgym's verifier;
* crossgym fast: ``Math()`` scoring with the fast path;

and the agreement of every fast verdict with the slow one (reward, passed, reason, error: the whole Verdict) and
of its pass/fail with math-verify's own. The "expressions" kind (roots, sets, equations, several answers) is
what the fast path hands to math-verify: it shows the cost of trying (one regex scan) and agrees by construction.

``--mv-tests DIR``: math-verify's own regression tests (a checkout's tests/ folder): every (gold, prediction)
pair in their parametrize tables is scored with and without the fast path and the verdicts compared; each call
is bounded by SIGALRM (some of those cases are built to hang sympy).
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

from crossgym.protocol.task import Completion
from crossgym.verifiers.math import Math, fast_parse, parse_answer, parse_gold

LEAD = ("Let me work through this step by step. First I read the question carefully and note the numbers. "
        "Then I set up the computation and check each intermediate result before going on. ")


def forms(ans: str, rng: random.Random) -> str:
    """The completion's last line, written one of the ways models write a final answer."""
    return rng.choice([
        f"The answer is $\\boxed{{{ans}}}$.", f"So the answer is ${ans}$.", f"\\[\\boxed{{{ans}}}\\]",
        f"The final answer is ${ans}$. I hope it is correct.", f"Thus the total is \\boxed{{{ans}}}",
        f"Final answer: {ans}", f"so x = {ans}.", f"$$ {ans} $$", f"Answer: \\({ans}\\)",
    ])


def plain_forms(ans: str, rng: random.Random) -> str:
    """Forms for answers that are not LaTeX (thousand separators, currency, percent words)."""
    return rng.choice([f"The answer is {ans}.", f"Final answer: {ans}", f"In total {ans}", f"so it costs ${ans}",
                       f"The final answer is {ans}"])


def gen(kind: str, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """n (reference, completion) pairs of one kind; references distinct."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(out) < n:
        right = rng.random() < 0.6
        lead = LEAD[: rng.randint(40, len(LEAD))]
        if kind == "integers":
            v = rng.randint(-10**4, 10**9)
            w = v if right else v + rng.randint(1, 9)
            gold = str(v)
            text = forms(rng.choice([str(w), f"{w:,}"]), rng) if rng.random() < 0.7 else plain_forms(f"{w:,}", rng)
        elif kind == "decimals":
            places = rng.randint(1, 6)
            v = round(rng.uniform(-1000, 10**5), places)
            w = v if right else round(v + rng.choice([1, -1]) * 10 ** -places, places)
            gold = f"{v:.{places}f}"
            shown = f"{w:.{places}f}" + ("0" if rng.random() < 0.2 else "")
            text = forms(shown, rng) if rng.random() < 0.7 else plain_forms(shown, rng)
        elif kind == "fractions":
            p, q = rng.randint(1, 999), rng.randint(2, 999)
            gold = f"\\frac{{{p}}}{{{q}}}" if rng.random() < 0.7 else f"{p}/{q}"
            k = 1 if right else rng.choice([1, 2])
            pp, qq = (p * k, q * k) if right else (p + 1, q)
            text = forms(f"\\frac{{{pp}}}{{{qq}}}" if rng.random() < 0.8 else f"{'-' if rng.random() < 0.1 else ''}"
                         f"\\frac{{{pp}}}{{{qq}}}", rng)
        elif kind == "percentages":
            v = rng.randint(0, 10**4)
            w = v if right else v + 1
            gold = f"{v}\\%" if rng.random() < 0.6 else str(v)
            text = forms(f"{w}\\%", rng) if rng.random() < 0.6 else plain_forms(f"{w}%", rng)
        elif kind == "expressions":
            a, b = rng.randint(2, 99), rng.randint(2, 99)
            gold, good, bad = rng.choice([
                (f"{a}\\sqrt{{{b}}}", f"{a}\\sqrt{{{b}}}", f"{a + 1}\\sqrt{{{b}}}"),
                (f"({a}, {b})", f"({a}, {b})", f"({b}, {a + 1})"),
                (f"x^2+{a}x+{b}", f"{b}+{a}x+x^2", f"x^2+{a}x"),
                (f"\\frac{{\\pi}}{{{a}}}", f"\\pi/{a}", f"\\frac{{\\pi}}{{{a + 1}}}"),
                (f"{a}", f"${a}$ and ${b}$", f"${a + 1}$ or ${b}$")])
            text = forms(good if right else bad, rng) if "$" not in good else good if right else bad
        else:
            raise ValueError(kind)
        if gold in seen:
            continue
        seen.add(gold)
        out.append((gold, lead + text))
    return out


class Alarm(BaseException):
    """Raised by SIGALRM; a BaseException, so math-verify's own ``except Exception`` cannot swallow it."""


def bounded(fn: Any, seconds: float) -> Any:
    def ring(*_: Any) -> None:
        raise Alarm

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    except Alarm:
        return "timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def mv_loop(pairs: list[tuple[str, str]]) -> list[bool]:
    """math-verify's own loop: the reference as crossgym reads it, the completion, verify; no timeouts."""
    import math_verify

    out = []
    for gold, text in pairs:
        g = math_verify.parse(gold if any(d in gold for d in ("$", "\\boxed")) else f"${gold}$", parsing_timeout=None)
        p = math_verify.parse(text, parsing_timeout=None)
        out.append(bool(g and p and math_verify.verify(g, p, timeout_seconds=None)))
    return out


def score_loop(verifier: Math, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    out = []
    for gold, text in pairs:
        task = Math.task(gold)
        out.append(verifier.run_score(task, Completion.from_text(text)).to_dict())
    return out


def rate(fn: Any, n: int, repeat: int) -> tuple[float, Any]:
    """verdicts per CPU second, best of ``repeat`` (caches cleared before each run: every answer unseen)."""
    best, res = 0.0, None
    for _ in range(repeat):
        parse_gold.cache_clear()
        gc.collect()
        gc.freeze()
        try:
            t0 = time.process_time()
            res = fn()
            best = max(best, n / max(1e-9, time.process_time() - t0))
        finally:
            gc.unfreeze()
    return best, res


def regression_pairs(folder: Path) -> list[tuple[str, str]]:
    """(gold, prediction) string pairs of every tuple literal in math-verify's test files."""
    pairs = []
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple) and len(node.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts[:2]):
                pairs.append((node.elts[0].value, node.elts[1].value))  # type: ignore[attr-defined]
    return pairs


def regression(folder: Path, seconds: float) -> dict[str, Any]:
    fast, slow = Math(timeout=seconds), Math(timeout=seconds, fast_path=False)
    pairs = regression_pairs(folder)
    same = differ = timeouts = decided = 0
    diffs = []
    for gold, text in pairs:
        task, comp = Math.task(gold), Completion.from_text(text)
        a = bounded(lambda t=task, c=comp: fast.run_score(t, c).to_dict(), seconds)
        b = bounded(lambda t=task, c=comp: slow.run_score(t, c).to_dict(), seconds)
        if "timeout" in (a, b):
            timeouts += 1
            continue
        decided += fast_parse(text) is not None
        if a == b:
            same += 1
        else:
            differ += 1
            diffs.append((gold, text[:120], a, b))
    texts = sorted({t for p in pairs for t in p})
    parse_fast = parse_same = 0
    for t in texts:
        quick = fast_parse(t)
        if quick is None:
            continue
        parse_fast += 1
        full = bounded(lambda: parse_answer(t, fast=False), seconds)  # noqa: B023
        parse_same += full != "timeout" and canon(full) == canon(quick)
    return {"pairs": len(pairs), "verdicts_same": same, "verdicts_differ": differ, "timeouts_skipped": timeouts,
            "completions_on_fast_path": decided, "texts": len(texts), "texts_on_fast_path": parse_fast,
            "parses_same": parse_same, "diffs": diffs[:10]}


def canon(parsed: list[Any]) -> list[tuple[str, str]]:
    from sympy import srepr

    return [("str", x) if isinstance(x, str) else (type(x).__name__, srepr(x)) for x in parsed]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4000, help="pairs per kind (default 4000)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="integers,decimals,fractions,percentages,expressions")
    ap.add_argument("--mv-tests", type=Path, help="math-verify's tests/ folder (regression cases)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    fast, slow = Math(), Math(fast_path=False)
    score_loop(fast, gen("expressions", 20, rng))  # imports and sympy's first comparison, outside the timing
    rows = []
    for kind in args.kinds.split(","):
        pairs = gen(kind, args.n, rng)
        r_mv, mv = rate(lambda: mv_loop(pairs), len(pairs), args.repeat)  # noqa: B023
        r_slow, vs = rate(lambda: score_loop(slow, pairs), len(pairs), args.repeat)  # noqa: B023
        r_fast, vf = rate(lambda: score_loop(fast, pairs), len(pairs), args.repeat)  # noqa: B023
        on_fast = sum(fast_parse(t) is not None for _, t in pairs)
        rows.append({"kind": kind, "n": len(pairs), "on_fast_path": on_fast, "math_verify_per_s": round(r_mv),
                     "crossgym_slow_per_s": round(r_slow), "crossgym_fast_per_s": round(r_fast),
                     "fast_vs_math_verify": round(r_fast / r_mv, 1), "fast_vs_slow": round(r_fast / r_slow, 1),
                     "same_verdict_as_slow": sum(a == b for a, b in zip(vf, vs, strict=True)),
                     "same_pass_as_math_verify": sum(a["passed"] == b for a, b in zip(vf, mv, strict=True)),
                     "passed": sum(v["passed"] for v in vf)})
    reg = regression(args.mv_tests, 10.0) if args.mv_tests else None
    if args.json:
        print(json.dumps({"unseen": rows, "regression": reg}, indent=1))
    else:
        print(f"{'kind':<12} {'n':>6} {'fast%':>6} {'math-verify/s':>14} {'slow/s':>8} {'fast/s':>8} {'fast/mv':>8} "
              f"{'same as slow':>13} {'same as mv':>13}")
        for r in rows:
            n = r["n"]
            print(f"{r['kind']:<12} {n:>6} {100 * r['on_fast_path'] / n:>5.0f}% {r['math_verify_per_s']:>14} "
                  f"{r['crossgym_slow_per_s']:>8} {r['crossgym_fast_per_s']:>8} {r['fast_vs_math_verify']:>7.1f}x "
                  f"{r['same_verdict_as_slow']:>6}/{n:<6} {r['same_pass_as_math_verify']:>6}/{n:<6}")
        if reg is not None:
            print(f"math-verify regression cases: {reg['pairs']} pairs, verdicts same {reg['verdicts_same']}, "
                  f"differ {reg['verdicts_differ']}, skipped (sympy past 10 s) {reg['timeouts_skipped']}; "
                  f"{reg['completions_on_fast_path']} completions on the fast path; parses: "
                  f"{reg['parses_same']}/{reg['texts_on_fast_path']} fast parses identical ({reg['texts']} texts)")
            for d in reg["diffs"]:
                print("  DIFF", d)
    bad = any(r["same_verdict_as_slow"] != r["n"] for r in rows) or bool(reg and reg["verdicts_differ"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
