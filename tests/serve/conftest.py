"""Serve fixtures: a real uvicorn server on 127.0.0.1 and a test plugin (make_client: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from crossgym.serve.live import LiveServer
from crossgym.serve.settings import ServeSettings


def _need_serve() -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'crossgym[serve]')")
    pytest.importorskip("uvicorn", reason="the serve extra is not installed (pip install 'crossgym[serve]')")


@pytest.fixture
def client(make_client: Callable[..., Any]) -> Any:
    return make_client()


@pytest.fixture
def live_server() -> Iterator[Callable[..., LiveServer]]:
    """live_server(**settings) -> a running LiveServer (stopped after the test)."""
    _need_serve()
    servers: list[LiveServer] = []

    def make(**kwargs: Any) -> LiveServer:
        s = LiveServer(ServeSettings(**kwargs)).__enter__()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.__exit__(None, None, None)


@pytest.fixture
def sleepy_plugin() -> Iterator[Any]:
    import serve_fixtures

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = serve_fixtures.Plugin()
    register_plugin(plugin)
    yield serve_fixtures
    unregister_plugin(plugin)
