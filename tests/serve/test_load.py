"""A bounded loopback load test: many concurrent clients on 127.0.0.1, every reply correct, nothing dropped.

Bounded in count (300 verify requests, 20 batches, 20 sessions) and time (one asyncio.wait_for over all of it).
Throughput is measured in bench/serve.py, not asserted here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from crossgym.api import load_verifier
from crossgym.serve.models import verdict_dict
from crossgym.verifiers.batch import verify_many

N_SINGLE = 300
N_BATCH = 20
N_SESSIONS = 20
BUDGET_S = 240.0


def test_concurrent_mixed_load_has_no_errors(live_server: Any) -> None:
    srv = live_server(max_concurrency=16)
    examples = [(e.task, e.completion) for n in ("exact_match", "numeric", "json_answer", "tool_call", "regex")
                for e in load_verifier(n).examples()]
    expected = verify_many(examples)
    items = [{"task": t.to_dict(), "completion": c.to_dict()} for t, c in examples]

    async def run() -> tuple[list[Any], list[Any], list[Any]]:
        limits = httpx.Limits(max_connections=N_SINGLE + N_BATCH + N_SESSIONS, max_keepalive_connections=64)
        async with httpx.AsyncClient(base_url=srv.url, limits=limits, timeout=BUDGET_S) as c:
            async def single(i: int) -> tuple[int, Any]:
                r = await c.post("/verify", json=items[i % len(items)])
                return i, r

            async def batch(_: int) -> Any:
                return await c.post("/verify/batch", json={"items": items})

            async def session(i: int) -> Any:
                task = {"id": f"s{i}", "prompt": "Capital of France?", "answer": "Paris", "verifier": "exact_match"}
                r = await c.post("/envs", json={"task": task})
                sid = r.json()["id"]
                step = await c.post(f"/envs/{sid}/step", json={"action": "Paris" if i % 2 else "Rome"})
                gone = await c.delete(f"/envs/{sid}")
                return r.status_code, step.json(), gone.status_code

            return await asyncio.gather(asyncio.gather(*(single(i) for i in range(N_SINGLE))),
                                        asyncio.gather(*(batch(i) for i in range(N_BATCH))),
                                        asyncio.gather(*(session(i) for i in range(N_SESSIONS))))

    singles, batches, sessions = asyncio.run(asyncio.wait_for(run(), BUDGET_S))
    for i, r in singles:
        assert r.status_code == 200, r.text
        assert r.json()["verdict"] == verdict_dict(expected[i % len(expected)])
    for r in batches:
        assert r.status_code == 200 and r.json()["verdicts"] == [verdict_dict(v) for v in expected]
    for i, (created, step, deleted) in enumerate(sessions):
        assert created == 201 and deleted == 204
        assert step["done"] is True and step["verdict"]["passed"] is bool(i % 2)
    with httpx.Client(base_url=srv.url) as c:
        h = c.get("/health").json()
    assert h == {**h, "sessions": 0, "in_flight": 0, "queued": 0}
