"""Shared fixtures: offline, quiet libraries; one tiny model built once per session; clean plugin state."""

from __future__ import annotations

import os

# keep every library offline and quiet before anything imports them
for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "RAY_USAGE_STATS_ENABLED": "0",
               "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1",
               "TRL_EXPERIMENTAL_SILENCE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}.items():
    os.environ.setdefault(_k, _v)

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~3M-parameter Llama model with a char-level tokenizer and Qwen2.5's tool-capable chat template."""
    pytest.importorskip("transformers")
    import torch

    torch.set_num_threads(1)
    from crossgym.inference.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "tiny")


@pytest.fixture
def fresh_plugins():
    """Rebuild the plugin registries before and after a test that changes plugins or the environment."""
    from crossgym.plugins import reset_plugins

    reset_plugins()
    yield
    reset_plugins()


@pytest.fixture(scope="session")
def hf_engine(tiny_model_dir: Path):  # type: ignore[no-untyped-def]
    """The tiny model behind crossgym's hf engine, loaded once per session."""
    from crossgym.inference.hf import HFEngine

    return HFEngine(tiny_model_dir, batch_size=16).load()


@pytest.fixture
def test_plugin():  # type: ignore[no-untyped-def]
    """tests/rollout/fixtures_plugin registered for one test: a varying verifier and multi-turn environments."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "rollout"))
    import fixtures_plugin

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = fixtures_plugin.Plugin()
    register_plugin(plugin)
    yield fixtures_plugin
    unregister_plugin(plugin)


@pytest.fixture
def final_reply_plugin():  # type: ignore[no-untyped-def]
    """Registers the test_final_reply environment (reward only in its reply to the last action) for one test;
    tests/support/final_reply_env.py is importable while it runs. (No conftest in tests/adapters: it would put
    tests/adapters on sys.path, where tests/adapters/openrlhf shadows a missing openrlhf package.)"""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "support"))
    from final_reply_env import FinalReplyPlugin

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = FinalReplyPlugin()
    register_plugin(plugin)
    yield plugin
    unregister_plugin(plugin)


@pytest.fixture
def make_client():  # type: ignore[no-untyped-def]
    """make_client(**settings) -> a started fastapi TestClient of crossgym's serve app (closed after the test)."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'crossgym[serve]')")
    from fastapi.testclient import TestClient

    from crossgym.serve.app import create_app
    from crossgym.serve.settings import ServeSettings

    clients = []

    def make(**kwargs):  # type: ignore[no-untyped-def]
        c = TestClient(create_app(ServeSettings(**kwargs)))
        c.__enter__()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.__exit__(None, None, None)
