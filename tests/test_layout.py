"""House rules that keep the suite and the package importable: unique test basenames, light base imports."""

from __future__ import annotations

import subprocess
import sys
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
            "'fastapi', 'datasets', 'verifiers', 'openenv', 'openai', 'anthropic', 'data_designer'}; print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"
