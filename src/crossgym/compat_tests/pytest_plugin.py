"""Fixtures, options and parametrization behind the suite classes (registered by ``-p crossgym.compat_tests``).

Parametrization: a suite test that takes ``verifier_name`` runs once per verifier (the class's ``verifiers``, else
``--crossgym-verifier``, else every registered verifier) unless the class defines its own ``verifier_name``
fixture; likewise ``backend_name`` (class ``backends``, ``--crossgym-backend``, every registered backend),
``parity_mode``, ``plan_config``, ``env_check`` and, for classes with ``builtin_cases = True``, ``env_case``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from crossgym.compat_tests.corpus import CORPUS_ENV, default_corpus_dir
from crossgym.compat_tests.drivers import INSTALLED, BackendInfo, inspect_backend

MODES = ("single_turn", "multi_turn")


def add_options(parser: Any) -> None:
    group = parser.getgroup("crossgym", "crossgym compatibility suite")
    group.addoption("--crossgym-backend", action="append", default=[], metavar="NAME",
                    help="backend(s) the parity, plan and token suites check (default: every registered backend)")
    group.addoption("--crossgym-verifier", action="append", default=[], metavar="NAME",
                    help="verifier(s) the conformance and parity suites check (default: every registered verifier)")
    group.addoption("--crossgym-corpus", default=None, metavar="DIR",
                    help=f"frozen corpus folder (default: ${CORPUS_ENV} or the checkout's tests/compat/corpus)")
    group.addoption("--crossgym-garbage-tasks", type=int, default=None, metavar="N",
                    help="score the garbage corpus on N example tasks per verifier (default: the class's value)")


def option(config: Any, name: str, default: Any = None) -> Any:
    """An option's value; ``default`` when the plugin's options were not added (a conftest import)."""
    try:
        value = config.getoption(name)
    except ValueError:
        return default
    return default if value in (None, []) else value


def _registered(kind: str) -> list[str]:
    from crossgym.plugins.manager import registry

    return registry(kind).names()


def verifier_names(config: Any, cls: Any) -> list[str]:
    return list(getattr(cls, "verifiers", None) or option(config, "--crossgym-verifier") or _registered("verifiers"))


def backend_names(config: Any, cls: Any) -> list[str]:
    return list(getattr(cls, "backends", None) or option(config, "--crossgym-backend") or _registered("backends"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from crossgym.compat_tests.suites import Suite

    cls = metafunc.cls
    if cls is None or not issubclass(cls, Suite):
        return
    names = metafunc.fixturenames
    config = metafunc.config
    if "verifier_name" in names and not hasattr(cls, "verifier_name"):
        vs = verifier_names(config, cls)
        metafunc.parametrize("verifier_name", vs, ids=vs)
    if "backend_name" in names and not hasattr(cls, "backend_name"):
        bs = backend_names(config, cls)
        metafunc.parametrize("backend_name", bs, ids=bs)
    if "parity_mode" in names:
        modes = list(getattr(cls, "modes", None) or MODES)
        metafunc.parametrize("parity_mode", modes, ids=modes)
    if "plan_config" in names:
        from crossgym.compat_tests.plans import representative_configs

        configs = list(getattr(cls, "configs", None) or ())
        if not configs:  # only the names are needed here: build them in a scratch folder, never the cwd
            with tempfile.TemporaryDirectory(prefix="crossgym-compat-names-") as tmp:
                configs = list(representative_configs(Path(tmp), "m"))
        metafunc.parametrize("plan_config", configs, ids=configs)
    if "env_check" in names:
        from crossgym.compat_tests.env_checks import check_names

        skip = set(getattr(cls, "skip_checks", ()) or ())
        checks = [c for c in check_names() if c not in skip]
        metafunc.parametrize("env_check", checks, ids=checks)
    if "env_case" in names and not hasattr(cls, "env_case") and getattr(cls, "builtin_cases", False):
        from crossgym.compat_tests.env_checks import builtin_env_cases

        cases = builtin_env_cases()
        metafunc.parametrize("env_case", cases, ids=[c.name for c in cases])


@pytest.fixture(scope="session")
def compat_cache() -> dict[Any, Any]:
    """Results shared by the tests of one session (a batched parity call answers every verifier's test)."""
    return {}


@pytest.fixture(scope="session")
def compat_corpus_dir(request: pytest.FixtureRequest) -> Path | None:
    """The frozen corpus folder (``--crossgym-corpus``, $CROSSGYM_COMPAT_CORPUS, or the checkout's)."""
    explicit = option(request.config, "--crossgym-corpus") or os.environ.get(CORPUS_ENV)
    return default_corpus_dir(explicit)


@pytest.fixture
def compat_backend(backend_name: str, compat_cache: dict[Any, Any]) -> BackendInfo:
    """The backend as the suite sees it; the test is skipped (with the install command) when it cannot run here."""
    key = ("backend", backend_name)
    if key not in compat_cache:
        compat_cache[key] = inspect_backend(backend_name)
    info: BackendInfo = compat_cache[key]
    if info.status != INSTALLED:
        hint = f"; install: {info.install}" if info.install else ""
        pytest.skip(f"backend {backend_name} {info.status.replace('_', ' ')}: {info.reason}{hint}")
    return info
