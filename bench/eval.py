"""Eval figures, measured side by side in one run (not a test; run: python bench/eval.py [--model DIR]).

1. hf engine: batched generation (left padding, one generate() per batch) vs one prompt at a time. Target >= 3x.
2. rollout runner (environment, thread-pool verification, fsync'd JSONL store, provenance) vs the same engine
   calls plus direct verifier calls in a plain loop. Target overhead <= 10%.
Each timing is the best of ``--repeat`` runs, alternating, so load from other processes hits both sides alike.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

for _k, _v in {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="model directory (default: build the tiny test model)")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    import crossgym
    from crossgym.api import load_verifier
    from crossgym.inference.hf import HFEngine
    from crossgym.protocol import SamplingParams
    from crossgym.rollout import RolloutConfig, run_rollouts

    tmp = Path(tempfile.mkdtemp(prefix="crossgym-bench-"))
    model = args.model
    if model is None:
        from crossgym.inference.tiny import build_tiny_model

        model = str(build_tiny_model(tmp / "tiny"))
    batched = HFEngine(model, batch_size=args.prompts).load()
    single = HFEngine(model, batch_size=1)
    single._model, single._chat = batched.model, batched.chat  # the same weights, one sequence per call

    tasks = crossgym.load_tasks("arithmetic", n=max(args.prompts, args.tasks), seed=0)
    prompts = [list(t.prompt) for t in tasks[:args.prompts]]
    params = SamplingParams(temperature=1.0, max_tokens=args.max_tokens, seed=0)
    batched.generate(prompts[:2], 1, SamplingParams(max_tokens=2))  # warm-up

    def run_batched() -> None:
        batched.generate(prompts, 1, params)

    def run_single() -> None:
        for p in prompts:
            single.generate([p], 1, params)

    t_batched, t_single = best_of(args.repeat, run_batched, run_single)
    tokens = args.prompts * args.max_tokens

    # -------------------------------------------------------------- runner overhead
    eval_tasks = tasks[:args.tasks]
    verifier = load_verifier(eval_tasks[0].verifier)
    runner_engine = HFEngine(model, batch_size=args.tasks * args.n)
    runner_engine._model, runner_engine._chat = batched.model, batched.chat
    config = RolloutConfig(model=model, engine="hf", sampling=params, n=args.n)
    runs = iter(range(10**6))

    def run_raw() -> None:
        out = runner_engine.generate([list(t.prompt) for t in eval_tasks], args.n, params)
        for task, row in zip(eval_tasks, out, strict=True):
            for c in row:
                verifier.verify(task, c)

    def run_runner() -> None:
        store = tmp / f"rollouts-{next(runs)}.jsonl"
        rollouts = run_rollouts(runner_engine, eval_tasks, config, store=str(store), batch_size=args.tasks * args.n)
        assert len(rollouts) == args.tasks * args.n

    t_raw, t_runner = best_of(args.repeat, run_raw, run_runner)
    overhead = (t_runner - t_raw) / t_raw

    print(f"model: {model}  threads: {torch.get_num_threads()}  best of {args.repeat}")
    print(f"{'measure':44s} {'A':>9s} {'B':>9s} {'ratio':>8s}  target")
    print(f"{'hf: one prompt at a time (A) / batched (B)':44s} {t_single:8.2f}s {t_batched:8.2f}s "
          f"{t_single / t_batched:7.1f}x  >= 3x   ({args.prompts} prompts x {args.max_tokens} tokens, "
          f"{tokens / t_batched:.0f} tok/s batched)")
    print(f"{'runner (A) vs raw generate + verify (B)':44s} {t_runner:8.2f}s {t_raw:8.2f}s "
          f"{overhead:+7.1%}   <= +10% ({args.tasks} tasks x n={args.n}, verifier {verifier.name})")


def best_of(repeat: int, a, b) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Best wall time of each of two callables, run alternately."""
    ta, tb = [], []
    for _ in range(repeat):
        for fn, acc in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return min(ta), min(tb)


if __name__ == "__main__":
    main()
