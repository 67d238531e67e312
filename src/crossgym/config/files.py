"""Reading the files a user hands crossgym (configs, task files, tasks and rollouts JSONL, params and completions) and
checking the paths it will write, so that every mistake is one ConfigError line (what, where, fix), not a traceback.

- ``read_user_text(path)``: the file's text; not a file, unreadable or not UTF-8 (UTF-16, Latin-1, ...) is one line
  naming the file and its likely encoding ("save it as UTF-8"). A UTF-8 byte-order mark is dropped.
- ``decode_user_line(raw, where)``: one line of a file read as bytes (JSONL readers that stream), same errors.
- ``check_user_encoding(path)``: the same check on the head of a file too large to read whole (rollouts).
- ``iter_user_jsonl(path)``: a JSONL file's values, a line at a time, each with its "PATH:LINE" for errors.
- ``is_user_file(value)``: whether an option's value names an existing file; text too long to be a file name (a
  JSON document, a sentence) is simply not one, never an OSError (ENAMETOOLONG).
- ``load_user_json(text, where, fix)``: ``json.loads``; not JSON, nested too deeply or an integer of thousands of
  digits is one ConfigError line.
- ``task_from_user_dict(doc, where)``: a Task from a JSON object a user wrote; a key that is not a Task field
  (``answr``) is one line naming it, with the field it most likely means.
- ``check_model_path(model, where)``: ``~`` expanded; a model that looks like a local path (see ``looks_local``)
  and is no directory is "no such model directory: PATH", before any Hugging Face call.
- ``check_sampling(...)``: sampling flags out of range (``--max-tokens -5``, ``--temperature -1``, top_p outside
  (0, 1], n < 1), checked before anything loads.
- ``check_output_file(path, option)`` / ``check_output_dir(path, option)``: an output path that cannot be one
  (a directory where a file goes, a device, FIFO or socket where a file goes - crossgym replaces or removes what it
  writes, and must never do that to /dev/null -, a file where a directory goes or above it) before any work starts.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task

TASK_FIELDS = tuple(f.name for f in dataclasses.fields(Task))

_HEAD = 1 << 16
_FIX = "save it as UTF-8, e.g. iconv -f {iconv} -t UTF-8 {name} > {stem}.utf8{suffix}"
_ICONV = {"UTF-16": "UTF-16", "UTF-32": "UTF-32", "Latin-1": "LATIN1", "Windows-1252": "CP1252"}


def guess_encoding(raw: bytes) -> str | None:
    """None when ``raw`` is UTF-8 (a cut multi-byte character at its end allowed), else a likely encoding's name."""
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "UTF-32"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16"
    head = raw[:4096]
    if len(head) >= 2 and head.count(0) * 4 >= len(head):  # ASCII text as UTF-16 is every other byte 0
        return "UTF-16"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 64]
        return "Windows-1252" if any(0x80 <= b <= 0x9F for b in bad) else "Latin-1"
    return None


def _encoding_error(where: str, enc: str) -> ConfigError:
    p = Path(where.rsplit(":", 1)[0] if where.rsplit(":", 1)[-1].isdigit() else where)
    fix = _FIX.format(iconv=_ICONV.get(enc, enc), name=p, stem=p.with_suffix(""), suffix=p.suffix)
    return ConfigError(f"not UTF-8 text (it looks like {enc})", where=where, fix=fix)


def _read_bytes(path: Path, what: str, fix_missing: str) -> bytes:
    if path.is_dir():
        raise ConfigError(f"is a directory, not a {what}", where=str(path), fix=f"pass the {what} itself")
    if not path.is_file():
        raise ConfigError(f"{what} not found", where=str(path), fix=fix_missing)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", where=str(path),
                          fix="check its permissions") from None


