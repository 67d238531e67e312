"""`crossgym serve --nemo-gym` against documents taken from NeMo Gym's own repository (fixtures/nemo_gym/SOURCES.md).

NeMo Gym needs Python >= 3.13, so its client cannot run here; what it does with a /verify reply is read from
its code (responses_api_agents/simple_agent/app.py): post ``verify_request.model_dump()``, raise on a non-2xx
status, validate the body as a ``BaseVerifyResponse`` with extra fields allowed. The tests post the documents
unchanged (or with the dataset-row fields a NeMo Gym user adds: ``verifier``, ``expected_answer``) and check the
reply field for field against ``BaseVerifyResponse``'s declared fields and types.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

FIX = Path(__file__).parent / "fixtures" / "nemo_gym"

#: nemo_gym/failure_kinds.py @ 00fa09c0: the shared vocabulary a failure_kind must come from
FAILURE_KINDS = frozenset({
    "transport_unreachable", "transport_peer_drop", "transport_timeout", "transport_local_resource",
    "agent_run_error", "agent_request_failed", "agent_timeout", "agent_command_not_allowed",
    "environment_server_failed", "protocol_violation", "judge_failed", "judge_unparseable", "verifier_error",
    "provider_unavailable", "provider_quota_exhausted", "provider_oom_killed", "session_lost", "session_expired",
    "session_release_failed", "cancelled", "kill_shaped", "shutdown", "persistence_failed", "cohort_incomplete"})


class VerifyResponseShape(BaseModel):
    """BaseVerifyResponse's fields (nemo_gym/base_resources_server.py @ 011c3386), JSON types taken strictly."""

    model_config = ConfigDict(extra="allow", strict=True)
    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    reward: float
    mask_sample: bool
    failure_kind: str | None
    failure_reason: str | None


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIX / name).read_text().splitlines() if line.strip()]


def _json(name: str) -> dict[str, Any]:
    return json.loads((FIX / name).read_text())


@pytest.fixture
def serve(make_client: Callable[..., Any]) -> Callable[..., Any]:
    """serve(**settings) -> a started TestClient of crossgym's app with NeMo Gym's shape on."""
    return lambda **kwargs: make_client(nemo_gym=True, **kwargs)


def check_reply(request: dict[str, Any], reply: Any) -> dict[str, Any]:
    """What NeMo Gym's agent does with a reply, then the echo: every request field back, unchanged."""
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    doc = reply.json()
    shape = VerifyResponseShape.model_validate(doc)
    assert isinstance(doc["reward"], float) and 0.0 <= shape.reward <= 1.0
    assert shape.failure_kind is None or shape.failure_kind in FAILURE_KINDS
    assert (shape.failure_kind is None) == (shape.failure_reason is None)
    for key, value in request.items():
        assert doc[key] == value, key
    assert set(doc) - set(request) == {"reward", "mask_sample", "failure_kind", "failure_reason", "crossgym"}
    assert doc["crossgym"]["verdict"]["reward"] == shape.reward or shape.mask_sample
    return doc


def check_refused(reply: Any, status: int = 422) -> dict[str, Any]:
    """A request NeMo Gym's own server refuses: a non-2xx status (its agent raises) and crossgym's error body."""
    assert reply.status_code == status, reply.text
    err = reply.json()["error"]
    assert err["status"] == status and err["what"] and err["where"] and err["fix"]
    return err


# NeMo Gym's verifier cases, posted verbatim; a crossgym verifier stands in for each resources server
SUITES = [("string_match_verifier_cases.jsonl", "exact_match"), ("mcqa_verifier_cases.jsonl", "multiple_choice")]
CASES = [(f, v, c) for f, v in SUITES for c in _jsonl(f)]


@pytest.mark.parametrize(("fixture", "verifier", "case"), CASES,
                         ids=[f"{f.split('_verifier')[0]}:{c.get('case') or c['name']}" for f, _, c in CASES])
