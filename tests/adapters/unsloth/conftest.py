"""Fixtures for the Unsloth backend tests. The mapping tests run everywhere; the rest need unsloth and run in the
`unsloth` nox venv (unsloth==2026.10.9 with its own trl/transformers pins), skipping elsewhere."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("unsloth") is not None:
    import unsloth  # noqa: F401  (before transformers, peft and trl load: it patches them)


@pytest.fixture
def needs_unsloth() -> None:
    pytest.importorskip("unsloth", reason="runs in the unsloth nox venv (`nox -s unsloth`)")