def read_user_text(path: str | Path, *, what: str = "file", fix_missing: str = "check the path") -> str:
    """The text of a file the user named; every way it cannot be read is one ConfigError line naming it."""
    p = Path(path)
    raw = _read_bytes(p, what, fix_missing)
    enc = guess_encoding(raw)
    if enc is not None:
        raise _encoding_error(str(p), enc)
    text = raw.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def is_user_file(value: str | Path) -> bool:
    """Whether ``value`` names an existing file. Text passed where a file or text may go can be far longer than a
    file name may be (ENAMETOOLONG) or hold a NUL: then it is text, not a file, and never an error."""
    try:
        return Path(value).expanduser().is_file()
    except (OSError, ValueError):
        return False


def load_user_json(text: str, where: str, *, fix: str) -> Any:
    """``json.loads(text)``; every way it fails (not JSON, too deep for the parser, an integer over Python's digit
    limit) is one ConfigError line naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", where=where,
                          fix=fix) from None
    except RecursionError:
        raise ConfigError("not readable JSON: it nests too deeply", where=where,
                          fix=f"{fix}, nested a few hundred levels at most") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise ConfigError(f"not readable JSON ({exc})", where=where, fix=f"{fix}; write a long number as a string") \
            from None


def decode_user_line(raw: bytes, where: str) -> str:
    """One line of a user's file, read as bytes; not UTF-8 is one ConfigError line naming ``where``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _encoding_error(where, guess_encoding(raw) or "Latin-1") from None
    return text[1:] if text.startswith("\ufeff") else text


def check_user_encoding(path: str | Path) -> None:
    """Refuse a file whose head is not UTF-8 (UTF-16 has no newline bytes a line reader could split on)."""
    p = Path(path)
    if not p.is_file():
        return
    try:
        with p.open("rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return
    enc = guess_encoding(head)
    if enc is not None:
        raise _encoding_error(str(p), enc)


def iter_user_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """(``"PATH:LINE"``, the parsed value) for each non-blank line of a user's JSONL file, streamed: not UTF-8, not
    JSON, too deep or an integer of thousands of digits is one ConfigError line naming the file and line."""
    check_user_encoding(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            line = decode_user_line(raw, where)
            if line.strip():
                yield where, load_user_json(line, where, fix="one JSON object per line")  # deep, huge ints too


def check_output_file(path: str | Path | None, option: str) -> None:
    """Refuse an output file path that is a directory or lies below a file, before any work starts."""
    if path is None:
        return
    p = Path(path).expanduser()
    if p.is_dir():
        raise ConfigError(f"{p} is a directory; a file is written here", where=option,
                          fix=f"name a file, e.g. {option} {p / 'out.jsonl'}")
    kind = _special_kind(p)
    if kind is not None:  # written to a temporary file then renamed over, or removed when empty: not a device's
        raise ConfigError(f"{p} is {kind}, not a regular file; crossgym writes a file of its own here", where=option,
                          fix="name a regular file (for the output on the terminal, leave the option out where "
                              "the command prints it)")
    _check_parents(p, option)


def _special_kind(p: Path) -> str | None:
    """What an existing path that is not a regular file (nor a link to one) is: "a device", "a FIFO"..."""
    import stat

    try:
        mode = p.stat().st_mode
    except OSError:
        return None  # absent (or a dangling link): created as a file
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_parents(p: Path, option: str) -> None:
    """``p``'s nearest existing folder is a folder this process may write in (and ``p``, where it exists, is
    writable): checked before the work, whose result was lost when only the write at its end failed (`compat --out`
    on a read-only file system ran its checks, then refused)."""
    import os

    if p.exists():
        if not os.access(p, os.W_OK):
            raise ConfigError(f"{p} is not writable (read-only, or another user's)", where=option,
                              fix="choose a path this user can write, or make it writable")
        return
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{parent} is a file, so {p} cannot be created below it", where=option,
                                  fix="choose a path whose folders are folders")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{parent} is not writable (read-only, or another user's), so {p} cannot be "
                                  "written there", where=option, fix="choose a folder this user can write in")
            break


def check_output_dir(path: str | Path | None, option: str, files: tuple[str, ...] = ()) -> None:
    """Refuse an output directory path that is an existing file or lies below one, before any work starts;
    ``files``: what is written in it, each refused where it is a device, FIFO or socket already."""
    if path is None:
        return
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{p} is a file; a directory is written here", where=option,
                          fix="name a directory that does not exist yet or already is one")
    _check_parents(p, option)
    for name in files:
        kind = _special_kind(p / name)
        if kind is not None:
            raise ConfigError(f"{p / name} is {kind}, not a regular file; crossgym writes its {name} there",
                              where=option, fix="remove it, or choose another directory")


