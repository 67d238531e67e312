"""The app in process: verdicts equal local ones, structured errors, the listing and the schema."""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.api import load_verifier
from crossgym.plugins.manager import registry
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.verifiers.batch import verify_many


def _examples() -> list[tuple[Task, Completion]]:
    reg = registry("verifiers")
    pairs = []
    for entry in reg:
        for ex in reg.load(entry.name).examples():
            pairs.append((ex.task, ex.completion))
    return pairs


def _item(task: Task, completion: Completion | str) -> dict[str, Any]:
    return {"task": task.to_dict(), "completion": completion if isinstance(completion, str) else completion.to_dict()}


def test_batch_equals_local_verify_many_on_every_verifiers_examples(client: Any) -> None:
    pairs = _examples()
    assert len({t.verifier.name for t, _ in pairs}) >= 20
    r = client.post("/verify/batch", json={"items": [_item(t, c) for t, c in pairs]})
    assert r.status_code == 200, r.text
    got = [Verdict.from_dict(v) for v in r.json()["verdicts"]]
    assert got == verify_many(pairs)


def test_verify_equals_the_verifier_on_one_example_of_each(client: Any) -> None:
    seen: set[str] = set()
    checked = 0
    for task, completion in _examples():
        name = task.verifier.name
        if name in seen or name == "judge":  # judge needs an endpoint: see the 422 test below
            continue
        seen.add(name)
        r = client.post("/verify", json=_item(task, completion))
        assert r.status_code == 200, (name, r.text)
        doc = r.json()
        verifier = load_verifier(task.verifier)
        assert Verdict.from_dict(doc["verdict"]) == verifier.verify(task, completion), name
        assert doc["verifier"] == {"name": name, "version": str(verifier.version)}
        checked += 1
    assert checked >= 20


def test_plain_text_completion_and_verifier_override(client: Any) -> None:
    task = {"id": "t1", "prompt": "Capital of France?", "answer": "Paris", "verifier": "exact_match"}
    assert client.post("/verify", json={"task": task, "completion": "Paris"}).json()["verdict"]["passed"] is True
    r = client.post("/verify", json={"task": task, "completion": "It is Paris, I think",
                                     "verifier": {"name": "string_similarity", "params": {}}})
    assert r.status_code == 200
    assert r.json()["verifier"]["name"] == "string_similarity"
    assert 0.0 < r.json()["verdict"]["reward"] < 1.0


def test_malformed_completion_is_a_verdict_not_an_error(client: Any) -> None:
    task = {"id": "t", "prompt": "2+2", "answer": 4, "verifier": "numeric"}
    r = client.post("/verify", json={"task": task, "completion": "no number here"})
    assert r.status_code == 200
    assert r.json()["verdict"]["error"].startswith("malformed")


