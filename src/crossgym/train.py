"""`crossgym train` and `crossgym plan`: the eval-first gate, then a backend; and what each backend would run.

User errors are CrossgymErrors (the CLI prints one line and exits 2). Progress bars and tables live here, in the
command layer; the backends only log.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import BackendUnavailable, CrossgymError

if TYPE_CHECKING:
    from crossgym.config import RunConfig
    from crossgym.protocol.interfaces import ResumableBackend, ResumePoint, TrainingBackend, TrainResult

log = logging.getLogger(__name__)


class GateFailed(CrossgymError):
    """The eval-first gate refused the run (a verifier failed its self-check, or rewards have no spread)."""


# ---------------------------------------------------------------- shared
def load_config(config: Path | str) -> RunConfig:
    """The RunConfig of a `plan`/`train` command; a local model path that does not exist is refused here."""
    from crossgym.config import load_run_config
    from crossgym.config.files import check_model_path

    run = load_run_config(config)
    check_model_path(run.model, f"{config}: model")
    return run


def quiet_libraries() -> None:
    """Keep transformers/datasets/TRL from printing their own bars and advice under ours."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"(transformers|trl|accelerate|torch)\..*")
    try:
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
    except ImportError:
        pass
    try:
        import datasets

        datasets.utils.logging.disable_progress_bar()
        datasets.utils.logging.set_verbosity_error()
    except ImportError:
        pass


def _backend(name: str) -> TrainingBackend:
    from crossgym.api import get_backend

    backend: TrainingBackend = get_backend(name)
    backend.check()  # BackendUnavailable: one line with the install command (or "not built yet")
    return backend


