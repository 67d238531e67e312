"""A run's generated files: written where the Plan said (train only; plan writes nothing), the launch script that
runs the same command by hand, and how a Plan shows a file too big to inline."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


def write_files(files: Mapping[str, str]) -> list[Path]:
    """Write each absolute path's text (parents made; ``.sh`` files made executable); returns the paths."""
    written = []
    for path, text in files.items():
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
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


def describe_lines(text: str, *, show: int = 2) -> str:
    """A Plan's view of a line-oriented file (JSONL): its line count and first lines (train writes it whole)."""
    lines = text.splitlines()
    head = "\n".join(lines[:show])
    return f"# {len(lines)} rows; the first {min(show, len(lines))}:\n{head}\n" if lines else "# 0 rows\n"
