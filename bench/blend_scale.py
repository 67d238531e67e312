"""A Nemotron-scale blend (issue 21 item 7): 37 parts over 21 verifiers, sampled to 1.2M rows, through every stage
that touches the whole blend: parse, resolve, `crossgym plan` per backend, and each backend's row building (the
TRL Dataset, veRL's parquet files, OpenRLHF's prompt JSONL). Each stage runs in its own child process; its wall
time, CPU time (the child's own, so a busy machine does not skew it), rows per CPU second and peak RSS (getrusage
of that child) are printed side by side, at two sizes: peak RSS that stays flat as the rows grow tenfold means the
rows are streamed in bounded chunks, not held. A plan stage is the whole `crossgym plan` process (imports too).

    OMP_NUM_THREADS=1 python bench/blend_scale.py [--sizes 120000,1200000] [--stages ...] [--json]

Parts: 21 registered task sources with params (10 sources, several difficulties/modes, the multi-turn ones with a
part environment) and 16 generated JSONL task files (built from each remaining verifier's own examples), weights
and counts that sum to the size. veRL's and OpenRLHF's stages run under .nox/verl and .nox/openrlhf when those
exist (their plans then also run the frameworks' own config checks); TRL's under this Python. "over blend" is a
stage's peak RSS less that of the resolved blend it starts from (the same child, measured just before the stage).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("parse", "resolve", "plan-trl", "plan-verl", "plan-openrlhf", "rows-trl", "rows-verl", "rows-openrlhf")

#: (name, source, params, share, environment): weight w, or ("count", n)
SOURCE_PARTS: list[tuple[str, str, dict[str, Any], Any, dict[str, Any] | None]] = [
    ("arith-d1", "arithmetic", {"n": 5000, "seed": 0, "difficulty": 1}, 4, None),
    ("arith-d3", "arithmetic", {"n": 5000, "seed": 1, "difficulty": 3}, 4, None),
    ("arith-d5", "arithmetic", {"n": 5000, "seed": 2, "difficulty": 5}, 3, None),
    ("words-numeric", "word_problems", {"n": 4000, "seed": 0, "difficulty": 2}, 3, None),
    ("words-math", "word_problems", {"n": 4000, "seed": 1, "difficulty": 3, "verifier": "math"}, 3, None),
    ("ifeval-d1", "instructions", {"n": 3000, "seed": 0, "difficulty": 1}, 2, None),
    ("ifeval-d3", "instructions", {"n": 3000, "seed": 1, "difficulty": 3}, 2, None),
    ("json-add-1", "json_addition", {"split": "train", "digits": 1}, ("count", 6000), None),
    ("json-add-2", "json_addition", {"n": 2000, "split": "train", "digits": 2}, 1, None),
    ("extract-match", "json_extraction", {"n": 3000, "seed": 0, "difficulty": 2}, 3, None),
    ("extract-schema", "json_extraction", {"n": 3000, "seed": 1, "difficulty": 2, "verifier": "json_schema"}, 2,
     None),
    ("mc-d1", "multiple_choice", {"n": 3000, "seed": 0, "difficulty": 1}, 2, None),
    ("mc-d3", "multiple_choice", {"n": 3000, "seed": 1, "difficulty": 3}, 2, None),
    ("code-single", "python_functions", {"n": 500, "seed": 0, "difficulty": 1}, 3, None),
    ("code-env", "python_functions", {"n": 500, "seed": 1, "difficulty": 2, "env": "code"}, 3,
     {"name": "code", "max_turns": 2}),
    ("shell-single", "shell_tasks", {"n": 1000, "seed": 0, "difficulty": 1}, 2, None),
    ("shell-env", "shell_tasks", {"n": 1000, "seed": 1, "difficulty": 2, "env": "shell"}, 2,
     {"name": "shell", "max_turns": 4}),
    ("sql-single", "sql", {"n": 300, "seed": 0, "difficulty": 1}, 2, None),
    ("sql-env", "sql", {"n": 300, "seed": 1, "difficulty": 2, "env": "sql"}, 2, {"name": "sql", "max_turns": 3}),
    ("tools-call", "tool_choice", {"n": 2000, "seed": 0, "difficulty": 2, "mode": "call"}, 3, None),
    ("tools-env", "tool_choice", {"n": 2000, "seed": 1, "difficulty": 2, "mode": "env"}, 3,
     {"name": "tool_use", "max_turns": 4}),
]

#: (name, verifier, tasks in its file, share)
FILE_PARTS: list[tuple[str, str, int, Any]] = [
    ("f-exact-a", "exact_match", 20000, 3), ("f-exact-b", "exact_match", 8000, ("count", 20000)),
    ("f-regex-a", "regex", 10000, 2), ("f-regex-b", "regex", 5000, 1),
    ("f-tags-a", "format_tags", 10000, 2), ("f-tags-b", "format_tags", 5000, ("count", 15000)),
    ("f-length-a", "length", 5000, 1), ("f-length-b", "length", 5000, 1),
    ("f-composite-a", "composite", 5000, 2), ("f-composite-b", "composite", 3000, 1),
    ("f-json-valid-a", "json_valid", 8000, 2), ("f-json-valid-b", "json_valid", 4000, 1),
    ("f-code-output", "code_output", 3000, 2), ("f-similarity", "string_similarity", 8000, 2),
    ("f-xml", "xml_valid", 5000, 1), ("f-yaml", "yaml_valid", 5000, 1),
]


# ---------------------------------------------------------------------------------------------------- set-up
def write_task_file(path: Path, verifier: str, n: int) -> None:
    """``n`` tasks for ``verifier``: its own examples' tasks, each with its own id and prompt."""
    from crossgym.plugins.manager import registry

    examples = [e.task for e in registry("verifiers").load(verifier).examples()]
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            doc = examples[i % len(examples)].to_dict()
            doc["id"] = f"{verifier}-{i}"
            doc["prompt"] = [dict(m, content=f"{m.get('content') or ''} (#{i})") if m["role"] == "user" else m
                             for m in doc["prompt"]]
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")


