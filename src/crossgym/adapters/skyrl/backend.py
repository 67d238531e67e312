"""SkyRLBackend: one RunConfig -> SkyRL 0.3.0 (skyrl-train, FSDP + vLLM) with the GRPO estimator.

plan() computes SkyRL's overrides and the generated files (prompt dataset, entry point, launch script) and writes
nothing. train() writes them under ``<output_dir>/skyrl/`` and launches SkyRL; on a machine without GPUs (or without
vLLM, flash-attn, Python 3.12) it stops before the launch with one line saying what is missing and where the files
are. Rewards and episodes go through crossgym's skyrl_gym environment (env.py), single- and multi-turn alike.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit.files import describe_lines, launch_script, write_files
from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.adapters.kit.launch import STOP_NOTE, Launched, child_env, launch
from crossgym.adapters.skyrl import config_map, files
from crossgym.adapters.skyrl.env import EnvConfig, Session
from crossgym.protocol.errors import BackendUnavailable, ConfigError, CrossgymError
from crossgym.protocol.interfaces import (
    BackendBase,
    BackendCapabilities,
    OnError,
    Plan,
    ProgressFn,
    StopSignal,
    TrainResult,
)
from crossgym.protocol.task import Task, VerifierSpec
from crossgym.rollout.tasks import needs_episodes
from crossgym.scoring import RewardRule

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

INSTALL = "pip install 'skyrl[fsdp]==0.3.0' on a CUDA machine with Python >= 3.12 (see docs/backends/skyrl.md)"
#: What a launch needs: (module, why, install).
REQUIRED = (
    ("skyrl", "SkyRL itself", INSTALL),
    ("skyrl_gym", "SkyRL's environment registry", "pip install skyrl-gym==0.4.0"),
    ("ray", "SkyRL's scheduler", "pip install ray==2.56.0"),
    ("vllm", "SkyRL's generator", "pip install vllm==0.23.0"),
    ("flash_attn", "SkyRL's packed micro-batches (trainer.flash_attn)", "pip install flash-attn==2.8.3"),
)
SUBDIR = "skyrl"
ENTRY = "main_crossgym.py"
_STEP = re.compile(r"\bStep (\d+):")
_REWARD = re.compile(r"reward/avg_raw_reward'?: '?([-+0-9.eE]+|nan)")


class SkyRLBackend(BackendBase):
    """GRPO on SkyRL 0.3.0 (Ray, FSDP, vLLM): GPU clusters; single- and multi-turn through skyrl_gym."""

    name = "skyrl"
    capabilities = BackendCapabilities(multi_turn=True, lora=True, engines=("vllm",), distributed=True,
                                       needs_gpu=True, variants=tuple(config_map.VARIANTS), stop="process")
    compat_driver = "crossgym.adapters.skyrl.parity"

    # ------------------------------------------------------------ check
    def missing(self) -> list[str]:
        """Everything a launch here would lack, one phrase each with its fix (found without importing anything)."""
        out = [f"{m} ({why}; {fix})" for m, why, fix in REQUIRED if importlib.util.find_spec(m) is None]
        if importlib.util.find_spec("skyrl") is not None:
            version = importlib.metadata.version("skyrl")
            if not version.startswith("0.3."):
                out.append(f"skyrl 0.3.x (found {version}; pip install --no-deps skyrl==0.3.0)")
        if sys.version_info < (3, 12):
            out.append("Python >= 3.12 (SkyRL 0.3.0's Ray workers import skyrl.backends, which pydantic refuses on "
                       f"{sys.version_info.major}.{sys.version_info.minor})")
        if visible_gpus() == 0:
            out.append("an NVIDIA GPU (none visible)")
        return out

    def check(self) -> None:
        """BackendUnavailable when SkyRL 0.3 itself is missing, naming everything else a launch would lack too.

        With SkyRL installed, plan and train work (train writes the run files); the launch also needs vLLM,
        flash-attn, Python 3.12 and GPUs, which ``missing()`` lists and train() checks before launching."""
        missing = self.missing()
        if any(m.startswith(("skyrl ", "skyrl_gym ")) for m in missing):
            raise BackendUnavailable(self.name, "missing " + "; ".join(missing), INSTALL)

    # ------------------------------------------------------------ plan
    def env_config(self, run: RunConfig) -> EnvConfig:
        """What the environment bakes in: the run's reward rule (numbers only), environment and seed."""
        env_fields = run.environment.model_fields_set
        out = Path(run.output_dir).resolve()
        return EnvConfig(rule=RewardRule.from_run(run).numeric("SkyRL"),
                         env=run.environment.name if "name" in env_fields else None,
                         env_params=dict(run.environment.params),
                         max_turns=run.environment.max_turns if "max_turns" in env_fields else None,
                         seed=run.seed, rollouts=str(out / "rollouts.jsonl"), model=run.model)

    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None) -> Plan:
        """Overrides, argv and the generated files (absolute paths; the prompt dataset described, not inlined),
        checked by SkyRL's own config parser when it is installed. Writes nothing."""
        return self.prepare(run, tasks=tasks)[0]

    def prepare(self, run: RunConfig, *, tasks: Sequence[Task] | None = None) -> tuple[Plan, dict[str, str]]:
        """The Plan and every file's full text by absolute path (what ``train`` writes). Writes nothing."""
        from crossgym.rollout.tasks import load_run_tasks

        notes: list[str] = []
        config_map.check_run(run)
        if tasks is None:
            try:
                tasks = load_run_tasks(run.tasks)
            except CrossgymError as exc:
                notes.append(f"tasks not loaded ({exc}): the prompt dataset is empty in this plan")
                tasks = []
        multi = needs_episodes(tasks, run)
        work = Path(run.output_dir).resolve() / SUBDIR
        paths = {"prompts": str(work / "prompts.jsonl"), "entry": str(work / ENTRY), "launch": str(work / "launch.sh")}
        overrides = config_map.overrides(run, files=paths, multi_turn=multi, tasks=len(tasks))
        tools = {json_tools(t) for t in tasks if t.tools}
        if len(tools) == 1 and "generator.chat_template_kwargs" not in run.backend_args:
            import json

            overrides["generator.chat_template_kwargs"] = {"tools": json.loads(next(iter(tools)))}
            notes.append("the tasks' tools are rendered by the chat template (generator.chat_template_kwargs.tools)")
        elif len(tools) > 1:
            notes.append("tasks have different tool lists: SkyRL renders one list per run "
                         "(generator.chat_template_kwargs), so none is shown to the model; set it in backend_args")
        lay = config_map.layout(run, tasks=len(tasks))
        argv = ["python", paths["entry"], *config_map.argv_from_overrides(overrides)]
        env_cfg = self.env_config(run)
        full = {paths["prompts"]: files.dataset_jsonl(tasks, rows=lay["rows"], seed=run.seed),
                paths["entry"]: files.entry_file(env_cfg.to_dict()),
                paths["launch"]: launch_script(argv, comment=[f"SkyRL {config_map.SKYRL_VERSION} run generated by "
                                                              "crossgym (needs GPUs, vLLM and Python >= 3.12)"],
                                               workdir=str(work), python_var=True, pass_args=True)}
        notes.append(STOP_NOTE)
        notes.append(f"{lay['rows']} prompt rows ({lay['tasks']} tasks cycled) = {run.grpo.max_steps} steps x "
                     f"{lay['prompts']} prompts x {run.grpo.num_generations} samples; "
                     f"{lay['nodes']} node(s) x {lay['gpus']} GPU(s)")
        notes.append("multi-turn/tool tasks: crossgym's episode driver inside skyrl_gym's step contract (env "
                     "'crossgym')" if multi else "single-turn: the skyrl_gym env 'crossgym' scores each response "
                     "with crossgym's scoring core")
        if run.engine == "hf":
            notes.append("SkyRL generates with vLLM only: engine 'hf' runs as vllm")
        notes.extend(self._native_check(argv))
        lacking = self.missing()
        if lacking:
            notes.append("a launch on this machine would lack: " + "; ".join(lacking))
        native = {"overrides": overrides, "layout": lay, "multi_turn": multi, "env_config": env_cfg.to_dict()}
        shown = dict(full)
        shown[paths["prompts"]] = describe_lines(full[paths["prompts"]])
        plan = Plan(backend=self.name, native_config=native, argv=tuple(argv), files=shown, notes=tuple(notes))
        return plan, full

    @staticmethod
    def _native_check(argv: list[str]) -> list[str]:
        if importlib.util.find_spec("skyrl") is None:
            return ["skyrl is not installed here: the overrides were not checked by its parser"]
        from crossgym.adapters.skyrl.native import parse_overrides

        try:
            parse_overrides(argv[2:])
        except Exception as exc:
            said = str(exc).splitlines()[0] if str(exc) else ""
            raise ConfigError(f"SkyRL's own config check rejects the generated config: {type(exc).__name__}: {said}",
                              where="backend_args", fix="fix or remove the SkyRL override it names") from exc
        return ["overrides accepted by SkyRL's own SkyRLTrainConfig parser and validate_cfg"]

    def reward_function(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> Any:
        """SkyRL's native reward object for one verifier: a skyrl_gym-style environment factory
        ``make(extras) -> env`` whose ``init``/``step`` score every row with ``spec`` (``env.py``'s Session; the
        skyrl_gym class itself is ``gym_env.CrossgymEnv``)."""
        rule = RewardRule(on_error=on_error, override=spec).numeric("SkyRL")
        cfg = EnvConfig(rule=rule)
        return lambda extras: Session(cfg, extras)

    # ------------------------------------------------------------ train
    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None) -> TrainResult:
        """Write the files, then launch SkyRL and stream its log; stops before the launch when this machine
        cannot run it. ``stop`` ends the launched process group (kit.launch: SIGINT, then SIGTERM)."""
        from crossgym.rollout.tasks import load_run_tasks
        from crossgym.scoring.rule import check_builds

        tasks = list(tasks) if tasks is not None else load_run_tasks(run.tasks)
        check_builds(RewardRule.from_run(run), tasks)
        plan, full = self.prepare(run, tasks=tasks)
        work = write_files(full)[0].parent
        missing = self.missing()
        if missing:
            raise BackendUnavailable(self.name, f"cannot launch on this machine (missing {'; '.join(missing)}); "
                                     f"the run files are in {work}: run launch.sh there on a GPU node", None)
        return self.launch(run, [sys.executable, *plan.argv[1:]], work, progress=progress, stop=stop)

    def launch(self, run: RunConfig, argv: Sequence[str], work: Path, *, progress: ProgressFn | None = None,
               stop: StopSignal | None = None) -> TrainResult:
        """Run ``argv`` (SkyRL's command) in ``work`` through the kit, reporting its steps and rewards."""
        log_path = work / "train.log"
        seen: dict[str, Any] = {"steps": 0, "reward": None}

        def on_line(line: str) -> None:
            log.debug("skyrl: %s", line)
            r = _REWARD.search(line)
            if r:
                seen["reward"] = float(r.group(1))
            m = _STEP.search(line)
            if m:
                seen["steps"] = int(m.group(1))
                if progress is not None:
                    progress(seen["steps"], run.grpo.max_steps,
                             {} if seen["reward"] is None else {"reward": seen["reward"]})

        log.info("launching SkyRL: %s (log: %s)", " ".join(argv[:2]), log_path)
        done: Launched = launch(argv, cwd=work, log_path=log_path, env=child_env(TOKENIZERS_PARALLELISM="false"),
                                on_line=on_line, stop=stop)
        steps = seen["steps"]
        if done.returncode != 0 and not done.stopped:
            raise CrossgymError(f"SkyRL exited with status {done.returncode} after {steps} steps: "
                                f"{done.last_line()[:300]} (full log: {log_path})")
        out = Path(run.output_dir).resolve()
        export = out / "export"
        return TrainResult(output_dir=str(out), steps=steps, checkpoint=str(export) if export.exists() else None,
                           metrics={"interrupted": done.stopped, "stop_signals": done.signals, "log": str(log_path),
                                    "max_steps": run.grpo.max_steps, "rollouts": str(out / "rollouts.jsonl")})


def json_tools(task: Task) -> str:
    """A task's tools as OpenAI function JSON (a hashable key: equal strings, equal tool lists)."""
    import json

    from crossgym.rollout.driver import render_tools

    return json.dumps(render_tools(task.tools), sort_keys=True)
