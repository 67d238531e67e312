"""Runs blocking work (verifiers, environments) on threads: at most N at once, a bounded queue, a deadline.

A slot is held until the thread really ends, so a request that timed out (504) still counts against the limit
while its verifier finishes (verifiers honour their own timeouts): the server never runs more than N jobs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from crossgym.serve.errors import ApiError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Runner:
    """Concurrency limit, queue bound and per-request deadline for thread jobs."""

    def __init__(self, max_concurrency: int, max_queue: int, timeout_s: float) -> None:
        self.max_concurrency = max_concurrency
        self.max_queue = max_queue
        self.timeout_s = timeout_s
        self.running = 0
        self.queued = 0
        self._sem: asyncio.Semaphore | None = None
        self._limiter: anyio.CapacityLimiter | None = None

    def _ready(self) -> tuple[asyncio.Semaphore, anyio.CapacityLimiter]:
        if self._sem is None or self._limiter is None:  # created inside the server's event loop
            self._sem = asyncio.Semaphore(self.max_concurrency)
            # the semaphore bounds the work; this only lifts anyio's default 40-thread cap
            self._limiter = anyio.CapacityLimiter(self.max_concurrency + 64)
        return self._sem, self._limiter

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """``fn(*args)`` on a thread; 503 when the queue is full, 504 past the deadline."""
        sem, limiter = self._ready()
        if sem.locked() and self.queued >= self.max_queue:
            raise ApiError(503, "overloaded", f"{self.queued} requests are already waiting for a slot",
                           fix="retry after a moment, send batches (POST /verify/batch), or raise --max-concurrency",
                           headers={"Retry-After": "1"})
        loop = asyncio.get_running_loop()
        deadline = self.timeout_s if timeout_s is None else timeout_s
        released = started = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.running -= 1
                sem.release()

        def job() -> T:
            nonlocal started
            started = True
            try:
                return fn(*args)
            finally:
                loop.call_soon_threadsafe(release)

        try:
            with anyio.fail_after(deadline):
                self.queued += 1
                try:
                    await sem.acquire()
                finally:
                    self.queued -= 1
                self.running += 1
                try:
                    return await anyio.to_thread.run_sync(job, abandon_on_cancel=True, limiter=limiter)
                except BaseException:
                    if not started:  # cancelled before a thread took the job: it never runs, free the slot
                        release()
                    raise
        except TimeoutError:
            raise ApiError(504, "timeout", f"the request took longer than {deadline:g} s", where="server",
                           fix="send fewer items per request, raise the server's --timeout, or lower the "
                               "verifier's own timeout") from None
