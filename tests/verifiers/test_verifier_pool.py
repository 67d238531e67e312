"""The worker pool: order, per-job deadlines in batches, failures isolated, healing, closing."""

from __future__ import annotations

import os
import time

import pytest

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
