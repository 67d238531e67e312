"""Fixtures: the tiny model's hf engine and the test plugin (shared with tests/rollout)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "rollout"))
sys.path.insert(0, str(HERE.parent / "inference"))


@pytest.fixture(scope="session")
def hf_engine(tiny_model_dir):  # type: ignore[no-untyped-def]
    from crossgym.inference.hf import HFEngine

    return HFEngine(tiny_model_dir, batch_size=16).load()


@pytest.fixture
def test_plugin():  # type: ignore[no-untyped-def]
    import fixtures_plugin

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = fixtures_plugin.Plugin()
    register_plugin(plugin)
    yield fixtures_plugin
    unregister_plugin(plugin)
