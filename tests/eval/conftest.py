"""tests/eval: engine_server (tests/inference) is importable; hf_engine and test_plugin come from tests/conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "inference"))
