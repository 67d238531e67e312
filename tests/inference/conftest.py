"""Fixtures: a 127.0.0.1 server answering from the tiny model's hf engine (hf_engine: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def engine_server(hf_engine) -> Iterator:  # type: ignore[no-untyped-def]
    from engine_server import EngineServer

    server = EngineServer(hf_engine).start()
    yield server
    server.stop()
