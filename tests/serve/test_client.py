"""The stdlib clients against a live loopback server: ServeClient, and veRL's verl_compute_score."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crossgym.adapters.verl.reward import COMPLETION_KEY, TASK_KEY, compute_score
from crossgym.api import load_verifier
from crossgym.protocol import Completion, Message, Task, ToolCall
from crossgym.serve.client import VERL_COMPLETION_KEY, VERL_TASK_KEY, ServeClient, ServeError, verl_compute_score
from crossgym.verifiers.batch import verify_many

NAMES = ["exact_match", "numeric", "json_answer", "tool_call", "code_tests", "format_tags"]


def _examples() -> list[tuple[Task, Completion]]:
    return [(e.task, e.completion) for n in NAMES for e in load_verifier(n).examples()]


def test_serve_client_verify_and_batch_equal_local(live_server: Any) -> None:
    srv = live_server()
    pairs = _examples()
    client = ServeClient(srv.url)
    try:
        assert client.health()["status"] == "ok"
        assert client.verify_batch(pairs, batch_size=7) == verify_many(pairs)
        task, completion = pairs[0]
        assert client.verify(task, completion) == load_verifier(task.verifier).verify(task, completion)
        with pytest.raises(ServeError) as err:
            client.verify({"id": "t", "prompt": "p", "verifier": "no_such_verifier"}, "x")
        assert err.value.status == 422 and "GET /verifiers" in str(err.value)
    finally:
        client.close()


def test_serve_client_sends_the_token(live_server: Any) -> None:
    srv = live_server(token="canary-token-for-this-test-0123")
    task, completion = _examples()[0]
    with pytest.raises(ServeError) as err:
        ServeClient(srv.url).verify(task, completion)
    assert err.value.status == 401
    assert ServeClient(srv.url, token="canary-token-for-this-test-0123").verify(task, completion).passed


def test_unreachable_server_is_one_clear_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ServeError, match="cannot reach the crossgym server"):
        ServeClient(f"http://127.0.0.1:{port}", timeout=5).health()


def test_verl_compute_score_equals_crossgyms_local_verl_reward(live_server: Any) -> None:
    assert (VERL_TASK_KEY, VERL_COMPLETION_KEY) == (TASK_KEY, COMPLETION_KEY)
    srv = live_server()
    rows = [(t, c.text, {TASK_KEY: t.to_json()}) for t, c in _examples()]
    episode = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),)),))
    weather = next(t for t, _ in _examples() if t.verifier.name == "tool_call")
    rows.append((weather, "ignored: the episode wins",
                 {TASK_KEY: weather.to_json(), COMPLETION_KEY: json.dumps(episode.to_dict())}))
    rows.append((weather, "x", {}))  # not a crossgym row
    from crossgym.protocol import VerifierSpec
    from crossgym.scoring import ExtraTerm, RewardRule

    # the run's rule: 0.1's remote route ignored task_weight and the extra verifiers
    weighted = RewardRule(on_error=-1.0, task_weight=2.0, extras=(
        ExtraTerm("length", VerifierSpec("length", {"max": 20, "unit": "chars"}), 0.5),)).to_dict()
    for rule in (None, weighted):
        kw = {} if rule is None else {"rule": rule}
        for task, text, info in rows:
            remote = verl_compute_score("src", text, None, info, url=srv.url, **kw)
            local = compute_score("src", text, None, info, **kw)
            if not info:  # the same keys and numbers; the error text is each side's own
                assert remote.pop("error").startswith("exception") and local.pop("error").startswith("exception")
            assert remote == local, (task.verifier.name, text)


def test_verl_compute_score_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from crossgym.protocol.errors import CrossgymError

    monkeypatch.delenv("CROSSGYM_SERVE_URL", raising=False)
    with pytest.raises(CrossgymError, match="reward_kwargs.url"):
        verl_compute_score("src", "x", None, {})
