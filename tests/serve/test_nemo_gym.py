"""NeMo Gym's resources-server /verify shape (--nemo-gym), tested with JSON documents of that shape.

The cases in nemo_gym_cases.jsonl follow NeMo Gym's own verifier-case files: a request (responses_create_params,
a Responses API ``response``, the dataset row's fields), the expected status and reward.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crossgym.api import load_verifier
from crossgym.protocol import Completion, Message, Task, ToolCall, ToolSpec, VerifierSpec

CASES = [json.loads(line) for line in (Path(__file__).parent / "nemo_gym_cases.jsonl").read_text().splitlines()
         if line.strip()]


@pytest.fixture
def nemo(make_client: Any) -> Any:
    return make_client(nemo_gym=True)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_nemo_gym_cases(nemo: Any, case: dict[str, Any]) -> None:
    r = nemo.post("/verify", json=case["request"])
    assert r.status_code == case["expected_status"], r.text
    doc = r.json()
    if r.status_code != 200:
        assert doc["error"]["what"] and doc["error"]["where"] and doc["error"]["fix"]
        return
    assert doc["reward"] == case["expected_reward"]
    assert doc["mask_sample"] is case["expected_mask"]
    if case["expected_mask"]:
        assert doc["failure_kind"] == "verifier_error" and doc["failure_reason"].startswith("exception")
    else:
        assert doc["failure_kind"] is None and doc["failure_reason"] is None
    # BaseVerifyResponse: the request echoed field for field, plus reward
    for key, value in case["request"].items():
        assert doc[key] == value, key
    assert doc["crossgym"]["verdict"]["reward"] == case["expected_reward"]


def test_reply_equals_crossgym_on_the_equivalent_pair(nemo: Any) -> None:
    case = next(c for c in CASES if c["case"] == "tool_call")
    req = case["request"]
    tool = req["responses_create_params"]["tools"][0]
    task = Task(id="nemo_gym", prompt=(Message(role="system", content="Use tools."),
                                        Message(role="user", content="Weather in Paris?")),
                answer=req["expected_answer"], verifier=VerifierSpec("tool_call"),
                tools=(ToolSpec(name=tool["name"], description=tool["description"], parameters=tool["parameters"]),))
    completion = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),)),))
    local = load_verifier("tool_call").verify(task, completion)
    assert local.passed  # the reply's verdict is the local Verdict's JSON, with its fault
    assert nemo.post("/verify", json=req).json()["crossgym"]["verdict"] == {**local.to_dict(), "fault": "none"}


def test_multi_turn_output_becomes_one_completion() -> None:
    from crossgym.serve.nemo_gym import items_to_messages

    items = [{"type": "reasoning", "summary": []},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking. "}]},
             {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{\"command\": \"ls\"}"},
             {"type": "function_call", "call_id": "c2", "name": "run", "arguments": "not json"},
             {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]
    msgs = items_to_messages(items, "output")
    assert [m.role for m in msgs] == ["assistant", "tool", "assistant"]
    assert msgs[0].content == "Checking. " and [c.id for c in msgs[0].tool_calls] == ["c1", "c2"]
    assert msgs[0].tool_calls[0].arguments == {"command": "ls"}
    bad = msgs[0].tool_calls[1]  # the verifier judges a bad call (malformed, as in Hermes text)
    assert bad.arguments == {} and bad.error is not None and bad.error.startswith("arguments string is not JSON")
    assert msgs[1].tool_call_id == "c1" and msgs[1].content == "a.txt" and msgs[2].content == "Done."


def test_default_verifier_option(make_client: Any) -> None:
    c = make_client(nemo_gym=True, nemo_gym_verifier="numeric")
    req = next(x for x in CASES if x["case"] == "no_verifier")["request"]
    r = c.post("/verify", json=req)
    assert r.status_code == 200 and r.json()["reward"] == 1.0


def test_crossgym_shape_still_served_and_nemo_shape_needs_the_option(nemo: Any, client: Any) -> None:
    body = {"task": {"id": "t", "prompt": "p", "answer": "x", "verifier": "exact_match"}, "completion": "x"}
    assert nemo.post("/verify", json=body).json()["verdict"]["passed"] is True
    r = client.post("/verify", json=CASES[0]["request"])
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    schema = nemo.get("/openapi.json").json()
    assert "NemoGymVerifyRequest" in schema["components"]["schemas"]


def _nemo_row(text: str, verifier: Any, answer: Any) -> dict[str, Any]:
    return {"responses_create_params": {"input": [{"role": "user", "content": "q"}]},
            "response": {"output": [{"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": text}]}]},
            "verifier": verifier, "expected_answer": answer}


def test_an_infra_failure_masks_under_on_error_none_and_the_model_s_own_never(make_client: Any) -> None:
    from crossgym.scoring import RewardRule

    nemo = make_client(nemo_gym=True, rule=RewardRule(on_error="none"))
    cases = {  # name: (row, fault, mask_sample, failure_kind)
        "exception": (_nemo_row("x", "tool_call", 7), "infra", True, "verifier_error"),
        "wrong": (_nemo_row("Rome", "exact_match", "Paris"), "model", False, None),
        "malformed": (_nemo_row("", "exact_match", "Paris"), "model", False, None),
        "passed": (_nemo_row("Paris", "exact_match", "Paris"), "none", False, None),
    }
    docs = {}
    for name, (row, kind, mask, failure_kind) in cases.items():
        r = nemo.post("/verify", json=row)
        assert r.status_code == 200, (name, r.text)
        doc = docs[name] = r.json()
        assert doc["crossgym"]["verdict"]["fault"] == kind, name
        assert doc["mask_sample"] is mask and doc["failure_kind"] == failure_kind, name
        # on_error "none" masks the reward itself; NeMo Gym's reward is a float, so it reads 0.0 beside the mask
        assert doc["reward"] == (0.0 if mask else doc["crossgym"]["verdict"]["reward"]), name
        assert (doc["failure_reason"] is None) is (not mask), name
    assert docs["exception"]["failure_reason"].startswith("exception: bad task")
    # with a numeric on_error the reward is that number, and the sample is still masked: the mask is the fault's
    scored = make_client(nemo_gym=True, rule=RewardRule(on_error=-1.0)).post("/verify", json=cases["exception"][0])
    assert scored.json()["reward"] == -1.0 and scored.json()["mask_sample"] is True


def test_nemo_failure_kinds_come_from_the_shared_vocabulary() -> None:
    from crossgym.protocol import Verdict
    from crossgym.serve.nemo_gym import failure_kind

    assert failure_kind(Verdict.exception("environment 'x' step 2 failed: boom")) == "environment_server_failed"
    assert failure_kind(Verdict.exception("RuntimeError: sandbox: no bwrap")) == "provider_unavailable"
    assert failure_kind(Verdict.exception("judge unreachable"), "judge") == "judge_failed"
    assert failure_kind(Verdict.timeout(1.0), "judge") == "judge_failed"
    assert failure_kind(Verdict.malformed("empty"), "judge") is None


def test_every_serve_reply_carries_the_fault(client: Any) -> None:
    task = {"id": "a", "prompt": "Capital of France?", "answer": "Paris", "verifier": "exact_match"}
    bad = {"id": "b", "prompt": "q", "answer": 7, "verifier": "tool_call"}
    assert client.post("/verify", json={"task": task, "completion": "Paris"}).json()["verdict"]["fault"] == "none"
    assert client.post("/verify", json={"task": bad, "completion": "x"}).json()["verdict"]["fault"] == "infra"
    batch = client.post("/verify/batch", json={"items": [{"task": task, "completion": c} for c in ("Rome", "")]
                                               + [{"task": bad, "completion": "x"}]}).json()
    assert [v["fault"] for v in batch["verdicts"]] == ["model", "model", "infra"]
    created = client.post("/envs", json={"task": task}).json()
    step = client.post(f"/envs/{created['id']}/step", json={"action": "Rome"}).json()
    assert step["done"] is True and step["verdict"]["fault"] == "model"
