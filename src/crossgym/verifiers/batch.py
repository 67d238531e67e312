"""verify_many: score many (task, completion) pairs, cheap verifiers in-process and heavy ones across processes.

Order is preserved and every pair gets its own Verdict: a bad spec, a crash or a timeout in one never touches
another. "process" verifiers (math, ...) go to the worker pool in chunks (one round trip per chunk, each job with
its own deadline); "thread" verifiers (judge, sandbox clients) run concurrently on a thread pool; "inline" ones
run in this thread while the others proceed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from crossgym.protocol.digest import task_digest
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.verifiers.base import BaseVerifier, _finite, _pool_score, check_inputs, clip, timed_out
from crossgym.verifiers.safe import build_verifier, checked, clip_detail, safe_verify

log = logging.getLogger(__name__)


def _load(task: Any, cache: dict[Any, Any]) -> Any:
    """The task's verifier (cached per spec), or an exception Verdict explaining why it cannot be built."""
    if not isinstance(task, Task):
        return None
    spec = task.verifier
    hit = cache.get(id(spec))  # the same spec object again: skip serialising its params
    if hit is not None and hit[0] is spec:
        return hit[1]
    key = spec.key()
    if key not in cache:
        cache[key] = build_verifier(spec)
    cache[id(spec)] = (spec, cache[key])
    return cache[key]


_safe_verify = safe_verify  # the one safe verify (verifiers/safe.py): kept under its 0.1 name for importers


def verify_many(pairs: Iterable[tuple[Task, Completion | str]], workers: int | None = None,
                chunksize: int = 32) -> list[Verdict]:
    """One Verdict per (task, completion), in order. ``workers``: processes for "process" verifiers and threads
    for "thread" verifiers (default: the pool's size, min(cpus, 8)). A completion may be given as plain text."""
    items = [(t, Completion.from_text(c) if isinstance(c, str) else c) for t, c in pairs]
    out: list[Verdict | None] = [None] * len(items)
    cache: dict[Any, Any] = {}
    by_proc: dict[int, list[int]] = {}
    threaded: list[int] = []
    inline: list[int] = []
    verifiers: list[Any] = []
    for i, (task, comp) in enumerate(items):
        v = _load(task, cache)
        verifiers.append(v)
        if v is None:
            out[i] = check_inputs(task, comp) or Verdict.malformed("task must be a crossgym Task")
        elif isinstance(v, Verdict):
            out[i] = v
        elif isinstance(v, BaseVerifier) and v.isolation == "process":
            bad = check_inputs(task, comp, v.max_chars)
            if bad is not None:
                out[i] = bad
            else:
                by_proc.setdefault(id(v), []).append(i)
        elif getattr(v, "isolation", "inline") == "thread":
            threaded.append(i)
        else:
            inline.append(i)

    background: list[threading.Thread] = []
    if by_proc:
        t = threading.Thread(target=_run_process_jobs, args=(items, verifiers, by_proc, out, workers, chunksize),
                             daemon=True, name="crossgym-verify-many")
        t.start()
        background.append(t)
    pool = None
    if threaded:
        pool = ThreadPoolExecutor(max_workers=max(1, workers or 8), thread_name_prefix="crossgym-verify")
        groups = _groups(items, verifiers, threaded)
        grouped = {i for idx in groups for i in idx}
        futures: dict[int, Any] = {i: pool.submit(_safe_verify, verifiers[i], *items[i])
                                   for i in threaded if i not in grouped}
        for idx in groups:
            group = pool.submit(_safe_verify_group, verifiers[idx[0]], items, idx)
            for k, i in enumerate(idx):
                futures[i] = _Picked(group, k)
    for i in inline:
        out[i] = _safe_verify(verifiers[i], *items[i])
    if pool is not None:
        for i, f in futures.items():
            out[i] = f.result()
        pool.shutdown(wait=False)
    for t in background:
        t.join()
    return [v if v is not None else Verdict.exception("no verdict produced") for v in out]


def _groups(items: list[tuple[Any, Any]], verifiers: list[Any], indices: list[int]) -> list[list[int]]:
    """Pairs of one task judged by a verifier with ``verify_group`` (code_tests: a GRPO group in one sandbox
    call), two or more to a group. Linear: pairs are bucketed by (verifier, task id, content digest of the
    task), the digest computed once per distinct Task object, so many different tasks sharing one id (merged
    datasets with per-split index ids) cost no more than distinct ids. Within a bucket tasks are still compared
    for equality, so a digest collision can never put two different tasks in one group."""
    digests: dict[int, str] = {}
    by_task: dict[tuple[int, str, str], list[list[int]]] = {}
    for i in indices:
        if callable(getattr(verifiers[i], "verify_group", None)):
            task = items[i][0]
            digest = digests.get(id(task))
            if digest is None:
                digest = digests[id(task)] = task_digest(task)
            runs = by_task.setdefault((id(verifiers[i]), task.id, digest), [])
            run = next((r for r in runs if items[r[0]][0] == task), None)  # equal tasks, not just ids
            if run is None:
                runs.append([i])
            else:
                run.append(i)
    return [idx for runs in by_task.values() for idx in runs if len(idx) > 1]


def _safe_verify_group(verifier: Any, items: list[tuple[Any, Any]], idx: list[int]) -> list[Verdict]:
    try:
        out = verifier.verify_group(items[idx[0]][0], [items[i][1] for i in idx])
    except Exception as exc:  # a third-party verifier that breaks the never-raise rule
        return [Verdict.exception(clip_detail(f"verify_group raised {type(exc).__name__}: {exc}"))] * len(idx)
    if not isinstance(out, list) or len(out) != len(idx):
        return [Verdict.exception("verify_group returned the wrong verdicts")] * len(idx)
    return [checked(v, "verify_group") for v in out]


class _Picked:
    """One verdict of a group's future, read like a future of its own."""

    def __init__(self, future: Any, k: int) -> None:
        self.future, self.k = future, k

    def result(self) -> Verdict:
        return self.future.result()[self.k]  # type: ignore[no-any-return]


def _run_process_jobs(items: list[tuple[Any, Any]], verifiers: list[Any], by_proc: dict[int, list[int]],
                      out: list[Verdict | None], workers: int | None, chunksize: int) -> None:
    from crossgym.verifiers.pool import PoolError, PoolTimeout, get_pool

    pool = get_pool()
    if workers and workers > pool.size:
        pool.size = workers  # grow: extra workers start on demand
    for idx in by_proc.values():
        v: BaseVerifier = verifiers[idx[0]]
        pool.require(type(v).__module__)
        jobs = [(type(v), v._init_kwargs, items[i][0], items[i][1], v.timeout) for i in idx]
        try:
            results = pool.map(_pool_score, jobs, timeout=v.timeout, chunksize=chunksize)
        except Exception as exc:  # the pool itself failed: every job of this verifier reports it
            results = [PoolError(f"{type(exc).__name__}: {exc}")] * len(jobs)
        for i, r in zip(idx, results, strict=True):
            if isinstance(r, PoolTimeout):
                out[i] = timed_out(v.timeout, r.cpu_s)
            elif isinstance(r, Exception):
                out[i] = Verdict.exception(clip(str(r), 400))
            else:
                out[i] = _finite(r)
