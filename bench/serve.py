"""`crossgym serve` and Ray scale-out, measured side by side in one run.

1. Batch endpoint vs in process: the same pairs scored by ``verify_many`` here and by POST /verify/batch on a
   `crossgym serve` child process over one keep-alive connection (ServeClient); interleaved rounds, best of each.
   Two workloads: cheap in-process verifiers (numeric, json_match, instructions, exact_match) and the sandboxed
   code_tests. Target: HTTP >= 0.5x in-process.
2. 1,000 concurrent POST /verify requests (one connection each) against the same server: errors (target 0),
   wall time, latency percentiles.
3. Ray: code_tests over 2 local actors vs 1 (ray.init(num_cpus=2)), warm actors, each pinned to its own core
   (a worker is one core, as on a cluster node; the sandbox tasks it starts stay on that core), the same chunks
   for both, interleaved rounds. Target: >= 1.6x. Also printed: how many cores the actors kept busy (below 2
   means other processes held the cores) and the Ray driver's CPU per pair.

The machine's load average is printed next to every figure: other processes share the cores.
Run: OMP_NUM_THREADS=1 .venv/bin/python bench/serve.py [--pairs N] [--code N] [--rounds R]
     [--parts batch,concurrency,ray]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from crossgym.api import load_tasks
from crossgym.protocol import Completion, Task


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} (1/5 min) on {os.cpu_count()} cpus"


def cheap_pairs(n: int) -> list[tuple[Task, Completion | str]]:
    """Rollout-like pairs from task sources whose verifiers run in process: right and wrong answers."""
    pairs: list[tuple[Task, Completion | str]] = []
    sources = [("arithmetic", "answer"), ("json_extraction", "json"), ("instructions", "text"),
               ("multiple_choice", "answer")]
    per = max(1, n // (2 * len(sources)))
    for source, _ in sources:
        for t in load_tasks(source, n=per, seed=1):
            ans = t.answer if not isinstance(t.answer, (dict, list)) else __import__("json").dumps(t.answer)
            pairs.append((t, f"The answer is {ans}."))
            pairs.append((t, "I am not sure."))
    return pairs[:n]


def code_pairs(n: int) -> list[tuple[Task, Completion | str]]:
    pairs: list[tuple[Task, Completion | str]] = []
    tasks = load_tasks("python_functions")
    i = 0
    while len(pairs) < n:
        t = tasks[i % len(tasks)]
        pairs.append((t, f"```python\n{t.metadata['reference' if i % 2 == 0 else 'buggy']}\n```"))
        i += 1
    return pairs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_cpu(pid: int) -> float:
    """CPU seconds a process (and its reaped children) used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


SERVER_PID: list[int] = []


@contextlib.contextmanager
def server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "crossgym.cli", "serve", "--port", str(port), "--max-batch",
                             "4096", "--max-body-mb", "64"], stderr=subprocess.DEVNULL,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    SERVER_PID[:] = [proc.pid]
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        SERVER_PID.clear()
        proc.terminate()
        proc.wait(timeout=30)


