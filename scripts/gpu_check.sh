#!/usr/bin/env bash
# GPU check for crossgym's TRL backend: a real GRPO run on one GPU, offline, in under 8 minutes.
#
#   scripts/gpu_check.sh --download   # on a machine with network: fill scripts/wheels/ (trl, datasets, pydantic...)
#   scripts/gpu_check.sh              # on the GPU machine (torch + transformers there, no network)
#   scripts/gpu_check.sh --cpu        # the same run with tiny settings on a CPU (a dry run up to the GPU boundary)
#
# The GPU machine needs python3 with torch and transformers; the few wheels it lacks travel in scripts/wheels/
# (override with WHEELS=DIR) and are installed with --no-index into a private folder put on PYTHONPATH. crossgym
# itself runs from this checkout's src/. Prints step times and rewards: single-turn GRPO (engine hf), a multi-turn
# tool_use run through crossgym's rollout_func, and vLLM colocate (single-turn and multi-turn) when vllm is
# installed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
WHEELS="${WHEELS:-$HERE/wheels}"
PY="${PYTHON:-python3}"
MODE=gpu
case "${1:-}" in
  --download) MODE=download ;;
  --cpu) MODE=cpu ;;
  "") ;;
  *) echo "usage: $0 [--download | --cpu]" >&2; exit 2 ;;
esac

# Wheels for the GPU image (Python 3.12, x86-64; torch, transformers, accelerate, peft, pyarrow, pandas there).
# datasets 4.8.x needs pyarrow>=21 only; fsspec/dill/multiprocess are pinned to what it accepts.
WHEEL_SPECS=(trl==1.16.0 datasets==4.8.5 "dill>=0.3.0,<0.4.1" "multiprocess<0.70.19" "fsspec>=2023.1.0,<=2026.2.0"
             pydantic==2.12.5 pydantic-core==2.41.5 annotated-types typing-inspection "typing-extensions>=4.14.1")

if [[ $MODE == download ]]; then
  mkdir -p "$WHEELS"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "${WHEEL_PYTHON:-3.12}" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$WHEELS" "${WHEEL_SPECS[@]}"
  ls -1 "$WHEELS"; du -sh "$WHEELS"
  exit 0
fi

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
       WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false TRL_EXPERIMENTAL_SILENCE=1 HF_HUB_DISABLE_TELEMETRY=1 \
       PYTHONUNBUFFERED=1
OUTDIR="${OUT:-/tmp/crossgym-gpu-check}"
mkdir -p "$OUTDIR"
SITE=""
if ! "$PY" -c "import trl, datasets, pydantic" >/dev/null 2>&1; then
  if [[ ! -d $WHEELS ]] || ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "gpu_check: trl/datasets/pydantic are missing and $WHEELS holds no wheels (run: $0 --download)" >&2
    exit 2
  fi
  SITE="$(mktemp -d /tmp/crossgym-site.XXXX)"
  t0=$(date +%s)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$WHEELS"/*.whl
  echo "installed $(ls "$WHEELS" | wc -l) wheels into $SITE in $(( $(date +%s) - t0 )) s"
fi
export PYTHONPATH="$ROOT/src${SITE:+:$SITE}${PYTHONPATH:+:$PYTHONPATH}"
[[ $MODE == gpu ]] && command -v nvidia-smi >/dev/null && nvidia-smi -L || true

exec "$PY" - "$MODE" "$OUTDIR" <<'PYCODE'
"""The check itself: crossgym's TRL backend on this machine's GPU (or CPU with --cpu)."""
import json, statistics, sys, time
from pathlib import Path

mode, out = sys.argv[1], Path(sys.argv[2])
import torch, transformers, trl

gpu = mode == "gpu"
if gpu and not torch.cuda.is_available():
    sys.exit("gpu_check: torch sees no CUDA device (use --cpu for the CPU dry run)")
if not gpu:
    torch.set_num_threads(1)
dev = torch.cuda.get_device_name(0) if gpu else "cpu"
print(f"device {dev}; python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}, trl {trl.__version__}", flush=True)

from crossgym.adapters.trl.backend import TRLBackend
from crossgym.environments import toolsets
from crossgym.environments.tools import tool_spec
from crossgym.inference.tiny import SPECIAL_TOKENS, build_tiny_model
from crossgym.protocol import Message, Task, VerifierSpec
from crossgym.config import parse_run_config
from crossgym.train import quiet_libraries

quiet_libraries()
t0 = time.perf_counter()
size = dict(hidden_size=512, layers=8) if gpu else dict(hidden_size=128, layers=2)
model = build_tiny_model(out / "model", **size)
print(f"model: Llama {size} built locally in {time.perf_counter() - t0:.1f} s", flush=True)
summary = {"device": dev, "torch": torch.__version__, "transformers": transformers.__version__,
           "trl": trl.__version__, "runs": {}}


def report(name, result, wall):
    m = result.metrics
    summary["runs"][name] = {"steps": result.steps, "wall_s": round(wall, 1), **{k: m.get(k) for k in (
        "mean_step_s", "median_step_s", "reward_first10", "reward_last10")}}
    print(f"== {name}: {result.steps} steps in {wall:.0f} s; step time median {m.get('median_step_s', 0):.3f} s, "
          f"mean {m.get('mean_step_s', 0):.3f} s; reward first 10 {m.get('reward_first10', float('nan')):.3f} -> "
          f"last 10 {m.get('reward_last10', float('nan')):.3f}", flush=True)


