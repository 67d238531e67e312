"""Fixtures for the TRL backend tests: test plugins registered through the public hook, small run configs."""

from __future__ import annotations

import pytest
from trl_test_plugins import TestPlugin

from crossgym.plugins import register_plugin, unregister_plugin


@pytest.fixture
def test_plugin():
    """Registers test_contains / test_short verifiers and the test_calc environment for one test."""
    plugin = TestPlugin()
    register_plugin(plugin)
    yield plugin
    unregister_plugin(plugin)
