"""code_output against the stdin/stdout judges users compare it with: a generated differential set of program
outputs vs expected outputs, judged by each ``compare`` mode and by a reimplementation of each judge's rule.

    OMP_NUM_THREADS=1 python bench/code_output_reference.py [--show 12] [--run 0]

The judges, reimplemented from their public source (no code of theirs is used):

- ``lcb``: LiveCodeBench's ``grade_stdio``: both texts stripped and split on "\\n", each line stripped; as many
  lines, and each pair equal as text or, when every item of both is a ``Decimal``, as rows of decimals (no
  tolerance).
- ``codecontests``: CodeContests' ``OutputsMatch``: the bytes split on `` \\n\\t\\r\\v`` (empty parts skipped), ASCII
  letters lowercased; the token lists equal, or as many tokens each equal as text or, both numbers, within 1e-5 as
  doubles.
- ``apps``: APPS' ``testing_util`` standard-input chain: the output's ``splitlines()``, stripped-text equality, line
  lists, ``np.allclose`` of one number per line, then sets of each line's token sets (line and token order and
  repeats ignored), then those sets with numbers rounded to 3 places.
- ``taco``: TACO's ``compare_std_results`` (its fork of APPS that runs ``python`` in a subprocess with ``text=True``,
  so CR and CRLF arrive as LF): the same chain on the whole stdout string, whose list steps then never apply and
  whose set step compares each token's characters with each expected line's tokens.

Each judge's verdict is compared with ``crossgym.verifiers.code.same_output`` in every mode. A mode that disagrees
with every judge on a pair is listed: that is where crossgym needs a documented reason or a fix. ``--run N`` also
sends the first N pairs through the ``code_output`` verifier in the sandbox (a program writing the exact bytes) to
check the verifier judges what ``same_output`` does. Not a timing.
"""

from __future__ import annotations

import argparse
import collections
import math
import re
import sys
import unicodedata
from collections.abc import Callable
from decimal import Decimal

from crossgym.verifiers.code import same_output

MODES = ("strip", "exact", "tokens", "lines")


# ------------------------------------------------------------------------------------------------ the judges
def lcb(got: str, want: str) -> bool:
    """LiveCodeBench's stdio rule (lcb_runner/evaluation/testing_util.py, grade_stdio)."""
    g = [line.strip() for line in got.strip().split("\n")]
    w = [line.strip() for line in want.strip().split("\n")]
    if len(g) != len(w):
        return False
    for a, b in zip(g, w, strict=True):
        if a == b:
            continue
        try:
            da, db = [Decimal(t) for t in a.split()], [Decimal(t) for t in b.split()]
            if da != db:  # (a signalling NaN raises here: an error there, never a pass)
                return False
        except ArithmeticError:
            return False
    return True


_CC_SPLIT = re.compile(rb"[ \n\t\r\v]+")
_CC_INT = re.compile(rb"[+-]?[0-9]+")
_CC_DOUBLE = re.compile(rb"\+?-?(?:[0-9]+\.?[0-9]*(?:e[+-]?[0-9]+)?|\.[0-9]+(?:e[+-]?[0-9]+)?|inf(?:inity)?|nan)")


def _cc_number(tok: bytes) -> float | None:
    """absl::SimpleAtoi (int32) or SimpleAtod on a lowercased token; None when it is text."""
    if _CC_INT.fullmatch(tok) and -(2 ** 31) <= int(tok) < 2 ** 31:
        return float(int(tok))
    if _CC_DOUBLE.fullmatch(tok) and not tok.startswith(b"+-"):
        return float(tok.replace(b"+", b"", 1) if tok.startswith(b"+") else tok)
    return None


def codecontests(got: str, want: str) -> bool:
    """CodeContests' OutputsMatch (execution/tester_sandboxer.cc): tokens, ASCII-lowercased, doubles within 1e-5.
    Every int also parses as a double there, so two numbers always compare as doubles."""
    a = [t.lower() for t in _CC_SPLIT.split(got.encode("utf-8", "surrogatepass")) if t]
    b = [t.lower() for t in _CC_SPLIT.split(want.encode("utf-8", "surrogatepass")) if t]
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        nx, ny = _cc_number(x), _cc_number(y)
        if nx is None or ny is None:
            if x != y:
                return False
        elif not abs(nx - ny) < 1e-5:
            return False
    return True


def _allclose(xs: list[float], ys: list[float]) -> bool:
    """numpy.allclose(xs, ys) with its defaults (rtol 1e-5, atol 1e-8, NaN never close, infinities by sign)."""
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys, strict=True):
        if math.isinf(x) or math.isinf(y):
            if x != y:
                return False
        elif not abs(x - y) <= 1e-8 + 1e-5 * abs(y):
            return False
    return True


def _floats(items: list[str]) -> list[float] | None:
    try:
        return [float(e) for e in items]
    except ValueError:
        return None


