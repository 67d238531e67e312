"""docs/sandbox.md: its Python samples run as written."""

from __future__ import annotations

import re
from pathlib import Path

from crossgym.sandbox import close_all

PAGE = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"


def test_samples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    try:
        for block in blocks:
            exec(compile(block, str(PAGE), "exec"), {"__name__": "docs_sample"})  # noqa: S102 - our own docs
    finally:
        close_all()
