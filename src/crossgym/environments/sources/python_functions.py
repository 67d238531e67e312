"""python_functions: write a Python function that passes unit tests; scored by ``code_tests``.

Each task names a function, describes it, and shows a few tests; the reward counts hidden tests too (all tests are
``assert name(args) == expected`` on seeded random inputs, expected values from a reference implementation).
difficulty 1: one-liners; 2: a loop and an edge case; 3: a small algorithm. ``env="code"`` lets the model see
failing tests and fix its code over several turns.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.protocol.task import Task


@dataclass(frozen=True)
class Problem:
    name: str
    signature: str
    description: str
    reference: str
    buggy: str
    inputs: Callable[[random.Random], tuple[Any, ...]]


def _ints(rng: random.Random, n: tuple[int, int] = (0, 8), lo: int = -20, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(rng.randint(*n))]


def _word(rng: random.Random, k: tuple[int, int] = (1, 7)) -> str:
    return "".join(rng.choice("abcdeilmnorst") for _ in range(rng.randint(*k)))


def _sentence(rng: random.Random) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(0, 6)))


def _pal(rng: random.Random) -> tuple[Any, ...]:
    half = "".join(rng.choice("abcde") for _ in range(rng.randint(0, 4)))
    core = half + rng.choice(["", "x"]) + half[::-1] if rng.random() < 0.6 else half + _word(rng, (1, 3))
    out = []
    for ch in core:  # noise the palindrome check must ignore: case, spaces, punctuation
        out.append(ch.upper() if rng.random() < 0.3 else ch)
        if rng.random() < 0.25:
            out.append(rng.choice(" ,!."))
    return ("".join(out),)


def _roman(rng: random.Random) -> tuple[Any, ...]:
    n = rng.randint(1, 3999)
    vals = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
            (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for v, sym in vals:
        while n >= v:
            out, n = out + sym, n - v
    return (out,)


def _brackets(rng: random.Random) -> tuple[Any, ...]:
    if rng.random() < 0.5:
        s = ""
        for _ in range(rng.randint(0, 5)):
            o, c = rng.choice([("(", ")"), ("[", "]"), ("{", "}")])
            s = rng.choice([o + s + c, s + o + c])
        return (s,)
    return ("".join(rng.choice("()[]{}") for _ in range(rng.randint(1, 8))),)


def _intervals(rng: random.Random) -> tuple[Any, ...]:
    out = []
    for _ in range(rng.randint(0, 6)):
        a = rng.randint(0, 20)
        out.append([a, a + rng.randint(0, 5)])
    return (out,)


PROBLEMS: dict[int, list[Problem]] = {1: [
    Problem("sum_of_evens", "def sum_of_evens(nums: list[int]) -> int", "returns the sum of the even numbers in nums",
            "def sum_of_evens(nums):\n    return sum(x for x in nums if x % 2 == 0)\n",
            "def sum_of_evens(nums):\n    return sum(x for x in nums if x > 0 and x % 2 == 0)\n",
            lambda r: (_ints(r),)),
    Problem("count_vowels", "def count_vowels(s: str) -> int", "counts the vowels (a, e, i, o, u; any case) in s",
            "def count_vowels(s):\n    return sum(ch in 'aeiouAEIOU' for ch in s)\n",
            "def count_vowels(s):\n    return sum(ch in 'aeiou' for ch in s)\n",
            lambda r: ("".join(r.choice(string.ascii_letters + " ") for _ in range(r.randint(0, 12))),)),
    Problem("reverse_words", "def reverse_words(s: str) -> str",
            "returns the words of s (split on whitespace) in reverse order, joined by single spaces",
            "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
            "def reverse_words(s):\n    return ' '.join(reversed(s.split(' ')))\n",
            lambda r: ("  ".join(_word(r) for _ in range(r.randint(0, 5))) if r.random() < 0.4 else _sentence(r),)),
    Problem("clamp", "def clamp(x: int, lo: int, hi: int) -> int", "returns x limited to the range lo..hi (lo <= hi)",
            "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
            "def clamp(x, lo, hi):\n    return min(lo, max(x, hi))\n",
            lambda r: (r.randint(-30, 30), *sorted((r.randint(-20, 20), r.randint(-20, 20))))),
], 2: [
    Problem("is_palindrome", "def is_palindrome(s: str) -> bool",
            "whether s reads the same backwards, ignoring case and every character that is not a letter or digit",
            "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n    return t == t[::-1]\n",
            "def is_palindrome(s):\n    return s == s[::-1]\n", _pal),
    Problem("run_length", "def run_length(s: str) -> str",
            "run-length encodes s: each run of a repeated character becomes the character and the run's length, "
            "e.g. 'aaab' -> 'a3b1'",
            "def run_length(s):\n    out, i = [], 0\n    while i < len(s):\n        j = i\n"
            "        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out.append(f'{s[i]}{j - i}')\n"
            "        i = j\n    return ''.join(out)\n",
            "def run_length(s):\n    out = []\n    for ch in sorted(set(s)):\n        out.append(f'{ch}{s.count(ch)}')\n"
            "    return ''.join(out)\n",
            lambda r: ("".join(r.choice("aab") * r.randint(1, 3) for _ in range(r.randint(0, 5))),)),
    Problem("second_largest", "def second_largest(nums: list[int]) -> int | None",
            "returns the second largest distinct value in nums, or None when there is none",
            "def second_largest(nums):\n    d = sorted(set(nums))\n    return d[-2] if len(d) >= 2 else None\n",
            "def second_largest(nums):\n    d = sorted(nums)\n    return d[-2] if len(d) >= 2 else None\n",
            lambda r: (_ints(r, (0, 7), -5, 5),)),
    Problem("rotate", "def rotate(nums: list[int], k: int) -> list[int]",
            "returns nums rotated right by k places (k may exceed the length; an empty list stays empty)",
            "def rotate(nums, k):\n    if not nums:\n        return []\n    k %= len(nums)\n"
            "    return nums[-k:] + nums[:-k] if k else list(nums)\n",
            "def rotate(nums, k):\n    return nums[-k:] + nums[:-k]\n",
            lambda r: (_ints(r, (0, 6)), r.randint(0, 9))),
], 3: [
    Problem("roman_to_int", "def roman_to_int(s: str) -> int", "converts a Roman numeral (1 to 3999) to an integer",
            "def roman_to_int(s):\n    v = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n"
            "    total = 0\n    for i, ch in enumerate(s):\n"
            "        if i + 1 < len(s) and v[ch] < v[s[i + 1]]:\n            total -= v[ch]\n        else:\n"
            "            total += v[ch]\n    return total\n",
            "def roman_to_int(s):\n    v = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n"
            "    return sum(v[ch] for ch in s)\n", _roman),
    Problem("balanced", "def balanced(s: str) -> bool",
            "whether the brackets (), [] and {} in s are balanced and properly nested",
            "def balanced(s):\n    pairs, stack = {')': '(', ']': '[', '}': '{'}, []\n    for ch in s:\n"
            "        if ch in '([{':\n            stack.append(ch)\n        elif ch in pairs:\n"
            "            if not stack or stack.pop() != pairs[ch]:\n                return False\n"
            "    return not stack\n",
            "def balanced(s):\n    return s.count('(') == s.count(')') and s.count('[') == s.count(']') "
            "and s.count('{') == s.count('}')\n", _brackets),
    Problem("lis_length", "def lis_length(nums: list[int]) -> int",
            "returns the length of the longest strictly increasing subsequence of nums",
            "def lis_length(nums):\n    best = []\n    for x in nums:\n        lo, hi = 0, len(best)\n"
            "        while lo < hi:\n            mid = (lo + hi) // 2\n            if best[mid] < x:\n"
            "                lo = mid + 1\n            else:\n                hi = mid\n"
            "        if lo == len(best):\n            best.append(x)\n        else:\n            best[lo] = x\n"
            "    return len(best)\n",
            "def lis_length(nums):\n    n = 0\n    run = 0\n    for i, x in enumerate(nums):\n"
            "        run = run + 1 if i and x > nums[i - 1] else 1\n        n = max(n, run)\n    return n\n",
            lambda r: (_ints(r, (0, 10), 0, 9),)),
    Problem("merge_intervals", "def merge_intervals(intervals: list[list[int]]) -> list[list[int]]",
            "merges overlapping (or touching) closed intervals [a, b] and returns them sorted by start",
            "def merge_intervals(intervals):\n    out = []\n    for a, b in sorted(intervals):\n"
            "        if out and a <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], b)\n        else:\n"
            "            out.append([a, b])\n    return out\n",
            "def merge_intervals(intervals):\n    out = []\n    for a, b in intervals:\n"
            "        if out and a <= out[-1][1]:\n            out[-1][1] = b\n        else:\n"
            "            out.append([a, b])\n    return out\n", _intervals),
]}


def _call_text(name: str, args: tuple[Any, ...]) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


def _load(source: str, name: str) -> Callable[..., Any]:
    ns: dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), ns)  # our own trusted reference code, never model output
    return ns[name]  # type: ignore[no-any-return]


def make_tests(problem: Problem, rng: random.Random, visible: int, hidden: int) -> tuple[list[str], list[str]]:
    """(visible, hidden) distinct ``assert f(args) == expected`` tests, expected from the reference; each group
    holds at least one test the problem's typical bug fails, when the inputs can show it."""
    ref, bug = _load(problem.reference, problem.name), _load(problem.buggy, problem.name)
    revealing: list[str] = []
    plain: list[str] = []
    seen: set[str] = set()
    need = visible + hidden
    for _ in range(need * 40):
        args = problem.inputs(rng)
        call = _call_text(problem.name, args)
        if call in seen:
            continue
        seen.add(call)
        expected = ref(*[list(a) if isinstance(a, list) else a for a in args])
        try:
            caught = bug(*[list(a) if isinstance(a, list) else a for a in args]) != expected
        except Exception:
            caught = True
        (revealing if caught else plain).append(f"assert {call} == {expected!r}")
        if len(revealing) >= 2 and len(revealing) + len(plain) >= need:
            break
    shown = revealing[:1] + plain[:visible - 1]
    shown += revealing[1:visible - len(shown) + 1] if len(shown) < visible else []
    rest = [t for t in revealing + plain if t not in shown]
    rng.shuffle(shown)
    secret = rest[:hidden]
    rng.shuffle(secret)
    return shown[:visible], secret


