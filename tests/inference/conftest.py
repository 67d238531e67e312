"""Fixtures: one loaded hf engine on the tiny model, and a 127.0.0.1 server answering from it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def hf_engine(tiny_model_dir):  # type: ignore[no-untyped-def]
    from crossgym.inference.hf import HFEngine

    return HFEngine(tiny_model_dir, batch_size=16).load()


@pytest.fixture
def engine_server(hf_engine) -> Iterator:  # type: ignore[no-untyped-def]
    from engine_server import EngineServer

    server = EngineServer(hf_engine).start()
    yield server
    server.stop()
