"""`crossgym verify`: score one completion for one task from files or text."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from crossgym.api import load_verifier
from crossgym.config.files import read_user_text, task_from_user_dict
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec


def read_task(path: Path, task_id: str | None = None) -> Task:
    """The task of a JSON file, or of a JSONL file: its only task, or the one whose id is ``task_id``."""
    text = read_user_text(path, what="task file", fix_missing="check the path; `crossgym tasks --out FILE` writes one")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        pass
    else:
        task = task_from_user_dict(whole, str(path))
        if task_id is not None and task.id != task_id:
            raise ConfigError(f"no task {task_id!r}: the file holds one task, {task.id!r}", where="--task-id",
                              fix=f"pass --task-id {task.id} or drop --task-id")
        return task
    lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]  # a raw U+2028 is in a line
    docs = []
    for n, line in lines:
        try:
            docs.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not a task JSON document ({exc.msg})", where=f"{path}:{n}",
                              fix="write one Task object as JSON (see `crossgym tasks`)") from None
    if not docs:
        raise ConfigError("the task file is empty", where=str(path), fix="write one Task object as JSON "
                                                                         "(see `crossgym tasks`)")
    ids = [str(d.get("id")) if isinstance(d, dict) else "?" for _, d in docs]
    if task_id is not None:
        if task_id not in ids:
            close = difflib.get_close_matches(task_id, ids, n=1)
            fix = f"did you mean {close[0]!r}?" if close else f"ids here: {', '.join(ids[:5])}" + (
                ", ..." if len(ids) > 5 else "")
            raise ConfigError(f"no task {task_id!r} among the {len(docs)} in {path}", where="--task-id", fix=fix)
        n, doc = docs[ids.index(task_id)]
        return task_from_user_dict(doc, f"{path}:{n}")
    if len(docs) > 1:
        raise ConfigError(f"holds {len(docs)} tasks; --task scores one", where=str(path),
                          fix=f"pick one with --task-id ID; the ids: {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}")
    n, doc = docs[0]
    return task_from_user_dict(doc, f"{path}:{n}")


#: a --completion that is one token and ends like a file, or starts like a path, names a file (it must exist)
_FILE_SUFFIXES = (".txt", ".json", ".jsonl", ".md", ".out", ".log")


def looks_like_path(value: str) -> bool:
    """Whether ``--completion VALUE`` names a file rather than being the text: no whitespace, and it ends in
    .txt/.json/.jsonl/.md/.out/.log, starts with ./ ../ / or ~/, or its first folder exists here ("3/4" is text)."""
    if not value or any(c.isspace() for c in value) or len(value) > 4096:
        return False
    if value.lower().endswith(_FILE_SUFFIXES) or value.startswith(("./", "../", "/", "~/")):
        return True
    head, sep, _ = value.partition(os.sep)
    return bool(sep) and bool(head) and Path(head).is_dir()


def read_completion(value: str) -> Completion:
    """Completion text, or a file holding text or a Completion JSON document (see ``looks_like_path``)."""
    p = Path(value).expanduser()
    if len(value) < 4096 and (p.is_file() or looks_like_path(value)):
        text = read_user_text(p, what="completion file",
                              fix_missing="check the path; to score text that looks like a path, put it in a file")
        if p.suffix == ".json":
            try:
                data = json.loads(text)
                if isinstance(data, dict) and "messages" in data:
                    return Completion.from_dict(data)
            except json.JSONDecodeError:
                pass
        return Completion.from_text(text)
    return Completion.from_text(value)


def verify_one(*, verifier: str | None, params: dict[str, Any], task_path: Path, completion: str,
               task_id: str | None = None) -> Verdict:
    if params and not verifier:
        raise ConfigError("given without --verifier (the task's own verifier keeps its own params)",
                          where="--params", fix="add --verifier NAME, or drop --params")
    task = read_task(task_path, task_id)
    spec = VerifierSpec(name=verifier, params=params) if verifier else task.verifier
    if verifier:
        task = Task(id=task.id, prompt=task.prompt, answer=task.answer, verifier=spec, env=task.env,
                    tools=task.tools, metadata=task.metadata)
    return load_verifier(spec).verify(task, read_completion(completion))
