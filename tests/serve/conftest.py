"""Serve fixtures: a real uvicorn server on 127.0.0.1 and a test plugin (make_client: tests/conftest.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from crossgym.serve.settings import ServeSettings


def _need_serve() -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'crossgym[serve]')")
    pytest.importorskip("uvicorn", reason="the serve extra is not installed (pip install 'crossgym[serve]')")


@pytest.fixture
def client(make_client: Callable[..., Any]) -> Any:
    return make_client()


class LiveServer:
    """uvicorn serving create_app(settings) on a free 127.0.0.1 port, in a thread of this process."""

    def __init__(self, settings: ServeSettings) -> None:
        import uvicorn

        from crossgym.serve.app import create_app

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False, backlog=2048,
                                timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


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
