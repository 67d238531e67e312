"""`crossgym verify`: score one completion for one task from files or text."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from crossgym.api import load_verifier
from crossgym.config.files import is_user_file, load_user_json, read_user_text, task_from_user_dict
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec

_TASK_FIX = "write one Task object as JSON (see `crossgym tasks`)"


def read_task(path: Path, task_id: str | None = None) -> Task:
    """The task of a JSON file, or of a JSONL file: its only task, or the one whose id is ``task_id``."""
    text = read_user_text(path, what="task file", fix_missing="check the path; `crossgym tasks --out FILE` writes one")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:  # several lines: JSONL, read line by line below
        pass
    except (ValueError, RecursionError):  # too deep, or an integer over the digit limit: the same error, one line
        load_user_json(text, str(path), fix=_TASK_FIX)
        raise
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
            raise ConfigError(f"not a task JSON document ({exc.msg})", where=f"{path}:{n}", fix=_TASK_FIX) from None
        except (ValueError, RecursionError):
            load_user_json(line, f"{path}:{n}", fix=_TASK_FIX)
            raise
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
    """Completion text, or a file holding text or a Completion JSON document (see ``looks_like_path``). A long text
    is never probed as a file name in a way that fails (``is_user_file``); a Completion document with a field of the
    wrong type is one ConfigError line naming the file."""
    if is_user_file(value) or looks_like_path(value):
        p = Path(value).expanduser()
        text = read_user_text(p, what="completion file",
                              fix_missing="check the path; to score text that looks like a path, put it in a file")
        if p.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError:  # JSON-looking text that is no document: scored as the text it is
                return Completion.from_text(text)
            except (ValueError, RecursionError):
                load_user_json(text, str(p), fix=_COMPLETION_FIX)
                raise
            if isinstance(data, dict) and "messages" in data:
                return _completion_from_user_dict(data, str(p))
        return Completion.from_text(text)
    return Completion.from_text(value)


_COMPLETION_FIX = 'write {"messages": [{"role": "assistant", "content": "..."}]}, or the plain text in a .txt file'


def _completion_from_user_dict(data: dict[str, Any], where: str) -> Completion:
    """``Completion.from_dict`` of a user's document; a field of the wrong type is one line naming that field."""
    for key, kind, rule in (("messages", list, "a list of messages"), ("token_ids", list, "a list of integers"),
                            ("logprobs", list, "a list of numbers")):
        if data.get(key) is not None and not isinstance(data[key], kind):
            raise ConfigError(f"'{key}' must be {rule}, got {type(data[key]).__name__}", where=where,
                              fix=_COMPLETION_FIX)
    for i, m in enumerate(data["messages"]):
        if not isinstance(m, dict):
            raise ConfigError(f"'messages[{i}]' must be an object with role and content, got {type(m).__name__}",
                              where=where, fix=_COMPLETION_FIX)
        calls = m.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(isinstance(c, dict) for c in calls)):
            raise ConfigError(f"'messages[{i}].tool_calls' must be a list of objects (name, arguments)",
                              where=where, fix='e.g. "tool_calls": [{"name": "f", "arguments": {}}]')
    try:
        return Completion.from_dict(data)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        field = next((k for k in ("token_ids", "logprobs") if data.get(k) is not None and str(exc) and
                      _bad_numbers(data[k], int if k == "token_ids" else float)), "messages")
        raise ConfigError(f"not a valid completion: '{field}': {exc}", where=where, fix=_COMPLETION_FIX) from None


def _bad_numbers(values: list[Any], kind: type) -> bool:
    try:
        for v in values:
            kind(v)
    except (ValueError, TypeError, OverflowError):
        return True
    return False


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
