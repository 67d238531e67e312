"""The compat suite's own fixtures (as `-p crossgym.compat_tests` would register them) and the fake plugins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Activate the suite's fixtures as `-p crossgym.compat_tests` does (once, even when both are used)."""
    from crossgym.compat_tests import pytest_configure as activate

    activate(config)


@pytest.fixture
def fakes() -> Iterator[object]:
    """tests/compat/compat_fakes.py registered in-process for one test."""
    import compat_fakes

    from crossgym.plugins import register_plugin, unregister_plugin

    register_plugin(compat_fakes)
    yield compat_fakes
    unregister_plugin(compat_fakes)