def best_of(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, Any, float, float]]:
    """Best wall time of each contender over interleaved rounds (load changes hit all alike), its result, and its
    least CPU time: this process (the caller, or the client) and the server process."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    cpus: dict[str, list[tuple[float, float]]] = {k: [] for k in contenders}
    results: dict[str, Any] = {}
    for _ in range(rounds):
        for name, fn in contenders.items():
            c, s = time.process_time(), sum(proc_cpu(p) for p in SERVER_PID)
            t = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - t)
            cpus[name].append((time.process_time() - c, sum(proc_cpu(p) for p in SERVER_PID) - s))
    return {k: (min(v), results[k], min(c for c, _ in cpus[k]), min(s for _, s in cpus[k]))
            for k, v in times.items()}


def bench_batch(url: str, pairs: list[tuple[Task, Completion | str]], label: str, rounds: int) -> float:
    from crossgym.serve.client import ServeClient
    from crossgym.verifiers.batch import verify_many

    client = ServeClient(url)
    client.verify_batch(pairs[:64])  # warm both sides: verifier builds, sandbox pools
    verify_many(pairs[:64])
    res = best_of({"in-process": lambda: verify_many(pairs),
                   "http batch": lambda: client.verify_batch(pairs, batch_size=256)}, rounds)
    (t_local, local, c_local, _), (t_http, remote, c_client, c_server) = res["in-process"], res["http batch"]
    same = local == remote
    ratio = t_local / t_http
    n = len(pairs)
    print(f"  {label}: {n} pairs  in-process {n / t_local:7.0f}/s   http batch (keep-alive, 256/request, 2 in "
          f"flight) {n / t_http:7.0f}/s   ratio {ratio:.2f}x (target >= 0.5x)  same verdicts: {same}\n"
          f"      CPU per pair: in-process {c_local / n * 1e6:.0f} us; http server {c_server / n * 1e6:.0f} us + "
          f"client {c_client / n * 1e6:.0f} us (they run side by side)  [{load()}]")
    client.close()
    return ratio


async def _post(host: str, port: int, path: str, body: bytes) -> tuple[int, bytes]:
    """One HTTP/1.1 POST on its own connection (asyncio streams: httpx's pool is the bottleneck at 1,000)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        return status, await reader.readexactly(length)
    finally:
        writer.close()


def bench_concurrent(url: str, n: int) -> int:
    import json

    host, port = url.split("//")[1].split(":")
    task = {"id": "t", "prompt": "2+2?", "answer": "4", "verifier": "numeric"}
    bodies = [json.dumps({"task": task, "completion": f"It is {4 if i % 2 else 5}"}).encode() for i in range(n)]

    async def run() -> tuple[list[float], list[str], float]:
        latencies: list[float] = []
        errors: list[str] = []

        async def one(i: int) -> None:
            t = time.perf_counter()
            try:
                status, data = await _post(host, int(port), "/verify", bodies[i])
                if status != 200 or json.loads(data)["verdict"]["passed"] is not bool(i % 2):
                    errors.append(f"{status} {data[:100]!r}")
            except Exception as exc:  # every failure counts as an error
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - t)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return latencies, errors, time.perf_counter() - start

    latencies, errors, wall = asyncio.run(run())
    q = statistics.quantiles(latencies, n=100)
    print(f"  {n} concurrent POST /verify (one connection each, all opened at once): errors {len(errors)} "
          f"(target 0)  wall {wall:.2f} s  {n / wall:.0f} req/s  latency p50 {q[49] * 1000:.0f} ms  "
          f"p99 {q[98] * 1000:.0f} ms  [{load()}]")
    for e in errors[:5]:
        print(f"    {e}")
    return len(errors)


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds of these processes, their live descendants and every child they reaped (sandbox tasks)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for p in procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
    return total


