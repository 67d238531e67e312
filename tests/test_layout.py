"""House rules that keep the suite and the package importable: unique test basenames, light base imports.

The static import rules of DESIGN.md (protocol/ imports nothing of crossgym, only adapters/ and inference/ import a
framework, layers point down) are import-linter contracts in pyproject.toml, run by `make lint`. What a linter of
import graphs cannot see stays here: what `import crossgym` loads at run time, and that adapters/ and inference/
import their frameworks inside functions.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique() -> None:
    """pytest's rootdir import mode needs unique basenames across tests/ (there are no __init__.py files)."""
    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []


def test_import_crossgym_and_list_stay_framework_free() -> None:
    """`import crossgym` and the catalog import no torch, training framework, pydantic-heavy server, ray or interop
    package (a bridge module imports its framework inside functions: `crossgym list` loads verifier classes)."""
    code = ("import sys, crossgym, crossgym.catalog; crossgym.catalog.catalog(); "
            "heavy = {'torch', 'trl', 'transformers', 'verl', 'openrlhf', 'unsloth', 'vllm', 'sglang', 'ray', "
            "'fastapi', 'datasets', 'verifiers', 'openenv', 'openai', 'anthropic', 'data_designer', 'skyrl', "
            "'skyrl_gym'}; print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"


FRAMEWORKS = {"torch", "trl", "verl", "openrlhf", "unsloth", "unsloth_zoo", "vllm", "sglang", "skyrl", "skyrl_gym"}
# loaded only by the frameworks' own processes (veRL's agent-loop and tool registries, skyrl_gym.make), never by
# crossgym's
FRAMEWORK_SIDE = {"src/crossgym/adapters/verl/agent_loop.py", "src/crossgym/adapters/verl/tools.py",
                  "src/crossgym/adapters/skyrl/gym_env.py"}


class _ImportTimeImports(ast.NodeVisitor):
    """Framework imports that run when a module is imported: outside functions and TYPE_CHECKING blocks."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        pass  # runs when called, not when imported

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self._add(node.lineno, [a.name for a in node.names])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._add(node.lineno, [node.module])

    def _add(self, line: int, modules: list[str]) -> None:
        self.found += [f"line {line}: {m}" for m in modules if m.split(".")[0] in FRAMEWORKS]


def test_adapters_and_inference_import_frameworks_inside_functions() -> None:
    """DESIGN.md: adapters/ and inference/ import torch, trl, verl, ... inside functions, so that importing a backend
    or an engine module (plan, list, check) works on the base install; only modules that the framework itself loads
    may import it at module level."""
    src = ROOT / "src" / "crossgym"
    offenders: dict[str, list[str]] = {}
    for path in sorted([*(src / "adapters").rglob("*.py"), *(src / "inference").rglob("*.py")]):
        visitor = _ImportTimeImports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        if visitor.found:
            offenders[str(path.relative_to(ROOT))] = visitor.found
    assert set(offenders) - FRAMEWORK_SIDE == set(), {k: v for k, v in offenders.items() if k not in FRAMEWORK_SIDE}
    assert FRAMEWORK_SIDE <= set(offenders), "a framework-side module no longer needs its entry in FRAMEWORK_SIDE"


def test_import_contracts_name_every_top_level_module() -> None:
    """The import-linter contracts that list modules by hand (pyproject.toml) keep up with src/crossgym: protocol/
    may import no other module of crossgym, and only adapters/ and inference/ may import a framework."""
    src = ROOT / "src" / "crossgym"
    top = {p.stem if p.suffix == ".py" else p.name for p in src.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    contracts = {c["name"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                 ["contracts"]}
    protocol = next(c for n, c in contracts.items() if n.startswith("protocol/ is the contract"))
    framework = next(c for n, c in contracts.items() if n.startswith("only adapters/ and inference/"))
    assert {m.removeprefix("crossgym.") for m in protocol["forbidden_modules"]} == top - {"protocol"}
    assert {m.removeprefix("crossgym.") for m in framework["source_modules"]} == top - {"adapters", "inference"}