def _share(share: Any) -> dict[str, Any]:
    return {"count": share[1]} if isinstance(share, tuple) else {"weight": share}


def write_config(d: Path, size: int) -> Path:
    """The run YAML: 37 parts, ``size`` rows, a grpo layout whose OpenRLHF dataset is ``size`` rows too."""
    import yaml

    parts: list[dict[str, Any]] = []
    for name, source, params, share, env in SOURCE_PARTS:
        part: dict[str, Any] = {"name": name, "source": source, "params": params, **_share(share)}
        if env:
            part["environment"] = env
        parts.append(part)
    for name, verifier, n, share in FILE_PARTS:
        path = d / f"{name}.jsonl"
        if not path.exists():
            write_task_file(path, verifier, n)
        parts.append({"name": name, "files": [str(path)], **_share(share)})
    parts[0]["verifiers"] = [{"name": "length", "params": {"max": 400}, "weight": 0.1}]
    prompts = 128  # 64 x 16 completions per step / 8 generations; max_steps * prompts = OpenRLHF's rows
    steps = -(-size // prompts)
    run = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "seed": 0, "output_dir": str(d / f"out-{size}"),
           "tasks": {"size": size, "shuffle": True, "parts": parts},
           "grpo": {"num_generations": 8, "per_device_train_batch_size": 64, "gradient_accumulation_steps": 16,
                    "max_completion_length": 256, "max_steps": steps},
           "on_error": 0.0, "engine": "hf"}
    path = d / f"blend-{size}.yaml"
    path.write_text(yaml.safe_dump(run, sort_keys=False), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------- children
def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(stage: str, config: Path) -> dict[str, Any]:
    """One stage in this process (the parent measures its wall time and peak RSS)."""
    from crossgym.train import load_config

    t0, c0 = time.perf_counter(), time.process_time()
    run = load_config(config)
    out: dict[str, Any] = {"parse_s": time.perf_counter() - t0}
    if stage == "parse":
        return {**out, "stage_s": out["parse_s"], "stage_cpu_s": time.process_time() - c0,
                "rows": len(run.tasks.parts)}  # type: ignore[union-attr]
    from crossgym.rollout.blend import resolve_blend

    t0, c0 = time.perf_counter(), time.process_time()
    blend = resolve_blend(run.tasks, seed=run.seed, run=run)  # type: ignore[arg-type]
    tasks = blend.tasks
    out["resolve_s"] = time.perf_counter() - t0
    out["distinct"] = len({id(t) for t in tasks})
    out["parts"] = len(blend.parts)
    out["verifiers"] = len({t.verifier.name for t in tasks})
    if stage == "resolve":
        return {**out, "stage_s": out["resolve_s"], "stage_cpu_s": time.process_time() - c0, "rows": len(tasks)}
    out["blend_peak_mib"] = _peak_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    if stage == "rows-trl":
        from crossgym.adapters.trl.rows import DATASET_DIR, task_dataset
        from crossgym.rollout.tasks import needs_episodes

        # what TRLBackend.build_trainer hands GRPOTrainer
        ds = task_dataset(tasks, episodes=needs_episodes(tasks, run), cache_dir=Path(run.output_dir) / DATASET_DIR)
        out["rows"] = len(ds)
        assert ds[len(ds) - 1]["task"] == tasks[-1].to_json()
    elif stage == "rows-verl":
        from crossgym.adapters.verl import files as verl_files

        rf = verl_files.build(run, tasks)  # what VerlBackend.train writes
        written = rf.write()
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(next(p for p in written if p.suffix == ".parquet")).metadata
        out["rows"], out["row_groups"] = meta.num_rows, meta.num_row_groups
    elif stage == "rows-openrlhf":
        from crossgym.adapters.openrlhf.backend import OpenRLHFBackend

        backend = OpenRLHFBackend()
        _, full = backend.prepare(run, tasks=tasks, stream=True)  # what OpenRLHFBackend.train writes
        work = backend.write(full)
        with (work / "prompts.jsonl").open("rb") as f:
            out["rows"] = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    out["stage_s"], out["stage_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    return out


def _python(stage: str) -> str:
    for b in ("verl", "openrlhf"):
        venv = ROOT / ".nox" / b / "bin" / "python"
        if stage.endswith(b) and venv.exists():
            return str(venv)
    return sys.executable


def measure(stage: str, config: Path, log: Path) -> dict[str, Any]:
    """``stage`` in a child: wall time, peak RSS from wait4's rusage of exactly that child, and what it printed."""
    py = _python(stage)
    if stage.startswith("plan-"):
        argv = [py, "-m", "crossgym.cli", "plan", str(config), "--backend", stage[5:], "--json"]
    else:
        argv = [py, __file__, "--child", stage, "--config", str(config)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "disabled",
           "TOKENIZERS_PARALLELISM": "false"}
    started = time.perf_counter()
    with log.with_suffix(".out").open("wb") as so, log.with_suffix(".err").open("wb") as se:
        proc = subprocess.Popen(argv, stdout=so, stderr=se, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    rc = os.waitstatus_to_exitcode(status)
    err = log.with_suffix(".err").read_text(errors="replace")
    if rc != 0:
        raise SystemExit(f"stage {stage} failed (rc {rc}):\n{err[-3000:]}")
    text = log.with_suffix(".out").read_text()
    if stage.startswith("plan-"):
        doc = json.loads(text)["plans"][0]
        res: dict[str, Any] = {"stage_s": wall, "stage_cpu_s": usage.ru_utime + usage.ru_stime,
                               "available": doc.get("available"),
                               "files_shown_kib": sum(len(v) for v in doc.get("files", {}).values()) / 1024}
    else:
        res = json.loads(text.strip().splitlines()[-1])
    res.update(wall_s=wall, peak_mib=usage.ru_maxrss / 1024, python=Path(py).parts[-3] if ".nox" in py else "venv")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="120000,1200000")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it (default: a temp dir)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--config", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.config)))
        return
    sizes = [int(x) for x in args.sizes.split(",")]
    stages = [s for s in args.stages.split(",") if s]
    results: dict[str, dict[int, dict[str, Any]]] = {s: {} for s in stages}
    with tempfile.TemporaryDirectory(prefix="crossgym-bench-blend-") as tmp:
        d = args.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            config = write_config(d, n)
            for s in stages:
                results[s][n] = measure(s, config, d / f"{s}-{n}")
                if not args.json:
                    r = results[s][n]
                    print(f"  {s} @ {n}: {r['stage_s']:.2f}s, peak {r['peak_mib']:.0f} MiB", file=sys.stderr)
    if args.json:
        print(json.dumps({"sizes": sizes, "stages": results}, indent=2))
        return
    first = next((results[s][sizes[0]] for s in stages if "distinct" in results[s][sizes[0]]), {})
    print(f"blend: {len(SOURCE_PARTS) + len(FILE_PARTS)} parts ({len(SOURCE_PARTS)} from sources, {len(FILE_PARTS)} "
          f"from JSONL files); {first.get('verifiers', '?')} verifiers; sizes {', '.join(str(n) for n in sizes)} rows; "
          f"{first.get('distinct', '?')} distinct tasks")
    head = f"{'stage':<15} {'python':<9}"
    for n in sizes:
        head += f" | {n:>8} rows: {'wall s':>7} {'cpu s':>7} {'rows/cpu s':>10} {'peak MiB':>9} {'over blend':>10}"
    print(head)
    for s in stages:
        line = f"{s:<15} {results[s][sizes[0]]['python']:<9}"
        for n in sizes:
            r = results[s][n]
            rows = r.get("rows", n) if not s.startswith("plan-") else n
            over = r["peak_mib"] - r["blend_peak_mib"] if "blend_peak_mib" in r else None
            rate = f"{rows / r['stage_cpu_s']:>10.0f}" if s.startswith("rows") or s == "resolve" else f"{'':>10}"
            line += (f" | {'':>13} {r['stage_s']:>7.2f} {r['stage_cpu_s']:>7.2f} {rate} {r['peak_mib']:>9.0f} "
                     f"{'' if over is None else f'{over:.0f}':>10}")
        print(line)
    if len(sizes) > 1:
        a, b = sizes[0], sizes[-1]
        print(f"peak RSS ratio {b}/{a} rows ({b / a:.0f}x the rows; flat = streamed in bounded chunks):")
        print("  " + ", ".join(f"{s} {results[s][b]['peak_mib'] / results[s][a]['peak_mib']:.2f}x" for s in stages))
    for s in stages:
        extra = {k: v for k, v in results[s][sizes[-1]].items() if k in ("row_groups", "files_shown_kib")}
        if extra:
            print(f"  {s} @ {sizes[-1]}: " + ", ".join(f"{k} {v:.0f}" if isinstance(v, float) else f"{k} {v}"
                                                      for k, v in extra.items()))


if __name__ == "__main__":
    main()
