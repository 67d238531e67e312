"""The sglang engine's native /generate client and its OpenAI-API mode, against a 127.0.0.1 server."""

from __future__ import annotations

import pytest

from crossgym.inference.sglang_engine import SGLangEngine
from crossgym.protocol import ConfigError, Message, SamplingParams

PROMPTS = [[Message("user", "What is 2+2?")], [Message("user", "Say something longer than that.")]]


def test_native_generate_gives_the_hf_engines_tokens_and_logprobs(engine_server, hf_engine, tiny_model_dir):
    engine = SGLangEngine(engine_server.url, tokenizer=str(tiny_model_dir), batch_size=3)
    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    got = engine.generate(PROMPTS, 2, greedy)
    want = hf_engine.generate(PROMPTS, 1, greedy)
    for row, ref in zip(got, want, strict=False):
        assert len(row) == 2
        for c in row:
            assert (c.text, c.token_ids) == (ref[0].text, ref[0].token_ids)
            assert c.logprobs == pytest.approx(ref[0].logprobs, abs=1e-4)
    # 4 sequences in batches of 3, sent concurrently: the server may see them in either order
    bodies = sorted((b for path, b in engine_server.requests if path == "/generate"), key=lambda b: -len(b["input_ids"]))
    assert [len(b["input_ids"]) for b in bodies] == [3, 1]
    assert bodies[0]["input_ids"][0] == hf_engine.chat.render(PROMPTS[0])  # rendered client-side, as TRL does
    assert bodies[0]["return_logprob"] is True and bodies[0]["sampling_params"]["max_new_tokens"] == 6


def test_native_seeds_differ_per_sample(engine_server, tiny_model_dir):
    engine = SGLangEngine(engine_server.url, tokenizer=str(tiny_model_dir))
    out = engine.generate(PROMPTS[:1], 3, SamplingParams(temperature=1.0, max_tokens=6, seed=10))
    body = [b for path, b in engine_server.requests if path == "/generate"][-1]
    assert [sp["sampling_seed"] for sp in body["sampling_params"]] == [10, 11, 12]
    assert len({c.token_ids for c in out[0]}) > 1


def test_tokenizer_comes_from_the_servers_model_path(engine_server):
    engine = SGLangEngine(engine_server.url)  # no tokenizer given: /get_model_info names the model directory
    out = engine.generate(PROMPTS[:1], 1, SamplingParams(temperature=0.0, max_tokens=3))
    assert out[0][0].token_ids is not None
    assert any(path == "/get_model_info" for path, _ in engine_server.requests)


def test_openai_api_mode(engine_server, hf_engine):
    engine = SGLangEngine(f"{engine_server.url}/v1", api="openai")
    greedy = SamplingParams(temperature=0.0, max_tokens=5)
    assert engine.generate(PROMPTS[:1], 1, greedy)[0][0].text == hf_engine.generate(PROMPTS[:1], 1, greedy)[0][0].text
    assert any(path == "/v1/chat/completions" for path, _ in engine_server.requests)


def test_config_errors():
    with pytest.raises(ConfigError, match="api='native'"):
        SGLangEngine("http://127.0.0.1:1", api="grpc")
    with pytest.raises(ConfigError, match="needs the server URL"):
        SGLangEngine().generate(PROMPTS, 1, SamplingParams())
