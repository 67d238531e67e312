"""Docs: the generated reference is current, Python samples run, and the site builds with warnings as errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_generated_reference_is_current() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/gen_reference.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


PAGES_WITH_RUNNABLE_SAMPLES = ["guides/plugins.md", "guides/writing-a-backend.md"]  # environments.md: tests/environments/test_docs_samples.py


@pytest.mark.parametrize("page", PAGES_WITH_RUNNABLE_SAMPLES)
def test_python_samples_run(page: str) -> None:
    """Each page's Python blocks run in order in one namespace (plugin registration blocks are only compiled)."""
    namespace: dict[str, object] = {"__name__": "docs_sample"}
    blocks = _python_blocks(DOCS / page)
    assert blocks, f"{page} has no python samples"
    for block in blocks:
        code = compile(block, f"{page}", "exec")
        if "@hookimpl" in block:
            continue  # registration needs an installed package; tests/plugins covers the mechanism
        exec(code, namespace)  # noqa: S102 - our own docs
    verifier_cls = namespace.get("Shout")
    if verifier_cls is not None:
        from crossgym.verifiers.selfcheck import check_verifier  # noqa: F401

        for ex in verifier_cls.examples():  # type: ignore[attr-defined]
            verdict = verifier_cls().verify(ex.task, ex.completion)  # type: ignore[operator]
            assert ex.matches(verdict), (ex.expect, verdict)


def test_readme_python_sample_runs() -> None:
    blocks = _python_blocks(ROOT / "README.md")
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102


@pytest.mark.skipif(shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="mkdocs is not installed (pip install 'crossgym[dev]')")
def test_site_builds_strict(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
