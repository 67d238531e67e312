"""`import crossgym` and `crossgym list` stay free of the serve and Ray dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

CODE = """
import io, json, sys, contextlib
import crossgym
from crossgym.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["list", "--json"])
    except SystemExit as exc:
        assert not exc.code, exc.code
assert "verifiers" in json.loads(out.getvalue())
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("fastapi", "starlette", "uvicorn", "ray", "orjson",
                                                              "httptools", "uvloop", "schemathesis"))
print(json.dumps(heavy))
"""


def test_import_and_list_do_not_load_serve_or_ray() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