def python_functions(n: int = 100, seed: int = 0, difficulty: int = 1, env: str = "single_turn",
                     visible: int = 3, hidden: int = 5, max_turns: int = 3,
                     system_prompt: str | None = None) -> Iterator[Task]:
    """Function-writing tasks with ``visible`` shown tests and ``hidden`` more that count toward the reward."""
    src = "python_functions"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(env, "env", src, ("single_turn", "code"))
    check_int(visible, "visible", src, lo=1, hi=20)
    check_int(hidden, "hidden", src, lo=0, hi=50)
    check_int(max_turns, "max_turns", src, lo=1)
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        problem = rng.choice(PROBLEMS[difficulty])
        shown, secret = make_tests(problem, rng, visible, hidden)
        tests = shown + secret
        prompt = (f"Write a Python function `{problem.signature}` that {problem.description}.\n\n"
                  f"For example, these tests must pass:\n" + "\n".join(shown) +
                  "\n\nReply with the complete function in a ```python block (standard library only).")
        if env == "code":
            prompt += " You will see the results of the tests and can fix your code."
        meta = {"difficulty": difficulty, "entry_point": problem.name, "visible_tests": shown,
                "reference": problem.reference, "buggy": problem.buggy}
        if env == "code":
            meta["max_turns"] = max_turns
        yield make_task(src, i, seed, prompt, {"tests": tests}, "code_tests", env=env, tag=f"d{difficulty}",
                        system=system_prompt, metadata=meta)
