"""The one console script, `crossgym`. Each command's work lives in its subsystem; this file parses and prints.

User errors (CrossgymError) print one line on stderr and exit 2; `--debug` shows the traceback instead.
Every `--json` prints exactly one JSON document on stdout. Text that is not valid Unicode (a lone surrogate a
solution produced, in a completion, a task id or a reason; a file name that is not UTF-8) prints as its escape
(``\\ud800``) on stdout, as Python prints it on stderr: a summary never dies on the text it shows.
"""

from __future__ import annotations

import errno
import importlib
import itertools
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from crossgym import __version__
from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.text.visible import visible

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="crossgym: verifiers and environments written once; GRPO on TRL, Unsloth, veRL and OpenRLHF.")
_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crossgym {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    _state["debug"] = debug


def _print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")


def _parse_json_option(value: str | None, option: str) -> dict[str, Any]:
    """A JSON object given as text or as a file holding one. The value is a file when it names one that exists,
    or when it is no JSON and looks like a path (then a missing file says so); a long JSON text is never probed
    in a way that fails (see ``is_user_file``)."""
    if not value:
        return {}
    from crossgym.config.files import is_user_file, load_user_json, read_user_text
    from crossgym.verify_cmd import looks_like_path

    where = option
    if is_user_file(value) or (not value.lstrip().startswith(("{", "[")) and looks_like_path(value)):
        text = read_user_text(Path(value).expanduser(), what=f"{option} file")
        where = f"{option} {value}"
    else:
        text = value
    parsed = load_user_json(text, where, fix="""pass a JSON object, e.g. '{"key": 1}', or a file holding one""")
    if not isinstance(parsed, dict):
        raise ConfigError("must be a JSON object", where=option, fix="""e.g. '{"key": 1}'""")
    return parsed


def _call(target: str, **kwargs: Any) -> Any:
    """Run a command implemented in a subsystem module ("module:function")."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("crossgym"):
            raise CrossgymError(f"this command is not available in crossgym {__version__} yet") from None
        raise
    return getattr(module, attr)(**kwargs)


# ---------------------------------------------------------------- list / check / verify / tasks
@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print one JSON document.")) -> None:
    """Show verifiers, environments, task sources, backends and engines (and whether each can run here)."""
    from crossgym.catalog import catalog

    doc = catalog()
    if as_json:
        _print_json(doc)
        return
    from crossgym.cli_render import render_catalog

    render_catalog(doc)


@app.command("check")
def check_cmd(
    names: list[str] | None = typer.Argument(None, help="Verifier names (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
) -> None:
    """Self-check verifiers: each one's examples must pass, fail or be malformed as declared (exit 1 if not)."""
    from crossgym.verifiers.selfcheck import check_verifiers

    doc = check_verifiers(names or None)
    if as_json:
        _print_json(doc)
    else:
        from crossgym.cli_render import render_check

        render_check(doc)
    if not doc["ok"]:
        raise typer.Exit(1)


@app.command("verify")
def verify_cmd(
    verifier: str | None = typer.Option(None, "--verifier", help="Verifier name (default: the task's own)."),
    params: str | None = typer.Option(None, "--params", help="Verifier params as JSON (or a file)."),
    task: Path = typer.Option(..., "--task", help="A task JSON file, or a JSONL file of tasks (with --task-id)."),
    task_id: str | None = typer.Option(None, "--task-id", help="Which task of a JSONL of several (its id)."),
    completion: str = typer.Option(..., "--completion", help="Completion text, or a file holding it (one word "
                                   "ending in .txt/.json/.jsonl/.md/.out/.log or starting with ./ ../ / ~/ names a "
                                   "file, which must exist)."),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
) -> None:
    """Score one completion for one task."""
    from crossgym.verify_cmd import verify_one

    parsed = _parse_json_option(params, "--params")
    if params is not None and not verifier:
        raise ConfigError("given without --verifier (the task's own verifier keeps its own params)",
                          where="--params", fix="add --verifier NAME, or drop --params")
    verdict = verify_one(verifier=verifier, params=parsed, task_path=task, completion=completion, task_id=task_id)
    if as_json:
        _print_json(verdict.to_dict())
    else:
        status = "PASS" if verdict.passed else ("ERROR" if verdict.error else "FAIL")
        # the reason quotes the completion and the program's output: one line, its escape sequences as text
        typer.echo(visible(f"{status} reward={verdict.reward:g} {verdict.error or verdict.reason}".rstrip()))
    if verdict.error and verdict.error_kind != "malformed":
        raise typer.Exit(1)


@app.command("tasks")
def tasks_cmd(
    source: str = typer.Argument(..., help="A registered task source (see `crossgym list`)."),
    params: str | None = typer.Option(None, "--params", help="Source params as JSON (or a file)."),
    n: int | None = typer.Option(None, "--n", help="How many tasks."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed."),
    out: Path | None = typer.Option(None, "--out", help="Write JSONL here (default: stdout)."),
) -> None:
    """Generate or load tasks and write them as JSONL."""
    from crossgym.api import iter_tasks
    from crossgym.config.files import check_output_file

    check_output_file(out, "--out")
    p = _parse_json_option(params, "--params")
    if n is not None:
        p["n"] = n
    if seed is not None:
        p["seed"] = seed
    stream = iter_tasks(source, **p)
    first = next(stream, None)  # the source checks its params here, before anything is written
    if first is None:  # an empty file or n=0 is no success either
        raise ConfigError("no tasks were produced", where=f"task source {source!r}",
                          fix="check --n and the params; an empty file gives none")
    tasks = itertools.chain([first], stream)
    if out is None:
        try:
            for t in tasks:
                sys.stdout.write(t.to_json() + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `crossgym tasks ... | head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    count = _write_jsonl(out, (t.to_json() for t in tasks))
    typer.echo(f"wrote {count} tasks to {out}", err=True)


def _write_jsonl(out: Path, lines: Iterator[str]) -> int:
    """Write ``lines`` to OUT.partial as they come, then rename it to ``out``: an error or Ctrl-C part way leaves
    no file that looks complete. Returns how many lines were written."""
    partial = out.with_name(out.name + ".partial")
    count = 0
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
                count += 1
        os.replace(partial, out)
    except OSError as exc:
        _discard(partial)
        raise ConfigError(f"cannot write: {exc.strerror or exc}", where=str(out), fix="choose another --out") \
            from None
    except BaseException:
        _discard(partial)
        raise
    return count


def _discard(partial: Path) -> None:
    """Remove a half-written file if the file system lets us: on a read-only or failing one, removing it fails
    too, and that second error must not hide the first."""
    try:
        partial.unlink(missing_ok=True)
    except OSError:
        pass


# ---------------------------------------------------------------- eval / train / plan
@app.command("eval")
def eval_cmd(
    config: Path | None = typer.Argument(None, help="A RunConfig YAML (or use the flags)."),
    model: str | None = typer.Option(None, "--model", help="Model directory (hf/vllm engines)."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL."),
    tasks: str | None = typer.Option(None, "--tasks", help="Task source name or JSONL file."),
    engine: str | None = typer.Option(None, "--engine", help="hf, vllm, sglang or openai."),
    n: int = typer.Option(1, "--n", help="Samples per task (pass@k up to n)."),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N tasks."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Where rollouts and the report go."),
    as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature (default 1.0)."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Most tokens per turn (default 256)."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed."),
) -> None:
    """Score the current model on tasks before training: pass@k, rewards, errors; writes a report."""
    _call("crossgym.eval.command:run_eval_command", config=config, model=model, endpoint=endpoint, tasks=tasks,
          engine=engine, n=n, limit=limit, output_dir=output_dir, as_json=as_json, temperature=temperature,
          max_tokens=max_tokens, seed=seed)


@app.command("train")
def train_cmd(
    config: Path = typer.Argument(..., help="A RunConfig YAML."),
    backend: str | None = typer.Option(None, "--backend", help="trl, unsloth, verl or openrlhf."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Plan and check only; train nothing."),
    skip_gate: bool = typer.Option(False, "--skip-gate", help="Skip the verifier self-check and eval gate."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the latest complete checkpoint in "
                                "output_dir (resume: auto that needs one); records are appended from its step."),
    rerun_gate: bool = typer.Option(False, "--rerun-gate", help="Run the eval gate again on a resumed run."),
) -> None:
    """Run GRPO: the eval-first gate, then the backend; --resume continues a stopped or killed run."""
    _call("crossgym.train:run_train_command", config=config, backend=backend, dry_run=dry_run, skip_gate=skip_gate,
          resume=resume, rerun_gate=rerun_gate)


@app.command("plan")
def plan_cmd(
    config: Path = typer.Argument(..., help="A RunConfig YAML."),
    backend: list[str] | None = typer.Option(None, "--backend", help="Backends to plan: a comma list (trl,verl) "
                                             "or the option again (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the plans as JSON."),
) -> None:
    """Show what each backend would run for this config: side by side when the terminal is wide enough, else one
    backend per block (no side effects)."""
    names = [name.strip() for value in backend or () for name in value.split(",") if name.strip()]
    _call("crossgym.train:run_plan_command", config=config, backends=names or None, as_json=as_json)


# ---------------------------------------------------------------- compat / serve / reverify
@app.command("compat")
def compat_cmd(
    backend: list[str] | None = typer.Option(None, "--backend", help="Backends to check (default: installed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    html: Path | None = typer.Option(None, "--html", help="Write an HTML report here."),
    out: Path | None = typer.Option(None, "--out", help="Write the matrix JSON here (for merging)."),
    verifier: list[str] | None = typer.Option(None, "--verifier", help="Verifiers to check (default: all)."),
    corpus: Path | None = typer.Option(None, "--corpus", help="A frozen corpus folder (default: tests/compat/corpus)."),
    checks: str | None = typer.Option(None, "--checks", help="Comma list: conformance,parity,environments,plans,"
                                                             "tokens,consistency,advantages (default: all)."),
) -> None:
    """Prove reward parity: every verifier's reward through each backend's native path equals its Verdict."""
    _call("crossgym.compat_tests.runner:run_compat_command", backends=backend or None, as_json=as_json, html=html,
          out=out, verifiers=verifier or None, corpus=corpus, checks=checks)


@app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (not loopback: needs --token)."),
    port: int = typer.Option(8000, "--port"),
    token: str | None = typer.Option(None, "--token", envvar="CROSSGYM_TOKEN", help="Bearer token."),
    nemo_gym: bool = typer.Option(False, "--nemo-gym", help="Also accept NeMo Gym's /verify request shape."),
    nemo_gym_verifier: str | None = typer.Option(None, "--nemo-gym-verifier", help="Verifier for NeMo Gym rows naming none."),
    max_concurrency: int | None = typer.Option(None, "--max-concurrency", help="Jobs running at once (32)."),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per request (120)."),
    max_body_mb: float | None = typer.Option(None, "--max-body-mb", help="Largest request body (8 MiB)."),
    max_batch: int | None = typer.Option(None, "--max-batch", help="Items per /verify/batch (1024)."),
    max_sessions: int | None = typer.Option(None, "--max-sessions", help="Open environment sessions (256)."),
    session_idle: float | None = typer.Option(None, "--session-idle", help="Seconds before an idle session closes (600)."),
    config: Path | None = typer.Option(None, "--config", help="A RunConfig: its reward rule (task_weight, extra "
                                       "verifiers, on_error) and model for the OpenRLHF/veRL/NeMo Gym routes."),
    read_timeout: float | None = typer.Option(None, "--read-timeout", help="Seconds a client may take to send "
                                              "its headers, and again its body (30); then 408."),
    max_connections: int | None = typer.Option(None, "--max-connections", help="Open connections (4096, kept "
                                               "below the open-file limit)."),
    shutdown_grace: float | None = typer.Option(None, "--shutdown-grace", help="Seconds in-flight requests get "
                                                "on SIGINT/SIGTERM before a 503 (10)."),
) -> None:
    """Serve verifiers and environments over HTTP (docs/serve.md)."""
    _call("crossgym.serve.command:run_serve_command", host=host, port=port, token=token, nemo_gym=nemo_gym,
          nemo_gym_verifier=nemo_gym_verifier, max_concurrency=max_concurrency, request_timeout_s=timeout,
          max_body_mb=max_body_mb, max_batch=max_batch, max_sessions=max_sessions, session_idle_s=session_idle,
          config=config, read_timeout_s=read_timeout, max_connections=max_connections,
          shutdown_grace_s=shutdown_grace)


@app.command("verify-batch")
def verify_batch_cmd(
    rollouts: Path = typer.Argument(..., help="JSONL or Parquet of rollouts (or {task, completion} records), a "
                                              "folder of *.jsonl/*.parquet or a quoted glob; read in order, in "
                                              "chunks."),
    use_ray: bool = typer.Option(False, "--ray", help="Spread shards of records over Ray actors (warm verifiers "
                                 "and sandbox pools; a few shards in flight each; a lost actor's shard is redone on "
                                 "a fresh one)."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address, e.g. HEAD:6379 or auto "
                                       "(implies --ray; default: a local Ray)."),
    workers: int | None = typer.Option(None, "--workers", help="Ray actors of 1 CPU in all (default: one per CPU "
                                       "of the cluster), or local workers without --ray."),
    out: Path | None = typer.Option(None, "--out", help="Append the re-scored records (JSONL) here, chunk by "
                                    "chunk; an --out left by an interrupted run is resumed. An existing folder: "
                                    "one FOLDER/<input name>.jsonl per input file."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="One progress line on stderr (redrawn "
                                  "on a terminal, else every 30 s)."),
    shard: int | None = typer.Option(None, "--shard", help="Records per Ray actor call (default 256: about 0.4 s "
                                     "of a mixed workload; fewer for slow code tests, so no actor idles at the end)."),
) -> None:
    """Score many rollouts at once, locally or spread over a Ray cluster (--ray)."""
    _call("crossgym.serve.batch_cmd:run_verify_batch_command", rollouts=rollouts, use_ray=use_ray, address=address,
          workers=workers, out=out, as_json=as_json, progress=progress, shard=shard)


@app.command("reverify")
def reverify_cmd(
    rollouts: Path = typer.Argument(..., help="A rollouts.jsonl written by eval or train, a folder of rollout shards "
                                    "(JSONL or Parquet) or a quoted glob."),
    as_json: bool = typer.Option(False, "--json", help="Print the drift report as JSON."),
) -> None:
    """Recompute rewards with the current verifiers and report drift."""
    _call("crossgym.eval.reverify:run_reverify_command", rollouts=rollouts, as_json=as_json)


@app.command("compare")
def compare_cmd(
    run_a: Path = typer.Argument(..., help="The baseline: an eval output directory, or rollout records (a JSONL or "
                                 "Parquet file, a folder of shards or a quoted glob)."),
    run_b: Path = typer.Argument(..., help="Rollouts of the same tasks (another eval, e.g. after training; another "
                                 "training run's records), in any of the same forms."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    html: Path | None = typer.Option(None, "--html", help="Write the comparison as an HTML page here."),
) -> None:
    """Compare two evals (or sets of rollout records) task by task: deltas with paired intervals, per source and
    verifier, flipped tasks side by side."""
    _call("crossgym.eval.compare:run_compare_command", run_a=run_a, run_b=run_b, as_json=as_json, html=html)


@app.command("synth")
def synth_cmd(
    family: str = typer.Argument(..., help="The task family (metadata 'family' of the seeds, or a task source)."),
    seeds: Path | None = typer.Option(None, "--seeds", help="Seed tasks: a JSONL file of Tasks."),
    from_source: str | None = typer.Option(None, "--from-source", help="Seed tasks from this task source (default: FAMILY)."),
    source_params: str | None = typer.Option(None, "--source-params", help="Params for the seed source as JSON."),
    engine: str | None = typer.Option(None, "--engine", help="hf, vllm, sglang or openai."),
    model: str | None = typer.Option(None, "--model", help="Model directory (hf/vllm engines)."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL."),
    n: int = typer.Option(..., "-n", "--n", help="How many tasks to keep."),
    out: Path = typer.Option(..., "--out", help="Kept tasks (JSONL); OUT.rejects.jsonl and OUT.summary.json beside it."),
    rejects: Path | None = typer.Option(None, "--rejects", help="Rejected drafts with reasons (JSONL)."),
    shots: int = typer.Option(3, "--shots", help="Seed tasks shown per draft."),
    max_attempts: int | None = typer.Option(None, "--max-attempts", help="Most drafts (default 4 x n)."),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature for drafts."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Most tokens per draft and per solution."),
    seed: int = typer.Option(0, "--seed", help="Seed for seed choice and sampling."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Have a model write new tasks of a family from seeds; keep those its verifier confirms."""
    _call("crossgym.synth.command:run_synth_command", family=family, seeds=seeds, from_source=from_source,
          source_params=_parse_json_option(source_params, "--source-params"), engine=engine, model=model,
          endpoint=endpoint, n=n, out=out, rejects=rejects, shots=shots, max_attempts=max_attempts,
          temperature=temperature, max_tokens=max_tokens, seed=seed, as_json=as_json)


def _one_line(text: str) -> str:
    """An error's lines joined (a library's message may hold newlines: the user still gets one line)."""
    out = ""
    for part in (p.strip() for p in text.splitlines()):
        if part:
            out = part if not out else out + (" " if out.endswith((":", ";", ",")) else "; ") + part
    return out


#: errors of the file system rather than of crossgym, each with what to do about it
_OS_FIXES = {
    errno.EROFS: "the file system is read-only; choose an output path on a writable one",
    errno.ENOSPC: "free some space, or choose an output path on another disk; a rerun resumes or rewrites it",
    errno.EDQUOT: "your disk quota is used up; free some space or write elsewhere",
    errno.ENAMETOOLONG: "shorten the path",
    errno.EIO: "the disk failed to read or write; check it, or use another path",
    errno.ELOOP: "the path holds a loop of symbolic links; check it",
    errno.EACCES: "check the path's permissions",
}
#: failures that are clear without the path (a full disk is reported by write(), which names no file)
_NO_PATH_NEEDED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


def _surrogate_or_escape(exc: UnicodeError) -> tuple[str | bytes, int]:
    """The "crossgym-escape" error handler: a file name's undecodable byte (``\\udc80``-``\\udcff``, what
    surrogateescape made of it) is written back as that byte; any other character the encoding refuses (a lone
    surrogate from a completion) as its backslash escape."""
    import codecs

    try:
        return codecs.lookup_error("surrogateescape")(exc)
    except UnicodeError:
        return codecs.lookup_error("backslashreplace")(exc)


def _escape_unencodable(stream: Any) -> None:
    """Have ``stream`` (stdout) write a character its encoding cannot hold as its backslash escape instead of
    raising UnicodeEncodeError in the middle of a summary (stderr does so already); the bytes of a file name
    that is not UTF-8 still print as they are. A stream that cannot be reconfigured (a plain StringIO) is left as
    it is."""
    import codecs

    reconfigure = getattr(stream, "reconfigure", None)
    if not callable(reconfigure) or getattr(stream, "errors", None) not in ("strict", "surrogateescape"):
        return
    try:
        codecs.lookup_error("crossgym-escape")
    except LookupError:
        codecs.register_error("crossgym-escape", _surrogate_or_escape)
    try:
        reconfigure(errors="crossgym-escape")
    except (ValueError, OSError):  # (a closed or detached stream)
        pass


class _VisibleFormatter(logging.Formatter):
    """Python's last-resort format (the message alone, then any traceback) with the text made ``visible``: a
    warning quotes task ids, file:line places, verifier errors and skipped lines (all of them text a dataset or a
    policy wrote), and a task id "x\\nERROR ..." printed a line of its own that read as another log record, an
    ESC sequence in it acted on the terminal."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return visible(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return visible(super().formatException(ei), lines=True)  # (a traceback's lines are its own)


class _VisibleLastResort(logging.Handler):
    """``logging.lastResort`` as Python has it (WARNING and above to the stderr of the moment, when no handler is
    configured: crossgym configures none) but through ``_VisibleFormatter``. Only what would have printed prints:
    an application or a test that configures logging keeps its own handlers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(_VisibleFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # (as every handler: a failed log line never stops the command)
            self.handleError(record)


def _visible_logs() -> None:
    """Log lines with no handler of their own (every crossgym logger's) print through ``_VisibleLastResort``."""
    if not isinstance(logging.lastResort, _VisibleLastResort):
        logging.lastResort = _VisibleLastResort()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors are one line and exit 2."""
    _escape_unencodable(sys.stdout)
    _visible_logs()
    try:
        # not standalone: the command line's own errors (a bad option, a missing argument, an unknown command) reach
        # us, to be said in one line; they were a usage line, a hint and a box of five lines, without a fix
        code = app(args=argv, prog_name="crossgym", standalone_mode=False)
        if code == 130:  # typer made a Ctrl-C this silent exit (no command exits 130 itself): said, as below
            sys.stderr.write("crossgym: interrupted\n")
        sys.exit(code if isinstance(code, int) else 0)  # (typer.Exit(n)'s code: no command returns a value)
    except _command_line_errors() as exc:
        if _kind(exc, "NoArgsIsHelpError"):  # `crossgym` alone, or a group without its command: its help, as before
            ctx = getattr(exc, "ctx", None)
            sys.stdout.write(ctx.get_help() + "\n" if ctx is not None else "")
        elif _state["debug"]:
            raise
        else:
            sys.stderr.write(f"crossgym: error: {visible(_click_error(exc))}\n")
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Abort:  # (end of input at a prompt)
        sys.stderr.write("crossgym: interrupted\n")
        sys.exit(130)
    except CrossgymError as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(f"crossgym: error: {visible(_one_line(str(exc)))}\n")  # (it may quote a task id)
        sys.exit(exc.exit_code)
    except OSError as exc:
        fix = _OS_FIXES.get(exc.errno or 0) if not isinstance(exc, (FileNotFoundError, IsADirectoryError,
                                                                   NotADirectoryError, PermissionError,
                                                                   FileExistsError)) else "check the path"
        # the net under the checks: a path that cannot be read or written, a disk that is full or read-only
        if _state["debug"] or fix is None or not (exc.filename or exc.errno in _NO_PATH_NEEDED):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(visible(f"crossgym: error: {where}{exc.strerror} (fix: {fix}; --debug shows where it was "
                                 "used)") + "\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("crossgym: interrupted\n")
        sys.exit(130)


def _command_line_errors() -> tuple[type[Exception], ...]:
    """The exception classes typer raises for the command line: its own click's (typer 0.2x vendors click) and
    click's (older typer)."""
    found: list[type[Exception]] = []
    try:
        from typer._click.exceptions import ClickException as vendored

        found.append(vendored)
    except ImportError:
        pass
    try:
        from click import ClickException

        found.append(ClickException)
    except ImportError:
        pass
    return tuple(found)


def _kind(exc: BaseException, name: str) -> bool:
    """``exc`` is of the click exception class called ``name`` (whichever click raised it)."""
    return any(c.__name__ == name for c in type(exc).__mro__)


def _click_error(exc: Any) -> str:
    """One line for an error in the command line: what, and how to find the right form."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "crossgym"
    what = _one_line(exc.format_message())
    if _kind(exc, "UsageError"):
        return f"{where}: {what} (fix: {_usage_fix(where, what)})"
    return f"{where}: {what}"


#: commands whose input may be a glob of shards, which the shell expands into many arguments when it is not quoted
_GLOB_COMMANDS = ("verify-batch", "reverify", "compare")


def _usage_fix(where: str, what: str) -> str:
    """How to fix a command line click refused: for extra arguments to a command that reads shards, the likely
    cause (an unquoted glob the shell expanded into a list of files, each an argument); else the command's help."""
    if "unexpected extra argument" in what and where.rsplit(" ", 1)[-1] in _GLOB_COMMANDS:
        return ("a pattern left unquoted is expanded by the shell into one argument per file: quote it, e.g. "
                f"'shards/*.jsonl', or pass the folder; `{where} --help` lists the arguments")
    return f"`{where} --help` lists its arguments and options"


if __name__ == "__main__":
    main()
