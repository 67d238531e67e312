"""The reference scale in one run: issue 27's mix (bench/rollout_mix.py) re-verified by `crossgym verify-batch`,
killed with SIGKILL at ~50% of --out and resumed, with wall time, records/s and peak RSS of each part.

    OMP_NUM_THREADS=1 python bench/full_scale.py [--n 1200000] [--dir /tmp/crossgym-full-scale] [--keep]

Printed: the input's size, each run's wall seconds, records/s and peak RSS (the verify-batch process, from wait4's
rusage, and sampled with its workers), the kill point, then lost and duplicated records (by provenance key, against
the input) and the reward mean per verifier. Targets (issue 27): 1.2M in under 30 minutes, peak RSS under 2 GiB,
0 lost and 0 duplicated. The input and output files (~4.4 GB each at 1.2M) are removed unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import rollout_mix  # noqa: E402  (bench/rollout_mix.py: the mix)
import verify_batch as vb  # noqa: E402  (bench/verify_batch.py: run_once, _lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_200_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/crossgym-full-scale"))
    ap.add_argument("--kill-at", type=float, default=0.5, help="SIGKILL the first run at this share of --out")
    ap.add_argument("--keep", action="store_true", help="keep the input and output files")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src, out = args.dir / f"mix-{args.n}.jsonl", args.dir / f"out-{args.n}.jsonl"
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    if not src.exists() or vb._lines(src) != args.n:
        size = rollout_mix.write(src, args.n)
        print(f"input: {args.n} records, {size / 2**30:.2f} GiB, written in {time.perf_counter() - started:.0f} s",
              flush=True)
    load = os.getloadavg()
    first = vb.run_once(src, out, kill_at=int(args.n * args.kill_at))
    at_kill = vb._lines(out)
    second = vb.run_once(src, out)
    assert second["rc"] == 0, second["stderr"][-2000:]
    load_after = os.getloadavg()
    want: set[str] = set()
    with src.open(encoding="utf-8") as f:
        for line in f:
            want.add(json.loads(line)["provenance"]["key"])
    keys: list[str] = []
    reward: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])  # type: ignore[arg-type]
    with out.open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            keys.append(doc["previous_provenance"]["key"])
            r = reward[doc["task"]["verifier"]["name"]]
            r[0] += doc["verdict"]["reward"] or 0.0
            r[1] += 1
    lost, dup = len(want - set(keys)), len(keys) - len(set(keys))
    wall = first["wall"] + second["wall"]
    print(f"load average before {load[0]:.1f}, after {load_after[0]:.1f} (2 cores)")
    print(f"{'run':<22} {'records':>9} {'seconds':>9} {'records/s':>10} {'peak RSS MiB':>13} {'+workers MiB':>13}")
    print(f"{'first (killed)':<22} {at_kill:>9} {first['wall']:>9.0f} {at_kill / first['wall']:>10.0f} "
          f"{first['peak_mib']:>13.0f} {first['tree_mib']:>13.0f}")
    print(f"{'resumed':<22} {args.n - at_kill:>9} {second['wall']:>9.0f} {(args.n - at_kill) / second['wall']:>10.0f} "
          f"{second['peak_mib']:>13.0f} {second['tree_mib']:>13.0f}")
    print(f"{'both':<22} {args.n:>9} {wall:>9.0f} {args.n / wall:>10.0f} "
          f"{max(first['peak_mib'], second['peak_mib']):>13.0f} {max(first['tree_mib'], second['tree_mib']):>13.0f}")
    print(f"killed={first['killed']} at {at_kill} lines ({at_kill / args.n:.0%}); lost={lost} duplicated={dup} "
          f"in order={keys == sorted(keys, key=lambda k: int(k[1:]))}")
    print("mean reward: " + ", ".join(f"{k} {s / n:.3f} ({n})" for k, (s, n) in sorted(reward.items())))
    print(f"targets: under 30 min -> {wall / 60:.1f} min; peak RSS under 2 GiB -> "
          f"{max(first['tree_mib'], second['tree_mib']) / 1024:.2f} GiB with workers")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
