"""OpenRLHF's remote-reward shape (POST /openrlhf/reward): payloads built the way OpenRLHF sends them.

OpenRLHF's own client against a live server is in test_openrlhf_client.py (runs in the `openrlhf` venv).
"""

from __future__ import annotations

from typing import Any

from crossgym.api import load_verifier
from crossgym.serve.openrlhf import LOG_ERROR, LOG_MALFORMED, LOG_PASSED, response_text

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


def test_response_text_cuts_only_trailing_specials() -> None:
    assert response_text("PQ<|im_end|>x<|im_end|><|endoftext|>", "P", ("<|im_end|>", "<|endoftext|>")) == \
        "Q<|im_end|>x"
    assert response_text("other", "P", ()) is None