def task_from_user_dict(doc: Any, where: str) -> Task:
    """A Task from a JSON object in a user's file; an unknown key or a missing/bad field is one ConfigError line."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"a task must be a JSON object, got {type(doc).__name__}", where=where,
                          fix="write one Task object per line (see `crossgym tasks`)")
    for key in doc:
        if key not in TASK_FIELDS:
            close = difflib.get_close_matches(str(key), [f for f in TASK_FIELDS if f not in doc], n=1, cutoff=0.6)
            fix = f"did you mean {close[0]!r}?" if close else f"a task's fields are {', '.join(TASK_FIELDS)}"
            raise ConfigError(f"unknown task field {key!r}", where=where, fix=fix)
    try:
        return Task.from_dict(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"not a valid task: {exc}", where=where,
                          fix="a task needs id, prompt and verifier, usually an answer (see `crossgym tasks`)") from None


#: the most samples per task one eval draws (pass@k up to k=10000, as in the repeated-sampling papers)
MAX_SAMPLES = 10_000


def check_sampling(*, temperature: float | None = None, max_tokens: int | None = None, top_p: float | None = None,
                   n: int | None = None, prefix: str = "--") -> None:
    """Refuse sampling numbers out of range (flags use ``--name``; pass ``prefix=""`` for config fields)."""
    def bad(name: str, value: object, rule: str, example: str) -> ConfigError:
        opt = f"{prefix}{name.replace('_', '-') if prefix else name}"
        return ConfigError(f"must be {rule}, got {value}", where=opt, fix=f"e.g. {opt} {example}")

    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise bad("temperature", temperature, ">= 0 (0 is greedy)", "0.7")
    if top_p is not None and not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise bad("top_p", top_p, "in (0, 1]", "0.95")
    if max_tokens is not None and max_tokens < 1:
        raise bad("max_tokens", max_tokens, ">= 1", "256")
    if n is not None and not 1 <= n <= MAX_SAMPLES:
        raise bad("n", n, f"in 1..{MAX_SAMPLES} (samples per task)", "4")


MODEL_FIX = ("pass a model directory that exists, or a hub id such as Qwen/Qwen2.5-0.5B-Instruct; for a small local "
             "one, `python examples/demo/smollm2.py` prints the demo's directory once make demo has run")


def looks_local(model: str) -> bool:
    """Whether a model string names a local path rather than a hub id ("org/name"): it starts with ./ ../ / or ~,
    has more than one "/", or its first folder exists here (runs/smollm2 where runs/ exists)."""
    m = model.replace(os.sep, "/")
    if m in (".", "..") or m.startswith(("./", "../", "/", "~")) or m.count("/") > 1:
        return True
    head, sep, _ = m.partition("/")
    return bool(sep) and bool(head) and Path(head).is_dir()


def check_model_path(model: str | None, where: str) -> str | None:
    """The model with ``~`` expanded; a local-looking path that is not a directory is one ConfigError line."""
    if not model:
        return model
    expanded = os.path.expanduser(model)
    p = Path(expanded)
    if p.is_dir():
        return expanded
    if p.exists():
        raise ConfigError(f"{expanded} is a file; a model is a directory (config.json, weights, tokenizer)",
                          where=where, fix=MODEL_FIX)
    if looks_local(model):
        raise ConfigError(f"no such model directory: {expanded}", where=where, fix=MODEL_FIX)
    return model
