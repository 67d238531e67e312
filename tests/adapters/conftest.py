"""Fixtures shared by every adapter's tests (each backend's own venv runs them)."""

from __future__ import annotations

import pytest
from final_reply_env import FinalReplyPlugin

from crossgym.plugins import register_plugin, unregister_plugin


@pytest.fixture
def final_reply_plugin():  # type: ignore[no-untyped-def]
    """Registers the test_final_reply environment (reward only in its reply to the last action) for one test."""
    plugin = FinalReplyPlugin()
    register_plugin(plugin)
    yield plugin
    unregister_plugin(plugin)
