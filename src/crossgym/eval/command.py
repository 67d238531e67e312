"""`crossgym eval`: settings from a RunConfig and/or flags, a rich progress bar on stderr, a summary or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task
from crossgym.rollout.config import RolloutConfig
from crossgym.text.visible import visible

DEFAULT_OUTPUT = Path("runs") / "eval"


def run_eval_command(config: Path | None, model: str | None, endpoint: str | None, tasks: str | None,
                     engine: str | None, n: int, limit: int | None, output_dir: Path | None, as_json: bool,
                     temperature: float | None = None, max_tokens: int | None = None,
                     seed: int | None = None) -> dict[str, Any]:
    """Run one eval as the CLI asks and print the result; returns the metrics document."""
    again = resume_command(config=config, model=model, endpoint=endpoint, tasks=tasks, engine=engine, n=n,
                           limit=limit, output_dir=output_dir, temperature=temperature, max_tokens=max_tokens,
                           seed=seed)
    from crossgym.config.files import check_model_path, check_output_dir, check_sampling
    from crossgym.eval.run import (
        METRICS_FILE,
        ROLLOUTS_FILE,
        build_engine,
        engine_model_name,
        environment_from_run,
        load_task_list,
        run_eval,
        sampling_from_run,
    )

    check_sampling(temperature=temperature, max_tokens=max_tokens, n=n)
    if limit is not None and limit < 1:
        raise ConfigError(f"must be >= 1, got {limit}", where="--limit", fix="e.g. --limit 20")
    written = (ROLLOUTS_FILE, METRICS_FILE, "report.html")  # (a FIFO there: the resume would wait forever)
    check_output_dir(output_dir, "--output-dir", written)
    if not endpoint:  # with --endpoint, --model is the served model's name, which may look like a server's path
        model = check_model_path(model, "--model")
    environment: str | None = None
    env_params: dict[str, Any] = {}
    if config is not None:
        from crossgym.config import load_run_config
        from crossgym.config.run import BlendConfig
        from crossgym.rollout.blend import distinct_tasks
        from crossgym.rollout.tasks import load_run_tasks

        run = load_run_config(config)
        if not model and not endpoint:
            model = check_model_path(run.model, f"{config}: model")
        engine = engine or (None if endpoint else run.engine)
        sampling = sampling_from_run(run)
        environment, env_params = environment_from_run(run)
        if tasks is None:
            section = run.eval_tasks or run.tasks
            if isinstance(section, BlendConfig):  # a blend evaluates each task once (its rows repeat them)
                task_list = distinct_tasks(load_run_tasks(section, where="eval_tasks" if run.eval_tasks else "tasks",
                                                          seed=run.seed))[:limit]
            else:
                task_list = load_task_list(section.source, params=section.params, files=section.files,
                                           limit=limit)
        else:
            task_list = load_task_list(tasks, limit=limit)
        if output_dir is None:
            output_dir = Path(run.output_dir).expanduser() / "eval"
            check_output_dir(output_dir, f"{config}: output_dir", written)
    else:
        if tasks is None:
            raise ConfigError("no tasks given", where="crossgym eval",
                              fix="pass --tasks SOURCE (see `crossgym list`) or --tasks FILE.jsonl, or a config")
        if not model and not endpoint:
            raise ConfigError("no model given", where="crossgym eval",
                              fix="pass --model DIR (hf, vllm) or --endpoint URL (openai, sglang, vllm)")
        sampling = SamplingParams()
        task_list = load_task_list(tasks, limit=limit)
        output_dir = output_dir or DEFAULT_OUTPUT
    overrides = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens), ("seed", seed))
                 if v is not None}
    if overrides:
        sampling = SamplingParams.from_dict({**sampling.to_dict(), **overrides})
    eng = build_engine(engine, model=model, endpoint=endpoint)
    rc = RolloutConfig(model=engine_model_name(eng, model or endpoint or "?"), engine=str(eng.name),
                       sampling=sampling, n=n, environment=environment, env_params=env_params)
    total = len(task_list) * n
    store = output_dir / ROLLOUTS_FILE
    reused = stored_rollouts(store, task_list, n, rc.hash())
    if reused:  # said before the work starts: what is there, and what is left
        sys.stderr.write(f"resuming: {reused} of {total} rollouts reused from {store} (same model and settings); "
                         f"{total - reused} to generate\n")
    elif store.is_file() and store.stat().st_size:
        sys.stderr.write(f"note: {store} holds rollouts of other tasks or settings (model, engine, sampling, "
                         f"environment): none is reused; the {total} new ones are added beside them\n")
    try:
        with _progress_bar(total=total) as progress:
            result = run_eval(eng, task_list, rc, output_dir=output_dir, progress=progress)
    except KeyboardInterrupt:
        saved = stored_rollouts(store, task_list, n, rc.hash())
        sys.stderr.write(f"crossgym eval: interrupted: {saved} of {total} rollouts are saved in {store}; run the "
                         f"same command again to resume (it generates only the {total - saved} left): {again}\n")
        raise SystemExit(130) from None
    eng.close()
    if as_json:
        sys.stdout.write(json.dumps(result.metrics, indent=2, default=str) + "\n")
    else:
        if result.reused:
            total = len(task_list) * n
            sys.stdout.write(f"resumed: {result.reused} of {total} rollouts reused from "
                             f"{output_dir / 'rollouts.jsonl'} (same model and settings), "
                             f"{total - result.reused} generated\n")
        _print_summary(result.metrics, result.output_dir, result.report)
    return result.metrics


def stored_rollouts(path: Path, tasks: list[Task], n: int, config_hash: str) -> int:
    """How many of ``tasks`` x ``n`` rollouts under ``config_hash`` the store at ``path`` already holds."""
    from crossgym.rollout.config import keyed_hash, rollout_key
    from crossgym.rollout.store import RolloutStore

    if not path.is_file():
        return 0
    keys = RolloutStore(path).keys(quiet=True)  # (the run reads the store again, and names a damaged record once)
    if not keys:
        return 0
    return sum(1 for t in tasks for h in (keyed_hash(config_hash, t),) for j in range(n)
               if rollout_key(t.id, j, h) in keys)


def resume_command(config: Path | None = None, **flags: Any) -> str:
    """The `crossgym eval` command line with these settings (the one that resumes an interrupted eval)."""
    import shlex

    words = ["crossgym", "eval", *([str(config)] if config is not None else [])]
    for name, value in flags.items():
        if value is not None and not (name == "n" and value == 1):
            words += [f"--{name.replace('_', '-')}", str(value)]
    return shlex.join(words)


class _progress_bar:
    """A rich progress bar on stderr (only when stderr is a terminal); the runner reports (done, total)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Any:
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                  console=Console(stderr=True), transient=True)
        self._progress.start()
        self._task = self._progress.add_task("eval", total=self.total)
        return self

    def __call__(self, done: int, total: int) -> None:
        self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()


