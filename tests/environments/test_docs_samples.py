"""docs/environments.md: its Python samples run, and its tables name every registered environment and source."""

from __future__ import annotations

import re
from pathlib import Path

from crossgym.plugins import registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "environments.md"


def test_python_samples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 3
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), {"__name__": "docs_sample"})  # noqa: S102 - our own docs


def test_every_environment_and_source_is_documented() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for kind in ("environments", "task_sources"):
        for name in registry(kind).names():
            assert f"`{name}`" in text, f"{kind[:-1]} {name!r} is missing from docs/environments.md"