# ---------------------------------------------------------------- plan
def plan_documents(run: RunConfig, backends: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per backend: its Plan as a dict, or {"backend", "available": False, "reason", "install"}."""
    from crossgym.api import get_backend

    docs = []
    for name in backends:
        # plan() has no side effects and needs no framework where the backend can help it (veRL, OpenRLHF):
        # show the plan even when the backend cannot run here, and say why beside it
        missing: BackendUnavailable | None = None
        try:
            backend = get_backend(name)
            try:
                backend.check()
            except BackendUnavailable as exc:
                missing = exc
            plan = backend.plan(run)
        except BackendUnavailable as exc:
            docs.append({"backend": name, "available": False, "reason": exc.reason, "install": exc.install})
            continue
        except CrossgymError as exc:  # this backend cannot run this config: say so in its column, plan the others
            if len(backends) == 1:
                raise
            docs.append({"backend": name, "available": False, "fits": False,
                         "reason": f"this config does not fit {backend_label(name)}: {exc}", "install": None})
            continue
        if missing is None:
            docs.append({"available": True, **plan.to_dict()})
        else:
            docs.append({"available": False, "reason": missing.reason, "install": missing.install, **plan.to_dict()})
    return docs


def run_plan_command(config: Path, backends: list[str] | None, as_json: bool) -> None:
    """Print what each backend would run for ``config``: native config and generated files, side by side."""
    from crossgym.plugins import registry

    run = load_config(config)
    names = list(backends) if backends else registry("backends").names()
    for n in names:
        registry("backends").entry(n)  # unknown names fail first, with a suggestion
    blends = blend_documents(run)
    docs = plan_documents(run, names)
    if as_json:
        sys.stdout.write(json.dumps({"config": str(config), "blends": blends, "plans": docs}, indent=2,
                                    default=str) + "\n")
        return
    for section, blend in blends.items():
        sys.stdout.write(f"{section} " + "\n".join(blend["lines"]) + "\n")
    _render_plans(docs)


def blend_documents(run: RunConfig) -> dict[str, dict[str, Any]]:
    """The blend of ``tasks`` (and ``eval_tasks``) when the run has one: its parts (rows, share, pool, epochs,
    environment, extra verifiers) and the lines `crossgym plan` prints."""
    from dataclasses import asdict

    from crossgym.rollout.blend import blend_lines, is_blend, resolve_blend

    out: dict[str, dict[str, Any]] = {}
    for name, section in (("tasks", run.tasks), ("eval_tasks", run.eval_tasks)):
        if section is not None and is_blend(section):
            blend = resolve_blend(section, seed=run.seed, where=name, run=run)
            out[name] = {"rows": len(blend.tasks), "parts": [asdict(p) for p in blend.parts],
                         "lines": blend_lines(blend)}
    return out


def _config_lines(native: dict[str, Any]) -> str:
    lines = []
    for section, body in native.items():
        if isinstance(body, dict):
            lines.append(f"{section}:")
            lines.extend(f"  {k}: {_short(v)}" for k, v in body.items())
        else:
            lines.append(f"{section}: {_short(body)}")
    return "\n".join(lines)


def _short(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


#: how backends are written in sentences ("this config does not fit TRL")
BACKEND_LABELS = {"trl": "TRL", "verl": "veRL", "openrlhf": "OpenRLHF", "unsloth": "Unsloth", "skyrl": "SkyRL"}
#: the narrowest readable column: a plan's config lines ("  per_device_train_batch_size: 8"), a one-line note
PLAN_COLUMN, NOTE_COLUMN = 40, 24


def backend_label(name: str) -> str:
    return BACKEND_LABELS.get(name, name)


def _plan_text(d: dict[str, Any]) -> str:
    """One backend's plan as text: why it cannot run here (or does not fit), its native config, its notes."""
    text = ""
    if not d["available"]:
        text = d["reason"] if d.get("fits") is False else f"not available here: {d['reason']}"
        if d.get("install"):
            text += f"\ninstall: {d['install']}"
    if "native_config" in d:
        body = _config_lines(d["native_config"])
        if d["notes"]:
            body += "\n\nnotes:\n" + "\n".join(f"- {n}" for n in d["notes"])
        text = f"{text}\n\n{body}" if text else body
    return text


def _render_plans(docs: list[dict[str, Any]], width: int | None = None) -> None:
    """The plans side by side when the terminal is wide enough for every column (``COLUMNS`` or the terminal's
    size), else one backend per block, each as wide as the terminal: nothing is cropped, no backend dropped."""
    import shutil

    from rich.console import Console
    from rich.markup import escape
    from rich.syntax import Syntax
    from rich.table import Table

    width = width or shutil.get_terminal_size((100, 24)).columns
    console = Console(width=max(width, 20))
    # rich shares a narrow table's width about evenly, so every column must have room for a plan's config lines
    least = PLAN_COLUMN if any("native_config" in d for d in docs) else NOTE_COLUMN
    need = len(docs) * (least + 3) + 1
    if len(docs) > 1 and need > console.width:
        console.print("crossgym plan (one backend per block; a terminal of "
                      f"{need}+ columns shows them side by side)", markup=False)
        for d in docs:
            console.rule(f"[bold]{escape(d['backend'])}[/]", align="left")
            console.print(escape(_plan_text(d)), overflow="fold")
    else:
        table = Table(show_lines=True, title="crossgym plan", title_justify="left")
        for d in docs:
            # no min_width: rich crops a table whose min_widths add up past the console (the old lost verl column)
            table.add_column(d["backend"], overflow="fold")
        table.add_row(*(escape(_plan_text(d)) for d in docs))
        console.print(table)
    for d in docs:
        if "files" not in d:
            continue
        for fname, text in d["files"].items():
            console.print(f"\n[bold]{d['backend']}: {fname}[/] (run: {' '.join(d['argv'])})")
            console.print(Syntax(text, "python" if fname.endswith(".py") else "yaml", word_wrap=True))


# ---------------------------------------------------------------- gate
def run_gate_step(run: RunConfig, tasks: list[Any]) -> str | None:
    """Run crossgym.eval.gate.run_gate; raise GateFailed with its one line when it refuses. Returns a summary
    line, or None when this build has no gate yet."""
    try:
        from crossgym.eval import gate
    except ImportError:
        return None
    result = gate.run_gate(run, tasks)
    reason = str(result.reason)
    if not result.ok:
        hint = "" if "--skip-gate" in reason else "; --skip-gate trains anyway"
        raise GateFailed(f"eval gate refused to train: {reason}{hint}")
    return reason if reason.startswith("gate passed") else f"eval gate passed: {reason}"


def difficulty_step(run: RunConfig, tasks: list[Any], err: Any) -> list[Any]:
    """Apply RunConfig.difficulty (crossgym.eval.difficulty): the rows of the tasks in the learnable band; the
    measurement is an eval stored (and resumed) under <output_dir>/difficulty, the report in difficulty.json."""
    from crossgym.eval.difficulty import apply_difficulty

    out = Path(run.output_dir).expanduser() / "difficulty"
    with err.status(f"difficulty filter: {run.difficulty.samples} samples per task from the starting model"
                    if run.difficulty and not run.difficulty.rollouts else "difficulty filter"):
        report = apply_difficulty(run, tasks, output_dir=out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "difficulty.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    err.print(report.line(), markup=False, soft_wrap=True)
    return list(report.rows)


# ---------------------------------------------------------------- train
def resume_step(backend: TrainingBackend, run: RunConfig, *, required: bool) -> ResumePoint | None:
    """Where ``run`` continues (RunConfig.resume, through the backend's own checkpoints), or None to start from the
    model. ``required`` (train --resume): no complete checkpoint is an error, not a fresh start."""
    from typing import cast

    from crossgym.protocol.errors import ConfigError

    if run.resume == "never":
        return None
    if not backend.capabilities.resume:
        raise ConfigError(f"the {backend.name} backend cannot resume a run", where="resume",
                          fix="set resume: never, or train on a backend that resumes (trl, unsloth, verl, openrlhf)")
    point = cast("ResumableBackend", backend).resume_point(run)
    if point is None and required:
        raise ConfigError(f"nothing to resume: no complete checkpoint in {run.output_dir}", where="output_dir",
                          fix="train without --resume to start from the model (set grpo.save_steps to save "
                          "checkpoints along the way)")
    return point


def check_environments(run: RunConfig, prefix: str = "") -> None:
    """Every environment the run names (its own, and each blend part's) is registered: one ConfigError with a
    did-you-mean before any model loads (a dry run said success for a misspelt one that eval and train refuse)."""
    from crossgym.config.run import BlendConfig
    from crossgym.plugins import registry
    from crossgym.protocol.errors import ConfigError, UnknownNameError

    named = [(f"{prefix}environment.name", run.environment.name)]
    if isinstance(run.tasks, BlendConfig):
        named += [(f"{prefix}tasks.parts[{i}].environment.name", p.environment.name)
                  for i, p in enumerate(run.tasks.parts) if p.environment is not None]
    for where, name in named:
        if name:
            try:
                registry("environments").entry(name)
            except UnknownNameError as exc:
                raise ConfigError(exc.message, where=where, fix=exc.fix) from None


def check_difficulty_input(run: RunConfig, prefix: str = "") -> None:
    """difficulty.rollouts names an earlier eval that exists (a dry run passed a missing one)."""
    from crossgym.protocol.errors import ConfigError

    given = run.difficulty.rollouts if run.difficulty is not None else None
    if given and not Path(given).expanduser().exists():
        raise ConfigError(f"{given} does not exist", where=f"{prefix}difficulty.rollouts",
                          fix="name an earlier eval's rollouts.jsonl or its folder, or remove difficulty.rollouts to "
                              "measure pass rates from the starting model")


def run_train_command(config: Path, backend: str | None, dry_run: bool, skip_gate: bool, resume: bool = False,
                      rerun_gate: bool = False) -> None:
    """`crossgym train`: config -> gate -> backend.train with a progress bar; prints where the outputs went.
    ``resume`` (--resume): continue from the latest complete checkpoint, which must exist; the gate is not run
    again on a resumed run unless ``rerun_gate``."""
    from rich.console import Console

    from crossgym.rollout.tasks import run_tasks
    from crossgym.scoring import RewardRule
    from crossgym.scoring.rule import check_builds

    err = Console(stderr=True)
    run = load_config(config)
    if resume and run.resume == "never":
        run = run.with_overrides(resume="auto")
    from crossgym.config.files import check_output_dir

    check_output_dir(run.output_dir, f"{config}: output_dir")  # before the gate, not when the first file is written
    name = backend or run.backend
    b = _backend(name)
    if name != run.backend:
        run = run.with_overrides(backend=name)
    if run.grpo.eval_steps is not None and run.eval_tasks is None:  # before the gate, not when training starts
        from crossgym.protocol.errors import ConfigError

        raise ConfigError("the held-out watch has no eval_tasks to score", where="grpo.eval_steps",
                          fix="name held-out tasks under eval_tasks, or remove grpo.eval_steps")
    tasks = run_tasks(run)
    check_builds(RewardRule.from_run(run), tasks)
    check_environments(run, f"{config}: ")
    check_difficulty_input(run, f"{config}: ")
    point = resume_step(b, run, required=resume)  # (a dry run too: it said success where --resume then refused)
    if dry_run:
        plan = b.plan(run)
        _render_plans([{"available": True, **plan.to_dict()}])
        Console().print(f"dry run: {len(tasks)} tasks and their verifiers load; nothing was trained")
        return
    b.preload()  # a backend that must import first does it now (Unsloth patches transformers)
    quiet_libraries()
    if point is not None:
        from crossgym.adapters.kit.resume import describe

        resumed = describe(point, run.grpo.max_steps)
        log.info(resumed)
        err.print(resumed, markup=False, soft_wrap=True)
    if skip_gate:
        err.print("eval gate skipped (--skip-gate)")
    elif point is not None and not rerun_gate:
        err.print("eval gate not run again on a resumed run (--rerun-gate runs it)")
    else:
        with err.status("eval gate: verifier self-check and a small eval of the starting model"):
            line = run_gate_step(run, tasks)
        err.print(line if line else "eval gate: not available in this build, skipped", markup=False)
    if run.difficulty is not None and point is None:
        tasks = difficulty_step(run, tasks, err)
    result = _train_with_progress(b, run, tasks, err)
    _print_result(result, stop_mode=b.capabilities.stop)
    if result.metrics.get("interrupted") or result.metrics.get("stopped_early"):
        raise SystemExit(130)


#: what the first Ctrl-C promises, by the backend's capabilities.stop (and what a stopped run's summary says)
STOP_PROMISE = {"step": ("stopping after this step and saving the model", "the model so far is saved"),
                "process": ("stopping the training process (SIGINT, then SIGTERM after a grace period)",
                            "the last checkpoint it saved is kept")}


def _train_with_progress(backend: TrainingBackend, run: RunConfig, tasks: list[Any], err: Any) -> TrainResult:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    stop = threading.Event()
    presses = {"n": 0}
    promise = STOP_PROMISE.get(backend.capabilities.stop, STOP_PROMISE["step"])[0]

    def on_sigint(signum: int, frame: Any) -> None:
        presses["n"] += 1
        if presses["n"] == 1:
            stop.set()
            err.print(f"[yellow]Ctrl-C: {promise} (press again to stop now)[/]")
        else:
            raise KeyboardInterrupt

    state = {"reward": float("nan")}
    progress = Progress(TextColumn("[bold]GRPO[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("reward {task.fields[reward]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=err, transient=False)
    task_id = progress.add_task(f"{run.backend} {Path(run.model).name}", total=run.grpo.max_steps, reward="-")

    def on_progress(step: int, max_steps: int, logs: Mapping[str, Any]) -> None:
        if "reward" in logs:
            state["reward"] = float(logs["reward"])
        progress.update(task_id, completed=step, total=max_steps or run.grpo.max_steps,
                        reward=f"{state['reward']:.3f}")

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if in_main else None
    try:
        with progress:
            return backend.train(run, tasks=tasks, progress=on_progress, stop=stop)
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)


def reward_line(m: Mapping[str, Any]) -> str | None:
    """What the reward did, saying which logged steps each mean covers: "mean reward 0.575 (steps 1-10) -> 1.188
    (steps 191-200)"; a 2-step run compares step 1 with step 2, a 1-step run has nothing to compare."""
    def steps(span: Sequence[int]) -> str:
        return f"step {span[0]}" if span[0] == span[1] else f"steps {span[0]}-{span[1]}"

    if "reward_start" in m:
        return (f"mean reward {m['reward_start']:.3f} ({steps(m['reward_start_steps'])}) -> {m['reward_end']:.3f} "
                f"({steps(m['reward_end_steps'])})")
    if "reward_only" in m:
        step, value = m["reward_only"]
        return f"mean reward {value:.3f} (step {step}, the only logged step: nothing to compare)"
    return None


def _print_result(result: TrainResult, *, stop_mode: str = "step") -> None:
    m = result.metrics
    out = sys.stdout
    if m.get("interrupted") or m.get("stopped_early"):
        kept = STOP_PROMISE.get(stop_mode, STOP_PROMISE["step"])[1]
        out.write(f"stopped at step {result.steps} (Ctrl-C); {kept}\n")
    else:
        out.write(f"trained {result.steps} steps\n")
    resumed = m.get("resumed_from")
    if isinstance(resumed, dict):
        out.write(f"resumed from step {resumed.get('step')} ({resumed.get('checkpoint')}); this was run segment "
                  f"{resumed.get('segment')}\n")
    line = reward_line(m)
    if line:
        out.write(line + "\n")
    if "mean_step_s" in m:
        out.write(f"step time: mean {m['mean_step_s']:.2f} s, median {m['median_step_s']:.2f} s\n")
    out.write(f"checkpoint:   {result.checkpoint}\n")
    out.write(f"metrics:      {m.get('metrics_file')}\n")
    if m.get("reward_curve"):
        out.write(f"reward curve: {m['reward_curve']}\n")
