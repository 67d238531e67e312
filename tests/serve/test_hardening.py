"""A bad client or a bad record must not take the server down, hang it, or reach its secrets: slow and oversized
headers, stalled bodies, connection floods, non-JSON bodies, client-chosen judge endpoints and timeouts, costly
inline verifiers on the event loop, deep JSON, shutdown with work in flight. Each on a real loopback server, with
short deadlines and a few connections."""

from __future__ import annotations

import gzip
import json
import select
import socket
import threading
import time
from typing import Any

import httpx
import pytest

TASK = {"id": "t", "prompt": "p", "answer": "x", "verifier": "exact_match"}
JSON = {"content-type": "application/json"}


def _read_all(sock: socket.socket, timeout: float = 10.0) -> bytes:
    sock.settimeout(timeout)
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return out


def _connect(srv: Any) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def _honest(srv: Any) -> int:
    with httpx.Client(base_url=srv.url, timeout=10) as c:
        return c.post("/verify", json={"task": TASK, "completion": "x"}).status_code


def test_slow_headers_get_408_and_silent_connections_are_closed(live_server: Any) -> None:
    srv = live_server(read_timeout_s=0.5)
    slow, silent = _connect(srv), _connect(srv)
    slow.sendall(b"POST /verify HTTP/1.1\r\nHost: x\r\n")  # and never the rest
    t0 = time.monotonic()
    reply = _read_all(slow)
    assert reply.startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 5
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_timeout"
    assert _read_all(silent) == b""  # closed, no reply owed
    assert _honest(srv) == 200
    slow.close(), silent.close()


def test_headers_past_the_cap_get_431_without_buffering_them(live_server: Any) -> None:
    srv = live_server(max_header_bytes=4096)
    with _connect(srv) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        for _ in range(40):  # a header that never ends: refused once past the cap, not kept
            if select.select([s], [], [], 0.05)[0]:
                break  # the reply came (sending on would reset the connection before it is read)
            s.sendall(b"a" * 1024)
        reply = _read_all(s)
    assert reply.startswith(b"HTTP/1.1 431")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "headers_too_large"
    with httpx.Client(base_url=srv.url, timeout=10) as c:  # headers under the cap are fine
        assert c.get("/health", headers={"x-ok": "a" * 2000}).status_code == 200


def test_idle_connections_past_the_cap_make_room_for_an_honest_client(live_server: Any) -> None:
    srv = live_server(max_connections=16)
    idle = [_connect(srv) for _ in range(24)]
    time.sleep(0.3)
    assert _honest(srv) == 200  # the longest-idle connections were closed for it
    closed = 0
    for s in idle:
        s.settimeout(0.5)
        try:
            closed += s.recv(1) == b""
        except TimeoutError:
            pass
        s.close()
    assert closed >= 8


