"""TRLBackend: one RunConfig -> TRL GRPOTrainer, through TRL's public API only (reward_funcs, reward_weights,
rollout_func, GRPOConfig, TrainerCallback, save_model)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit import variants as kit_variants
from crossgym.adapters.trl import config_map
from crossgym.adapters.trl.outputs import make_run_logger, plot_reward_curve, read_metrics, summarize
from crossgym.adapters.trl.rewards import TermReward, reward_functions, spec_reward
from crossgym.adapters.trl.rows import DATASET_DIR, task_dataset
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
from crossgym.scoring import RecordWriter, RewardRule
from crossgym.scoring.rule import check_builds

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[trl]'"
SUPPORTED_TRL = ("1.16",)


class TRLBackend(BackendBase):
    """GRPO on Hugging Face TRL's GRPOTrainer: CPU or GPU, hf or vLLM generation, LoRA or full fine-tuning."""

    name = "trl"
    capabilities = BackendCapabilities(multi_turn=True, lora=True, engines=("hf", "vllm"), distributed=False,
                                       needs_gpu=False, variants=kit_variants.SUPPORTED["trl"], stop="step",
                                       resume=True)
    compat_driver = "crossgym.adapters.trl.parity"

    def __init__(self) -> None:
        #: What the last build_trainer() made: the reward functions (in reward_weights order) and the rollout_func.
        self.reward_funcs: list[TermReward] = []
        self.rollout_func: Any = None

    def check(self) -> None:
        """BackendUnavailable with the install command when trl, torch or datasets are missing or too old."""
        import importlib.metadata
        import importlib.util

        # checked without importing (`crossgym list` calls this and must stay fast)
        missing = [m for m in ("trl", "torch", "transformers", "datasets") if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable(self.name, f"missing Python package(s): {', '.join(missing)}", INSTALL)
        version = importlib.metadata.version("trl")
        if not version.startswith(SUPPORTED_TRL):
            raise BackendUnavailable(self.name, f"crossgym's TRL backend supports trl {', '.join(SUPPORTED_TRL)}.x, "
                                     f"found {version}", "pip install 'trl>=1.16,<1.17'")

    # ------------------------------------------------------------ plan
    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, resume_of: RunConfig | None = None
             ) -> Plan:
        """The GRPOConfig, the trainer's other arguments and the equivalent plain TRL script; no side effects.
        ``resume_of``: the run whose checkpoint compatibility is checked, when ``run`` is a derived one (Unsloth
        plans TRL's part without its LoRA, which it adds itself)."""
        from crossgym.adapters.trl.script import plain_trl_script

        notes: list[str] = []
        if tasks is None:
            try:
                tasks = run_tasks(run)
            except CrossgymError as exc:
                notes.append(f"tasks not loaded ({exc}); reward functions shown for config verifiers only")
                tasks = []
        device = config_map.detect_device()
        if run.engine == "vllm" and device == "cpu":
            device = "cuda"
            notes.append("no GPU is visible here: planned for a CUDA machine, as vLLM generation needs one")
        kwargs = config_map.grpo_kwargs(run, device=device)
        rule = RewardRule.from_run(run)
        funcs, weights = reward_functions(rule, tasks)
        kwargs = {k: v for k, v in kwargs.items() if k != "reward_weights"} | {
            "reward_weights": run.backend_args.get("reward_weights", weights)}
        episodes = needs_episodes(tasks, run) if tasks else run.environment.max_turns > 1
        try:
            config_map.check_backend_args(run)
        except ImportError:
            notes.append("trl is not installed here: backend_args were not checked against GRPOConfig")
        if run.grpo.filter_groups:
            notes.append("grpo.filter_groups: TRL 1.16 has no dynamic sampling; a group whose rewards are all equal "
                         "keeps zero advantage (no policy gradient), but its tokens still count in the loss "
                         "normaliser and its generation is spent: set `difficulty:` to drop such tasks before "
                         "training")
        if run.grpo.max_prompt_length:
            notes.append(f"TRL 1.16 has no max_prompt_length: prompts over {run.grpo.max_prompt_length} tokens "
                         "are dropped before training")
        notes.append(f"device: {device}" + (" (use_cpu, bf16 off, gradient checkpointing off)"
                                            if device == "cpu" else ""))
        if episodes:
            notes.append("multi-turn/tool tasks: generation runs through crossgym's rollout_func (environment "
                         "reset/step; tool-result tokens masked out of the loss)")
        lora = config_map.lora_kwargs(run)
        trainer_args = {"model": run.model, "reward_funcs": [f.name for f in funcs],
                        "peft_config": lora, "rollout_func": "crossgym EpisodeRollout" if episodes else None}
        script = plain_trl_script(run, kwargs, rule, episodes=episodes, lora=lora)
        point = self.resume_point(resume_of or run)
        notes.append(_resume_note(run, point))
        from crossgym.adapters.trl.watch import plan_note

        if (watch_note := plan_note(run)) is not None:
            notes.append(watch_note)
        return Plan(backend=self.name, native_config={"GRPOConfig": kwargs, "GRPOTrainer": trainer_args,
                                                      "GRPOTrainer.train": {"resume_from_checkpoint": point and
                                                                            point.checkpoint}},
                    argv=("python", "train_trl.py"), files={"train_trl.py": script}, notes=tuple(notes))

    def resume_point(self, run: RunConfig) -> ResumePoint | None:
        """The checkpoint-N in output_dir that ``run`` continues from (RunConfig.resume), or None."""
        from crossgym.adapters.kit.resume import resume_point
        from crossgym.adapters.trl import checkpoints

        return resume_point(run, latest=checkpoints.latest, at=checkpoints.checkpoint_step,
                            where=f"{run.output_dir}/checkpoint-N")

    def reward_function(self, spec: VerifierSpec, *, on_error: OnError = 0.0) -> TermReward:
        """TRL's native reward object for one verifier: a reward function applying ``spec`` to every row."""
        return spec_reward(spec, on_error=on_error)

    def load_policy(self, run: RunConfig) -> tuple[Any, Any, Any]:
        """GRPOTrainer's (model, processing_class, peft_config): the model path, None (TRL loads the tokenizer) and a
        LoraConfig from grpo.lora. Backends that load the model themselves (Unsloth) override this."""
        lora = config_map.lora_kwargs(run)
        if lora is None:
            return run.model, None, None
        from peft import LoraConfig

        return run.model, None, LoraConfig(**lora)

    # ------------------------------------------------------------ train
    def build_trainer(self, run: RunConfig, *, tasks: Sequence[Task] | None = None,
                      callbacks: Sequence[Any] = (), record_rollouts: bool = True,
                      resume: ResumePoint | None = None) -> Any:
        """A ready GRPOTrainer for ``run`` (tasks loaded from the config when not given). Without ``resume`` it
        starts rollouts.jsonl over; with it, rollouts are appended (cut back to the checkpoint first: see train)
        and the learning rate of a changed config replaces the checkpoint's when training begins."""
        self.check()
        config_map.check_backend_args(run)
        from trl import GRPOConfig, GRPOTrainer

        tasks = list(tasks) if tasks is not None else run_tasks(run)
        rule = RewardRule.from_run(run)
        check_builds(rule, tasks)
        _seed_everything(run.seed)
        device = config_map.detect_device()
        kwargs = config_map.grpo_kwargs(run, device=device)
        tasks = _drop_long_prompts(run, tasks)
        episodes = needs_episodes(tasks, run)
        # multi-turn episodes generate through crossgym's rollout_func: with transformers (hf), or with TRL's own
        # vLLM generation (engine: vllm, GPU), which TRL keeps in sync with the policy before each rollout
        out = Path(run.output_dir)
        segment = {"segment": resume.segment if resume is not None else 1}
        sink = (RecordWriter(out / "rollouts.jsonl", backend=self.name, model=run.model, fields=segment)
                if record_rollouts else None)
        if sink is not None and sink.path.exists() and resume is None:
            sink.path.unlink()
        if resume is not None:  # what TRL's checkpoint does not restore as this run needs it
            callbacks = [*callbacks, _on_resume(run.grpo.learning_rate)]
        funcs, weights = reward_functions(rule, tasks, sink=sink)
        kwargs.setdefault("reward_weights", weights)
        args = GRPOConfig(**kwargs)
        model, processing_class, peft_config = self.load_policy(run)
        rollout_func = None
        if episodes:
            from crossgym.adapters.trl.episodes import EpisodeRollout

            rollout_func = EpisodeRollout(tasks, run)
        # written in bounded batches and memory-mapped: a blend of a million rows never sits in memory as dicts
        dataset = task_dataset(tasks, episodes=episodes, cache_dir=out / DATASET_DIR)
        try:
            trainer = GRPOTrainer(model=model, processing_class=processing_class, reward_funcs=list(funcs), args=args,
                                  train_dataset=dataset, peft_config=peft_config, rollout_func=rollout_func,
                                  callbacks=list(callbacks))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"TRL could not start: {str(exc).splitlines()[0]}", where="model / grpo",
                              fix="check the model path and the GRPO settings (`crossgym plan`)") from exc
        if sink is not None:
            sink.step = lambda: int(trainer.state.global_step)
        self.reward_funcs, self.rollout_func = list(funcs), rollout_func
        return trainer

    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None, callbacks: Sequence[Any] = ()) -> TrainResult:
        """Train; writes metrics.jsonl, reward_curve.png, rollouts.jsonl and final/ to output_dir.

        ``stop`` set (the CLI's first Ctrl-C) ends training after the current step; a KeyboardInterrupt mid-step
        still saves what the model has. Either way final/ holds a loadable checkpoint and metrics say so.
        """
        from crossgym.adapters.kit.resume import begin_segment, cut_records, describe
        from crossgym.adapters.trl import checkpoints

        out = Path(run.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        point = self.resume_point(run)
        if point is None:
            checkpoints.remove_checkpoints(out)  # a later resume finds only this run's checkpoints
        else:
            log.info(describe(point, run.grpo.max_steps))
            dropped = cut_records(out, point.step)
            if any(dropped.values()):
                log.info("dropped what the stopped run recorded after step %d: %d metrics row(s), %d rollout(s)",
                         point.step, dropped["metrics"], dropped["rollouts"])
        segment = begin_segment(out, run, point, backend=self.name)
        logger = make_run_logger(out, progress=progress, stop=stop, segment=segment, resumed=point is not None)
        from crossgym.adapters.trl.watch import held_out_watch

        watch = held_out_watch(run, out, segment=segment)  # grpo.eval_steps: after the logger, which starts the file
        trainer = self.build_trainer(run, tasks=tasks, callbacks=[logger, *watch, *callbacks], resume=point)
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # metrics.jsonl (and the CLI's bar) replace raw dict printing
        if point is not None and (every := checkpoints.generation_misalignment(point.step, trainer.args)):
            log.warning("checkpoint-%d falls inside a generation batch (num_iterations / steps_per_generation): the "
                        "first resumed step generates new completions where an uninterrupted run reuses the ones "
                        "it generated before; a grpo.save_steps multiple of %d resumes exactly", point.step, every)
        interrupted = False
        try:
            trainer.train(resume_from_checkpoint=point.checkpoint if point is not None else None)
        except KeyboardInterrupt:
            interrupted = True
            log.warning("interrupted at step %d: saving the model as it is", trainer.state.global_step)
        final = out / "final"
        trainer.save_model(str(final))
        tok = trainer.processing_class
        if tok is not None and not (final / "tokenizer_config.json").exists():
            tok.save_pretrained(str(final))
        rows = read_metrics(out / "metrics.jsonl")
        metrics = summarize(rows, logger.step_times)
        if watch:
            metrics["heldout"] = watch[0].history
        metrics.update({"interrupted": interrupted, "stopped_early": logger.stopped_early,
                        "max_steps": run.grpo.max_steps, "segment": segment,
                        "resumed_from": point.to_dict() if point is not None else None})
        png = plot_reward_curve(out / "metrics.jsonl", out / "reward_curve.png",
                                title=f"GRPO on {Path(run.model).name} ({self.name})")
        metrics["reward_curve"] = str(png) if png else None
        metrics["metrics_file"] = str(out / "metrics.jsonl")
        steps = int(trainer.state.global_step)
        (final / "crossgym_run.json").write_text(json.dumps(
            {"backend": self.name, "steps": steps, "interrupted": interrupted or logger.stopped_early,
             "config": run.to_dict(), "metrics": metrics}, indent=2, default=str), encoding="utf-8")
        return TrainResult(output_dir=str(out), steps=steps, checkpoint=str(final), metrics=metrics)


def _resume_note(run: RunConfig, point: ResumePoint | None) -> str:
    saves = (f"checkpoint-N every {run.grpo.save_steps} steps in {run.output_dir}" if run.grpo.save_steps else
             "no checkpoints before the end (set grpo.save_steps to resume a killed run)")
    if point is not None:
        from crossgym.adapters.kit.resume import describe

        return f"resume: {describe(point, run.grpo.max_steps)}; saves {saves}"
    if run.resume == "auto":
        return f"resume: auto, no complete checkpoint in {run.output_dir} yet: starts from the model; saves {saves}"
    return f"resume: never (starts from the model, removing old checkpoint-N folders); saves {saves}"


def _on_resume(lr: float) -> Any:
    """A callback run once a checkpoint is loaded. It puts the run's learning rate, at the scheduler's step, into
    the restored optimizer and scheduler: without it the first resumed step trains at the rate the checkpoint's
    optimizer holds, wrong when grpo.learning_rate or grpo.max_steps changed (the same value when neither did). And
    it moves TRL's sampler to the data epoch the run is in (its generator is not in the checkpoint)."""
    from transformers import TrainerCallback

    from crossgym.adapters.trl.checkpoints import advance_sampler, apply_learning_rate

    class OnResume(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, optimizer: Any = None,
                           lr_scheduler: Any = None, train_dataloader: Any = None, **kw: Any) -> None:
            if optimizer is not None:
                apply_learning_rate(optimizer, lr_scheduler, lr)
            if train_dataloader is not None:
                advance_sampler(train_dataloader, int(state.global_step), int(args.gradient_accumulation_steps))

    return OnResume()


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def _drop_long_prompts(run: RunConfig, tasks: list[Task]) -> list[Task]:
    """TRL 1.16 has no max_prompt_length: drop tasks whose templated prompt is longer, with a warning."""
    limit = run.grpo.max_prompt_length
    if not limit:
        return tasks
    from transformers import AutoTokenizer

    from crossgym.rollout.driver import render_text

    tok = AutoTokenizer.from_pretrained(run.model)
    fits: dict[int, bool] = {}  # per Task object: a blend's rows repeat its pooled tasks, each is rendered once
    kept = []
    for t in tasks:
        ok = fits.get(id(t))
        if ok is None:
            text = render_text(tok, t.prompt, t.tools)  # the prompt exactly as training renders it
            ok = fits[id(t)] = len(tok(text, add_special_tokens=False)["input_ids"]) <= limit
        if ok:
            kept.append(t)
    if len(kept) < len(tasks):
        log.warning("dropped %d of %d tasks whose prompt exceeds max_prompt_length=%d", len(tasks) - len(kept),
                    len(tasks), limit)
    if not kept:
        raise ConfigError(f"every prompt is longer than {limit} tokens", where="grpo.max_prompt_length",
                          fix="raise it or leave it unset")
    return kept
