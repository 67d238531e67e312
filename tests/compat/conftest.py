"""The compat suite's own fixtures (as `-p crossgym.compat_tests` would register them) and the fake plugins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crossgym.compat_tests.pytest_plugin import (  # noqa: F401  (fixtures and parametrization for suite classes)
    compat_backend,
    compat_cache,
    compat_corpus_dir,
    pytest_generate_tests,
)


@pytest.fixture
def fakes() -> Iterator[object]:
    """tests/compat/compat_fakes.py registered in-process for one test."""
    import compat_fakes

    from crossgym.plugins import register_plugin, unregister_plugin

    register_plugin(compat_fakes)
    yield compat_fakes
    unregister_plugin(compat_fakes)
