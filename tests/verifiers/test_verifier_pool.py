"""The worker pool: order, per-job deadlines in batches, failures isolated, healing, closing."""

from __future__ import annotations

import os
import time

import pytest

from crossgym.protocol.task import Completion, Verdict
from crossgym.verifiers.base import BaseVerifier, _pool_score
from crossgym.verifiers.pool import PoolError, PoolTimeout, WorkerPool


def square(x):
    return x * x


def nap(s):
    time.sleep(s)
    return s


def die(_):
    os._exit(3)


def fail(msg):
    raise RuntimeError(msg)


def unpicklable(_):
    return lambda: None


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool(2, warm=())
    yield p
    p.close()


def test_call_and_map_keep_order(pool):
    assert pool.call(square, (7,), timeout=10) == 49
    assert pool.map(square, [(i,) for i in range(50)], timeout=10, chunksize=7) == [i * i for i in range(50)]


def test_timeouts_inside_a_batch_only_hit_that_job(pool):
    out = pool.run_batch(nap, [(0.0,), (5.0,), (0.01,)], timeout=0.5)
    assert out[0] == 0.0 and isinstance(out[1], PoolTimeout) and out[2] == 0.01
    assert pool.kills >= 1
    with pytest.raises(PoolTimeout):
        pool.call(nap, (5.0,), timeout=0.3)
    assert pool.call(square, (3,), timeout=10) == 9


def test_errors_and_dead_workers_are_isolated(pool):
    out = pool.map(fail, [("a",), ("b",)], timeout=10, chunksize=1)
    assert all(isinstance(o, PoolError) and "RuntimeError" in str(o) for o in out)
    out = pool.run_batch(die, [(1,), (2,)], timeout=10)
    assert all(isinstance(o, PoolError) for o in out)
    with pytest.raises(PoolError, match="could not be sent back"):
        pool.call(unpicklable, (1,), timeout=10)
    assert pool.call(square, (4,), timeout=10) == 16


def test_closed_pool_refuses():
    p = WorkerPool(1, warm=())
    assert p.call(square, (2,), timeout=10) == 4
    p.close()
    with pytest.raises(PoolError, match="closed"):
        p.call(square, (2,), timeout=1)


def hog(n_bytes):
    """Allocate ``n_bytes`` and touch them; the size it got."""
    return len(bytearray(n_bytes))


def hog_and_swallow(n_bytes):
    """What math-verify does: a MemoryError in its parser is caught and the answer read another way."""
    try:
        return len(bytearray(n_bytes))
    except MemoryError:
        return -1


def pid(_):
    return os.getpid()


@pytest.mark.parametrize("text, want", [("", 2**30), ("off", None), ("0", None), ("512M", 512 * 2**20),
                                        ("2G", 2 * 2**30), ("1.5g", int(1.5 * 2**30)), ("4GiB", 4 * 2**30),
                                        (str(3 * 2**30), 3 * 2**30)])
def test_the_memory_budget_reads_sizes_and_off(text, want):
    from crossgym.verifiers.pool import memory_budget

    assert memory_budget(text) == want


@pytest.mark.parametrize("text", ["lots", "12", "-1G", "1X"])
def test_a_bad_memory_budget_is_a_config_error_saying_the_fix(text):
    from crossgym.protocol.errors import ConfigError
    from crossgym.verifiers.pool import memory_budget

    with pytest.raises(ConfigError, match="CROSSGYM_VERIFIER_WORKER_MEMORY"):
        memory_budget(text)


def test_a_job_past_the_memory_budget_fails_and_its_worker_is_replaced():
    """Workers had a CPU budget only: one 44-character answer to math took a worker to 4.5 GB in 5 s. Each worker
    may now allocate ``memory`` bytes beyond what it was forked with: past it a MemoryError, and the worker (its
    heap fragmented, a library's state maybe half-built) is replaced, even when the job's code swallowed it."""
    p = WorkerPool(1, warm=(), memory=256 * 2**20)
    try:
        first = p.call(pid, (0,), timeout=10)
        assert p.call(hog, (64 * 2**20,), timeout=10) == 64 * 2**20  # within the budget: an ordinary job
        assert p.call(pid, (0,), timeout=10) == first
        with pytest.raises(PoolError, match="MemoryError"):
            p.call(hog, (2 * 2**30,), timeout=10)
        second = p.call(pid, (0,), timeout=10)
        assert second != first and p.kills == 1
        out = p.run_batch(hog_and_swallow, [(2 * 2**30,), (1024,)], timeout=10)
        assert out == [-1, 1024]  # (a swallowed MemoryError leaves no grown heap: that worker may go on)
        assert p.map(square, [(i,) for i in range(6)], timeout=10, chunksize=3) == [i * i for i in range(6)]
    finally:
        p.close()


class Hog(BaseVerifier):
    """Allocates as many bytes as the completion says, then passes."""

    name = "hog_test"

    def score(self, task, completion):
        bytearray(int(completion.text))
        return Verdict.ok(1.0)


def test_a_verifier_out_of_memory_in_the_pool_is_malformed_and_the_rest_of_a_batch_goes_on():
    p = WorkerPool(1, warm=(), memory=256 * 2**20)
    try:
        t = Hog.task("x")
        jobs = [(Hog, {}, t, Completion.from_text(n), 10.0) for n in (str(2**20), str(2**31), str(2**20))]
        out = p.run_batch(_pool_score, jobs, timeout=10)
        assert out[0].passed and out[2].passed, out
        assert out[1].error_kind == "malformed" and "MiB of memory" in out[1].reason, out[1]
        assert p.kills == 1
    finally:
        p.close()


class InlineOom(BaseVerifier):
    name = "inline_oom_test"

    def score(self, task, completion):
        raise MemoryError


def test_out_of_memory_outside_a_limited_worker_is_the_machines_fault():
    """Only a pool worker's own budget makes a MemoryError the completion's doing; in the caller it stays an
    exception Verdict (the machine ran out)."""
    v = InlineOom().verify(InlineOom.task("x"), Completion.from_text("y"))
    assert v.error_kind == "exception" and "MemoryError" in v.reason, v
