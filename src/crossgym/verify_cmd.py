"""`crossgym verify`: score one completion for one task from files or text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crossgym.api import load_verifier
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec


def read_task(path: Path) -> Task:
    """A task from a JSON file, or the first line of a JSONL file."""
    if not path.is_file():
        raise ConfigError("task file not found", where=str(path), fix="check the path")
    text = path.read_text(encoding="utf-8").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        first = text.splitlines()[0] if text else ""
        try:
            data = json.loads(first)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not a task JSON document ({exc.msg})", where=str(path),
                              fix="write one Task object as JSON (see `crossgym tasks`)") from None
    try:
        return Task.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"not a valid task: {exc}", where=str(path),
                          fix="a task needs id, prompt, answer and verifier (see docs)") from None


def read_completion(value: str) -> Completion:
    """Completion text, or a file holding text or a Completion JSON document."""
    p = Path(value)
    if len(value) < 4096 and p.is_file():
        text = p.read_text(encoding="utf-8", errors="replace")
        if p.suffix == ".json":
            try:
                data = json.loads(text)
                if isinstance(data, dict) and "messages" in data:
                    return Completion.from_dict(data)
            except json.JSONDecodeError:
                pass
        return Completion.from_text(text)
    return Completion.from_text(value)


def verify_one(*, verifier: str | None, params: dict[str, Any], task_path: Path, completion: str) -> Verdict:
    task = read_task(task_path)
    spec = VerifierSpec(name=verifier, params=params) if verifier else task.verifier
    if verifier:
        task = Task(id=task.id, prompt=task.prompt, answer=task.answer, verifier=spec, env=task.env,
                    tools=task.tools, metadata=task.metadata)
    return load_verifier(spec).verify(task, read_completion(completion))
