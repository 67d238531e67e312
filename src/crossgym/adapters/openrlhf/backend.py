"""OpenRLHFBackend: one RunConfig -> OpenRLHF 0.11.2 `train_ppo_ray` with group-normalised (GRPO) advantages.

plan() computes the flags and the generated files (prompt dataset, reward or agent file, launch script) and writes
nothing. train() writes them under ``<output_dir>/openrlhf/`` and launches OpenRLHF; on a machine without GPUs or
without vLLM/DeepSpeed it stops before the launch with one line saying what is missing and where the files are.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from crossgym.adapters.kit import variants as kit_variants
from crossgym.adapters.kit.files import LineFile, describe_lines, write_files
from crossgym.adapters.kit.gpu import visible_gpus
from crossgym.adapters.kit.launch import STOP_NOTE, Launched, child_env, launch
from crossgym.adapters.openrlhf import config_map, files
from crossgym.adapters.openrlhf.agent import AgentConfig
from crossgym.adapters.openrlhf.convert import dataset_file
from crossgym.adapters.openrlhf.scoring import QueryScorer, ScoreConfig, special_tail_tokens
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
from crossgym.rollout.tasks import needs_episodes, run_tasks
from crossgym.scoring import RewardRule

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

INSTALL = "pip install 'openrlhf[vllm]==0.11.2' on a CUDA machine (see docs/backends/openrlhf.md)"
#: What a launch needs: (module, why, install).
REQUIRED = (
    ("openrlhf", "OpenRLHF itself", INSTALL),
    ("ray", "OpenRLHF's scheduler", "pip install 'ray[default]==2.55.0'"),
    ("deepspeed", "the actor's trainer", "DS_BUILD_OPS=0 pip install --no-build-isolation deepspeed==0.19.6"),
    ("vllm", "OpenRLHF's only generator", "pip install vllm==0.29.0"),
    ("flash_attn", "imported by openrlhf.models", "pip install --no-build-isolation flash-attn==2.8.3"),
    ("transformers", "models and tokenizers", "pip install transformers==5.15.0"),
)
SUBDIR = "openrlhf"
_STEP = re.compile(r"Global step (\d+)")
_REWARD = re.compile(r"'rollout/reward_mean': ([-+0-9.eE]+)")


class OpenRLHFBackend(BackendBase):
    """GRPO on OpenRLHF 0.11.2 (Ray, DeepSpeed, vLLM): GPU clusters; single- and multi-turn."""

    name = "openrlhf"
    capabilities = BackendCapabilities(multi_turn=True, lora=True, engines=("vllm",), distributed=True,
                                       needs_gpu=True, variants=kit_variants.SUPPORTED["openrlhf"], stop="process",
                                       resume=True)
    compat_driver = "crossgym.adapters.openrlhf.parity"

    # ------------------------------------------------------------ check
    def missing(self) -> list[str]:
        """Everything a launch here would lack, one phrase each with its fix (found without importing anything)."""
        out = []
        for module, why, install in REQUIRED:
            if importlib.util.find_spec(module) is None:
                out.append(f"{module} ({why}; {install})")
        if importlib.util.find_spec("openrlhf") is not None:
            version = importlib.metadata.version("openrlhf")
            if not version.startswith("0.11."):
                out.append(f"openrlhf 0.11.x (found {version}; pip install --no-deps openrlhf==0.11.2)")
        if visible_gpus() == 0:
            out.append("an NVIDIA GPU (none visible)")
        return out

    def check(self) -> None:
        """BackendUnavailable when OpenRLHF 0.11 itself is missing, naming everything else a launch would lack too.

        With OpenRLHF installed, plan and train work (train writes the run files); the launch itself also needs
        vLLM, flash-attn, DeepSpeed and GPUs, which ``missing()`` lists and train() checks before launching.
        """
        missing = self.missing()
        if any(m.startswith("openrlhf") for m in missing):
            raise BackendUnavailable(self.name, "missing " + "; ".join(missing), None)

    # ------------------------------------------------------------ plan
    def _configs(self, run: RunConfig) -> tuple[ScoreConfig, AgentConfig]:
        out = Path(run.output_dir).resolve()
        point = self.resume_point(run)
        score = ScoreConfig(rule=RewardRule.from_run(run).numeric("OpenRLHF"),
                            strip_tokens=special_tail_tokens(run.model), model=run.model,
                            rollouts=str(out / "rollouts.jsonl"), segment=point.segment if point else 1)
        env_fields = run.environment.model_fields_set
        agent = AgentConfig(score=score, env=run.environment.name if "name" in env_fields else None,
                            env_params=dict(run.environment.params),
                            max_turns=run.environment.max_turns if "max_turns" in env_fields else None,
                            seed=run.seed)
        return score, agent

    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None) -> Plan:
        """Flags, argv and the generated files (absolute paths; the prompt dataset described, not inlined), checked
        by OpenRLHF's own parser when it is installed. Writes nothing."""
        return self.prepare(run, tasks=tasks, stream=True)[0]

    def prepare(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, stream: bool = False
                ) -> tuple[Plan, dict[str, str | LineFile]]:
        """The Plan and every file's full text by absolute path (what ``write`` puts on disk). Writes nothing.
        ``stream``: the prompt dataset is a LineFile, built line by line as it is written (a run of a million rows
        never holds it whole); else its text."""

        notes: list[str] = []
        config_map.check_run(run)
        if tasks is None:
            try:
                tasks = run_tasks(run)
            except CrossgymError as exc:
                notes.append(f"tasks not loaded ({exc}): the prompt dataset is empty in this plan")
                tasks = []
        agent = needs_episodes(tasks, run)
        work = Path(run.output_dir).resolve() / SUBDIR
        paths = {"prompts": str(work / "prompts.jsonl"), "reward": str(work / "reward.py"),
                 "agent": str(work / "agent.py"), "launch": str(work / "launch.sh")}
        flags = config_map.flags(run, files=paths, agent=agent, tasks=len(tasks))
        lay = config_map.layout(run, tasks=len(tasks))
        argv = [*config_map.ENTRY, *config_map.argv_from_flags(flags)]
        score, agent_cfg = self._configs(run)
        prompts = dataset_file(tasks, rows=lay["rows"], seed=run.seed)
        full: dict[str, str | LineFile] = {paths["prompts"]: prompts if stream else prompts.text()}
        if agent:
            full[paths["agent"]] = files.agent_file(agent_cfg.to_dict())
        else:
            full[paths["reward"]] = files.reward_file(score.to_dict())
        full[paths["launch"]] = files.launch_script(argv, workdir=str(work))
        notes.append(STOP_NOTE)
        notes.append(f"{lay['rows']} prompt rows ({lay['tasks']} tasks cycled) = {run.grpo.max_steps} steps x "
                     f"{lay['prompts']} prompts x {run.grpo.num_generations} samples; "
                     f"{lay['nodes']} node(s) x {lay['gpus']} GPU(s)")
        notes.append("multi-turn/tool tasks: OpenRLHF's MultiTurnAgentExecutor runs crossgym episodes (agent.py)"
                      if agent else "single-turn: OpenRLHF's reward_func scores with crossgym verifiers (reward.py)")
        if run.engine == "hf":
            notes.append("OpenRLHF generates with vLLM only: engine 'hf' runs as vllm")
        if score.strip_tokens is None:
            notes.append("model is not a local directory: end-of-sequence tokens are read from its tokenizer at "
                         "run time")
        notes.extend(self._native_check(argv))
        lacking = self.missing()
        if lacking:
            notes.append("a launch on this machine would lack: " + "; ".join(lacking))
        native = {"flags": flags, "layout": lay, "agent": agent,
                  "reward_config": (agent_cfg.to_dict() if agent else score.to_dict())}
        shown = {path: describe_lines(text) if path == paths["prompts"] else str(text) for path, text in full.items()}
        plan = Plan(backend=self.name, native_config=native, argv=tuple(argv), files=shown, notes=tuple(notes))
        return plan, full

    @staticmethod
    def _native_check(argv: list[str]) -> list[str]:
        if importlib.util.find_spec("openrlhf") is None:
            return ["openrlhf is not installed here: the flags were not checked by its parser"]
        from crossgym.adapters.openrlhf.native_cli import parse_native

        native = parse_native(argv[len(config_map.ENTRY):])
        said = [ln.strip() for ln in native.printed.splitlines() if ln.strip()]
        return ["flags accepted by OpenRLHF's own train_ppo_ray parser and checks"] + [
            f"OpenRLHF says: {ln}" for ln in said]

    def reward_function(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> QueryScorer:
        """OpenRLHF's native reward object for one verifier: a ``reward_func(queries, prompts, labels)`` applying
        ``spec`` to every row. Queries are taken as prompt + response; the reward file ``train`` writes also cuts
        the policy tokenizer's end-of-sequence tokens (it knows the model)."""
        if on_error == "none":
            raise ConfigError("OpenRLHF has no masked reward: on_error 'none' cannot run there", where="on_error",
                              fix="set a number (0.0 is the default)")
        return QueryScorer(ScoreConfig(rule=RewardRule(on_error=float(on_error), override=spec), strip_tokens=()))

    # ------------------------------------------------------------ train
    def resume_point(self, run: RunConfig) -> ResumePoint | None:
        """The _actor/global_stepN under <output_dir>/checkpoints that OpenRLHF's --ckpt.load_enable loads, or
        None; a ConfigError when the config changed in a way the checkpoint cannot follow."""
        from crossgym.adapters.kit.resume import resume_point

        return resume_point(run, latest=lambda out: config_map.latest_checkpoint(out.resolve() / "checkpoints"),
                            at=config_map.checkpoint_step,
                            where=f"{run.output_dir}/checkpoints/_actor/global_stepN",
                            folders=("checkpoints/_actor",))

    def write(self, full: dict[str, str | LineFile]) -> Path:
        """Write ``prepare``'s files; returns the folder holding them."""
        return write_files(full)[-1].parent

    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None) -> TrainResult:
        """Write the files, then launch OpenRLHF and stream its log; stops before the launch when this machine
        cannot run it. ``stop`` ends the launched process group (kit.launch: SIGINT, then SIGTERM)."""
        from crossgym.scoring.rule import check_builds

        tasks = list(tasks) if tasks is not None else run_tasks(run)
        check_builds(RewardRule.from_run(run), tasks)
        plan, full = self.prepare(run, tasks=tasks, stream=True)
        work = self.write(full)
        missing = self.missing()
        if missing:
            raise BackendUnavailable(self.name, f"cannot launch on this machine (missing {'; '.join(missing)}); "
                                     f"the run files are in {work}: run launch.sh there on a GPU node", None)
        from crossgym.adapters.kit.resume import begin_segment, describe

        point = self.resume_point(run)
        if point is not None:
            log.info(describe(point, run.grpo.max_steps))
        begin_segment(run.output_dir, run, point, backend=self.name)
        return self.launch(run, [sys.executable, *plan.argv[1:]], work, progress=progress, stop=stop)

    def launch(self, run: RunConfig, argv: Sequence[str], work: Path, *, progress: ProgressFn | None = None,
               stop: StopSignal | None = None) -> TrainResult:
        """Run ``argv`` (OpenRLHF's command) in ``work`` through the kit, reporting its steps and rewards."""
        log_path = work / "train.log"
        seen = {"steps": 0}

        def on_line(line: str) -> None:
            log.debug("openrlhf: %s", line)
            m = _STEP.search(line)
            if m:
                seen["steps"] = int(m.group(1))
                r = _REWARD.search(line)
                if progress is not None:
                    progress(seen["steps"], run.grpo.max_steps, {"reward": float(r.group(1))} if r else {})

        log.info("launching OpenRLHF: %s (log: %s)", " ".join(argv[:3]), log_path)
        done: Launched = launch(argv, cwd=work, log_path=log_path, env=child_env(TOKENIZERS_PARALLELISM="false"),
                                on_line=on_line, stop=stop)
        steps = seen["steps"]
        if done.returncode != 0 and not done.stopped:
            raise CrossgymError(f"OpenRLHF exited with status {done.returncode} after {steps} steps: "
                                f"{done.last_line()[:300]} (full log: {log_path})")
        out = Path(run.output_dir).resolve()
        final = out / "final"
        return TrainResult(output_dir=str(out), steps=steps, checkpoint=str(final) if final.exists() else None,
                           metrics={"interrupted": done.stopped, "stop_signals": done.signals, "log": str(log_path),
                                    "max_steps": run.grpo.max_steps, "rollouts": str(out / "rollouts.jsonl")})
