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


class FreshRun:
    """A fresh interpreter scoring ``pairs`` in the background (started now; ``result()`` waits for it), so the
    caller's own checks run meanwhile on the other core."""

    def __init__(self, pairs: Sequence[tuple[Task, Completion]]) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="crossgym-fresh-")
        self._src, self._dst = Path(self._tmp.name) / "in.json", Path(self._tmp.name) / "out.json"
        doc = {"plugins": in_process_plugin_modules(),
               "pairs": [{"task": t.to_dict(), "completion": c.to_dict()} for t, c in pairs]}
        self._src.write_text(json.dumps(doc, ensure_ascii=True), encoding="ascii")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._proc = subprocess.Popen([sys.executable, "-m", "crossgym.compat_tests.fresh", str(self._src),
                                       str(self._dst)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=env)

    def result(self, timeout: float = FRESH_TIMEOUT_S) -> list[dict[str, Any]]:
        """One verdict dict per pair (or ``{"build_error": ...}`` where the child could not build the verifier)."""
        try:
            out_text, err_text = self._proc.communicate(timeout=timeout)
            if self._proc.returncode != 0 or not self._dst.is_file():
                tail = (err_text or out_text).strip().splitlines()[-3:]
                raise RuntimeError(f"fresh interpreter exited {self._proc.returncode}: {' | '.join(tail)}")
            out: list[dict[str, Any]] = json.loads(self._dst.read_text(encoding="ascii"))
            return out
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._tmp.cleanup()


def verdicts_in_fresh_process(pairs: Sequence[tuple[Task, Completion]]) -> list[dict[str, Any]]:
    """One verdict dict per pair (or ``{"build_error": ...}`` where the child could not build the verifier)."""
    return FreshRun(pairs).result()


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
