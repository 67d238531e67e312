"""Score (task, completion) pairs in a new interpreter, rebuilding each verifier from its spec through the registry.

This is how a backend's worker sees a verifier: only the VerifierSpec crosses the process boundary. Plugins that a
test registered in-process (``crossgym.plugins.register_plugin``) are re-registered in the child when they are
importable modules; ``CROSSGYM_COMPAT_PLUGINS=mod1,mod2`` adds more.

    python -m crossgym.compat_tests.fresh IN.json OUT.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from crossgym.protocol.task import Completion, Task

PLUGINS_ENV = "CROSSGYM_COMPAT_PLUGINS"
#: a fresh interpreter that takes longer than this to score a batch is reported as an error
FRESH_TIMEOUT_S = 300.0


def in_process_plugin_modules() -> list[str]:
    """Names of plugin modules registered in this process with ``register_plugin`` (re-registered in the child)."""
    from crossgym.plugins import manager

    names = [obj.__name__ for obj in getattr(manager, "_extra_plugins", []) if isinstance(obj, ModuleType)]
    names += [n for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    return list(dict.fromkeys(n.strip() for n in names))


def verdicts_in_fresh_process(pairs: Sequence[tuple[Task, Completion]]) -> list[dict[str, Any]]:
    """One verdict dict per pair (or ``{"build_error": ...}`` where the child could not build the verifier)."""
    with tempfile.TemporaryDirectory(prefix="crossgym-fresh-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        doc = {"plugins": in_process_plugin_modules(),
               "pairs": [{"task": t.to_dict(), "completion": c.to_dict()} for t, c in pairs]}
        src.write_text(json.dumps(doc, ensure_ascii=True), encoding="ascii")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        proc = subprocess.run([sys.executable, "-m", "crossgym.compat_tests.fresh", str(src), str(dst)],
                              capture_output=True, text=True, timeout=FRESH_TIMEOUT_S, env=env, check=False)
        if proc.returncode != 0 or not dst.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"fresh interpreter exited {proc.returncode}: {' | '.join(tail)}")
        out: list[dict[str, Any]] = json.loads(dst.read_text(encoding="ascii"))
    return out


def _main(argv: list[str]) -> int:
    import importlib

    from crossgym.api import load_verifier
    from crossgym.plugins import register_plugin

    src, dst = Path(argv[0]), Path(argv[1])
    doc = json.loads(src.read_text(encoding="ascii"))
    for mod in doc.get("plugins", []):
        register_plugin(importlib.import_module(mod))
    out: list[dict[str, Any]] = []
    for pair in doc["pairs"]:
        task, completion = Task.from_dict(pair["task"]), Completion.from_dict(pair["completion"])
        try:
            verifier = load_verifier(task.verifier)
        except Exception as exc:
            out.append({"build_error": f"cannot build {task.verifier.name!r}: {type(exc).__name__}: {exc}"})
            continue
        out.append(verifier.verify(task, completion).to_dict())
    dst.write_text(json.dumps(out, ensure_ascii=True), encoding="ascii")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
