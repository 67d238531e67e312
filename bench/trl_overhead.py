"""Step time through crossgym's TRL backend vs a hand-written TRL script: same model, data, reward and settings.

Both build a GRPOTrainer on the same tasks (json_addition, scored by the json_answer verifier) and train; runs
alternate (crossgym, plain, crossgym, plain, ...) in one process so machine load hits both alike. Step times come
from a TrainerCallback (on_step_begin -> on_step_end); the first WARMUP steps of each run are dropped.

    OMP_NUM_THREADS=1 python bench/trl_overhead.py [--model DIR] [--steps 12] [--rounds 3]

Without --model a tiny model is built locally (~1 s). Target: crossgym / plain <= 1.05 (median step time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TRL_EXPERIMENTAL_SILENCE": "1", "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "disabled"}.items():
    os.environ.setdefault(_k, _v)

WARMUP = 2


def step_timer():  # type: ignore[no-untyped-def]
    from transformers import TrainerCallback

    class Timer(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.times: list[float] = []
            self._t0 = 0.0

        def on_step_begin(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
            self._t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
            self.times.append(time.perf_counter() - self._t0)

    return Timer()


def run_crossgym(run, tasks) -> list[float]:  # type: ignore[no-untyped-def]
    """The backend as `crossgym train` uses it (rollouts.jsonl and metrics.jsonl writing included)."""
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.adapters.trl.outputs import make_run_logger

    timer = step_timer()
    trainer = TRLBackend().build_trainer(run, tasks=tasks, callbacks=[make_run_logger(run.output_dir), timer])
    trainer.train()
    return timer.times


def run_plain(run, tasks) -> list[float]:  # type: ignore[no-untyped-def]
    """What a user writes by hand: TRL's GRPOTrainer, a reward function calling the same crossgym verifier."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    import crossgym
    from crossgym.protocol import Completion, Task

    rows = [{"prompt": [{"role": m.role, "content": m.content} for m in t.prompt], "task": t.to_json()}
            for t in tasks]

    def json_answer(completions, task, **kwargs):  # type: ignore[no-untyped-def]
        out = []
        for c, t in zip(completions, task, strict=True):
            tk = Task.from_json(t)
            verdict = crossgym.load_verifier(tk.verifier).verify(tk, Completion.from_text(c[-1]["content"]))
            out.append(verdict.reward if verdict.error is None or verdict.error.startswith("malformed") else 0.0)
        return out

    g = run.grpo
    args = GRPOConfig(output_dir=run.output_dir, seed=run.seed, num_generations=g.num_generations,
                      learning_rate=g.learning_rate, beta=g.beta, max_completion_length=g.max_completion_length,
                      temperature=g.temperature, per_device_train_batch_size=g.per_device_train_batch_size,
                      max_steps=g.max_steps, loss_type="grpo", logging_steps=1, save_strategy="no", report_to=[],
                      disable_tqdm=True, use_cpu=True, bf16=False, gradient_checkpointing=False)
    timer = step_timer()
    trainer = GRPOTrainer(model=run.model, reward_funcs=[json_answer], args=args,
                          train_dataset=Dataset.from_list(rows), callbacks=[timer])
    trainer.train()
    return timer.times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="model directory (default: a tiny model built locally)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--completion-length", type=int, default=16)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from crossgym.adapters.trl.config_map import detect_device
    from crossgym.api import load_tasks
    from crossgym.config import parse_run_config
    from crossgym.train import quiet_libraries

    if detect_device() != "cpu":
        print("note: this bench pins use_cpu=True in the plain script; run it on a CPU machine", file=sys.stderr)
    quiet_libraries()
    tmp = Path(tempfile.mkdtemp(prefix="trl-overhead-"))
    model = args.model
    if model is None:
        from crossgym.inference.tiny import build_tiny_model

        model = str(build_tiny_model(tmp / "tiny"))
    tasks = list(load_tasks("json_addition", n=200, seed=0))
    results: dict[str, list[float]] = {"crossgym": [], "plain": []}
    ratios = []
    for r in range(args.rounds):
        order = [("crossgym", run_crossgym), ("plain", run_plain)]
        medians = {}
        for name, fn in order if r % 2 == 0 else order[::-1]:  # alternate who goes first
            run = parse_run_config({
                "model": model, "tasks": {"source": "json_addition"}, "output_dir": str(tmp / f"{name}{r}"),
                "seed": 0, "grpo": {"num_generations": 8, "per_device_train_batch_size": 16,
                                    "max_completion_length": args.completion_length, "max_steps": args.steps,
                                    "learning_rate": 1e-4, "temperature": 1.0}})
            t0 = time.perf_counter()
            times = fn(run, tasks)[WARMUP:]  # same seed: both sample the same completions
            results[name].extend(times)
            medians[name] = statistics.median(times)
            print(f"round {r} {name:8s}: median step {statistics.median(times):.3f} s over {len(times)} steps "
                  f"(run {time.perf_counter() - t0:.1f} s with init)", flush=True)
        ratios.append(medians["crossgym"] / medians["plain"])
    cg, pl = statistics.median(results["crossgym"]), statistics.median(results["plain"])
    mcg, mpl = statistics.fmean(results["crossgym"]), statistics.fmean(results["plain"])
    print(f"\n{'':10s}{'median s/step':>15s}{'mean s/step':>13s}{'steps':>7s}")
    print(f"{'crossgym':10s}{cg:>15.3f}{mcg:>13.3f}{len(results['crossgym']):>7d}")
    print(f"{'plain TRL':10s}{pl:>15.3f}{mpl:>13.3f}{len(results['plain']):>7d}")
    print(f"ratio crossgym/plain: median {cg / pl:.3f}, mean {mcg / mpl:.3f}, median of the {len(ratios)} "
          f"paired rounds {statistics.median(ratios):.3f} (target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
