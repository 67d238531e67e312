"""The openai engine's client against a 127.0.0.1 server answering from the real hf engine."""

from __future__ import annotations

import pytest

from crossgym.inference.http import EngineError
from crossgym.inference.openai_engine import OpenAIEngine, normalise_base_url
from crossgym.protocol import ConfigError, Message, SamplingParams, ToolCall, ToolSpec

PROMPTS = [[Message("user", "What is 2+2?")], [Message("user", "Say something.")], [Message("user", "x")]]
GREEDY = SamplingParams(temperature=0.0, max_tokens=6)


def _engine(server, **kw):  # type: ignore[no-untyped-def]
    return OpenAIEngine(f"{server.url}/v1", backoff=0.01, **kw)


def test_greedy_completions_match_the_hf_engine(engine_server, hf_engine):
    engine = _engine(engine_server, return_token_ids=True)
    got = engine.generate(PROMPTS, 2, GREEDY)
    want = hf_engine.generate(PROMPTS, 1, GREEDY)
    for row, ref in zip(got, want, strict=False):
        assert len(row) == 2
        for c in row:
            assert c.text == ref[0].text
            assert c.token_ids == ref[0].token_ids
            assert c.logprobs == pytest.approx(ref[0].logprobs, abs=1e-4)
    assert engine.model_name == "tiny"  # asked from GET /v1/models
    assert engine_server.requests[0][0] == "/v1/models"
    bodies = [b for path, b in engine_server.requests if path == "/v1/chat/completions"]
    assert len(bodies) == 6 and {b["n"] for b in bodies} == {1}  # greedy: vLLM wants n=1, so n requests
    body = bodies[-1]
    assert body["max_tokens"] == 6 and body["logprobs"] is True and "tools" not in body
    engine_server.reset_stats()
    sampled = engine.generate(PROMPTS, 2, SamplingParams(temperature=1.0, max_tokens=4, seed=1))
    assert [len(row) for row in sampled] == [2, 2, 2]
    assert [b["n"] for _, b in engine_server.requests] == [2, 2, 2]


def test_use_n_false_sends_one_request_per_sample_with_distinct_seeds(engine_server):
    engine = _engine(engine_server, model="tiny", use_n=False)
    out = engine.generate(PROMPTS[:1], 3, SamplingParams(temperature=1.0, max_tokens=5, seed=4))
    bodies = [b for path, b in engine_server.requests if path == "/v1/chat/completions"]
    assert len(out[0]) == 3 and len(bodies) == 3
    assert sorted(b["seed"] for b in bodies) == [4, 5, 6] and all(b["n"] == 1 for b in bodies)


def test_retries_transient_failures_with_backoff(engine_server):
    engine = _engine(engine_server, model="tiny", max_retries=3)
    engine_server.fail_next(2, 503)
    out = engine.generate(PROMPTS[:1], 1, GREEDY)
    assert len(out[0]) == 1
    assert len(engine_server.requests) == 3
    engine_server.reset_stats()
    engine_server.fail_next(1, 429, {"Retry-After": "0.05"})
    engine.generate(PROMPTS[:1], 1, GREEDY)
    assert len(engine_server.requests) == 2


def test_gives_up_after_max_retries_and_does_not_retry_client_errors(engine_server):
    engine = _engine(engine_server, model="tiny", max_retries=1)
    engine_server.fail_next(5, 502)
    with pytest.raises(EngineError, match="after 2 attempts: HTTP 502: injected failure 502"):
        engine.generate(PROMPTS[:1], 1, GREEDY)
    engine_server.reset_stats()
    engine_server._fail.clear()
    engine_server.fail_next(1, 400)
    with pytest.raises(EngineError, match="HTTP 400"):
        engine.generate(PROMPTS[:1], 1, GREEDY)
    assert len(engine_server.requests) == 1


def test_connection_refused_is_retried_then_one_line(engine_server):
    url = engine_server.url
    engine_server.stop()
    engine = OpenAIEngine(url, model="tiny", max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(EngineError) as err:
        engine.generate(PROMPTS[:1], 1, GREEDY)
    assert "after 2 attempts" in str(err.value) and "\n" not in str(err.value)


def test_concurrency_limit_bounds_requests_in_flight(engine_server):
    engine_server.delay = 0.1
    engine = _engine(engine_server, model="tiny", max_concurrency=2)
    engine.generate(PROMPTS * 2, 1, SamplingParams(temperature=0.0, max_tokens=2))
    assert engine_server.max_in_flight == 2
    engine_server.reset_stats()
    _engine(engine_server, model="tiny", max_concurrency=1).generate(PROMPTS, 1, SamplingParams(max_tokens=2))
    assert engine_server.max_in_flight == 1


def test_server_tool_calls_come_back_as_message_tool_calls(engine_server):
    add = ToolSpec(name="add", parameters={"type": "object", "properties": {"a": {"type": "integer"}}})
    engine_server.reply_text = 'Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 5}}\n</tool_call>'
    engine = _engine(engine_server, model="tiny")
    msg = engine.generate(PROMPTS[:1], 1, GREEDY, tools=[[add]])[0][0].messages[0]
    assert msg.content == "Sure."
    assert msg.tool_calls == (ToolCall(id="call_0", name="add", arguments={"a": 5}),)
    body = engine_server.requests[-1][1]
    assert body["tools"] == [add.to_openai()]
    # a server without a tool parser returns the raw text: the client parses the same calls
    engine_server.parse_tools = False
    msg2 = engine.generate(PROMPTS[:1], 1, GREEDY, tools=[[add]])[0][0].messages[0]
    assert msg2.tool_calls == msg.tool_calls and msg2.content == "Sure."
    # and tool calls in the history go out in OpenAI wire form (arguments as a JSON string)
    history = [Message("user", "add"), msg, Message("tool", "5", tool_call_id="call_0", name="add")]
    engine.generate([history], 1, GREEDY, tools=[[add]])
    sent = engine_server.requests[-1][1]["messages"][1]["tool_calls"][0]
    assert sent == {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 5}'}}


def test_api_key_is_sent_and_never_shown(engine_server, monkeypatch):
    canary = "sk-canary-6f1d2c"
    engine_server.api_key = canary
    monkeypatch.setenv("CROSSGYM_TEST_KEY", canary)
    engine = _engine(engine_server, model="tiny", api_key_env="CROSSGYM_TEST_KEY")
    assert len(engine.generate(PROMPTS[:1], 1, GREEDY)[0]) == 1
    assert canary not in repr(engine) and canary not in repr(engine.client)
    bad = _engine(engine_server, model="tiny", api_key="wrong", api_key_env="")
    with pytest.raises(EngineError, match="401.*api_key") as err:
        bad.generate(PROMPTS[:1], 1, GREEDY)
    assert canary not in str(err.value)


def test_base_url_forms():
    assert normalise_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert normalise_base_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1"
    with pytest.raises(ConfigError, match="not an http"):
        normalise_base_url("127.0.0.1:8000")
    with pytest.raises(ConfigError, match="needs a server URL"):
        OpenAIEngine().generate(PROMPTS[:1], 1, GREEDY)
