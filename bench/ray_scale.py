"""`crossgym verify-batch` locally and on Ray with 1, 2 and (simulated: CPU-pinned actors) 4 workers, and the
per-core rate of each verifier kind, side by side in one run, on issue 27's mix.

    OMP_NUM_THREADS=1 python bench/ray_scale.py [--n 3000] [--repeat 3] [--per-core-n 400] [--json]

The mix, in blocks of 20 records (shuffled within a block): 40% math with distinct answers (70% plain numbers:
integers, decimals, fractions, which the fast path reads; 30% expressions: roots, multiples of pi, which go to
math-verify), 30% JSON/tool calls (json_schema and tool_call, half each), 20% code_tests with 3-5 tests in GRPO
groups of 4 completions (one buggy), 10% instructions (IFEval-style constraints); every completion carries ~300
tokens of reasoning text and 300 token ids, and a quarter of the answers are wrong. Every repeat writes a fresh
file (new answers), so no verdict is served from a cache.

* per core: each kind alone (and the mix) through verify_batch(workers=1) in a child pinned to one core (its
  math and sandbox pools inherit the pin), after an untimed warm-up file: records/s of wall time and records per
  CPU-second of the child's whole process tree (robust to a loaded machine), medians of repeats;
* scaling: the mix through verify-batch locally (a warm child, 2 workers) and through verify_batch(use_ray=True) on a
  Ray of this process (loopback only, 4 logical CPUs) with 1 and 2 actors, the same pinned to a core each (an
  actor's math worker and sandbox run beside it, so an unpinned actor uses more than one core), and 4 actors pinned
  two to a core (the per-actor overhead: 4 pinned on 2 cores should score like 2). Beside each: CPU seconds per 1k
  records of the whole process tree (Ray's daemons included), of the actors and of the driver (what one driver can
  feed), and the share of the machine the other processes took meanwhile. "Projected on a quiet machine": an
  actor's rate on its own core (1 / its CPU per record) and the machine's (cores / everyone's CPU per record),
  whichever is lower.

The machine is shared: the 1-minute load average is printed before each repeat; figures are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Ray on loopback only (read when ray is imported): the node is 127.0.0.1, no token, no usage stats
os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
                   "RAY_USAGE_STATS_ENABLED": "0"})
os.environ.setdefault("OMP_NUM_THREADS", "1")

FILLER = " ".join(f"step {k}: we consider the quantity and simplify it carefully." for k in range(30))  # ~300 tok
KINDS = ("math_plain", "math_expr", "json_schema", "tool_call", "code_tests", "instructions")
#: share of each kind in the mix (math 40% = 28% plain + 12% expressions)
SHARES = {"math_plain": 0.28, "math_expr": 0.12, "json_schema": 0.15, "tool_call": 0.15, "code_tests": 0.20,
          "instructions": 0.10}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                           "age": {"type": "integer", "minimum": 0},
                                           "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}},
          "required": ["name", "age"], "additionalProperties": False}
TOOLS = [{"name": "get_weather", "description": "Current weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                         "required": ["city"]}},
         {"name": "get_time", "description": "", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                                                "required": ["tz"]}}]
CODE_OK = "```python\ndef f(a, b):\n    return a * {k} + b\n```"
CODE_BAD = "```python\ndef f(a, b):\n    return a * {k} - b\n```"


def _rec(i: int, verifier: str, answer: Any, text: str, params: dict[str, Any] | None = None,
         tools: list[dict[str, Any]] | None = None, tid: str | None = None) -> dict[str, Any]:
    task = {"id": tid or f"t{i}", "prompt": [{"role": "user", "content": f"question {i}"}], "answer": answer,
            "verifier": {"name": verifier, "params": params or {}}}
    if tools:
        task["tools"] = tools
    ids = [(i * 7919 + k * 31) % 151_000 for k in range(300)]
    return {"task": task, "completion": {"messages": [{"role": "assistant", "content": text}], "token_ids": ids},
            "verdict": {"reward": 1.0, "passed": True, "reason": "stored"}}


def records(kind: str, i: int, rng: random.Random) -> list[dict[str, Any]]:
    """The records of one item of ``kind`` (code_tests: a GRPO group of 4), answer distinct per ``i``."""
    wrong = rng.random() < 0.25
    if kind == "math_plain":
        form = i % 3
        if form == 0:
            ans, said = str(1000 + i), str(1000 + i + wrong)
        elif form == 1:
            ans, said = f"{i}.{i % 97 + 1:02d}", f"{i}.{i % 97 + 1 + wrong:02d}"
        else:
            ans, said = f"\\frac{{{i + 1}}}{{{i + 2}}}", f"\\frac{{{i + 1 + wrong}}}{{{i + 2}}}"
        return [_rec(i, "math", ans, f"{FILLER} So the answer is $\\boxed{{{said}}}$.")]
    if kind == "math_expr":
        k = i % 50 + 2
        ans = f"{i}\\sqrt{{{k}}}" if i % 2 else f"\\frac{{{i}\\pi}}{{{k}}}"
        said = f"{i + wrong}\\sqrt{{{k}}}" if i % 2 else f"\\frac{{{i + wrong}\\pi}}{{{k}}}"
        return [_rec(i, "math", ans, f"{FILLER} Therefore the final answer is $\\boxed{{{said}}}$.")]
    if kind == "json_schema":
        age = -1 if wrong else i % 90
        doc = json.dumps({"name": f"user{i}", "age": age, "tags": [f"t{i}", "x"]})
        return [_rec(i, "json_schema", SCHEMA, f"{FILLER}\n```json\n{doc}\n```", {"allow_surrounding": True})]
    if kind == "tool_call":
        city = f"City{i + wrong}"
        call = json.dumps({"name": "get_weather", "arguments": {"city": city}})
        return [_rec(i, "tool_call", {"name": "get_weather", "arguments": {"city": f"City{i}"}},
                     f"{FILLER}\n<tool_call>{call}</tool_call>", tools=TOOLS)]
    if kind == "code_tests":
        k = i % 9 + 2
        tests = [f"assert f({a}, {a + 1}) == {a * k + a + 1}" for a in range(3 + i % 3)]  # 3-5 tests
        return [_rec(i, "code_tests", {"tests": tests}, (CODE_BAD if g == 3 else CODE_OK).format(k=k), tid=f"c{i}")
                for g in range(4)]
    if kind == "instructions":
        kw = f"word{i}"
        cons = [{"type": "word_count", "max": 400}, {"type": "keywords_include", "keywords": [kw]},
                {"type": "no_commas"}, {"type": "ends_with", "suffix": "done."}]
        return [_rec(i, "instructions", cons, f"{FILLER} the {kw if not wrong else 'other'} case is done.")]
    raise ValueError(kind)


def write(path: Path, kinds: list[str], n: int, seed: int) -> int:
    """``n`` records (whole code groups) of ``kinds``: one kind, or the mix in blocks of 20."""
    rng = random.Random(seed)
    block: list[str] = []
    if len(kinds) > 1:  # 20 records: 6 plain math, 2 expressions, 3 + 3 JSON/tool, 1 code group of 4, 2 instructions
        block = ["math_plain"] * 6 + ["math_expr"] * 2 + ["json_schema"] * 3 + ["tool_call"] * 3 + \
                ["code_tests"] + ["instructions"] * 2
    written = 0
    i = seed * 10_000_000
    with path.open("w", encoding="utf-8") as f:
        while written < n:
            order = list(block) if block else [kinds[0]]
            rng.shuffle(order)
            for kind in order:
                for rec in records(kind, i, rng):
                    f.write(json.dumps(rec) + "\n")
                    written += 1
                i += 1
    return written


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def child_rate(path: Path, warm: Path, workers: int, core: int | None) -> dict[str, Any]:
    """verify_batch of ``path`` (local, ``workers``) in a child process pinned to ``core``, after an untimed
    verify_batch of ``warm`` (the same kinds) has built the verifiers and started their pools: its summary."""
    def pin() -> None:
        if core is not None:
            os.sched_setaffinity(0, {core})

    env = {**os.environ, "CROSSGYM_SANDBOX_WORKERS": str(workers), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, "--child", str(path), str(warm), str(workers)],
                          capture_output=True, text=True, env=env, preexec_fn=pin, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"verify-batch failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant (its math pool, sandbox servers), each with its reaped
    children's (a sandbox zygote's forks): what scoring cost in core-seconds, whatever else loads the machine."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total = 0.0
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += cpu[pid]
    return total


def _child(path: str, warm: str, workers: str) -> None:
    from crossgym.serve.batch_cmd import verify_batch

    with tempfile.TemporaryDirectory(prefix="cg_rs_") as tmp:
        verify_batch(Path(warm), workers=int(workers), out=Path(tmp) / "warm.jsonl", progress=False)
        before, m0, t0 = tree_cpu(os.getpid()), machine_busy(), time.monotonic()
        doc = verify_batch(Path(path), workers=int(workers), out=Path(tmp) / "out.jsonl", progress=False)
        doc["cpu_s"] = tree_cpu(os.getpid()) - before
        m1, t1 = machine_busy(), time.monotonic()
        doc["machine_busy"] = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
        doc["others"] = max(0.0, doc["machine_busy"] - doc["cpu_s"] / ((t1 - t0) * (os.cpu_count() or 1)))
    print(json.dumps(doc))


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine so far (/proc/stat): what everyone's processes used."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def ray_rate(path: Path, workers: int, pin: bool, shard: int | None = None) -> dict[str, Any]:
    """verify_batch(use_ray=True) on this process's Ray: its summary, plus what the stream itself (actor start-up
    and warm-up left out) cost: CPU seconds of this process tree (driver, Ray's daemons, the actors and their
    pools), the driver's own, and how busy the whole machine was meanwhile."""
    from crossgym.serve import ray_scale
    from crossgym.serve.batch_cmd import verify_batch

    marks: dict[str, Any] = {}
    plain = ray_scale.ShardStream.run

    def actors_cpu(stream: Any) -> float:
        import ray

        return sum(tree_cpu(pid) for pid in ray.get([a.ready.remote() for a in stream.actors]))

    def timed(self: Any, *args: Any) -> Any:  # measurement only: the stream runs unchanged
        marks["start"] = (tree_cpu(os.getpid()), resource.getrusage(resource.RUSAGE_SELF), machine_busy(),
                          actors_cpu(self))
        marks["t0"] = time.monotonic()
        yield from plain(self, *args)
        marks["t1"] = time.monotonic()
        marks["end"] = (tree_cpu(os.getpid()), resource.getrusage(resource.RUSAGE_SELF), machine_busy(),
                        actors_cpu(self))

    ray_scale.ShardStream.run = timed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory(prefix="cg_rs_") as tmp:
            doc = verify_batch(path, use_ray=True, workers=workers, out=Path(tmp) / "out.jsonl", progress=False,
                               pin_cpus=pin, shard=shard)
    finally:
        ray_scale.ShardStream.run = plain  # type: ignore[method-assign]
    (c0, r0, m0, a0), (c1, r1, m1, a1) = marks["start"], marks["end"]
    doc["cpu_s"] = c1 - c0
    doc["actors_cpu_s"] = a1 - a0
    doc["driver_cpu_s"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    doc["machine_busy"] = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
    # the share of the machine the others (not this tree) took meanwhile
    doc["others"] = max(0.0, doc["machine_busy"] - doc["cpu_s"] / ((marks["t1"] - marks["t0"]) * os.cpu_count()))
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="records of the mix per scaling run")
    ap.add_argument("--per-core-n", type=int, default=400, help="records per kind for the per-core rates")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip-per-core", action="store_true", help="only the scaling runs")
    ap.add_argument("--shard", type=int, default=None, help="records per Ray shard (default: ray_scale.SHARD)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    cores = sorted(os.sched_getaffinity(0))
    out: dict[str, Any] = {"cpus": len(cores), "n": args.n, "repeat": args.repeat, "load1": [], "per_core": {},
                           "scaling": {}}
    tmp = Path(tempfile.mkdtemp(prefix="cg_ray_scale_"))
    try:
        # per-core rates, each kind alone and the mix, on the last core
        per: dict[str, list[float]] = {k: [] for k in (*KINDS, "mix")}
        per_cpu: dict[str, list[float]] = {k: [] for k in per}
        for r in range(0 if args.skip_per_core else args.repeat):
            out["load1"].append(("per-core", r, load1()))
            for kind in per:
                f, w = tmp / f"{kind}.{r}.jsonl", tmp / f"{kind}.{r}.warm.jsonl"
                kinds = list(SHARES) if kind == "mix" else [kind]
                write(f, kinds, args.per_core_n, seed=100 + r)
                write(w, kinds, 40, seed=900 + r)
                doc = child_rate(f, w, 1, cores[-1])
                per[kind].append(doc["per_second"])
                per_cpu[kind].append(round(doc["n"] / doc["cpu_s"], 1) if doc["cpu_s"] > 0 else float("nan"))
                f.unlink()
                w.unlink()
        if not args.skip_per_core:
            out["per_core"] = {k: {"median": statistics.median(v), "runs": v,
                                   "per_cpu_s": statistics.median(per_cpu[k]), "per_cpu_s_runs": per_cpu[k]}
                               for k, v in per.items()}
            # the mix's rate per CPU-second from the kinds' (harmonic: time per record adds up); what dominates
            t = sum(SHARES[k] / out["per_core"][k]["per_cpu_s"] for k in KINDS)
            out["mix_from_kinds"] = round(1 / t, 1)
            out["time_share"] = {k: round(SHARES[k] / out["per_core"][k]["per_cpu_s"] / t, 3) for k in KINDS}

        import ray

        from crossgym.serve.ray_scale import init_ray

        init_ray(None, num_cpus=2 * len(cores))  # logical CPUs: room for 4 pinned actors on 2 cores
        modes: dict[str, list[float]] = {"local": [], "ray_1": [], "ray_2": [], "ray_1_pinned": [],
                                         "ray_2_pinned": [], "ray_4_pinned": []}
        driver: dict[str, list[float]] = {m: [] for m in modes if m != "local"}
        cpu_per_k: dict[str, list[float]] = {m: [] for m in modes}
        actor_per_k: dict[str, list[float]] = {m: [] for m in modes if m != "local"}
        busy: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(args.repeat):
            out["load1"].append(("scaling", r, load1()))
            f = tmp / f"mix.{r}.jsonl"
            n = write(f, list(SHARES), args.n, seed=200 + r)
            w = tmp / f"mix.{r}.warm.jsonl"
            write(w, list(SHARES), 40, seed=800 + r)
            doc = child_rate(f, w, len(cores), None)
            modes["local"].append(doc["per_second"])
            cpu_per_k["local"].append(round(doc["cpu_s"] / n * 1000, 3))
            busy["local"].append(round(doc["others"], 2))
            w.unlink()
            for name, workers, pin in (("ray_1", 1, False), ("ray_2", 2, False), ("ray_1_pinned", 1, True),
                                       ("ray_2_pinned", 2, True), ("ray_4_pinned", 4, True)):
                doc = ray_rate(f, workers, pin, args.shard)
                assert doc["n"] == n and doc["ray"]["retries"] == 0, doc
                modes[name].append(doc["per_second"])
                driver[name].append(round(doc["driver_cpu_s"] / n * 1000, 3))
                cpu_per_k[name].append(round(doc["cpu_s"] / n * 1000, 3))
                actor_per_k[name].append(round(doc["actors_cpu_s"] / n * 1000, 3))
                busy[name].append(round(doc["others"], 2))
            f.unlink()
        ray.shutdown()
        med = {m: statistics.median(v) for m, v in modes.items()}
        out["scaling"] = {m: {"median": med[m], "runs": v, "cpu_s_per_1k": statistics.median(cpu_per_k[m]),
                              "others_share": busy[m]} for m, v in modes.items()}
        cpk = {m: out["scaling"][m]["cpu_s_per_1k"] for m in modes}
        apk = {m: statistics.median(v) for m, v in actor_per_k.items()}
        for m, v in apk.items():
            out["scaling"][m]["actors_cpu_s_per_1k"] = v
        # on a quiet machine of these cores: an actor scores 1000/apk records/s on its own core, and the machine
        # as a whole cannot go past cores / (everything's CPU per record: actors, driver, Ray's daemons)
        quiet = {m: min(k * 1000 / apk[m], len(cores) * 1000 / cpk[m])
                 for m, k in (("ray_1_pinned", 1), ("ray_2_pinned", 2))}
        out["quiet_projection"] = {m: round(v, 1) for m, v in quiet.items()}
        out["ratios"] = {"ray_2/ray_1": round(med["ray_2"] / med["ray_1"], 2),
                         "ray_2_pinned/ray_1_pinned": round(med["ray_2_pinned"] / med["ray_1_pinned"], 2),
                         "ray_4_pinned/ray_2_pinned": round(med["ray_4_pinned"] / med["ray_2_pinned"], 2),
                         "ray_2/local": round(med["ray_2"] / med["local"], 2),
                         "quiet ray_2_pinned/ray_1_pinned (projected from CPU time)":
                             round(quiet["ray_2_pinned"] / quiet["ray_1_pinned"], 2)}
        out["driver_cpu_s_per_1k"] = {m: statistics.median(v) for m, v in driver.items()}
        out["load1"].append(("end", 0, load1()))
    finally:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    from crossgym.serve.ray_scale import SHARD

    print(f"{out['cpus']} cores, {args.shard or SHARD} records a Ray shard; load average (1 min) per repeat: "
          + ", ".join(f"{a}{b}={c}" for a, b, c in out["load1"]))
    if out["per_core"]:
        print(f"\nper core (one pinned core, warm; median of {args.repeat}, {args.per_core_n} records per kind):")
        print(f"  {'kind':<13} {'records/s':>9} {'per CPU-s':>10}  share of the mix's CPU time")
        for k, v in out["per_core"].items():
            share = f"{out['time_share'][k]:.0%}" if k in out["time_share"] else ""
            print(f"  {k:<13} {v['median']:>9.1f} {v['per_cpu_s']:>10.1f}  {share:<5} runs {v['runs']} / "
                  f"{v['per_cpu_s_runs']}")
        print(f"  the mix from the kinds' per-CPU-s rates: {out['mix_from_kinds']}/s")
    print(f"\nscaling, the mix, {args.n} records (records/s, median of {args.repeat}):")
    for m, v in out["scaling"].items():
        extra = (f", actors {v['actors_cpu_s_per_1k']}, driver {out['driver_cpu_s_per_1k'][m]}"
                 if m in out["driver_cpu_s_per_1k"] else "")
        print(f"  {m:<13} {v['median']:>8.1f}   runs {v['runs']}   CPU s / 1k records: {v['cpu_s_per_1k']}{extra}"
              f"   others' share of the machine {v['others_share']}")
    print("ratios: " + ", ".join(f"{k} {v}x" for k, v in out["ratios"].items()))
    print("projected on a quiet machine of these cores (records/s): "
          + ", ".join(f"{k} {v}" for k, v in out["quiet_projection"].items()))
    need = 1_200_000 / 600
    if out["per_core"]:
        rate = out["per_core"]["mix"]["per_cpu_s"]
        print(f"\n1.2M rollouts in 10 minutes = {need:.0f} records/s: {need / rate:.1f} cores at {rate:.0f} records "
              "per CPU-second (the mix alone on one core)")
    ms = out["scaling"]["ray_2"]["cpu_s_per_1k"]
    print(f"on Ray (actors, driver and Ray's daemons: {ms} CPU ms a record at 2 actors): {need * ms / 1000:.1f} cores")


if __name__ == "__main__":
    main()