@pytest.mark.parametrize("body, where, code", [
    ({"task": {"id": "t", "prompt": "p", "verifier": "exact_match"}}, "body.completion", "invalid_request"),
    ({"task": {"id": "t", "prompt": "p", "verifier": "exact_match", "answr": 1}, "completion": "x"},
     "body.task.answr", "invalid_request"),
    ({"task": {"id": "t", "prompt": [{"role": "robot", "content": "hi"}], "verifier": "exact_match"},
      "completion": "x"}, "body.task.prompt[0].role", "invalid_request"),
    ({"task": {"id": "t", "prompt": "p", "verifier": "no_such_verifier"}, "completion": "x"}, "body.task.verifier",
     "unknown_verifier"),
    ({"task": {"id": "t", "prompt": "p", "verifier": {"name": "exact_match", "params": {"bogus": 1}}},
      "completion": "x"}, "body.task.verifier", "bad_verifier"),
    ({"task": {"id": "t", "prompt": "p", "verifier": "exact_match"}, "completion": "x", "verifier": "judge"},
     "body.verifier", "bad_verifier"),
])
def test_bad_input_is_a_structured_422(client: Any, body: dict[str, Any], where: str, code: str) -> None:
    r = client.post("/verify", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["status"] == 422 and err["code"] == code
    assert err["where"] == where
    assert err["what"] and err["fix"]


def test_invalid_json_and_wrong_routes_are_structured(client: Any) -> None:
    r = client.post("/verify", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["fix"].startswith("send one valid JSON")
    r = client.get("/no/such/route")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = client.get("/verify")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_batch_keeps_order_and_isolates_a_bad_verifier(client: Any) -> None:
    good = {"id": "a", "prompt": "p", "answer": "x", "verifier": "exact_match"}
    bad = {"id": "b", "prompt": "p", "answer": "x", "verifier": "no_such_verifier"}
    items = [{"task": good, "completion": "x"}, {"task": bad, "completion": "x"}, {"task": good, "completion": "y"}]
    verdicts = client.post("/verify/batch", json={"items": items}).json()["verdicts"]
    assert [v["passed"] for v in verdicts] == [True, False, False]
    assert verdicts[1]["error"].startswith("exception") and verdicts[2]["error"] is None


def test_verifiers_listing_and_health(client: Any) -> None:
    rows = {r["name"]: r for r in client.get("/verifiers").json()["verifiers"]}
    assert set(registry("verifiers").names()) == set(rows)
    assert rows["code_tests"]["isolation"] == "thread" and rows["math"]["isolation"] == "process"
    assert rows["exact_match"]["version"] and rows["exact_match"]["description"]
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["sessions"] == 0 and h["in_flight"] == 0


def test_openapi_lists_every_route_with_error_models(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    assert {"/verify", "/verify/batch", "/envs", "/envs/{sid}", "/envs/{sid}/step", "/verifiers", "/health",
            "/openrlhf/reward"} <= set(doc["paths"])
    post = doc["paths"]["/verify"]["post"]
    assert {"413", "422", "503", "504"} <= set(post["responses"])
    assert post["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert "responses_create_params" not in str(post)  # NeMo Gym's shape only with --nemo-gym
    body = doc["paths"]["/verify/batch"]["post"]["requestBody"]  # the route reads its body itself
    assert body["required"] and body["content"]["application/json"]["schema"]["$ref"].endswith("/BatchRequest")
    assert {"BatchRequest", "BatchItem", "TaskIn", "CompletionIn"} <= set(doc["components"]["schemas"])


def test_batch_with_shared_tasks_equals_inline_tasks(client: Any) -> None:
    task = Task.from_dict({"id": "g", "prompt": "2+2?", "answer": "4", "verifier": "numeric"})
    completions = ["4", "It is 4", "five", "", "4.0"]
    shared = client.post("/verify/batch", json={"tasks": [task.to_dict()],
                                                "items": [{"task": 0, "completion": c} for c in completions]})
    inline = client.post("/verify/batch", json={"items": [_item(task, c) for c in completions]})
    assert shared.status_code == inline.status_code == 200
    assert shared.json() == inline.json()
    assert [Verdict.from_dict(v) for v in shared.json()["verdicts"]] == verify_many([(task, c) for c in completions])
    bad = client.post("/verify/batch", json={"tasks": [task.to_dict()], "items": [{"task": 0, "completion": "4"},
                                                                                 {"task": 3, "completion": "4"}]})
    assert bad.status_code == 422 and bad.json()["error"]["where"] == "body.items[1].task"


def test_a_rollout_records_unreadable_tool_call_is_judged_as_it_was(client: Any) -> None:
    """A completion as a rollout record writes it (an unreadable call keeps its error and the model's text), or
    with OpenAI's string arguments, is scored by /verify as in process: malformed, never a readable {} call."""
    from crossgym.protocol.messages import Message
    from crossgym.verifiers.tool_call import ToolCallVerifier

    task = ToolCallVerifier.task({"name": "ping", "arguments": {}},
                                 tools=[{"name": "ping", "parameters": {"type": "object", "properties": {}}}])
    comp = Completion(messages=(Message.from_dict({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{bad"}}]}),))
    local = ToolCallVerifier().verify(task, comp)
    assert local.error_kind == "malformed"
    for completion in (comp.to_dict(), {"messages": [{"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "name": "ping", "arguments": "{bad"}]}]}):
        r = client.post("/verify", json={"task": task.to_dict(), "completion": completion})
        assert r.status_code == 200, r.text
        got = Verdict.from_dict(r.json()["verdict"])
        assert (got.reward, got.passed, got.error, got.reason) == (local.reward, local.passed, local.error,
                                                                   local.reason)
    good = {"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ping",
                                                                             "arguments": "{}"}]}]}
    assert client.post("/verify", json={"task": task.to_dict(), "completion": good}).json()["verdict"]["passed"]
