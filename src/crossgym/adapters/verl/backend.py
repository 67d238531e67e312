"""VerlBackend: one RunConfig -> a veRL 0.9.1 ``main_ppo`` run (GRPO estimator), launched as veRL's own CLI.

plan() computes the parquet rows, the reward module, the agent-loop/tool YAML and the exact command, writing
nothing. train() writes them under <output_dir>/verl, stops with one line where no GPU is visible, else runs
``python -m verl.trainer.main_ppo ...`` and streams its log (to output_dir/verl/train.log and this logger).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.verl import files as run_files
from crossgym.adapters.verl.overrides import detect_gpus
from crossgym.protocol.errors import BackendUnavailable, CrossgymError
from crossgym.protocol.interfaces import Capabilities, Plan, TrainResult
from crossgym.protocol.task import Task, VerifierSpec

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[verl]'"
SUPPORTED = "0.9."
#: Modules veRL's agent loop and trainer import that verl==0.9.1 does not install without extras.
AGENT_EXTRAS = {"cachetools": "cachetools", "uvicorn": "uvicorn", "fastapi": "fastapi",
                "transfer_queue": "TransferQueue"}
ProgressFn = Callable[[int, int, dict[str, Any]], None]
_STEP = re.compile(r"(?:^|\s)step:(\d+)\s+-\s")
_METRIC = re.compile(r"\s-\s([\w/@.-]+):(-?[\d.eE+-]+|nan|inf)")


class VerlBackend:
    """GRPO on veRL: Ray + FSDP training, vLLM or SGLang rollouts, multi-turn through crossgym's agent loop."""

    name = "verl"
    capabilities = Capabilities(multi_turn=True, lora=True, engines=("vllm", "sglang"), distributed=True,
                                needs_gpu=True, variants=("grpo", "dapo", "dr_grpo", "gspo"), token_ids=True,
                                logprobs=True)

    def check(self) -> None:
        """BackendUnavailable naming what is missing: veRL 0.9.x or the agent-loop packages (found, not imported)."""
        if importlib.util.find_spec("verl") is None:
            raise BackendUnavailable(self.name, "the verl package is not installed", INSTALL)
        version = importlib.metadata.version("verl")
        if not version.startswith(SUPPORTED):
            raise BackendUnavailable(self.name, f"crossgym's veRL backend supports verl {SUPPORTED}x, found "
                                     f"{version}", "pip install 'verl==0.9.1'")
        missing = [pkg for mod, pkg in AGENT_EXTRAS.items() if importlib.util.find_spec(mod) is None]
        if missing:
            raise BackendUnavailable(self.name, f"veRL's agent loop needs {', '.join(missing)}, not installed",
                                     "pip install " + " ".join(missing))

    # ------------------------------------------------------------ plan
    def build(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, gpus: int | None = None
              ) -> run_files.RunFiles:
        """The run's files and command (nothing written)."""
        from crossgym.rollout.tasks import load_run_tasks

        tasks = list(tasks) if tasks is not None else load_run_tasks(run.tasks)
        eval_tasks = load_run_tasks(run.eval_tasks, where="eval_tasks") if run.eval_tasks else None
        return run_files.build(run, tasks, eval_tasks, gpus=gpus)

    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None) -> Plan:
        """The Hydra overrides, the generated files and the exact ``python -m verl.trainer.main_ppo`` argv."""
        rf = self.build(run, tasks=tasks)
        notes = [*rf.notes, f"files go to {rf.root} when training starts (crossgym train --backend verl)"]
        return Plan(backend=self.name, native_config={"hydra_overrides": rf.settings},
                    argv=tuple(rf.argv()), files=rf.plan_files(), notes=tuple(notes))

    def reward_function(self, spec: VerifierSpec, *, on_error: float = 0.0) -> Any:
        """veRL's native reward object for one verifier: a compute_score applying ``spec`` to every row."""
        from crossgym.adapters.verl.reward import SpecReward

        return SpecReward(spec, on_error=on_error)

    # ------------------------------------------------------------ train
    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: threading.Event | None = None) -> TrainResult:
        """Write the files, then launch veRL and stream its log; without a GPU, stop before launch (one line)."""
        from crossgym.adapters.common import check_verifiers_build
        from crossgym.rollout.tasks import load_run_tasks

        self.check()
        tasks = list(tasks) if tasks is not None else load_run_tasks(run.tasks)
        check_verifiers_build(run, tasks)
        gpus = detect_gpus()
        rf = self.build(run, tasks=tasks, gpus=gpus or None)
        rf.write()
        script = rf.root / "run.sh"
        if gpus < 1:
            raise BackendUnavailable(self.name, f"no CUDA GPU is visible: veRL trains on GPUs only. The run is "
                                     f"ready in {rf.root}; launch {script} on a GPU machine", None)
        return self._launch(run, rf, progress=progress, stop=stop)

    def _launch(self, run: RunConfig, rf: run_files.RunFiles, *, progress: ProgressFn | None,
                stop: threading.Event | None) -> TrainResult:
        log_path = rf.root / "train.log"
        argv = rf.argv(sys.executable)
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "DO_NOT_TRACK": "1", "VLLM_NO_USAGE_STATS": "1",
               "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled"), "PYTHONUNBUFFERED": "1"}
        log.info("launching veRL: %s (log: %s)", " ".join(argv[:3]), log_path)
        proc = subprocess.Popen(argv, cwd=str(rf.root), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
        watcher = _watch_stop(proc, stop) if stop is not None else None
        steps, last, tail = 0, {}, []
        max_steps = int(rf.settings.get("trainer.total_training_steps") or run.grpo.max_steps)
        try:
            with log_path.open("w", encoding="utf-8") as fh:
                assert proc.stdout is not None
                for line in proc.stdout:
                    fh.write(line)
                    fh.flush()
                    log.info("verl| %s", line.rstrip())
                    tail = (tail + [line.rstrip()])[-20:]
                    m = _STEP.search(line)
                    if m:
                        steps = int(m.group(1))
                        last = parse_metrics(line)
                        if progress is not None:
                            reward = last.get("critic/score/mean", last.get("critic/rewards/mean"))
                            progress(steps, max_steps, {} if reward is None else {"reward": reward, **last})
            code = proc.wait()
        except KeyboardInterrupt:
            _signal(proc, signal.SIGINT)
            code = proc.wait()
        finally:
            if watcher is not None:
                watcher.set()
        interrupted = bool(stop is not None and stop.is_set())
        if code != 0 and not interrupted:
            reason = next((t for t in reversed(tail) if t.strip()), "no output")
            raise CrossgymError(f"veRL exited with code {code}: {reason[:300]} (full log: {log_path})")
        ckpt = latest_checkpoint(Path(str(rf.settings["trainer.default_local_dir"])))
        final = merge_checkpoint(ckpt, Path(run.output_dir) / "final") if ckpt is not None else None
        metrics = {"interrupted": interrupted, "max_steps": max_steps, "log_file": str(log_path),
                   "last": last, "command": str(rf.root / "run.sh"), "verl_checkpoint": str(ckpt) if ckpt else None}
        best = final or ckpt
        return TrainResult(output_dir=str(Path(run.output_dir)), steps=steps,
                           checkpoint=None if best is None else str(best), metrics=metrics)


def parse_metrics(line: str) -> dict[str, float]:
    """Numbers from one veRL console line (``step:N - key:value - ...``)."""
    out = {}
    for key, value in _METRIC.findall(line):
        try:
            out[key] = float(value)
        except ValueError:
            continue
    return out


def latest_checkpoint(root: Path) -> Path | None:
    """The highest global_step_N folder veRL saved under ``root`` (its actor/ subfolder when present)."""
    if not root.is_dir():
        return None
    steps = [(int(p.name.rsplit("_", 1)[1]), p) for p in root.glob("global_step_*") if p.name.rsplit("_", 1)[1]
             .isdigit()]
    if not steps:
        return None
    best = max(steps)[1]
    return best / "actor" if (best / "actor").is_dir() else best


def merge_checkpoint(actor_dir: Path, target: Path) -> Path | None:
    """veRL's own model merger: the FSDP-sharded actor checkpoint -> a Hugging Face model folder (None on failure,
    which leaves veRL's checkpoint as the result)."""
    argv = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", str(actor_dir),
            "--target_dir", str(target)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not (target / "config.json").exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        log.warning("veRL's model merger failed (%s): the checkpoint stays at %s", last[0][:200], actor_dir)
        return None
    return target


def _signal(proc: subprocess.Popen[str], sig: int) -> None:
    """Signal the veRL process group we started (start_new_session=True made it ours alone)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _watch_stop(proc: subprocess.Popen[str], stop: threading.Event) -> threading.Event:
    """A thread that sends SIGINT to veRL when ``stop`` is set (the CLI's first Ctrl-C); returns its off switch."""
    done = threading.Event()

    def watch() -> None:
        while not done.is_set() and proc.poll() is None:
            if stop.wait(0.5):
                _signal(proc, signal.SIGINT)
                return

    threading.Thread(target=watch, name="verl-stop", daemon=True).start()
    return done