def _set_steps(out_sets: list[frozenset[str]], gt_sets: list[frozenset[str]]) -> bool:
    """APPS/TACO's last two steps: equal as sets of sets, or so once every item is a number rounded to 3 places."""
    if set(out_sets) == set(gt_sets):
        return True
    try:
        return ({frozenset(round(float(t), 3) for t in s) for s in out_sets}
                == {frozenset(round(float(t), 3) for t in s) for s in gt_sets})
    except (ValueError, OverflowError):
        return False


def _gt_lines(want: str) -> list[str]:
    """The expected text as APPS/TACO re-read it: split on "\\n", empty lines dropped, then each stripped."""
    return [x.strip() for x in want.split("\n") if x]


def apps(got: str, want: str) -> bool:
    """APPS' standard-input chain (eval/testing_util.py), for an expected output that is one string."""
    out = got.splitlines()
    if "\n".join(out).strip() == want.strip() or "\n".join(o.strip() for o in out).strip() == want.strip():
        return True
    gt = _gt_lines(want)
    if out == [want] or out == gt:
        return True
    out = [x for x in out if x]
    if out == gt:
        return True
    fo, fg = _floats(out), _floats(gt)
    if fo is not None and fg is not None and _allclose(fo, fg):
        return True
    gt_sets = [frozenset(x.split()) for x in gt]
    if not out and not gt_sets:
        return True
    out_sets = [frozenset(x.split()) for x in out if x.split()]
    return _set_steps(out_sets, gt_sets)


def taco(got: str, want: str) -> bool:
    """TACO's compare_std_results (metrics/testing_util.py) on a subprocess's text-mode stdout."""
    got = got.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines of subprocess.run(text=True)
    if got.strip() == want.strip():
        return True
    gt = _gt_lines(want)
    fo, fg = _floats(list(got)), _floats(gt)  # (it iterates the string: one float per character)
    if fo is not None and fg is not None and _allclose(fo, fg):
        return True
    out_sets = [frozenset(tok) for tok in set(got.split())]  # each token's characters
    return _set_steps(out_sets, [frozenset(x.split()) for x in gt])


JUDGES: dict[str, Callable[[str, str], bool]] = {"lcb": lcb, "codecontests": codecontests, "apps": apps,
                                                 "taco": taco}


# ------------------------------------------------------------------------------------------- the pairs
EXPECTED = [
    "6\n", "6", "1 2 3\n", "3\n1 2 3\n", "YES\n", "NO", "Yes\nNo\nYes\n", "0.5\n", "3.14159265\n", "1.0000000\n",
    "-0\n", "100000000000000000\n", "hello world\n", "a b\nc d\n", "#..#\n.##.\n", "  *\n ***\n*****\n", "", "\n",
    "Привет мир\n", "naïve café\n", "1e-9\n", "2 1\n", "1\n\n2\n", "abc\n", "0.333333333 0.666666667\n",
    "5\n10 20 30 40 50\n", "Case #1: 7\nCase #2: 12\n", "-1\n", "12\n", "a\n",
]


def _num_tokens(text: str, fn: Callable[[str], str]) -> str:
    return re.sub(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])", lambda m: fn(m.group()), text)


def _bump(tok: str, by: float) -> str:
    x = float(tok)
    return repr(x + by * max(1.0, abs(x)))


MUTATIONS: dict[str, Callable[[str], str]] = {
    "same": lambda t: t,
    "+newline": lambda t: t + "\n",
    "-newline": lambda t: t[:-1] if t.endswith("\n") else t,
    "+blank lines at end": lambda t: t + "\n\n\n",
    "+blank line at start": lambda t: "\n" + t,
    "trailing spaces": lambda t: "\n".join(line + "  " for line in t.split("\n")),
    "leading spaces": lambda t: "\n".join(" " + line if line else line for line in t.split("\n")),
    "trailing tab": lambda t: "\n".join(line + "\t" if line else line for line in t.split("\n")),
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "CR only": lambda t: t.replace("\n", "\r"),
    "trailing CR, no LF": lambda t: t.rstrip("\n") + "\r",
    "tabs for spaces": lambda t: t.replace(" ", "\t"),
    "double spaces": lambda t: t.replace(" ", "  "),
    "NBSP for spaces": lambda t: t.replace(" ", "\xa0"),
    "form feed for spaces": lambda t: t.replace(" ", "\f"),
    "vertical tab for newlines": lambda t: t.replace("\n", "\v"),
    "one line": lambda t: " ".join(t.split()) + "\n",
    "one token per line": lambda t: "\n".join(t.split()) + "\n",
    "blank line inside": lambda t: t.replace("\n", "\n\n", 1) if t.count("\n") > 1 else t + "\n\nX",
    "lower case": str.lower,
    "upper case": str.upper,
    "tokens reversed": lambda t: " ".join(reversed(t.split())) + "\n",
    "lines reversed": lambda t: "\n".join(reversed(t.rstrip("\n").split("\n"))) + "\n",
    "last token dropped": lambda t: " ".join(t.split()[:-1]) + "\n",
    "last line doubled": lambda t: t + (t.rstrip("\n").split("\n")[-1]) + "\n",
    "empty": lambda t: "",
    "whitespace only": lambda t: " \n",
    "1 as 1.0": lambda t: _num_tokens(t, lambda n: n + ".0" if "." not in n and "e" not in n else n + "0"),
    "number + 1e-7": lambda t: _num_tokens(t, lambda n: _bump(n, 1e-7)),
    "number + 1e-4": lambda t: _num_tokens(t, lambda n: _bump(n, 1e-4)),
    "number + 1": lambda t: _num_tokens(t, lambda n: _bump(n, 1.0)),
    "scientific": lambda t: _num_tokens(t, lambda n: f"{float(n):e}"),
    "NFD": lambda t: unicodedata.normalize("NFD", t),
    "zero-width space": lambda t: t.rstrip("\n") + "\u200b\n",
    "BOM first": lambda t: "\ufeff" + t,
    "digits squeezed": lambda t: t.replace(" ", ""),
}


