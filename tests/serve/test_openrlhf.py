"""OpenRLHF's remote-reward shape (POST /openrlhf/reward): payloads built the way OpenRLHF sends them.

OpenRLHF's own client against a live server is in test_openrlhf_client.py (runs in the `openrlhf` venv).
"""

from __future__ import annotations

from typing import Any

from crossgym.api import load_verifier
from crossgym.scoring.metrics import MALFORMED as LOG_MALFORMED
from crossgym.scoring.metrics import PASSED as LOG_PASSED
from crossgym.scoring.metrics import VERIFIER_ERROR as LOG_ERROR

PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


def test_rewards_equal_local_verdicts_and_specials_are_cut(client: Any) -> None:
    examples = [e for name in ("exact_match", "numeric", "json_answer", "multiple_choice")
                for e in load_verifier(name).examples() if not e.task.tools]
    queries = [PROMPT + e.completion.text + "<|im_end|><|endoftext|>" for e in examples]
    body = {"query": queries, "prompts": [PROMPT] * len(examples), "labels": [e.task.to_json() for e in examples]}
    doc = client.post("/openrlhf/reward", json=body).json()
    local = [load_verifier(e.task.verifier).verify(e.task, e.completion) for e in examples]
    assert doc["rewards"] == [v.reward for v in local] == doc["scores"]
    assert doc["extra_logs"][LOG_PASSED] == [1.0 if v.passed else 0.0 for v in local]
    assert doc["extra_logs"][LOG_MALFORMED] == [1.0 if v.error_kind == "malformed" else 0.0 for v in local]
    assert sum(doc["extra_logs"][LOG_MALFORMED]) >= 3


def test_bad_samples_score_on_error_and_say_why(make_client: Any) -> None:
    c = make_client(on_error=-1.0)
    task = load_verifier("exact_match").examples()[0].task
    body = {"query": [PROMPT + "4", "other prompt 4", PROMPT + "4"], "prompts": [PROMPT, PROMPT, PROMPT],
            "labels": [task.to_json(), task.to_json(), "not a task"]}
    doc = c.post("/openrlhf/reward", json=body).json()
    assert doc["rewards"][1:] == [-1.0, -1.0]
    assert doc["extra_logs"][LOG_ERROR] == [0.0, 1.0, 1.0]


def test_the_route_and_the_generated_reward_file_score_alike(make_client: Any, tiny_model_dir: Any) -> None:
    """0.1's route cut the response by exact prefix only (a left-truncated query scored on_error there while the
    file scored 1.0 after a tokenizer round trip) and ignored task_weight and the extra verifiers. Both are now
    one QueryScorer under the run's RewardRule."""
    from transformers import AutoTokenizer

    from crossgym.adapters.openrlhf.scoring import QueryScorer, ScoreConfig, special_tail_tokens
    from crossgym.protocol import VerifierSpec
    from crossgym.scoring import ExtraTerm, RewardRule

    rule = RewardRule(on_error=-1.0, task_weight=2.0,
                      extras=(ExtraTerm("length", VerifierSpec("length", {"max": 3, "unit": "chars"}), 0.5),))
    model = str(tiny_model_dir)
    c = make_client(rule=rule, on_error=-1.0, model=model)
    tok = AutoTokenizer.from_pretrained(model)
    from crossgym.protocol import Task

    task = Task(id="sum", prompt="What is 2+2?", answer="4", verifier=VerifierSpec("exact_match"))
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}], tokenize=False,
                                     add_generation_prompt=True)
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    truncated = tok.decode(ids[4:], skip_special_tokens=False)  # OpenRLHF cut the prompt's first tokens
    eos = tok.eos_token
    body = {"query": [prompt + "4" + eos, truncated + "4" + eos, prompt + "four" + eos],
            "prompts": [prompt] * 3, "labels": [task.to_json()] * 3}
    doc = c.post("/openrlhf/reward", json=body).json()
    file_scorer = QueryScorer(ScoreConfig(rule=rule, strip_tokens=special_tail_tokens(model), model=model))
    assert doc == file_scorer.reply(body["query"], body["prompts"], body["labels"])
    assert doc["rewards"][:2] == [2.0 * 1.0 + 0.5 * 1.0] * 2  # the truncated query is found and scored
    assert doc["extra_logs"][LOG_ERROR] == [0.0, 0.0, 0.0]
