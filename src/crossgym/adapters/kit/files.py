"""A run's generated files: written where the Plan said (train only; plan writes nothing), the launch script that
runs the same command by hand, and how a Plan shows a file too big to inline."""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crossgym.adapters.kit.rows import chunked


@dataclass(frozen=True)
class LineFile:
    """A generated line-oriented file (a JSONL dataset) too big to hold as one string: ``rows`` lines, each ending
    in a newline, produced on demand (each call of ``lines`` a fresh iterator), written in bounded chunks by
    write_files and shown by describe_lines from its first lines only."""

    lines: Callable[[], Iterable[str]]
    rows: int

    def text(self) -> str:
        return "".join(self.lines())


def write_files(files: Mapping[str, str | LineFile]) -> list[Path]:
    """Write each absolute path's text (parents made; ``.sh`` files made executable); a LineFile is streamed in
    chunks to a partial file that replaces the path when complete. Returns the paths."""
    written = []
    for path, text in files.items():
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, LineFile):
            partial = p.with_name(p.name + ".partial")
            with partial.open("w", encoding="utf-8") as f:
                for chunk in chunked(text.lines()):
                    f.write("".join(chunk))
            partial.replace(p)
        else:
            p.write_text(text, encoding="utf-8")
        if p.suffix == ".sh":
            p.chmod(0o755)
        written.append(p)
    return written


def launch_script(argv: Sequence[str], *, comment: Iterable[str] = (), workdir: str | None = None,
                  python_var: bool = False, pass_args: bool = False) -> str:
    """A bash script that runs ``argv``: ``comment`` lines first, then ``cd workdir`` when given. ``python_var``:
    the first word becomes ``"${PYTHON:-<it>}"``; ``pass_args``: the script's own arguments are appended."""
    words = [shlex.quote(a) for a in argv]
    if python_var and words:
        words[0] = f'"${{PYTHON:-{argv[0]}}}"'
    head = "".join(f"# {line}\n" for line in comment)
    cd = f"cd {shlex.quote(workdir)}\n" if workdir else ""
    tail = ' "$@"' if pass_args else ""
    return f"#!/usr/bin/env bash\n{head}set -euo pipefail\n{cd}exec " + " \\\n  ".join(words) + tail + "\n"


def describe_lines(text: str | LineFile, *, show: int = 2) -> str:
    """A Plan's view of a line-oriented file (JSONL): its line count and first lines (train writes it whole; a
    LineFile's other lines are never built)."""
    if isinstance(text, LineFile):
        count = text.rows
        lines = [line.rstrip("\n") for line in itertools.islice(text.lines(), show)]
    else:
        lines = text.splitlines()
        count = len(lines)
    head = "\n".join(lines[:show])
    return f"# {count} rows; the first {min(show, count)}:\n{head}\n" if count else "# 0 rows\n"
