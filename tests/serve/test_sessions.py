"""Environment sessions over HTTP: create, step to the end (with the Verdict), state, delete, cap and expiry."""

from __future__ import annotations

import time
from typing import Any

from crossgym.api import load_environment, load_tasks
from crossgym.serve.models import verdict_dict


def _code_task() -> Any:
    return load_tasks("python_functions", env="code")[0]


def test_code_episode_over_http_matches_the_local_episode(client: Any) -> None:
    task = _code_task()
    wrong = "```python\ndef nothing():\n    pass\n```"
    right = f"```python\n{task.metadata['reference']}\n```"

    r = client.post("/envs", json={"task": task.to_dict(), "seed": 3})
    assert r.status_code == 201, r.text
    created = r.json()
    sid = created["id"]
    assert created["env"] == "code" and len(sid) >= 20
    assert [t["name"] for t in created["observation"]["tools"]] == ["run_tests"]

    first = client.post(f"/envs/{sid}/step", json={"action": wrong}).json()
    assert first["done"] is False and first["verdict"] is None and first["turn"] == 1
    last = client.post(f"/envs/{sid}/step", json={"action": {"role": "assistant", "content": right}}).json()
    assert last["done"] is True and last["verdict"]["passed"] is True

    with load_environment("code") as env:  # the same episode in process
        obs = env.reset(task, seed=3)
        env.step(wrong)
        res = env.step(right)
        assert obs.to_dict() == created["observation"]
        assert res.done and verdict_dict(env.verdict()) == last["verdict"]

    state = client.get(f"/envs/{sid}").json()
    assert state["done"] is True and state["turns"] == 2 and state["task_id"] == task.id
    assert [m["role"] for m in state["messages"]] == ["assistant", "user", "assistant"]

    again = client.post(f"/envs/{sid}/step", json={"action": right})
    assert again.status_code == 409 and again.json()["error"]["code"] == "episode_state"
    assert client.delete(f"/envs/{sid}").status_code == 204
    gone = client.post(f"/envs/{sid}/step", json={"action": right})
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_session"
    assert client.delete(f"/envs/{sid}").status_code == 404


def test_single_turn_episode_and_bad_actions(client: Any) -> None:
    task = {"id": "q", "prompt": "Capital of France?", "answer": "Paris", "verifier": "exact_match"}
    sid = client.post("/envs", json={"task": task}).json()["id"]
    bad = client.post(f"/envs/{sid}/step", json={"action": {"role": "user", "content": "Paris"}})
    assert bad.status_code == 422 and bad.json()["error"]["where"] == "body.action.role"
    done = client.post(f"/envs/{sid}/step", json={"action": "Paris"}).json()
    assert done["done"] is True and done["verdict"]["reward"] == 1.0


def test_bad_environment_and_task_are_422(client: Any) -> None:
    task = {"id": "q", "prompt": "p", "answer": "x", "verifier": "exact_match"}
    r = client.post("/envs", json={"task": task, "env": "no_such_env"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_environment"
    r = client.post("/envs", json={"task": task, "env": "code"})  # no tests to show
    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_task" and r.json()["error"]["fix"]
    r = client.post("/envs", json={"task": task, "env": "single_turn", "params": {"nope": 1}})
    assert r.status_code == 422
    assert client.get("/health").json()["sessions"] == 0  # failed creations hold no place


def test_session_cap_and_idle_expiry(make_client: Any) -> None:
    c = make_client(max_sessions=2, session_idle_s=0.3)
    task = {"id": "q", "prompt": "p", "answer": "x", "verifier": "exact_match"}
    ids = [c.post("/envs", json={"task": task}).json()["id"] for _ in range(2)]
    r = c.post("/envs", json={"task": task})
    assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_sessions"
    assert r.headers["retry-after"] == "1"
    deadline = time.monotonic() + 10
    while c.get("/health").json()["sessions"] and time.monotonic() < deadline:
        time.sleep(0.1)  # the sweeper closes idle sessions
    assert c.get("/health").json()["sessions"] == 0
    assert c.get(f"/envs/{ids[0]}").status_code == 404
    assert c.post("/envs", json={"task": task}).status_code == 201


def test_sessions_are_closed_at_shutdown() -> None:
    from fastapi.testclient import TestClient

    from crossgym.serve.app import create_app
    from crossgym.serve.settings import ServeSettings

    task = _code_task()
    app = create_app(ServeSettings())
    with TestClient(app) as c:
        sid = c.post("/envs", json={"task": task.to_dict()}).json()["id"]
        env = app.state.sessions.get(sid).env
        assert not env.closed
    assert env.closed and len(app.state.sessions) == 0


def test_a_second_step_while_one_runs_is_409(live_server: Any) -> None:
    import concurrent.futures

    import httpx

    task = load_tasks("shell_tasks", n=1, seed=0, env="shell")[0]
    srv = live_server()
    slow = {"role": "assistant", "content": "",
            "tool_calls": [{"id": "c1", "name": "run", "arguments": {"command": "sleep 1; echo done"}}]}
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        sid = c.post("/envs", json={"task": task.to_dict()}).json()["id"]

    def step(_: int) -> httpx.Response:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            return c.post(f"/envs/{sid}/step", json={"action": slow})

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(step, range(2)))
    assert sorted(r.status_code for r in replies) == [200, 409]
    ok = next(r for r in replies if r.status_code == 200).json()
    assert "done" in ok["messages"][0]["content"] and ok["done"] is False
    busy = next(r for r in replies if r.status_code == 409).json()["error"]
    assert busy["code"] == "session_busy" and busy["fix"]
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.delete(f"/envs/{sid}").status_code == 204


def test_an_environment_that_raises_ends_the_episode_with_the_drivers_verdict(make_client: Any) -> None:
    """The episode driver's rule over HTTP too: the episode ends on an exception Verdict (it was a 500)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
    from driver_envs import RAISING, DriverEnvPlugin, raising_tasks

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = DriverEnvPlugin()
    register_plugin(plugin)
    try:
        c = make_client()
        task = raising_tasks()[0][0]
        sid = c.post("/envs", json={"task": task.to_dict()}).json()["id"]
        first = c.post(f"/envs/{sid}/step", json={"action": "hello"}).json()
        assert first["done"] is False
        second = c.post(f"/envs/{sid}/step", json={"action": "done"})
        assert second.status_code == 200
        doc = second.json()
        want = f"exception: environment {RAISING!r} step 2 failed: RuntimeError: tool server went away"
        assert doc["done"] is True and doc["verdict"]["error"] == want and doc["verdict"]["reward"] == 0.0
        assert c.get(f"/envs/{sid}").json()["verdict"]["error"] == want
        assert c.post(f"/envs/{sid}/step", json={"action": "again"}).status_code == 409
    finally:
        unregister_plugin(plugin)
