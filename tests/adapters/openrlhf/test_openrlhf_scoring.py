"""The reward file's runtime: cutting the response out of OpenRLHF's query, and crossgym's reward rules."""

from __future__ import annotations

import json

import pytest

from crossgym.adapters.openrlhf.scoring import (
    PromptNotFound,
    QueryScorer,
    ScoreConfig,
    special_tail_tokens,
)
from crossgym.api import load_verifier
from crossgym.protocol.episode import Rollout
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.scoring import ExtraTerm, RewardRule
from crossgym.scoring.metrics import PASSED as LOG_PASSED
from crossgym.scoring.metrics import VERIFIER_ERROR as LOG_ERROR

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tok(tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir))


def query_of(tok, prompt: str, response_ids: list[int]) -> str:
    """What OpenRLHF's SingleTurnAgentExecutor hands reward_func: decode(prompt ids + action ids), specials kept."""
    ids = tok(prompt, add_special_tokens=False)["input_ids"] + response_ids
    return tok.decode(ids, skip_special_tokens=False)


def chat(tok, text: str) -> str:
    return tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)


def task(verifier="exact_match", answer="Paris", params=None, text="Capital of France?") -> Task:
    return Task(id="t1", prompt=[{"role": "user", "content": text}], answer=answer,
                verifier=VerifierSpec(verifier, params or {}))


def test_tail_tokens_come_from_the_model_files(tokenizer_dir):
    assert set(special_tail_tokens(tokenizer_dir)) == {"<|im_end|>", "<|endoftext|>"}
    assert special_tail_tokens("org/not-a-local-dir") is None


def test_response_strips_prompt_and_every_trailing_eos_or_pad_but_nothing_else(tok, tokenizer_dir):
    s = QueryScorer(ScoreConfig(strip_tokens=special_tail_tokens(tokenizer_dir), model=str(tokenizer_dir)))
    prompt = chat(tok, "Capital of France?")
    body = "<think>hm <|im_end|> inside</think>Paris \n"
    ids = tok(body, add_special_tokens=False)["input_ids"]
    eos, pad = tok.eos_token_id, tok.pad_token_id
    for tail in ([], [eos], [eos, pad, pad], [pad, eos]):
        assert s.response(query_of(tok, prompt, ids + tail), prompt) == body
    assert s.response(query_of(tok, prompt, [eos]), prompt) == ""


def test_response_survives_a_lossy_round_trip_and_left_truncation(tok, tokenizer_dir):
    s = QueryScorer(ScoreConfig(model=str(tokenizer_dir)))  # tail tokens read from the tokenizer at run time
    prompt = chat(tok, "Où est Paris?")  # 'ù' is not in the char vocabulary: the query holds <unk> instead
    ids = tok("Paris", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    q = query_of(tok, prompt, ids)
    assert not q.startswith(prompt)
    assert s.response(q, prompt) == "Paris"
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    truncated = tok.decode(p_ids[7:] + ids, skip_special_tokens=False)  # OpenRLHF keeps the prompt's tail
    assert s.response(truncated, prompt) == "Paris"
    with pytest.raises(PromptNotFound):
        s.response("something else entirely", prompt)


def test_rewards_are_crossgym_verdicts_weighted(tok, tokenizer_dir):
    extra = VerifierSpec("json_valid", {})
    cfg = ScoreConfig(rule=RewardRule(on_error=-1.0, task_weight=2.0, extras=(ExtraTerm(extra.name, extra, 0.5),)),
                      strip_tokens=special_tail_tokens(tokenizer_dir), model=str(tokenizer_dir))
    s = QueryScorer(cfg)
    t = task(verifier="length", answer=None, params={"max": 5, "unit": "chars"})
    prompt = chat(tok, "Capital of France?")
    seen = set()
    for text in ("Paris", '"Paris"', "[1,2", "12"):
        q = query_of(tok, prompt, tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id])
        out = s([q], [prompt], [t.to_json()])
        v_task = load_verifier(t.verifier).verify(t, Completion.from_text(text))
        v_extra = load_verifier(extra).verify(t, Completion.from_text(text))
        assert v_task.error is None and (v_extra.error is None or v_extra.error_kind == "malformed")
        expect = 2.0 * v_task.reward + 0.5 * v_extra.reward
        assert out["rewards"].dtype == torch.float64
        assert out["rewards"].tolist() == [expect]
        assert out["scores"].tolist() == [v_task.reward]
        assert out["extra_logs"][LOG_PASSED].tolist() == [float(v_task.passed)]
        assert out["extra_logs"]["crossgym/extra/json_valid"].tolist() == [v_extra.reward]
        seen.add(expect)
    assert seen == {2.0, 0.5, 2.5}  # length passes or not, JSON valid or not: the weights show


def test_errors_score_on_error(tok, tokenizer_dir):
    s = QueryScorer(ScoreConfig(rule=RewardRule(on_error=-0.5), strip_tokens=("<|im_end|>",),
                                model=str(tokenizer_dir)))
    prompt = chat(tok, "x")
    q = prompt + "Paris<|im_end|>"
    broken = task(verifier="no_such_verifier")
    out = s([q, "unrelated", q], [prompt, prompt, prompt], [broken.to_json(), task().to_json(), "not json"])
    assert out["rewards"].tolist() == [-0.5, -0.5, -0.5]
    assert out["extra_logs"][LOG_ERROR].tolist() == [1.0, 1.0, 1.0]


def test_scored_rollouts_are_recorded_for_reverify(tmp_path, tok):
    path = tmp_path / "rollouts.jsonl"
    s = QueryScorer(ScoreConfig(strip_tokens=("<|im_end|>",), rollouts=str(path)))
    prompt = chat(tok, "Capital of France?")
    s([prompt + "Paris<|im_end|>", prompt + "Rome<|im_end|>"], [prompt, prompt], [task().to_json()] * 2)
    rows = [Rollout.from_dict(json.loads(line)) for line in path.read_text().splitlines()]
    assert [r.completion.text for r in rows] == ["Paris", "Rome"]
    assert [r.verdict.passed for r in rows] == [True, False]
    assert rows[0].provenance["backend"] == "openrlhf"
    from crossgym.eval.reverify import reverify

    drift = reverify(path)  # the file reverify is for: 0.1 wrote records it could not read
    assert drift["ok"] and drift["checked"] == 2 and drift["changed"] == 0