def printer(name):
    def progress(step, max_steps, logs):
        if "reward" in logs and (step % 5 == 0 or step == max_steps or step <= 2):
            print(f"  {name} step {step}/{max_steps}: reward {logs['reward']:.3f}, "
                  f"length {logs.get('completions/mean_length', 0):.1f}, step {logs.get('step_time', 0):.2f} s",
                  flush=True)
    return progress


# 1. single-turn: learn to answer in few characters (the library's `length` verifier; rewards rise fast)
short = VerifierSpec("length", {"max": 8, "unit": "chars", "mode": "linear", "slack": 3.0})
tasks = [Task(id=f"hi-{i}", prompt=[Message("user", f"Say hi to friend number {i}.")], answer=None,
              verifier=short) for i in range(512)]
steps = 40 if gpu else 3
run = parse_run_config({"model": str(model), "tasks": {"source": "unused"}, "output_dir": str(out / "single"),
                        "grpo": {"num_generations": 8, "per_device_train_batch_size": 64 if gpu else 8,
                                 "max_completion_length": 64 if gpu else 16, "max_steps": steps,
                                 "learning_rate": 5e-4, "temperature": 1.0}})
t = time.perf_counter()
report("single-turn hf", TRLBackend().train(run, tasks=tasks, progress=printer("single")), time.perf_counter() - t)

# 2. multi-turn tool_use through crossgym's rollout_func (generation biased towards <tool_call>, as in the tests)
spec = tool_spec(toolsets.add)
add = [Task(id=f"add-{i}", prompt=[Message("user", f"What is {i}+3? Call add, then reply with the number.")],
            answer=i + 3, verifier=VerifierSpec("numeric"), env="tool_use", tools=(spec,),
            metadata={"tool_refs": ["crossgym.environments.toolsets:add"]}) for i in range(64)]
bias = [[[SPECIAL_TOKENS.index("<tool_call>")], 5.0],
        [[SPECIAL_TOKENS.index("<tool_call>"), SPECIAL_TOKENS.index("<|im_end|>")], 30.0]]
run = parse_run_config({"model": str(model), "tasks": {"source": "unused"}, "output_dir": str(out / "multi"),
                        "environment": {"max_turns": 3},
                        "grpo": {"num_generations": 4, "per_device_train_batch_size": 16 if gpu else 4,
                                 "max_completion_length": 300, "max_steps": 6 if gpu else 1,
                                 "learning_rate": 1e-4},
                        "backend_args": {"generation_kwargs": {"sequence_bias": bias}}})
t = time.perf_counter()
res = TRLBackend().train(run, tasks=add, progress=printer("multi"))
report("multi-turn tool_use hf", res, time.perf_counter() - t)
turns = [json.loads(line)["turns"] for line in (out / "multi" / "rollouts.jsonl").read_text().splitlines()]
print(f"  episodes {len(turns)}, assistant turns per episode: max {max(turns)}, mean {statistics.fmean(turns):.2f}")

# 3. vLLM colocate, when installed
try:
    import vllm  # noqa: F401
except ImportError:
    print("== vllm: not installed here, skipped (engine: vllm needs `pip install vllm`)")
else:
    if gpu:
        run = parse_run_config({"model": str(model), "tasks": {"source": "unused"}, "output_dir": str(out / "vllm"),
                                "engine": "vllm", "backend_args": {"vllm_gpu_memory_utilization": 0.2},
                                "grpo": {"num_generations": 8, "per_device_train_batch_size": 64,
                                         "max_completion_length": 64, "max_steps": 20, "learning_rate": 5e-4}})
        t = time.perf_counter()
        report("single-turn vllm", TRLBackend().train(run, tasks=tasks, progress=printer("vllm")),
               time.perf_counter() - t)
        # multi-turn tool_use through crossgym's rollout_func and TRL's vLLM generation (vLLM's logit_bias
        # stands in for transformers' sequence_bias: it cannot bias a pair, so only <tool_call> is pushed)
        run = parse_run_config({"model": str(model), "tasks": {"source": "unused"},
                                "output_dir": str(out / "vllm-multi"), "engine": "vllm",
                                "environment": {"max_turns": 3},
                                "backend_args": {"vllm_gpu_memory_utilization": 0.2, "generation_kwargs": {
                                    "logit_bias": {SPECIAL_TOKENS.index("<tool_call>"): 5.0}}},
                                "grpo": {"num_generations": 4, "per_device_train_batch_size": 16,
                                         "max_completion_length": 300, "max_steps": 4, "learning_rate": 1e-4}})
        t = time.perf_counter()
        report("multi-turn tool_use vllm", TRLBackend().train(run, tasks=add, progress=printer("vllm-multi")),
               time.perf_counter() - t)
        turns = [json.loads(line)["turns"]
                 for line in (out / "vllm-multi" / "rollouts.jsonl").read_text().splitlines()]
        print(f"  episodes {len(turns)}, assistant turns per episode: max {max(turns)}, "
              f"mean {statistics.fmean(turns):.2f}")

(out / "gpu_check.json").write_text(json.dumps(summary, indent=2))
print(f"ok: {out / 'gpu_check.json'}")
PYCODE
