"""verify_many_ray's chunking (crossgym.serve.ray_scale._chunks) without Ray: a task's pairs share a chunk, in
linear time however many pairs share one task id (issue 27)."""

from __future__ import annotations

import time

import pytest

from crossgym.protocol import Task, VerifierSpec


def test_chunks_of_100k_pairs_sharing_one_id_are_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pair scanned every earlier run of its task, full ones included: quadratic in the pairs of one task (100k
    pairs: 0.3 s, 400k: 3.6 s; with runs of 4 pairs, 100k pairs took ~15 s). A full run now leaves the scan."""
    import crossgym.serve.ray_scale as rs

    spec = VerifierSpec("code_tests", {})
    one = Task(id="0", prompt="q", answer=1, verifier=spec)
    other = Task(id="0", prompt="q", answer=2, verifier=spec)  # the same id, another task: never in one run
    n = 100_000
    tasks = [one if i % 4 else other for i in range(n)]
    chunks = rs._chunks(tasks, None)
    assert sorted(i for c in chunks for i in c) == list(range(n))
    assert all(len({id(tasks[i]) for i in c}) == 1 for c in chunks)  # a chunk: pairs of one task
    assert sum(len(c) < rs.CHUNK_MAX for c in chunks) == 2  # each task's last run is its only short one
    monkeypatch.setattr(rs, "CHUNK_MAX", 4)  # runs fill at once: the scan of full runs was the whole cost
    started = time.perf_counter()
    chunks = rs._chunks(tasks, None)
    assert time.perf_counter() - started < 3.0  # (~0.1 s; it was ~15 s)
    assert sum(map(len, chunks)) == n
