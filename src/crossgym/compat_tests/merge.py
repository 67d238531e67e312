"""Merge compat matrices from several venvs into one, as `make test` does:

    python -m crossgym.compat_tests.merge a.json b.json -o compat-matrix.json --html compat-matrix.html

Exits 1 when the merged matrix is not ok (a measured reward differs or a check failed), 2 on a bad input file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from crossgym.compat_tests.matrix import merge


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m crossgym.compat_tests.merge", description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", type=Path, help="matrix JSON files (crossgym compat --out FILE)")
    ap.add_argument("-o", "--out", type=Path, required=True, help="where to write the merged JSON")
    ap.add_argument("--html", type=Path, help="also write an HTML report here")
    ap.add_argument("--quiet", action="store_true", help="do not print the table")
    args = ap.parse_args(argv)
    docs = []
    for p in args.inputs:
        try:
            docs.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"crossgym: error: {p}: not a readable compat matrix ({exc}) (fix: run "
                             f"`crossgym compat --out {p}` in that venv)\n")
            return 2
    try:
        doc = merge(docs)
    except ValueError as exc:
        sys.stderr.write(f"crossgym: error: {exc} (fix: give files written by `crossgym compat --out`)\n")
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    if args.html:
        from crossgym.compat_tests.render import render_html

        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(render_html(doc), encoding="utf-8")
    if not args.quiet:
        from crossgym.compat_tests.render import render_text

        render_text(doc)
    return 0 if doc["summary"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
