"""Auth and limits on a real loopback server: bearer token, body size, batch size, concurrency, deadlines."""

from __future__ import annotations

import concurrent.futures
import json
import secrets
from typing import Any

import httpx
import pytest

TASK = {"id": "t", "prompt": "p", "answer": "x", "verifier": "exact_match"}


def test_token_guards_every_route_but_health(live_server: Any) -> None:
    token = "canary-" + secrets.token_urlsafe(24)  # planted for this test only
    srv = live_server(token=token)
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        for method, path, body in [("GET", "/verifiers", None), ("POST", "/verify", {"task": TASK, "completion": "x"}),
                                   ("POST", "/verify/batch", {"items": []}), ("POST", "/envs", {}),
                                   ("GET", "/openapi.json", None), ("GET", "/docs", None),
                                   ("DELETE", "/envs/abc", None), ("GET", "/no/such/route", None)]:
            r = c.request(method, path, json=body)
            assert r.status_code == 401, (path, r.status_code)
            err = r.json()["error"]
            assert err["code"] == "unauthorized" and err["where"] == "Authorization header" and err["fix"]
            assert r.headers["www-authenticate"] == "Bearer"
            assert token not in r.text
        r = c.post("/verify", json={"task": TASK, "completion": "x"}, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401 and r.json()["error"]["what"] == "wrong bearer token"
        auth = {"Authorization": f"Bearer {token}"}
        r = c.post("/verify", json={"task": TASK, "completion": "x"}, headers=auth)
        assert r.status_code == 200 and r.json()["verdict"]["passed"] is True
        assert c.get("/openapi.json", headers=auth).status_code == 200


def test_body_limit_by_content_length_and_while_streaming(live_server: Any) -> None:
    srv = live_server(max_body_bytes=2000)
    big = {"task": TASK, "completion": "y" * 5000}
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post("/verify", json=big)
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "body_too_large" and "2,000" in r.json()["error"]["what"]

        def chunks() -> Any:  # no Content-Length: counted as it arrives
            data = json.dumps(big).encode()
            for i in range(0, len(data), 500):
                yield data[i:i + 500]

        r = c.post("/verify", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
        r = c.post("/verify/batch", content=chunks(), headers={"content-type": "application/json"})  # reads its own
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
    with httpx.Client(base_url=srv.url, timeout=30) as c:  # the server still answers
        assert c.post("/verify", json={"task": TASK, "completion": "x"}).status_code == 200


def test_batch_limit(client: Any, make_client: Any) -> None:
    small = make_client(max_batch=3)
    items = [{"task": TASK, "completion": "x"}] * 4
    r = small.post("/verify/batch", json={"items": items})
    assert r.status_code == 413 and r.json()["error"]["where"] == "body.items"
    assert client.post("/verify/batch", json={"items": []}).status_code == 422
    assert client.post("/verify/batch", json={"items": [{"task": TASK, "completion": "x"}] * 4097}).status_code == 422


def test_request_deadline_is_a_504(make_client: Any, sleepy_plugin: Any) -> None:
    c = make_client(request_timeout_s=0.3)
    task = {"id": "s", "prompt": "p", "answer": 2.0, "verifier": "test_sleepy"}
    r = c.post("/verify", json={"task": task, "completion": "x"})
    assert r.status_code == 504
    err = r.json()["error"]
    assert err["code"] == "timeout" and "0.3 s" in err["what"] and err["fix"]


def test_concurrency_limit_queues_then_refuses(live_server: Any, sleepy_plugin: Any) -> None:
    """One slot, one queue place: of three concurrent slow requests, two are served and one gets 503."""
    srv = live_server(max_concurrency=1, max_queue=1)
    task = {"id": "s", "prompt": "p", "answer": 0.6, "verifier": "test_sleepy"}

    def post(_: int) -> httpx.Response:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            return c.post("/verify", json={"task": task, "completion": "x"})

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        codes = sorted(r.status_code for r in pool.map(post, range(3)))
    assert codes == [200, 200, 503]
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        r = c.post("/verify", json={"task": task, "completion": "x"})
        assert r.status_code == 200  # slots come back
        h = c.get("/health").json()
        assert h["in_flight"] == 0 and h["queued"] == 0


@pytest.mark.parametrize("host, token, ok", [
    ("127.0.0.1", None, True), ("localhost", None, True), ("::1", None, True), ("127.0.0.2", None, True),
    ("0.0.0.0", None, False), ("192.168.1.5", None, False), ("0.0.0.0", "short", False),
    ("0.0.0.0", "x" * 32, True), ("example.org", "x" * 32, True),
])
def test_bind_rule(host: str, token: str | None, ok: bool) -> None:
    from crossgym.protocol.errors import ConfigError
    from crossgym.serve.settings import check_bind

    if ok:
        check_bind(host, token)
    else:
        with pytest.raises(ConfigError):
            check_bind(host, token)


def test_cli_refuses_a_public_bind_without_token_in_one_line() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CROSSGYM_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "serve", "--host", "0.0.0.0", "--port", "1"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to bind 0.0.0.0 without a bearer token" in lines[0] and "fix:" in lines[0]
    assert proc.stdout == ""


@pytest.mark.parametrize("field, value", [("max_concurrency", 0), ("request_timeout_s", -1), ("max_queue", -1),
                                          ("port", 70000), ("max_batch", True)])
def test_settings_refuse_bad_limits(field: str, value: Any) -> None:
    from crossgym.protocol.errors import ConfigError
    from crossgym.serve.settings import ServeSettings

    with pytest.raises(ConfigError):
        ServeSettings(**{field: value})
