"""The hf engine on the tiny model: TRL's chat rendering, batching, n samples, seeds, logprobs, stops."""

from __future__ import annotations

import pytest

from crossgym.protocol import Completion, ConfigError, InferenceEngine, Message, SamplingParams, ToolCall, ToolSpec

ADD = ToolSpec(name="add", description="Add two integers.",
               parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                           "required": ["a", "b"]})
PROMPTS = [[Message("user", "What is 2+2?")],
           [Message("system", "Be brief."), Message("user", "Name a colour, any colour you like.")],
           [Message("user", "hi")]]


def test_registry_builds_the_hf_engine(tiny_model_dir):
    import crossgym
    from crossgym.inference.hf import HFEngine

    engine = crossgym.get_engine("hf", model=str(tiny_model_dir))
    assert isinstance(engine, HFEngine) and isinstance(engine, InferenceEngine)
    engine.check()


def test_render_matches_trl_apply_chat_template_with_tools(hf_engine):
    trl_data = pytest.importorskip("trl.data_utils")
    history = [Message("user", "Add 2 and 3."),
               Message("assistant", "", tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3}),)),
               Message("tool", "5", tool_call_id="c1", name="add")]
    for msgs, tools in ((PROMPTS[1], None), (history, [ADD.to_openai()])):
        example = {"prompt": [m.to_dict() for m in msgs]}
        if tools:  # TRL's own rendering of the same conversation, tool calls in the template's dict form
            example["prompt"][1]["tool_calls"] = [{"type": "function",
                                                   "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}]
        expected = trl_data.apply_chat_template(example, hf_engine.tokenizer, tools=tools)["prompt"]
        assert hf_engine.chat.render_text(msgs, tools) == expected
        assert hf_engine.chat.render(msgs, tools) == hf_engine.tokenizer(expected, add_special_tokens=False)["input_ids"]
    text = hf_engine.chat.render_text(history, [ADD.to_openai()])
    assert '"arguments": {"a": 2, "b": 3}' in text  # a dict, not a JSON string inside a string
    assert "<tools>" in text and text.endswith("<|im_start|>assistant\n")


def test_n_samples_per_prompt_with_token_ids_and_logprobs(hf_engine):
    out = hf_engine.generate(PROMPTS, 3, SamplingParams(temperature=1.0, max_tokens=8, seed=0))
    assert [len(row) for row in out] == [3, 3, 3]
    for row in out:
        for c in row:
            assert isinstance(c, Completion) and c.messages[0].role == "assistant"
            assert 1 <= len(c.token_ids) <= 8 and len(c.logprobs) == len(c.token_ids)
            assert all(lp <= 0 for lp in c.logprobs)
            assert c.text == hf_engine.chat.decode(c.token_ids)
    assert len({c.token_ids for row in out for c in row}) > 1


def test_seed_reproduces_and_different_seeds_differ(hf_engine):
    a = hf_engine.generate(PROMPTS[:2], 2, SamplingParams(temperature=1.0, max_tokens=8, seed=7))
    b = hf_engine.generate(PROMPTS[:2], 2, SamplingParams(temperature=1.0, max_tokens=8, seed=7))
    c = hf_engine.generate(PROMPTS[:2], 2, SamplingParams(temperature=1.0, max_tokens=8, seed=8))
    assert a == b
    assert a != c


def test_batched_left_padding_matches_one_prompt_at_a_time(hf_engine, tiny_model_dir):
    from crossgym.inference.hf import HFEngine

    greedy = SamplingParams(temperature=0.0, max_tokens=6)
    batched = hf_engine.generate(PROMPTS, 1, greedy)
    single = HFEngine(tiny_model_dir, batch_size=1)
    single._model, single._chat = hf_engine.model, hf_engine.chat  # same weights, batches of one
    for prompt, row in zip(PROMPTS, batched, strict=False):
        alone = single.generate([prompt], 1, greedy)[0][0]
        assert alone.token_ids == row[0].token_ids
        assert alone.logprobs == pytest.approx(row[0].logprobs, abs=1e-4)


def test_logprobs_are_the_models_under_the_sampling_temperature(hf_engine):
    import torch

    params = SamplingParams(temperature=0.7, max_tokens=6, seed=3)
    prompt_ids = hf_engine.chat.render(PROMPTS[0])
    gen = hf_engine.generate_ids([prompt_ids], 1, params)[0][0]
    full = torch.tensor([prompt_ids + list(gen.token_ids)])
    with torch.no_grad():
        logits = hf_engine.model(full).logits[0, len(prompt_ids) - 1:-1] / 0.7
    expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(gen.token_ids)[:, None]).squeeze(-1)
    assert list(gen.logprobs) == pytest.approx(expected.tolist(), abs=1e-4)


def test_max_tokens_and_finish_reason(hf_engine):
    gens = hf_engine.generate_ids([hf_engine.chat.render(p) for p in PROMPTS], 2,
                                  SamplingParams(temperature=1.0, max_tokens=5, seed=1))
    for row in gens:
        for g in row:
            eos_at_end = g.token_ids[-1] in hf_engine.chat.eos_ids
            assert len(g.token_ids) == 5 or eos_at_end
            assert g.finish_reason == ("stop" if eos_at_end else "length")


def test_stop_strings_cut_the_text_where_the_model_wrote_them(hf_engine):
    params = SamplingParams(temperature=1.0, max_tokens=12, seed=11)
    free = hf_engine.generate([PROMPTS[0]], 1, params)[0][0].text
    stop = free[4]
    stopped = hf_engine.generate_ids([hf_engine.chat.render(PROMPTS[0])], 1,
                                     SamplingParams(temperature=1.0, max_tokens=12, seed=11, stop=(stop,)))[0][0]
    assert stopped.text == free[:free.index(stop)]
    assert stopped.finish_reason == "stop"
    assert stop in hf_engine.chat.decode(stopped.token_ids)
    assert stop not in hf_engine.chat.decode(stopped.token_ids[:-1])


def test_tool_calls_in_generated_text_become_message_tool_calls(hf_engine):
    from crossgym.inference.base import Generation, to_completion

    ids = hf_engine.tokenizer.encode('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
                                     '<|im_end|>', add_special_tokens=False)
    text = hf_engine.chat.decode(ids)  # markers survive decoding, EOS does not
    assert text.startswith("<tool_call>") and "<|im_end|>" not in text
    c = to_completion(Generation(text=text, token_ids=tuple(ids)), parse_tools=True)
    assert c.messages[0].tool_calls == (ToolCall(id="call_0", name="add", arguments={"a": 1, "b": 2}),)
    plain = to_completion(Generation(text=text), parse_tools=False)
    assert plain.messages[0].tool_calls == () and plain.text == text


def test_tools_per_prompt_reach_the_template(hf_engine):
    out = hf_engine.generate(PROMPTS[:2], 1, SamplingParams(temperature=0.0, max_tokens=3), tools=[[ADD], []])
    assert len(out) == 2
    with pytest.raises(ValueError, match="one list per prompt"):
        hf_engine.generate(PROMPTS[:2], 1, SamplingParams(max_tokens=2), tools=[[ADD]])


def test_missing_model_is_one_config_error(tmp_path):
    from crossgym.inference.hf import HFEngine

    with pytest.raises(ConfigError) as err:
        HFEngine(tmp_path / "nope").load()
    assert "nope" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="needs a model"):
        HFEngine().load()
