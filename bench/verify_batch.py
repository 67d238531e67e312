"""`crossgym verify-batch --out` at two sizes: records/s and peak RSS side by side (memory should stay flat as the
file grows: records are streamed in chunks), then a SIGKILL at ~50% of --out and a resume (0 lost, 0 duplicated).

    OMP_NUM_THREADS=1 python bench/verify_batch.py [--sizes 5000,20000] [--format jsonl|parquet] [--json]

The mix: math with distinct integer answers (45%), json_answer (25%), exact_match (25%), code_tests in GRPO groups
of 4 (5%); every completion carries ~300 tokens of reasoning text, as a real rollout does. Peak RSS is the
verify-batch process's (getrusage of the child); "+workers" is the sampled peak of it and its worker pool together.
``--format parquet`` writes the same records as Parquet (JSON-string task/verdict/provenance columns, row groups of
2048) and runs the same checks on it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FILLER = " ".join(f"step {k}: we consider the quantity and simplify it carefully." for k in range(30))  # ~300 tokens
CODE_OK = "```python\ndef add(a, b):\n    return a + b\n```"
CODE_BAD = "```python\ndef add(a, b):\n    return abs(a) + b\n```"
CODE_TESTS = {"tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]}


def _task(i: int, verifier: str, answer: object) -> dict[str, Any]:
    return {"id": f"t{i}", "prompt": [{"role": "user", "content": f"question {i}"}], "answer": answer,
            "verifier": {"name": verifier, "params": {}}}


def generate(path: Path, n: int) -> None:
    """n rollout records of the mix, deterministic; every fourth answer is wrong."""
    with path.open("w", encoding="utf-8") as f:
        i = 0
        while i < n:
            kind = i % 20
            wrong = i % 4 == 3
            if kind < 9:
                ans = 1000 + i
                recs = [(_task(i, "math", str(ans)), f"{FILLER} So the answer is $\\boxed{{{ans + wrong}}}$.")]
            elif kind < 14:
                recs = [(_task(i, "json_answer", i), f"{FILLER}\n```json\n{{\"answer\": {i + wrong}}}\n```")]
            elif kind < 19:
                recs = [(_task(i, "exact_match", f"city{i}"), f"{FILLER} <answer> city{i + wrong} </answer>")]
            else:  # a GRPO group of 4 completions of one code task
                t = _task(i, "code_tests", CODE_TESTS)
                recs = [(t, CODE_BAD if g == 3 else CODE_OK) for g in range(4)]
            for task, text in recs[: n - i]:
                f.write(json.dumps({"task": task, "completion": text,
                                    "verdict": {"reward": 1.0, "passed": True, "reason": "stored"},
                                    "provenance": {"key": f"r{i}", "verifier": {"name": task["verifier"]["name"]}}})
                        + "\n")
                i += 1


def to_parquet(src: Path, dst: Path) -> None:
    """The JSONL's records as Parquet, written a row group at a time (object columns as JSON strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    rows: list[dict[str, Any]] = []
    with src.open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            rows.append({k: v if isinstance(v, str) else json.dumps(v) for k, v in doc.items()})
            if len(rows) == 2048:
                table = pa.Table.from_pylist(rows)
                writer = writer or pq.ParquetWriter(dst, table.schema)
                writer.write_table(table)
                rows = []
    if rows:
        table = pa.Table.from_pylist(rows)
        writer = writer or pq.ParquetWriter(dst, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()


def _cmd(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "crossgym.cli", "verify-batch", str(src), "--out", str(out), "--json"]


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def run_once(src: Path, out: Path, kill_at: int | None = None) -> dict[str, Any]:
    """verify-batch in a child (stdout/stderr to files next to ``out``); with ``kill_at``, SIGKILL it once --out
    holds that many lines. Peak RSS from wait4's rusage of exactly this child."""
    log = out.with_suffix(".stderr")
    started = time.perf_counter()
    with log.open("wb") as err, out.with_suffix(".stdout").open("wb") as so:
        proc = subprocess.Popen(_cmd(src, out), stdout=so, stderr=err, env={**os.environ, "OMP_NUM_THREADS": "1"})
        killed = False
        tree = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # reaped here: its rusage is this run's
            if pid:
                break
            tree = max(tree, _tree_rss(proc.pid))
            if kill_at is not None and _lines(out) >= kill_at:
                proc.send_signal(signal.SIGKILL)  # our own child
                killed = True
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.1)
    rc = proc.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "killed": killed, "wall": time.perf_counter() - started, "stderr": log.read_text(),
            "peak_mib": usage.ru_maxrss / 1024, "tree_mib": tree / 2**20}