def test_nemo_gym_verifier_cases(serve: Callable[..., Any], fixture: str, verifier: str, case: dict[str, Any]) -> None:
    client = serve(nemo_gym_verifier=verifier)
    expected_status = case.get("expected_status", 422 if case.get("kind") == "malformed" else 200)
    reply = client.post("/verify", json=case["request"])
    if expected_status != 200:
        err = check_refused(reply, expected_status)
        assert err["where"] == "body.response" and err["what"] == "Field required"  # the field NeMo Gym names too
        return
    doc = check_reply(case["request"], reply)
    assert doc["reward"] == case["expected_reward"]  # NeMo Gym's own server gives this reward
    assert doc["mask_sample"] is False and doc["crossgym"]["verifier"]["name"] == verifier
    if case.get("reseed"):  # NeMo Gym's determinism case: the same request again, the same reply
        assert client.post("/verify", json=case["request"]).json() == doc


def test_single_tool_call_request(serve: Callable[..., Any]) -> None:
    row = _json("single_tool_call_verify_request.json") | {
        "verifier": "tool_call", "expected_answer": {"name": "get_weather", "arguments": {"city": "San Francisco"}}}
    doc = check_reply(row, serve().post("/verify", json=row))
    assert doc["reward"] == 1.0  # NeMo Gym's weather verifier gives 1.0 too (its test asserts it)

    wrong = copy.deepcopy(row)
    wrong["response"]["output"][0]["arguments"] = '{"city": "Oslo"}'
    assert check_reply(wrong, serve().post("/verify", json=wrong))["reward"] == 0.0

    garbled = copy.deepcopy(row)  # arguments that are not JSON are the policy's fault: scored, not refused
    garbled["response"]["output"][0]["arguments"] = '{"city": '
    doc = check_reply(garbled, serve().post("/verify", json=garbled))
    assert doc["reward"] == 0.0 and doc["mask_sample"] is False


def test_simple_agent_training_request(serve: Callable[..., Any]) -> None:
    """The body NeMo Gym's simple agent posts in training (token ids on the output item, _ng_* fields)."""
    row = _json("simple_agent_training_verify_request.json") | {"verifier": "exact_match", "expected_answer": "Paris"}
    doc = check_reply(row, serve().post("/verify", json=row))
    assert doc["reward"] == 1.0 and doc["mask_sample"] is False
    assert doc["response"]["output"][0]["generation_token_ids"] == [0, 1, 2, 3]  # echoed for NeMo RL's trainer
    assert doc["_ng_task_index"] == 4 and doc["verifier_metadata"]["nested"] == [{"labels": ["a", None, 3]}]


@pytest.mark.parametrize("malformation", ["invalid_output", "partial_tokens", "output_missing"])
def test_requests_nemo_gym_refuses_are_refused(serve: Callable[..., Any], malformation: str) -> None:
    """The malformations NeMo Gym's resources ingress answers with 422 (test_verify_payload.py)."""
    row = _json("simple_agent_training_verify_request.json") | {"verifier": "exact_match", "expected_answer": "Paris"}
    if malformation == "invalid_output":
        row["response"]["output"] = "not an output list"
    elif malformation == "partial_tokens":
        del row["response"]["output"][0]["prompt_token_ids"]
    else:
        del row["response"]["output"]
    err = check_refused(serve().post("/verify", json=row))
    assert err["where"].startswith("body.response")
    if malformation == "partial_tokens":
        assert "prompt_token_ids" in err["what"]


def _math_row(text: str) -> dict[str, Any]:
    parts = _json("math_with_judge_serialized_parts.json")
    response = {"id": "resp_fixture", "created_at": 1773381249.0, "error": None, "incomplete_details": None,
                "instructions": None, "metadata": None, "model": "Qwen/Qwen3-8B", "object": "response",
                "output": [{"id": "msg_fixture", "type": "message", "role": "assistant", "status": "completed",
                            "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": None}]}],
                **parts["response_envelope"]}
    return {"responses_create_params": parts["responses_create_params"], "response": response,
            "expected_answer": parts["expected_answer"], "verifier": "math"}


