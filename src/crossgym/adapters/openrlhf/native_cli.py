"""OpenRLHF's own argument parsing and validation for `train_ppo_ray`, run without importing the module.

``openrlhf.cli.train_ppo_ray`` imports ray, vLLM and the trainers at module level, so it cannot be imported on a
machine without vLLM. Its parser, though, is built and checked entirely inside ``if __name__ == "__main__":``. We
read the installed module's source, take that block's statements and execute them as they are, with
``sys.argv`` set to our argv and the final ``train(args)`` call captured instead of run. ``hierarchize`` comes from
OpenRLHF's own ``openrlhf/utils/config.py``, loaded by file path so that its package's heavy ``__init__`` is not
imported. Nothing is copied: a flag OpenRLHF renames or an assertion it adds shows up here.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import datetime
import importlib.util
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, ConfigError

INSTALL = "pip install --no-deps openrlhf==0.11.2 (see docs/backends/openrlhf.md)"


@dataclass(frozen=True)
class NativeArgs:
    """What OpenRLHF's own main block made of an argv: the hierarchized args it would train with and its prints."""

    args: Any
    printed: str


def package_dir() -> Path:
    """The installed openrlhf package folder (found without importing it)."""
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable("openrlhf", "the openrlhf package is not installed", INSTALL)
    return Path(next(iter(spec.submodule_search_locations)))


def _main_block(tree: ast.Module) -> list[ast.stmt]:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__":
            return list(node.body)
    raise BackendUnavailable("openrlhf", "train_ppo_ray.py has no `if __name__ == \"__main__\":` block; "
                             "this OpenRLHF version is not supported", "pip install --no-deps openrlhf==0.11.2")


class _DropConfigImport(ast.NodeTransformer):
    """Removes ``from openrlhf.utils.config import hierarchize`` (provided from the file itself instead)."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        if node.module == "openrlhf.utils.config":
            return ast.Pass()
        return node


def _load_hierarchize(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_crossgym_openrlhf_config", root / "utils" / "config.py")
    if spec is None or spec.loader is None:
        raise BackendUnavailable("openrlhf", "openrlhf/utils/config.py is missing", INSTALL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.hierarchize


def _free_names(body: list[ast.stmt]) -> set[str]:
    """Names the block reads but never binds (module globals it relies on)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                (bound if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
    return loaded - bound - set(dir(builtins))


def parse_native(argv: Sequence[str], *, entry: str = "cli/train_ppo_ray.py") -> NativeArgs:
    """Run OpenRLHF's own parser and checks on ``argv`` (flags only); ConfigError with its message if refused."""
    root = package_dir()
    path = root / entry
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    body = [_DropConfigImport().visit(s) for s in _main_block(tree)]
    captured: list[Any] = []
    env: dict[str, Any] = {"__name__": "_crossgym_openrlhf_cli", "argparse": argparse, "os": os,
                           "datetime": datetime.datetime, "hierarchize": _load_hierarchize(root),
                           "train": captured.append}
    missing = _free_names(body) - set(env)
    if missing:
        raise BackendUnavailable("openrlhf", f"{entry}'s main block needs {', '.join(sorted(missing))}, which "
                                 "crossgym does not provide; this OpenRLHF version is not supported",
                                 "pip install --no-deps openrlhf==0.11.2")
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    code = compile(module, str(path), "exec")
    out, err = io.StringIO(), io.StringIO()
    old_argv = sys.argv
    sys.argv = [str(path), *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(code, env)  # noqa: S102 - OpenRLHF's own installed source, not user input
    except SystemExit:
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        raise ConfigError(f"OpenRLHF's argument parser refused the command line: {lines[-1] if lines else '?'}",
                          where="backend_args", fix="check the flag names against `python -m "
                          "openrlhf.cli.train_ppo_ray --help` (dotted, e.g. vllm.num_engines)") from None
    except AssertionError as exc:
        raise ConfigError(f"OpenRLHF's argument checks failed: {exc}", where="grpo / backend_args",
                          fix="change the settings it names") from None
    finally:
        sys.argv = old_argv
    if not captured:
        raise BackendUnavailable("openrlhf", f"{entry}'s main block did not reach train(args)", INSTALL)
    return NativeArgs(args=captured[0], printed=out.getvalue())
