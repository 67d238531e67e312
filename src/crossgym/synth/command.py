"""`crossgym synth`: seeds from a file or a task source, an engine from the flags, three files out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task


def load_seeds(family: str, seeds: Path | None, from_source: str | None, source_params: dict[str, Any]) -> list[Task]:
    """Seed tasks: a JSONL file of Tasks, a registered task source, or the source named like the family."""
    from crossgym.api import load_tasks
    from crossgym.plugins import registry

    if seeds is not None and from_source is not None:
        raise ConfigError("give --seeds or --from-source, not both", where="crossgym synth")
    if seeds is not None:
        if not seeds.is_file():
            raise ConfigError(f"no seed file {seeds}", where="--seeds", fix="pass a JSONL file of crossgym Tasks")
        return load_tasks("jsonl", path=str(seeds), **source_params)
    source = from_source or family
    if source not in registry("task_sources").names():
        raise ConfigError(f"no task source {source!r} to take seeds from", where="--from-source",
                          fix="pass --seeds FILE.jsonl or --from-source NAME (see `crossgym list`)")
    return load_tasks(source, **source_params)


def output_paths(out: Path, rejects: Path | None) -> tuple[Path, Path, Path]:
    """The tasks file, the rejects file (default OUT.rejects.jsonl) and the summary (OUT.summary.json)."""
    stem = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out, rejects or out.with_name(stem + ".rejects.jsonl"), out.with_name(stem + ".summary.json")


def run_synth_command(family: str, seeds: Path | None, from_source: str | None, source_params: dict[str, Any],
                      engine: str | None, model: str | None, endpoint: str | None, n: int, out: Path,
                      rejects: Path | None = None, shots: int = 3, max_attempts: int | None = None,
                      temperature: float = 1.0, max_tokens: int = 512, seed: int = 0,
                      as_json: bool = False) -> dict[str, Any]:
    """Run synth as the CLI asks, write the files, print a summary; returns the summary document."""
    from crossgym.config.files import check_model_path, check_output_file, check_sampling
    from crossgym.environments.sources.common import MAX_TASKS
    from crossgym.eval.run import build_engine, engine_model_name
    from crossgym.synth.run import synthesize

    if not 1 <= n <= MAX_TASKS:
        raise ConfigError(f"must be in 1..{MAX_TASKS} (tasks to keep), got {n}", where="-n", fix="e.g. -n 20")
    check_sampling(temperature=temperature, max_tokens=max_tokens)
    if max_attempts is not None and max_attempts < 1:
        raise ConfigError(f"must be >= 1, got {max_attempts}", where="--max-attempts", fix=f"e.g. --max-attempts {4 * n}")
    if shots < 0:
        raise ConfigError(f"must be >= 0, got {shots}", where="--shots", fix="e.g. --shots 3")
    if not endpoint:  # with --endpoint, --model is the served model's name, which may look like a server's path
        model = check_model_path(model, "--model")
    for option, path in zip(("--out", "--rejects", "--out"), output_paths(out, rejects), strict=True):
        check_output_file(path, option)
    pool = load_seeds(family, seeds, from_source, source_params)
    eng = build_engine(engine, model=model, endpoint=endpoint)
    try:
        result = synthesize(family, pool, eng, n, shots=shots, max_attempts=max_attempts, seed=seed,
                            params=SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed),
                            solve_params=SamplingParams(temperature=0.0, max_tokens=max_tokens, seed=seed),
                            model_name=engine_model_name(eng, model or endpoint or "?"))
    finally:
        close = getattr(eng, "close", None)
        if callable(close):
            close()
    tasks_path, rejects_path, summary_path = output_paths(out, rejects)
    tasks_path.parent.mkdir(parents=True, exist_ok=True)
    tasks_path.write_text("".join(t.to_json() + "\n" for t in result.tasks), encoding="utf-8")
    rejects_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.rejects),
                            encoding="utf-8")
    summary = {**result.summary(), "files": {"tasks": str(tasks_path), "rejects": str(rejects_path)}}
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        c = result.counts()
        why = ", ".join(f"{k} {v}" for k, v in c.items() if k not in ("attempts", "kept", "rejected", "surplus"))
        sys.stderr.write(f"synth {family}: {c['kept']} kept of {c['attempts']} drafts"
                         f"{f' (rejected: {why})' if why else ''}\n"
                         f"  wrote {tasks_path}, {rejects_path}, {summary_path}\n")
    if not result.tasks:
        import typer

        sys.stderr.write(f"crossgym: synth {family}: kept no task of {result.counts()['attempts']} drafts "
                         f"(why each was rejected: {rejects_path})\n")
        raise typer.Exit(1)
    return summary