def test_a_body_shorter_than_its_content_length_gets_408(live_server: Any) -> None:
    srv = live_server(read_timeout_s=0.5)
    for path in ("/verify", "/verify/batch"):
        with _connect(srv) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 500\r\n\r\n{".encode())
            reply = _read_all(s)
        assert reply.startswith(b"HTTP/1.1 408"), (path, reply[:100])
        err = json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
        assert err["code"] == "request_timeout" and err["fix"]
    assert _honest(srv) == 200


@pytest.mark.parametrize("path", ["/verify", "/verify/batch", "/envs"])
@pytest.mark.parametrize("headers, where", [({"content-type": "text/plain"}, "Content-Type header"),
                                            ({}, "Content-Type header"),
                                            ({**JSON, "content-encoding": "gzip"}, "Content-Encoding header")])
def test_a_body_not_declared_json_gets_415(client: Any, path: str, headers: dict[str, str], where: str) -> None:
    body = json.dumps({"items": [{"task": TASK, "completion": "x"}]}).encode()
    if "content-encoding" in headers:
        body = gzip.compress(body)
    r = client.post(path, content=body, headers=headers)
    assert r.status_code == 415
    err = r.json()["error"]
    assert err["code"] == "unsupported_media_type" and err["where"] == where and err["fix"]


def test_health_answers_head(client: Any) -> None:
    assert client.head("/health").status_code == 200


def _judge(**params: Any) -> dict[str, Any]:
    return {"name": "judge", "params": {"model": "m", **params}}


@pytest.mark.parametrize("spec, where", [
    (_judge(base_url="http://127.0.0.1:9/v1"), "body.verifier.params.base_url"),
    (_judge(api_key_env="HOME"), "body.verifier.params.api_key_env"),
    ({"name": "composite", "params": {"components": [{"verifier": _judge(base_url="http://127.0.0.1:9/v1")}]}},
     "body.verifier.params.components[0].verifier.params.base_url"),
])
def test_a_request_cannot_choose_where_the_judge_sends_the_servers_key(client: Any, spec: Any, where: str) -> None:
    r = client.post("/verify", json={"task": TASK, "completion": "x", "verifier": spec})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "forbidden_param" and err["where"] == where and "leave" in err["fix"]
    r = client.post("/envs", json={"task": {**TASK, "verifier": spec}})
    assert r.status_code == 422 and r.json()["error"]["code"] == "forbidden_param"
    label = json.dumps({**TASK, "verifier": spec})
    r = client.post("/openrlhf/reward", json={"query": ["px"], "prompts": ["p"], "labels": [label]})
    assert r.status_code == 422 and r.json()["error"]["where"].startswith("body.labels[0].verifier")


def test_a_batch_item_refused_by_the_guard_fails_alone(client: Any) -> None:
    items = [{"task": TASK, "completion": "x", "verifier": _judge(base_url="http://127.0.0.1:9/v1")},
             {"task": TASK, "completion": "x"},
             {"task": TASK, "completion": "x", "verifier": {"name": "exact_match", "params": {"timeout": 1e9}}}]
    r = client.post("/verify/batch", json={"items": items})
    assert r.status_code == 200
    refused, scored, slow = r.json()["verdicts"]
    assert refused["error"].startswith("exception: a request cannot choose the judge's base_url")
    assert "body.items[0].verifier.params.base_url" in refused["error"] and refused["fault"] == "infra"
    assert scored["passed"] is True and scored["error"] is None
    assert "over this server's" in slow["error"]


def test_a_verifier_timeout_past_the_servers_is_refused(make_client: Any) -> None:
    c = make_client(request_timeout_s=20)
    spec = {"name": "exact_match", "params": {"timeout": 1e9}}
    r = c.post("/verify", json={"task": TASK, "completion": "x", "verifier": spec})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "over_limit" and err["where"] == "body.verifier.params.timeout" and "20" in err["fix"]
    spec["params"]["timeout"] = 5
    assert c.post("/verify", json={"task": TASK, "completion": "x", "verifier": spec}).status_code == 200


def test_a_costly_inline_verifier_does_not_block_the_event_loop(live_server: Any) -> None:
    """A backtracking regex with a 2 s timeout: /health answers meanwhile (it waited the whole 2 s on the loop)."""
    srv = live_server()
    body = {"task": {**TASK, "answer": None}, "completion": "a" * 3000 + "!",
            "verifier": {"name": "regex", "params": {"pattern": "(a|aa)+$", "timeout": 2}}}
    done: list[int] = []

    def attack() -> None:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            done.append(c.post("/verify", json=body).status_code)

    t = threading.Thread(target=attack)
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        assert c.get("/health").status_code == 200
    took = time.monotonic() - t0
    t.join(30)
    assert done == [200] and took < 1.0


@pytest.mark.parametrize("path", ["/verify", "/verify/batch", "/openrlhf/reward"])
def test_json_nested_past_the_parser_limit_is_a_422(client: Any, path: str) -> None:
    r = client.post(path, content=b"[" * 50000 + b"]" * 50000, headers=JSON)
    assert r.status_code == 422
    assert "nested too deeply" in r.json()["error"]["what"]


def test_shutdown_answers_in_flight_requests_503_after_the_grace(sleepy_plugin: Any) -> None:
    from crossgym.serve.live import LiveServer
    from crossgym.serve.settings import ServeSettings

    srv = LiveServer(ServeSettings(shutdown_grace_s=0.5)).__enter__()
    got: list[httpx.Response] = []

    def slow() -> None:
        task = {"id": "s", "prompt": "p", "answer": 3.0, "verifier": "test_sleepy"}
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            got.append(c.post("/verify", json={"task": task, "completion": "x"}))

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    srv.__exit__(None, None, None)
    t.join(30)
    assert time.monotonic() - t0 < 2.5
    assert got and got[0].status_code == 503
    assert got[0].json()["error"]["code"] == "shutting_down"


def test_a_client_leaving_mid_body_is_not_logged_as_a_server_error(live_server: Any,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    srv = live_server()
    for path in ("/verify", "/verify/batch"):
        with _connect(srv) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 1000\r\n\r\n{".encode())
        time.sleep(0.3)
    assert _honest(srv) == 200
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.parametrize(("host", "status"), [
    ("localhost:8000", 200), ("LOCALHOST.", 200), ("api.localhost:8000", 200), ("127.0.0.1:8000", 200),
    ("[::1]:8000", 200), ("10.0.0.5", 200), ("evil.example:8000", 421), ("localhost.evil.example", 421), ("", 421),
])
def test_a_loopback_server_without_a_token_answers_only_localhost_names(make_client: Any, host: str,
                                                                         status: int) -> None:
    """DNS rebinding: a web page whose own name is re-pointed at 127.0.0.1 is same-origin with the server and may
    POST JSON and read the reply; its Host header still says its name, which is refused before anything runs."""
    c = make_client(allowed_hosts=("localhost",))
    r = c.post("/verify", json={"task": TASK, "completion": "x"}, headers={"host": host})
    assert r.status_code == status
    if status == 421:
        err = r.json()["error"]
        assert err["code"] == "wrong_host" and "--token" in err["fix"]


def test_the_cli_settings_check_host_names_only_without_a_token_on_loopback() -> None:
    from crossgym.serve.command import build_settings

    assert build_settings("127.0.0.1", 8000, None).allowed_hosts == ("localhost",)
    assert build_settings("127.0.0.1", 8000, "a-long-enough-secret-token").allowed_hosts is None
    assert build_settings("0.0.0.0", 8000, "a-long-enough-secret-token").allowed_hosts is None
    s = build_settings("127.0.0.1", 8000, None, read_timeout_s=5.0, max_connections=64, shutdown_grace_s=2.0)
    assert (s.read_timeout_s, s.max_connections, s.shutdown_grace_s) == (5.0, 64, 2.0)