def bench_ray(pairs: list[tuple[Task, Completion | str]], rounds: int) -> float:
    """1 actor vs 2, each pinned to its own core (a worker is one core, as on a cluster node), same chunks."""
    import ray

    from crossgym.serve import ray_scale
    from crossgym.serve.ray_scale import get_workers, init_ray, shutdown_workers, verify_many_ray
    from crossgym.verifiers.batch import verify_many

    t = time.perf_counter()
    init_ray(num_cpus=2)
    print(f"  ray.init: {time.perf_counter() - t:.1f} s")
    try:
        actors = get_workers(2, pin_cpus=True)  # 1 worker uses the first of these two actors
        pids = ray.get([a.ready.remote() for a in actors])
        cores = ray.get([a.pinned.remote() for a in actors])
        for n in (1, 2):  # warm: sandbox pools, verifier builds
            verify_many_ray(pairs[:16], num_workers=n, pin_cpus=True)
        chunks = ray_scale._chunks([t for t, _ in pairs], None)  # a task's pairs share a chunk
        walls: dict[int, list[float]] = {1: [], 2: []}
        busy: dict[int, list[float]] = {1: [], 2: []}
        driver: dict[int, list[float]] = {1: [], 2: []}
        results: dict[int, Any] = {}
        for _ in range(rounds):  # interleaved: load changes hit both alike
            for n in (1, 2):
                c0, d0, t0 = tree_cpu(pids[:n]), time.process_time(), time.perf_counter()
                results[n] = verify_many_ray(pairs, num_workers=n, pin_cpus=True)
                wall = time.perf_counter() - t0
                walls[n].append(wall)
                busy[n].append((tree_cpu(pids[:n]) - c0) / wall)
                driver[n].append((time.process_time() - d0) / wall)
        local = verify_many(pairs)
        t1, t2 = min(walls[1]), min(walls[2])
        paired = sorted(a / b for a, b in zip(walls[1], walls[2], strict=True))
        print(f"  code_tests, {len(pairs)} pairs in {len(chunks)} chunks of {len(pairs) / len(chunks):.0f}, actors pinned to cores {cores}: "
              f"1 actor {len(pairs) / t1:6.1f}/s   2 actors {len(pairs) / t2:6.1f}/s   speed-up {t1 / t2:.2f}x "
              f"best of {rounds} (median of paired rounds {statistics.median(paired):.2f}x) (target >= 1.6x)  "
              f"equal to local: {results[1] == local and results[2] == local}  [{load()}]\n"
              f"      cores the actors kept busy (their sandbox tasks included; below 1 and 2: other processes held "
              f"them): 1 actor {statistics.median(busy[1]):.2f}, 2 actors {statistics.median(busy[2]):.2f}; "
              f"their CPU per pair {busy[1][walls[1].index(t1)] * t1 / len(pairs) * 1e3:.1f} ms vs "
              f"{busy[2][walls[2].index(t2)] * t2 / len(pairs) * 1e3:.1f} ms; the Ray driver used "
              f"{statistics.median(driver[1]):.0%} / {statistics.median(driver[2]):.0%} of a core")
        return t1 / t2
    finally:
        shutdown_workers()
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2048, help="cheap pairs for part 1")
    ap.add_argument("--code", type=int, default=256, help="code_tests pairs for parts 1 and 3")
    ap.add_argument("--concurrent", type=int, default=1000, help="concurrent requests for part 2")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (best of)")
    ap.add_argument("--parts", default="batch,concurrency,ray", help="comma list: batch, concurrency, ray")
    args = ap.parse_args()
    parts = {p.strip() for p in args.parts.split(",")}
    print(f"crossgym serve bench  [{load()}]")
    cheap, code = cheap_pairs(args.pairs), code_pairs(args.code)
    summary: list[tuple[str, str, str, str]] = []  # figure, value, target, load when taken
    if parts & {"batch", "concurrency"}:
        with server() as url:
            if "batch" in parts:
                print("1. batch endpoint vs in-process")
                # a cheap round takes well under a second: three times the rounds, so both sides meet quiet moments
                r = bench_batch(url, cheap, "in-process verifiers", 3 * args.rounds)
                summary.append(("batch endpoint / in-process, cheap verifiers", f"{r:.2f}x", ">= 0.5x", load()))
                r = bench_batch(url, code, "code_tests (sandbox)", args.rounds)
                summary.append(("batch endpoint / in-process, code_tests", f"{r:.2f}x", ">= 0.5x", load()))
            if "concurrency" in parts:
                print("2. concurrency")
                errors = bench_concurrent(url, args.concurrent)
                summary.append((f"{args.concurrent} concurrent requests: errors", str(errors), "0", load()))
    if "ray" in parts:
        print("3. Ray scale-out")
        r = bench_ray(code, args.rounds)
        summary.append(("Ray 2 actors / 1, code_tests", f"{r:.2f}x", ">= 1.6x", load()))
    print(f"\nsummary (one run, side by side; load average 1/5 min on {os.cpu_count()} cpus)")
    for figure, value, target, when in summary:
        print(f"  {figure:48s} {value:>7s}  target {target:8s} [{when.split(' (')[0]}]")
    print(f"done  [{load()}]")

if __name__ == "__main__":
    main()