def _ci(doc: dict[str, Any] | None) -> str:
    return "" if not doc else f" [{doc['low']:.2f}, {doc['high']:.2f}]"


def _pass1_method(ci: dict[str, Any]) -> str:
    """How pass@1's interval was computed: Wilson over rollouts, or the bootstrap over tasks when tasks have unequal
    samples (metrics._pass1_interval), so the note under the figures says what they are."""
    p1 = ci.get("pass@1") or {}
    return "bootstrap over tasks (unequal samples per task)" if p1.get("method") == "bootstrap" else \
        "Wilson over rollouts"


def summary_lines(metrics: dict[str, Any]) -> list[str]:
    """The human summary of a metrics document: failure modes first, then pass@k and rewards with 95% intervals.
    Each line quotes text a policy or a dataset wrote (reasons, task ids, sources, the model's name): made
    ``visible``, so an escape sequence in it reaches the terminal as text and a newline starts no line of its own."""
    from crossgym.eval.failures import top_modes

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    errs = metrics["errors"]
    ci = metrics.get("intervals") or {}
    lines = [f"{metrics['n_tasks']} tasks x {metrics['samples_per_task']['max']} samples = "
             f"{metrics['n_rollouts']} rollouts ({metrics['run']['model']}, {metrics['run']['engine']})"]
    fm = metrics.get("failure_modes")
    if fm and fm["failed"]:
        lines.append(f"  failed {fm['failed']}/{fm['n_rollouts']}: {fm['honest_failures']} honest failures, "
                     f"{fm['errors_total']} errors (timeout {errs['timeout']}, malformed {errs['malformed']}, "
                     f"exception {errs['exception']})")
        for m in top_modes(fm, 3):
            where = ", ".join(f"{s} {g['share']:.0%}" for s, g in m["by_source"].items())
            lines.append(f"    {m['count']:>4} x {m['kind']}: {m['reason']}  ({where}; e.g. {m['examples'][0]['task']})")
        comps = fm["components"]["modes"][:2]
        if comps:
            lines.append("    failed components: " + ", ".join(f"{c['verifier']}.{c['component']} {c['count']}"
                                                         for c in comps))
    for warning in (metrics.get("health") or {}).get("warnings", []):
        lines.append(f"  warning: {warning}")
    for step in metrics.get("next_steps") or []:
        if step["pattern"] != "none":
            scope = "" if step["scope"] == "all" else f"[{step['scope']}] "
            lines.append(f"  next: {scope}{step['line']}")
    kci = ci.get("pass@k") or {}
    lines += ["  " + "  ".join(f"pass@{k} {f(v)}{_ci(kci.get(k) if k != '1' else ci.get('pass@1'))}"
                               for k, v in metrics["pass@k"].items()),
              f"  mean reward {f(metrics['mean_reward'])}{_ci(ci.get('mean_reward'))}  "
              f"(std {f(metrics['reward_std'])})",
              "  (95% intervals: pass@1 " + _pass1_method(ci) + "; mean reward and pass@k>1 bootstrap over tasks)"]
    for name, g in metrics["by_source"].items():
        gci = g.get("intervals") or {}
        lines.append(f"  source {name}: pass@1 {f(g['pass@1'])}{_ci(gci.get('pass@1'))}, mean reward "
                     f"{f(g['mean_reward'])}{_ci(gci.get('mean_reward'))} ({g['n_tasks']} tasks), "
                     f"errors {g['errors']['total']}")
    for name, g in metrics["by_verifier"].items():
        lines.append(f"  verifier {name} v{','.join(g['versions']) or '?'}: pass@1 {f(g['pass@1'])}, "
                     f"errors {g['errors']['total']}")
    if metrics.get("identical_rewards"):
        lines.append("  note: every reward is identical: GRPO would have nothing to learn from these tasks")
    return [visible(line) for line in lines]


def _print_summary(metrics: dict[str, Any], output_dir: Path | None, report: Path | None) -> None:
    lines = summary_lines(metrics)
    if output_dir is not None:
        lines.append(visible(f"  wrote {output_dir / 'rollouts.jsonl'}, {output_dir / 'metrics.json'}"
                             + (f", {report}" if report else "")))
    sys.stdout.write("\n".join(lines) + "\n")