def pairs() -> list[tuple[str, str, str]]:
    """(mutation, got, want) for every expected text and mutation, each distinct (got, want) once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for want in EXPECTED:
        for name, fn in MUTATIONS.items():
            got = fn(want)
            if (got, want) not in seen:
                seen.add((got, want))
                out.append((name, got, want))
    return out


# --------------------------------------------------------------------------------------------- the report
def _verdicts(items: list[tuple[str, str, str]]) -> list[dict[str, bool]]:
    rows = []
    for _, got, want in items:
        row = {name: fn(got, want) for name, fn in JUDGES.items()}
        row.update({mode: same_output(got, want, mode) for mode in MODES})
        rows.append(row)
    return rows


def _run_in_sandbox(items: list[tuple[str, str, str]], rows: list[dict[str, bool]]) -> int:
    """The code_output verifier on programs writing each ``got`` exactly: how many verdicts same_output missed."""
    from crossgym.api import load_verifier
    from crossgym.protocol.task import Completion, Task, VerifierSpec

    wrong = 0
    for (name, got, want), row in zip(items, rows, strict=False):
        code = f"```python\nimport sys\nsys.stdout.write({got!r})\n```"
        for mode in MODES:
            task = Task(id="t", prompt="?", answer={"stdin": "", "stdout": want},
                        verifier=VerifierSpec("code_output", {"compare": mode}))
            v = load_verifier(task.verifier).verify(task, Completion.from_text(code))
            if v.passed != row[mode]:
                wrong += 1
                print(f"  sandbox differs: {mode} {name}: got {got!r} want {want!r}: {v.reason}")
    return wrong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--show", type=int, default=12, help="examples listed per (mode, mutation) that no judge shares")
    ap.add_argument("--run", type=int, default=0, help="also judge the first N pairs in the sandbox")
    args = ap.parse_args(argv)
    items = pairs()
    rows = _verdicts(items)
    print(f"{len(items)} (output, expected) pairs: {len(EXPECTED)} expected texts x {len(MUTATIONS)} mutations")
    print("pass rate: " + ", ".join(f"{k} {sum(r[k] for r in rows)}" for k in (*JUDGES, *MODES)))
    head = f"{'mode':8}" + "".join(f"{j:>14}" for j in JUDGES) + f"{'any judge':>11}{'vs all':>8}"
    print("\nagreement (% of pairs with the same verdict); 'any judge': some judge agrees; 'vs all': pairs no judge"
          " agrees with\n" + head + "\n" + "-" * len(head))
    lonely: dict[str, collections.Counter[str]] = {}
    examples: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for mode in MODES:
        agree = [sum(r[mode] == r[j] for r in rows) for j in JUDGES]
        alone = [i for i, r in enumerate(rows) if all(r[mode] != r[j] for j in JUDGES)]
        lonely[mode] = collections.Counter(items[i][0] for i in alone)
        for i in alone:
            name, got, want = items[i]
            examples[(mode, name)].append(f"got {got!r} want {want!r}: crossgym {'pass' if rows[i][mode] else 'fail'}")
        print(f"{mode:8}" + "".join(f"{100 * a / len(rows):13.1f}%" for a in agree)
              + f"{100 * (len(rows) - len(alone)) / len(rows):10.1f}%{len(alone):8}")
    judges = list(JUDGES)
    print("\njudges among themselves (% same verdict)")
    for a in judges:
        print(f"{a:14}" + "".join(f"{100 * sum(r[a] == r[b] for r in rows) / len(rows):8.1f}" for b in judges))
    for mode in MODES:
        if lonely[mode]:
            print(f"\n{mode}: disagrees with every judge on {sum(lonely[mode].values())} pairs")
            for name, n in lonely[mode].most_common():
                print(f"  {n:3} {name}")
                for ex in examples[(mode, name)][: args.show]:
                    print(f"        {ex}")
    if args.run:
        print(f"\nsandbox: the first {args.run} pairs through code_output in every mode")
        print(f"  {_run_in_sandbox(items[: args.run], rows)} verdicts differ from same_output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
