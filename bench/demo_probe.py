"""Probe a candidate task for `make demo` (issue 23): SmolLM2-135M-Instruct's held-out pass@1 before, a short GRPO
run through the TRL backend on CPU, and pass@1 after, on held-out tasks that differ from the training tasks in
content (names and cities, or argument values, never seen in training).

    OMP_NUM_THREADS=2 .venv/bin/python bench/demo_probe.py extraction --steps 30 --lr 1e-5 --seed 0
    .venv/bin/python bench/demo_probe.py tools --before-only

Candidates:
  extraction: json_extraction difficulty 1 (name, age, city from one paragraph, the fields named instead of the
    source's JSON Schema), json_match with reward "fraction" (the share of the three fields right: all of it is
    content, nothing is paid for the format alone); held out: the people whose first name and city are both in a
    held-out set, trained on: neither in it. The held-out tasks equal the source's own `split: heldout, ask: keys`
    (what `make demo` uses); the training pool is the first 1,699 of its `split: train`.
  tools: tool_choice mode "call" difficulty 1 (three tools offered), tool_call verifier (right tool and arguments,
    nothing for the format alone); held out: tasks whose argument values (countries, cities, words, numbers)
    never appear in a training task's arguments.
Prints one JSON line per phase and writes probe.json under --out; wall and process CPU time are both reported
(the development machine is shared: wall times are pessimistic).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
               "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
    os.environ.setdefault(_k, _v)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "demo"))

HELD_FIRST = {"Greta", "Hiro", "Isla", "Jamal"}
HELD_CITY = {"Bergen", "Osaka", "Dundee", "Dakar"}
T0 = time.perf_counter()


def clock() -> dict[str, float]:
    return {"wall_s": round(time.perf_counter() - T0, 1), "cpu_s": round(time.process_time(), 1)}


#: the question of the extraction candidate, after the source's paragraph. The source's own prompt shows the JSON
#: Schema, and SmolLM2-135M echoes that schema back (0/40 greedy, with or without a system prompt asking for values)
QUESTION = ('What are the name, age and city of this person? Reply with only a JSON object like '
            '{"name": <string>, "age": <integer>, "city": <string>}.')


def extraction_split(n_train: int, n_held: int) -> tuple[list, list]:  # type: ignore[type-arg]
    """(train, held-out) json_extraction d1 tasks asking for the record's keys plainly, disjoint in first names and
    cities; json_match pays the share of the three fields right (text around the object allowed: content only)."""
    from crossgym.environments.sources.json_extraction import json_extraction
    from crossgym.protocol.task import Task

    train, held = [], []
    for t in json_extraction(n=4000, seed=0, difficulty=1, verifier="json_match"):
        rec = t.metadata["record"]
        first = rec["name"].split()[0]
        h_f, h_c = first in HELD_FIRST, rec["city"] in HELD_CITY
        d = t.to_dict()
        d["prompt"][-1]["content"] = d["prompt"][-1]["content"].split("\n\n")[0].removeprefix("Text: ") + \
            "\n\n" + QUESTION
        d["verifier"]["params"] = {**d["verifier"]["params"], "reward": "fraction", "allow_surrounding": True}
        t = Task.from_dict(d)
        if h_f and h_c and len(held) < n_held:
            held.append(t)
        elif not h_f and not h_c and len(train) < n_train:
            train.append(t)
        if len(train) >= n_train and len(held) >= n_held:
            break
    return train, held


def _values(task: Any) -> set[str]:
    out: set[str] = set()
    for call in task.metadata["expected_calls"]:
        out |= {json.dumps(v) for v in call["arguments"].values()}
    return out


def tools_split(n_train: int, n_held: int) -> tuple[list, list]:  # type: ignore[type-arg]
    """(train, held-out) tool_choice call-mode d1 tasks: no held-out argument value is in a training task."""
    from crossgym.environments.sources.tool_choice import tool_choice

    pool = list(tool_choice(n=3000, seed=0, difficulty=1, mode="call"))
    held: list = []  # type: ignore[type-arg]
    seen_held: set[str] = set()
    for t in pool[::7]:  # held-out values drawn from a spread of tasks
        if len(held) >= n_held:
            break
        held.append(t)
        seen_held |= _values(t)
    held_ids = {t.id for t in held}
    train = [t for t in pool if t.id not in held_ids and not (_values(t) & seen_held)][:n_train]
    return train, held


def evaluate(model_dir: str, tasks: list, out: Path, max_tokens: int, seed: int) -> dict:  # type: ignore[type-arg]
    from crossgym.eval.run import build_engine, run_eval
    from crossgym.protocol import SamplingParams
    from crossgym.rollout.config import RolloutConfig

    sampling = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=seed)
    engine = build_engine("hf", model=model_dir)
    config = RolloutConfig(model=model_dir, engine="hf", sampling=sampling, n=1)
    result = run_eval(engine, tasks, config, output_dir=out, batch_size=16)
    m = result.metrics
    return {"pass@1": m["pass@1"], "mean_reward": m["mean_reward"], "n": len(result.rollouts),
            "examples": [r.completion.text for r in result.rollouts[:2]], **clock()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=("extraction", "tools"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--held", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--budget", type=float, default=900.0)
    ap.add_argument("--before-only", action="store_true")
    ap.add_argument("--out", default="runs/demo_probe")
    args = ap.parse_args()

    import torch
    from smollm2 import ensure_model

    from crossgym.config import load_run_config
    from crossgym.train import quiet_libraries

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    quiet_libraries()
    model_dir = str(ensure_model(log=lambda m: None))
    train, held = (extraction_split if args.task == "extraction" else tools_split)(2000, args.held)
    assert not {t.prompt[-1].content for t in held} & {t.prompt[-1].content for t in train}, "overlap"
    tag = f"{args.task}-lr{args.lr:g}-{'lora' if args.lora else 'full'}-s{args.seed}-st{args.steps}"
    out = Path(args.out).resolve() / tag
    doc: dict[str, Any] = {"task": args.task, "lr": args.lr, "lora": args.lora, "seed": args.seed,
                           "steps": args.steps, "held_out": len(held), "train": len(train)}
    doc["before"] = evaluate(model_dir, held, out / "before", args.max_tokens, 0)
    print(json.dumps({"phase": "before", **doc["before"]}), flush=True)
    if args.before_only:
        return 0
    from crossgym.adapters.trl.backend import TRLBackend

    cfg = {"model": model_dir, "output_dir": str(out / "train"), "seed": args.seed, "backend": "trl", "engine": "hf",
           "tasks": {"source": "json_addition", "params": {"n": 1}},
           "grpo": {"num_generations": 8, "per_device_train_batch_size": 8,
                    "max_completion_length": args.max_tokens, "temperature": 0.7, "learning_rate": args.lr,
                    "beta": 0.0, "loss_type": "dapo", "max_steps": args.steps},
           "backend_args": {"lr_scheduler_type": "constant"}}
    if args.lora:
        cfg["grpo"]["lora"] = {"r": 16, "alpha": 32}
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    run = load_run_config(out / "config.json")
    stop = threading.Event()
    timer = threading.Timer(args.budget, stop.set)
    timer.daemon = True
    timer.start()

    def progress(step: int, max_steps: int, logs: dict) -> None:  # type: ignore[type-arg]
        if "reward" in logs and step % 5 == 0:
            print(json.dumps({"phase": "train", "step": step, "reward": round(logs["reward"], 3), **clock()}),
                  flush=True)

    result = TRLBackend().train(run, tasks=train, progress=progress, stop=stop)
    timer.cancel()
    doc["train_result"] = {"steps": result.steps, "reward_curve": result.metrics.get("reward_curve"), **clock()}
    doc["after"] = evaluate(str(result.checkpoint), held, out / "after", args.max_tokens, 0)
    doc["total"] = clock()
    print(json.dumps({"phase": "after", **doc["after"]}), flush=True)
    (out / "probe.json").write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
