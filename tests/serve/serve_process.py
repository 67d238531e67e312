"""`crossgym serve` as a child process on a free 127.0.0.1 port, for clients that run in other venvs."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def server_python() -> str:
    """An interpreter with the serve extra: this one, else the project's .venv (skip when neither has it)."""
    for py in (sys.executable, str(ROOT / ".venv/bin/python")):
        if Path(py).exists() and subprocess.run([py, "-c", "import fastapi, uvicorn, crossgym"],
                                                capture_output=True, timeout=120).returncode == 0:
            return py
    pytest.skip("no interpreter with fastapi and uvicorn to run `crossgym serve` (pip install 'crossgym[serve]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(*args: str, timeout: float = 120.0) -> Iterator[str]:
    """Start `crossgym serve` (extra CLI args), wait for /health, yield its URL, stop it."""
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("CROSSGYM_TOKEN", None)
    proc = subprocess.Popen([server_python(), "-m", "crossgym.cli", "serve", "--host", "127.0.0.1", "--port",
                             str(port), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"crossgym serve exited: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("crossgym serve did not answer /health in time")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
