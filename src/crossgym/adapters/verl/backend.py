"""VerlBackend: one RunConfig -> a veRL 0.9.1 ``main_ppo`` run (GRPO estimator), launched as veRL's own CLI.

plan() computes the parquet rows, the reward module, the agent-loop/tool YAML and the exact command, writing
nothing. train() writes them under <output_dir>/verl, stops with one line where no GPU is visible, else runs
``python -m verl.trainer.main_ppo ...`` and streams its log (to output_dir/verl/train.log and this logger).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit import variants as kit_variants
from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.adapters.kit.launch import STOP_NOTE, child_env, launch
from crossgym.adapters.verl import files as run_files
from crossgym.protocol.errors import BackendUnavailable, ConfigError, CrossgymError
from crossgym.protocol.interfaces import (
    BackendBase,
    BackendCapabilities,
    OnError,
    Plan,
    ProgressFn,
    ResumePoint,
    StopSignal,
    TrainResult,
)
from crossgym.protocol.task import Task, VerifierSpec

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[verl]'"
SUPPORTED = "0.9."
#: Modules veRL's agent loop and trainer import that verl==0.9.1 does not install without extras.
AGENT_EXTRAS = {"cachetools": "cachetools", "uvicorn": "uvicorn", "fastapi": "fastapi",
                "transfer_queue": "TransferQueue"}
_STEP = re.compile(r"(?:^|\s)step:(\d+)\s+-\s")
_METRIC = re.compile(r"\s-\s([\w/@.-]+):(-?[\d.eE+-]+|nan|inf)")


class VerlBackend(BackendBase):
    """GRPO on veRL: Ray + FSDP training, vLLM or SGLang rollouts, multi-turn through crossgym's agent loop."""

    name = "verl"
    capabilities = BackendCapabilities(multi_turn=True, lora=True, engines=("vllm", "sglang"), distributed=True,
                                       needs_gpu=True, variants=kit_variants.SUPPORTED["verl"], stop="process",
                                       resume=True)
    compat_driver = "crossgym.adapters.verl.parity"

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
        from crossgym.rollout.tasks import run_eval_tasks, run_tasks

        tasks = list(tasks) if tasks is not None else run_tasks(run)
        eval_tasks = run_eval_tasks(run)
        return run_files.build(run, tasks, eval_tasks, gpus=gpus)

    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None) -> Plan:
        """The Hydra overrides, the generated files and the exact ``python -m verl.trainer.main_ppo`` argv."""
        rf = self.build(run, tasks=tasks)
        notes = [*rf.notes, f"files go to {rf.root} when training starts (crossgym train --backend verl)", STOP_NOTE]
        return Plan(backend=self.name, native_config={"hydra_overrides": rf.settings},
                    argv=tuple(rf.argv()), files=rf.plan_files(), notes=tuple(notes))

    def resume_point(self, run: RunConfig) -> ResumePoint | None:
        """The global_step_N folder under <output_dir>/checkpoints that veRL continues from (RunConfig.resume ->
        trainer.resume_mode), or None; a ConfigError when the config changed in a way the checkpoint cannot follow."""
        from crossgym.adapters.kit.resume import resume_point

        return resume_point(run, latest=lambda out: latest_complete(out / "checkpoints"), at=checkpoint_step,
                            where=f"{run.output_dir}/checkpoints/global_step_N", folders=("checkpoints",))

    def reward_function(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> Any:
        """veRL's native reward object for one verifier: a compute_score applying ``spec`` to every row."""
        from crossgym.adapters.verl.reward import SpecReward

        if on_error == "none":
            raise ConfigError("veRL has no masked reward: on_error 'none' cannot run there", where="on_error",
                              fix="set a number (0.0 is the default)")
        return SpecReward(spec, on_error=on_error)

    # ------------------------------------------------------------ train
    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None) -> TrainResult:
        """Write the files, then launch veRL and stream its log; without a GPU, stop before launch (one line)."""
        from crossgym.rollout.tasks import run_tasks
        from crossgym.scoring import RewardRule
        from crossgym.scoring.rule import check_builds

        self.check()
        tasks = list(tasks) if tasks is not None else run_tasks(run)
        check_builds(RewardRule.from_run(run), tasks)
        gpus = visible_gpus()
        rf = self.build(run, tasks=tasks, gpus=gpus or None)
        point = self.resume_point(run)
        rf.write()
        script = rf.root / "run.sh"
        if gpus < 1:
            raise BackendUnavailable(self.name, f"no CUDA GPU is visible: veRL trains on GPUs only. The run is "
                                     f"ready in {rf.root}; launch {script} on a GPU machine", None)
        from crossgym.adapters.kit.resume import begin_segment, describe

        if point is not None:
            log.info(describe(point, run.grpo.max_steps))
        begin_segment(run.output_dir, run, point, backend=self.name)
        return self._launch(run, rf, progress=progress, stop=stop)

    def _launch(self, run: RunConfig, rf: run_files.RunFiles, *, progress: ProgressFn | None,
                stop: StopSignal | None) -> TrainResult:
        log_path = rf.root / "train.log"
        argv = rf.argv(sys.executable)
        max_steps = int(rf.settings.get("trainer.total_training_steps") or run.grpo.max_steps)
        seen: dict[str, Any] = {"steps": 0, "last": {}}

        def on_line(line: str) -> None:
            log.info("verl| %s", line)
            m = _STEP.search(line)
            if m:
                seen["steps"], seen["last"] = int(m.group(1)), parse_metrics(line)
                if progress is not None:
                    reward = seen["last"].get("critic/score/mean", seen["last"].get("critic/rewards/mean"))
                    progress(seen["steps"], max_steps, {} if reward is None else {"reward": reward, **seen["last"]})

        log.info("launching veRL: %s (log: %s)", " ".join(argv[:3]), log_path)
        done = launch(argv, cwd=rf.root, log_path=log_path, env=child_env(), on_line=on_line, stop=stop)
        if done.returncode != 0 and not done.stopped:
            raise CrossgymError(f"veRL exited with code {done.returncode}: {done.last_line()[:300]} "
                                f"(full log: {log_path})")
        ckpt = latest_checkpoint(Path(str(rf.settings["trainer.default_local_dir"])))
        final = merge_checkpoint(ckpt, Path(run.output_dir) / "final") if ckpt is not None else None
        metrics = {"interrupted": done.stopped, "max_steps": max_steps, "log_file": str(log_path),
                   "last": seen["last"], "command": str(rf.root / "run.sh"), "stop_signals": done.signals,
                   "verl_checkpoint": str(ckpt) if ckpt else None}
        best = final or ckpt
        return TrainResult(output_dir=str(Path(run.output_dir)), steps=int(seen["steps"]),
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


def checkpoint_step(folder: Path) -> int | None:
    """The step of a complete veRL checkpoint folder (global_step_N with its actor/ state), else None."""
    name = folder.name
    if not name.startswith("global_step_") or not name[len("global_step_"):].isdigit():
        return None
    return int(name[len("global_step_"):]) if (folder / "actor").is_dir() else None


def latest_complete(root: Path) -> tuple[int, Path] | None:
    """The checkpoint veRL's resume_mode=auto loads: the one latest_checkpointed_iteration.txt names (veRL writes
    it after a save completes), when that folder is complete."""
    try:
        step = int((root / "latest_checkpointed_iteration.txt").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    folder = root / f"global_step_{step}"
    return (step, folder) if checkpoint_step(folder) == step else None


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
