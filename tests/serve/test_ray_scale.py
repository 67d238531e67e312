"""verify_many_ray on a local Ray (2 CPUs): results equal local verify_many; actors stay warm; verify-batch --ray."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from crossgym.api import load_tasks, load_verifier  # noqa: E402
from crossgym.protocol import Completion, Task  # noqa: E402
from crossgym.verifiers.batch import verify_many  # noqa: E402


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    from crossgym.serve.ray_scale import shutdown_workers

    shutdown_workers()
    ray.shutdown()


def _code_pairs(n: int) -> list[tuple[Task, Completion | str]]:
    pairs: list[tuple[Task, Completion | str]] = []
    for t in load_tasks("python_functions")[:n]:
        pairs += [(t, f"```python\n{t.metadata['reference']}\n```"), (t, f"```python\n{t.metadata['buggy']}\n```"),
                  (t, "no code here")]
    return pairs


def test_ray_equals_local_on_sandboxed_and_cheap_verifiers(local_ray: None) -> None:
    from crossgym.serve.ray_scale import get_workers, verify_many_ray

    pairs = _code_pairs(6)
    for name in ("exact_match", "json_answer", "math", "tool_call"):
        pairs += [(e.task, e.completion) for e in load_verifier(name).examples()]
    local = verify_many(pairs)
    assert sum(v.passed for v in local) >= 6 and any(v.error for v in local)
    assert verify_many_ray(pairs, num_workers=2, chunksize=5) == local
    actors = get_workers(2)
    pids = set(ray.get([a.ready.remote() for a in actors]))
    assert len(pids) == 2 and os.getpid() not in pids
    assert verify_many_ray(pairs, num_workers=2) == local  # again, on the same warm actors
    assert set(ray.get([a.ready.remote() for a in get_workers(2)])) == pids
    assert verify_many_ray([], num_workers=2) == []


def test_actor_sets_grow_and_too_many_is_a_clear_error(local_ray: None) -> None:
    from crossgym.protocol.errors import CrossgymError
    from crossgym.serve.ray_scale import get_workers, verify_many_ray

    pairs = _code_pairs(2)
    one = get_workers(1)
    assert verify_many_ray(pairs, num_workers=1) == verify_many(pairs)
    two = get_workers(2)  # grows by one actor (2 CPUs in all): no wait for CPUs the first one holds
    assert two[0] is one[0] and len(two) == 2
    with pytest.raises(CrossgymError, match="cluster has 0 CPU free"):
        get_workers(3)


def test_pinned_actors_hold_one_core_each_and_equal_local(local_ray: None) -> None:
    from crossgym.serve.ray_scale import _chunks, get_workers, shutdown_workers, verify_many_ray

    shutdown_workers()  # the unpinned actors of other tests hold the 2 CPUs
    pairs = _code_pairs(3)
    assert verify_many_ray(pairs, num_workers=2, pin_cpus=True, chunksize=2) == verify_many(pairs)
    node = sorted(os.sched_getaffinity(0))
    cores = ray.get([a.pinned.remote() for a in get_workers(2, pin_cpus=True)])
    assert cores == [[node[0]], [node[1 % len(node)]]]
    # the same chunks for any number of actors: ~64 of them; a task's pairs (a GRPO group) share one
    assert [len(c) for c in _chunks([object() for _ in range(1000)], None)] == [16] * 62 + [8]
    tasks = [t for t, _ in _code_pairs(8)[::3]] * 8  # 8 tasks, each 8 times, interleaved
    chunks = _chunks(tasks, None)
    assert len(chunks) == 8 and sorted(i for c in chunks for i in c) == list(range(64))
    assert all(len(c) == 8 and all(tasks[i] == tasks[c[0]] for i in c) for c in chunks)
    assert _chunks(tasks, 5)[0] == [0, 1, 2, 3, 4]  # a chunksize cuts in order
    shutdown_workers()


def test_verify_batch_file_with_ray_equals_local(local_ray: None, tmp_path: Path) -> None:
    from crossgym.serve.batch_cmd import verify_batch

    src = tmp_path / "rollouts.jsonl"
    with src.open("w") as f:
        for task, comp in _code_pairs(3):
            f.write(json.dumps({"task": task.to_dict(), "completion": comp}) + "\n")
    ray_doc = verify_batch(src, use_ray=True, workers=2, out=tmp_path / "ray.jsonl")
    local_doc = verify_batch(src, out=tmp_path / "local.jsonl")
    assert ray_doc["mode"] == "ray" and local_doc["mode"] == "local"
    assert (tmp_path / "ray.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()
    assert ray_doc["passed"] == local_doc["passed"] == 3 and ray_doc["n"] == 9
    assert ray.is_initialized()  # a Ray it did not start is left running


def test_verify_batch_cli_with_address_joins_a_running_ray(local_ray: None, tmp_path: Path) -> None:
    """`crossgym verify-batch --address` from another process: it joins this test's Ray, scores on its actors,
    ends them and leaves the cluster running."""
    import subprocess
    import sys

    from crossgym.serve.batch_cmd import verify_batch
    from crossgym.serve.ray_scale import shutdown_workers

    shutdown_workers()  # free the cluster's 2 CPUs for the other driver's actors
    src = tmp_path / "rollouts.jsonl"
    with src.open("w") as f:
        for task, comp in _code_pairs(2):
            f.write(json.dumps({"task": task.to_dict(), "completion": comp}) + "\n")
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", str(src), "--address", address,
                           "--workers", "2", "--out", str(tmp_path / "ray.jsonl"), "--json"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "ray" and doc["n"] == 6 and doc["passed"] == 2
    verify_batch(src, out=tmp_path / "local.jsonl")
    assert (tmp_path / "ray.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()
    deadline = time.monotonic() + 60  # its actors end (Ray frees their CPUs a moment later); the cluster stays up
    while ray.available_resources().get("CPU") != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU") == 2


def test_missing_ray_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from crossgym.protocol.errors import BackendUnavailable
    from crossgym.serve import ray_scale

    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(BackendUnavailable, match=r"pip install 'crossgym\[ray\]'"):
        ray_scale.verify_many_ray([])
