"""crossgym.compat_tests: the shipped compatibility suite.

* ``crossgym compat`` (``runner.py``) runs every check on what is installed here and prints the verifier x backend
  matrix; ``python -m crossgym.compat_tests.merge`` joins matrices from several venvs.
* This module is also a pytest plugin: ``pytest -p crossgym.compat_tests`` adds ``--crossgym-backend NAME``,
  ``--crossgym-verifier NAME``, ``--crossgym-corpus DIR`` and ``--crossgym-garbage-tasks N``, and the fixtures
  the suite classes use. Subclass a suite in a ``Test*`` class, declare what you test (``verifiers = [...]``,
  ``backends = [...]``, an ``env_case`` fixture) and your capabilities; or run the standard classes as they are:
  ``pytest -p crossgym.compat_tests --pyargs crossgym.compat_tests.standard``. See docs/compat.md.

Importing this package imports neither pytest nor any framework; the suite classes load on first access.
"""

from __future__ import annotations

from typing import Any

_SUITES = ("VerifierConformance", "RewardParity", "EnvironmentConformance", "PlanValidity", "TokenConsistency")
__all__ = list(_SUITES)


def __getattr__(name: str) -> Any:
    if name in _SUITES:
        from crossgym.compat_tests import suites

        return getattr(suites, name)
    raise AttributeError(f"module 'crossgym.compat_tests' has no attribute {name!r}")


def pytest_addoption(parser: Any) -> None:
    """The suite's command-line options (see the module docstring)."""
    from crossgym.compat_tests.pytest_plugin import add_options

    add_options(parser)


def pytest_configure(config: Any) -> None:
    """Register the suite's fixtures and parametrization once per session."""
    from crossgym.compat_tests import pytest_plugin

    if not config.pluginmanager.is_registered(pytest_plugin):
        config.pluginmanager.register(pytest_plugin, "crossgym-compat-fixtures")