@pytest.mark.parametrize(("text", "reward"), [("<think>\nwork\n</think>\n\n\\boxed{32}", 1.0),
                                              ("<think>\nwork\n</think>\n\n\\boxed{9}", 0.0)])
def test_serialized_create_params_and_envelope(serve: Callable[..., Any], text: str, reward: float) -> None:
    """NeMo Gym serialises every field (nulls included); all of it is accepted and echoed."""
    row = _math_row(text)
    doc = check_reply(row, serve().post("/verify", json=row))
    assert doc["reward"] == reward and doc["responses_create_params"]["instructions"] is None


def test_instructions_and_chat_style_tools_reach_the_task() -> None:
    pytest.importorskip("fastapi")
    from crossgym.serve.nemo_gym import NemoGymVerifyRequest, to_pair

    row = _math_row("\\boxed{32}")
    row["responses_create_params"]["instructions"] = "Answer in LaTeX."
    row["responses_create_params"]["tools"] = [
        {"type": "function", "function": {"name": "calculate", "description": "Evaluate",  # the Chat Completions
                                          "parameters": {"type": "object", "properties": {}}}},  # form
        {"type": "function", "name": "search", "description": "Search", "parameters": None, "strict": False},
        {"type": "web_search_preview"}]
    task, completion = to_pair(NemoGymVerifyRequest.model_validate(row), None)
    assert [(m.role, m.content[:16]) for m in task.prompt] == [("system", "Answer in LaTeX."),
                                                               ("user", "Solve the follow")]
    assert [t.name for t in task.tools] == ["calculate", "search"] and completion.text == "\\boxed{32}"


def test_provider_executed_items_are_passed_over(serve: Callable[..., Any]) -> None:
    row = _json("single_tool_call_verify_request.json") | {"verifier": "exact_match", "expected_answer": "cold"}
    row["response"]["output"] = [
        {"type": "mcp_call", "id": "m1", "server_label": "tools", "name": "lookup", "arguments": "{}", "output": "x"},
        {"type": "web_search_call", "id": "w1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "message", "id": "o1", "role": "assistant", "status": "completed",
         "content": [{"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "Answer: cold",
                                                           "annotations": []}]}]
    doc = check_reply(row, serve().post("/verify", json=row))
    assert doc["reward"] == 1.0
    row["response"]["output"].insert(0, {"type": "not_a_responses_item"})
    check_refused(serve().post("/verify", json=row))


def test_error_cases(serve: Callable[..., Any]) -> None:
    base = _json("single_tool_call_verify_request.json")
    client = serve()
    err = check_refused(client.post("/verify", json=base))  # no verifier named and no server default
    assert err["where"] == "body.verifier" and "--nemo-gym-verifier" in err["fix"]
    err = check_refused(client.post("/verify", json=base | {"verifier": "no_such_verifier"}))
    assert err["code"] == "unknown_verifier"
    check_refused(client.post("/verify", content=b'{"responses_create_params": ', headers={
        "content-type": "application/json"}))
    check_refused(client.post("/verify", json=base | {"responses_create_params": {"input": 5}}))
    # a verifier that cannot score (a task it refuses) is masked: the reward measures nothing
    doc = check_reply(base | {"verifier": "tool_call", "expected_answer": 7},
                      client.post("/verify", json=base | {"verifier": "tool_call", "expected_answer": 7}))
    assert doc["mask_sample"] is True and doc["reward"] == 0.0
    assert doc["failure_kind"] == "verifier_error" and doc["failure_reason"].startswith("exception")
    # the policy's malformed answer is measured, not masked
    empty = copy.deepcopy(base) | {"verifier": "exact_match", "expected_answer": "x"}
    empty["response"]["output"] = []
    doc = check_reply(empty, client.post("/verify", json=empty))
    assert doc["mask_sample"] is False and doc["failure_kind"] is None and doc["reward"] == 0.0
    assert doc["crossgym"]["verdict"]["error"].startswith("malformed")
