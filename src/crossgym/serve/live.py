"""`crossgym serve` in a thread of this process, on a free 127.0.0.1 port: for the compat suite's route checks and
the tests (a client in the same venv talks HTTP to a real uvicorn server, nothing faked)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from crossgym.serve.settings import ServeSettings


class LiveServer:
    """uvicorn serving create_app(settings) on a free 127.0.0.1 port; a context manager."""

    def __init__(self, settings: ServeSettings | None = None, *, start_timeout: float = 30.0) -> None:
        import uvicorn

        from crossgym.serve.app import create_app
        from crossgym.serve.protocol import uvicorn_config

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.start_timeout = start_timeout
        settings = settings or ServeSettings()
        self.server = uvicorn.Server(uvicorn_config(create_app(settings), settings))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="crossgym-live-server")

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                self.sock.close()
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()