def _tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and its descendants now (Linux /proc; 0 elsewhere): the worker pool included."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                    fields = stat[stat.rindex(")") + 2:].split()
                    parents[int(entry.name)] = int(fields[1])
                    rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
                except (OSError, ValueError, IndexError):
                    continue
    except OSError:
        return 0
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, pp in parents.items():
            if pp == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(rss.get(p, 0) for p in tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="5000,20000")
    ap.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl", help="the input's format")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="crossgym-bench-vb-") as tmp:
        d = Path(tmp)
        for n in sizes:
            src, out = d / f"in-{n}.jsonl", d / f"out-{n}.jsonl"
            generate(src, n)
            if args.format == "parquet":
                to_parquet(src, d / f"in-{n}.parquet")
                src = d / f"in-{n}.parquet"
            res = run_once(src, out)
            assert res["rc"] == 0, res["stderr"][-2000:]
            assert _lines(out) == n, (n, _lines(out), res["stderr"][-2000:])
            rows.append({"n": n, "seconds": round(res["wall"], 2), "records_per_s": round(n / res["wall"], 1),
                         "peak_rss_mib": round(res["peak_mib"], 1), "tree_rss_mib": round(res["tree_mib"], 1),
                         "input_mib": round(src.stat().st_size / 2**20, 1)})
        n = sizes[-1]
        src, full, out = d / f"in-{n}.{args.format}", d / f"out-{n}.jsonl", d / "resumed.jsonl"
        first = run_once(src, out, kill_at=n // 2)
        at_kill = _lines(out)
        second = run_once(src, out)
        assert second["rc"] == 0, second["stderr"][-2000:]
        keys = [json.loads(x)["previous_provenance"]["key"] for x in out.read_text().splitlines()]
        want = [json.loads(x)["provenance"]["key"] for x in (d / f"in-{n}.jsonl").read_text().splitlines()]
        lost, dup = len(set(want) - set(keys)), len(keys) - len(set(keys))
        resume = {"n": n, "killed": first["killed"], "lines_at_kill": at_kill, "lost": lost, "duplicated": dup,
                  "same_order": keys == want, "identical_to_uninterrupted": out.read_bytes() == full.read_bytes(),
                  "resume_message": next((x for x in second["stderr"].splitlines() if x.startswith("resumed:")), None)}
    if args.json:
        print(json.dumps({"sizes": rows, "resume": resume}, indent=2))
        return
    print(f"{'records':>9} {'input MiB':>10} {'seconds':>9} {'records/s':>10} {'peak RSS MiB':>13} "
          f"{'+workers MiB':>13}")
    for row in rows:
        print(f"{row['n']:>9} {row['input_mib']:>10} {row['seconds']:>9} {row['records_per_s']:>10} "
              f"{row['peak_rss_mib']:>13} {row['tree_rss_mib']:>13}")
    if len(rows) > 1:
        print(f"RSS ratio {rows[-1]['n']}/{rows[0]['n']} records: "
              f"{rows[-1]['peak_rss_mib'] / rows[0]['peak_rss_mib']:.2f}x for {rows[-1]['n'] / rows[0]['n']:.0f}x "
              f"the records (flat = streaming)")
    print(f"kill at ~50% and resume ({n} records): killed={resume['killed']} at {resume['lines_at_kill']} lines, "
          f"lost={lost} duplicated={dup} same_order={resume['same_order']} "
          f"identical_to_uninterrupted={resume['identical_to_uninterrupted']}  [{resume['resume_message']}]")


if __name__ == "__main__":
    main()
