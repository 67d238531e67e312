"""verify_many over a Ray cluster: actors that keep verifiers and sandbox pools warm between batches.

Each actor is one worker process holding ``slots`` CPUs: its verifiers are built once per spec (the api cache), its
sandbox pool runs ``slots`` confined workers, and ``verify_many`` inside it uses ``slots`` threads/processes. With
``pin_cpus`` each actor (and the sandbox pool it starts) is pinned to its own ``slots`` cores of the node, so a
worker is exactly that many cores. The caller splits the pairs into chunks of the same size whatever the number
of actors (many more chunks than actors, so none idles at the end), keeps two chunks in flight per actor and puts
the Verdicts back in order: the result is exactly what local ``verify_many`` gives. Actors stay up between calls
(``shutdown_workers`` ends them). Both ``verify_many_ray`` and ``crossgym verify-batch --ray`` run their chunks
(shards) through a ``ShardStream``: a bounded number in flight, and a shard whose actor was lost redone on a fresh
actor started in its place.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, ConfigError, CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[ray]'"
#: chunks in flight per actor (one running, one queued, so an actor never idles between chunks)
IN_FLIGHT = 2

#: default chunks per call: about this many (chunk sizes between CHUNK_MIN and CHUNK_MAX pairs)
CHUNKS = 64
CHUNK_MIN, CHUNK_MAX = 4, 512

_lock = threading.Lock()
#: live actors by (CPUs per actor, pinned); a call for n actors uses the first n (and starts more when needed)
_workers: dict[tuple[float, bool], list[Any]] = {}
#: seconds to wait for new actors to start (Ray may wait for free CPUs)
START_TIMEOUT_S = 300.0
#: Ray frees a killed actor's CPUs a moment later: how long after ending actors to wait for their CPUs
RELEASE_WAIT_S = 30.0
_released_at = [0.0]  # when shutdown_workers last ended actors (time.monotonic)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BackendUnavailable("ray", "the ray package is not installed", INSTALL) from None
    return ray


class _VerifyWorker:
    """The actor: warm verifiers and a sandbox pool sized to its CPUs."""

    def __init__(self, slots: int, pin_index: int | None = None) -> None:
        # before anything starts a sandbox or verifier pool in this process: one slot per CPU Ray gave us
        os.environ["CROSSGYM_SANDBOX_WORKERS"] = str(slots)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        self.slots = slots
        self.cpus: list[int] = []
        if pin_index is not None and hasattr(os, "sched_setaffinity"):
            node = sorted(os.sched_getaffinity(0))
            self.cpus = [node[(pin_index * slots + i) % len(node)] for i in range(slots)]
            os.sched_setaffinity(0, self.cpus)  # the sandbox and verifier pools started later inherit it

    def ready(self) -> int:
        return os.getpid()

    def pinned(self) -> list[int]:
        """The cores this actor is pinned to (empty when not pinned)."""
        return sorted(os.sched_getaffinity(0)) if self.cpus else []

    def verify(self, pairs: list[tuple[Task, Completion]]) -> list[Verdict]:
        from crossgym.verifiers.batch import verify_many

        return verify_many(pairs, workers=self.slots)

    def score_shard(self, raws: list[Any], write: bool) -> tuple[str, Any]:
        """A shard of verify-batch --ray: its raw records parsed, scored, counted and (``write``) rendered as
        --out lines here, so the driver only reads lines and writes text (``batch_cmd.score_raw``)."""
        from crossgym.serve.batch_cmd import score_raw

        if not hasattr(self, "built"):
            self.built: dict[str, Any] = {}
        return score_raw(raws, write=write, built=self.built, workers=self.slots)

    def warm(self, specs: list[Any]) -> int:
        """Build these verifiers now (a verifier's first build can import heavy modules)."""
        from crossgym.api import load_verifier

        built = 0
        for spec in specs:
            try:
                load_verifier(spec)
                built += 1
            except CrossgymError:
                pass
        return built


def get_workers(num_workers: int, cpus_per_worker: float = 1.0, pin_cpus: bool = False) -> list[Any]:
    """``num_workers`` live actors, reused between calls and grown when more are asked for (Ray must be running).
    ``pin_cpus``: actor k is pinned to cores k*slots.. of its node (for one-node clusters; a worker is then exactly
    its cores). Raises CrossgymError when the cluster has too few free CPUs for the new ones."""
    ray = _ray()
    with _lock:
        actors = _workers.setdefault((cpus_per_worker, pin_cpus), [])
        missing = num_workers - len(actors)
        if missing > 0:
            free = float(ray.available_resources().get("CPU", 0.0))
            while free + 1e-9 < missing * cpus_per_worker and \
                    time.monotonic() < _released_at[0] + RELEASE_WAIT_S:  # actors just ended: their CPUs come back
                time.sleep(0.1)
                free = float(ray.available_resources().get("CPU", 0.0))
            if free + 1e-9 < missing * cpus_per_worker:
                raise CrossgymError(
                    f"cannot start {missing} more Ray verification actor(s) of {cpus_per_worker:g} CPU: the cluster "
                    f"has {free:g} CPU free (fix: ask for fewer workers, or call shutdown_workers() first)")
            slots = max(1, int(math.ceil(cpus_per_worker)))
            cls = ray.remote(num_cpus=cpus_per_worker, max_restarts=0)(_VerifyWorker)
            first = len(actors)
            new = [cls.remote(slots, first + k if pin_cpus else None) for k in range(missing)]
            try:
                ray.get([a.ready.remote() for a in new], timeout=START_TIMEOUT_S)
            except ray.exceptions.GetTimeoutError:
                for a in new:
                    ray.kill(a)
                raise CrossgymError(f"Ray did not start {missing} verification actor(s) in {START_TIMEOUT_S:g} s "
                                    "(fix: check the cluster's free CPUs with `ray status`)") from None
            actors.extend(new)
        return actors[:num_workers]


def _forget(dead: list[Any]) -> None:
    with _lock:
        for group in _workers.values():
            group[:] = [a for a in group if all(a is not d for d in dead)]


def shutdown_workers() -> None:
    """End every actor this process started (they hold sandbox pools)."""
    with _lock:
        groups = list(_workers.values())
        _workers.clear()
    if not groups:
        return
    ray = _ray()
    _released_at[0] = time.monotonic()
    for actors in groups:
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # already gone
                pass


def _chunks(tasks: Sequence[Any], chunksize: int | None) -> list[list[int]]:
    """Pair indices per actor call, the same whatever the number of actors. By default ~CHUNKS chunks, and the
    pairs of one task (a GRPO group, wherever its pairs sit) share a chunk (up to CHUNK_MAX pairs), so verifiers
    that judge a group at once (code_tests' verify_group) still do on Ray. ``chunksize`` cuts the pairs in order.
    Linear: pairs are bucketed by (task id, content digest), and a bucket keeps only its runs with room left, so
    100k pairs of one task (or of tasks sharing one id) never scan the runs already full."""
    n = len(tasks)
    if chunksize is not None:
        return [list(range(i, min(n, i + chunksize))) for i in range(0, n, chunksize)]
    from crossgym.protocol.digest import task_digest

    size = max(CHUNK_MIN, min(CHUNK_MAX, math.ceil(n / CHUNKS)))
    by_id: dict[Any, list[list[int]]] = {}
    groups: list[list[int]] = []
    digests: dict[int, str] = {}  # per Task object: tasks sharing an id are bucketed by content (linear)
    for i, task in enumerate(tasks):
        if isinstance(task, Task):
            if id(task) not in digests:
                digests[id(task)] = task_digest(task)
            key: Any = (task.id, digests[id(task)])
        else:
            key = ("object", id(task))
        runs = by_id.setdefault(key, [])  # this key's runs with room left (a full one is dropped from it)
        at = next((k for k, r in enumerate(runs) if tasks[r[0]] == task), None)  # equal tasks, not just ids
        if at is None:
            at = len(runs)
            runs.append([])
            groups.append(runs[at])
        run = runs[at]
        run.append(i)
        if len(run) >= CHUNK_MAX:  # full: the task's later pairs start a new run, and none scans this one again
            del runs[at]
    out: list[list[int]] = []
    chunk: list[int] = []
    for group in groups:  # whole groups, in order of first appearance, packed up to ``size`` pairs a chunk
        if chunk and len(chunk) + len(group) > size:
            out.append(chunk)
            chunk = []
        chunk = chunk + group
    if chunk:
        out.append(chunk)
    return out


def init_ray(address: str | None = None, **kwargs: Any) -> None:
    """Connect to ``address`` ("auto", "ray://...") or start a local Ray: no dashboard, no usage stats, quiet."""
    import logging as _logging

    ray = _ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
        _check_address(address)
    try:
        ray.init(address=address, **{"include_dashboard": False, "log_to_driver": False,
                                     "logging_level": _logging.ERROR, **kwargs})
    except (ConnectionError, ValueError) as exc:  # no Ray at "auto", an address Ray cannot parse
        detail = " ".join(str(exc).split())[:200]
        raise ConfigError(f"cannot connect to Ray ({detail})", where=f"--address {address}" if address else "ray",
                          fix=ADDRESS_FIX) from None


#: seconds to wait for a Ray head's port to accept a TCP connection before ray.init (which retries for minutes)
CONNECT_TIMEOUT_S = 10.0
ADDRESS_FIX = "start the head with `ray start --head --port PORT` and pass --address HEAD:PORT (or auto on a node)"


def _check_address(address: str) -> None:
    """A HOST:PORT (or ray://HOST:PORT) address whose port accepts no TCP connection is one ConfigError at once:
    ray.init would retry it for many minutes. "auto", "local" and other forms are left to Ray."""
    import socket

    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    host = host.strip("[]")
    if not 0 < int(port) < 65536:
        raise ConfigError(f"port {port} is out of range", where=f"--address {address}",
                          fix="pass --address HOST:PORT with 1 <= PORT <= 65535")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S) as conn:
            speaks_grpc = _speaks_http2(conn)
    except OSError as exc:
        why = "no such host" if isinstance(exc, socket.gaierror) else \
            f"no answer within {CONNECT_TIMEOUT_S:g} s" if isinstance(exc, TimeoutError) else \
            (exc.strerror or type(exc).__name__).lower()
        raise ConfigError(f"no Ray head answers at {hostport} ({why})", where=f"--address {address}",
                          fix=ADDRESS_FIX) from None
    if not speaks_grpc and not os.environ.get("RAY_USE_TLS"):  # (a TLS head answers a TLS hello, not this probe)
        raise ConfigError(f"what answers at {hostport} is not a Ray head (it does not speak gRPC: the dashboard's "
                          "port, 8265, or another server?)", where=f"--address {address}", fix=ADDRESS_FIX)


def _speaks_http2(conn: Any) -> bool:
    """Whether the server on ``conn`` answers HTTP/2's client preface with a SETTINGS frame, as every gRPC server
    (Ray's GCS, Ray Client's server) does; an HTTP/1 server (the dashboard) answers otherwise or not at all."""
    conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    head = b""
    try:
        while len(head) < 9:
            more = conn.recv(9 - len(head))
            if not more:
                break
            head += more
    except OSError:  # a timeout or a reset: no HTTP/2 server
        return False
    return len(head) == 9 and head[3] == 0x04  # frame header: 3 bytes length, then the type (4: SETTINGS)


def default_workers() -> int:
    """One actor per CPU of the Ray cluster (at least 1)."""
    ray = _ray()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def verify_many_ray(pairs: Iterable[tuple[Task, Completion | str]], *, num_workers: int | None = None,
                    cpus_per_worker: float = 1.0, chunksize: int | None = None, address: str | None = None,
                    init_kwargs: dict[str, Any] | None = None, pin_cpus: bool = False) -> list[Verdict]:
    """One Verdict per (task, completion), in order, scored by Ray actors; equal to local ``verify_many``.

    Uses the running Ray (``ray.init`` it yourself) or connects to ``address`` ("auto", "ray://...", or a local
    start when None and Ray is not running). ``num_workers`` actors (default: one per cluster CPU); ``chunksize``
    pairs per actor call (default: n/64, 4..512, a task's pairs together); ``pin_cpus``: see ``get_workers``.
    """
    ray = _ray()
    items = [(t, Completion.from_text(c) if isinstance(c, str) else c) for t, c in pairs]
    if not items:
        return []
    if not ray.is_initialized():
        init_ray(address, **(init_kwargs or {}))
    n_workers = num_workers or default_workers()
    if n_workers < 1:
        raise ConfigError(f"num_workers must be at least 1, got {n_workers}", where="num_workers",
                          fix="pass num_workers >= 1")
    stream = ShardStream(n_workers, cpus_per_worker=cpus_per_worker, pin_cpus=pin_cpus)
    chunks = _chunks([t for t, _ in items], chunksize)
    out: list[Verdict | None] = [None] * len(items)
    results = stream.run(([items[i] for i in chunk] for chunk in chunks), "verify")
    for chunk, verdicts in zip(chunks, results, strict=True):
        for i, v in zip(chunk, verdicts, strict=True):
            out[i] = v
    return [v if v is not None else Verdict.exception("no verdict produced") for v in out]


#: records per actor call of a stream (verify-batch --ray): ~0.4 s of scoring for issue 27's mix, so each call's
#: fixed cost in the driver and Ray's daemons (~5 CPU ms) is ~1% of it (at 64 it was 7% of the machine on 2 cores)
SHARD = 256
#: runs of one shard at most: a shard whose actor died (killed, OOM, node lost) is redone on a fresh actor
ATTEMPTS = 3
#: the Ray failures that mean "the worker is gone", not "the shard is bad": a shard they hit is retried
_LOST = ("RayActorError", "WorkerCrashedError", "ObjectLostError", "OutOfMemoryError", "NodeDiedError")


class ShardStream:
    """Shards through Ray actors with back-pressure, retries and results in input order.

    ``run(shards, method, *args)`` calls ``actor.<method>(shard, *args)`` for each shard of the iterable and yields
    the results in the shards' order. At most ``in_flight`` shards per actor are submitted and at most ``window``
    shards are held at once (submitted, or finished and waiting for an earlier one), so the driver's memory is
    ``window`` shards whatever the input's size, and the input is read only as fast as the actors score it. A shard
    whose actor is lost is redone on a fresh actor started in that one's place (up to ``attempts`` runs in all);
    results are yielded once, in order, so nothing is lost or repeated. ``stats``: shards, retries, the most
    shards in flight and held, actors replaced.
    """

    def __init__(self, num_workers: int, *, cpus_per_worker: float = 1.0, pin_cpus: bool = False,
                 in_flight: int = IN_FLIGHT, window: int | None = None, attempts: int = ATTEMPTS) -> None:
        if num_workers < 1:
            raise ConfigError(f"must be at least 1, got {num_workers}", where="--workers", fix="pass --workers N >= 1")
        self.actors = list(get_workers(num_workers, cpus_per_worker, pin_cpus))
        self.cpus_per_worker, self.pin_cpus = cpus_per_worker, pin_cpus
        self.in_flight = max(1, in_flight)
        self.window = max(window or 2 * self.in_flight * num_workers, self.in_flight * num_workers)
        self.attempts = max(1, attempts)
        self.stats = {"shards": 0, "retries": 0, "replaced": 0, "max_in_flight": 0, "max_held": 0}

    def warm(self, shard: Any, method: str, *args: Any) -> None:
        """Every actor runs ``shard`` once, its result dropped: the verifiers it names are built and their pools
        (math workers, sandboxes) started before the timed stream. A failure here is left for the stream."""
        ray = _ray()
        try:
            ray.get([getattr(a, method).remote(shard, *args) for a in self.actors], timeout=START_TIMEOUT_S)
        except Exception as exc:  # a bad record or a lost actor: run() meets it in order and says so
            log.debug("warming the Ray actors failed: %s", exc)

    def run(self, shards: Iterable[Any], method: str, *args: Any) -> Iterator[Any]:
        ray = _ray()
        lost = tuple(getattr(ray.exceptions, n) for n in _LOST if hasattr(ray.exceptions, n))
        it = iter(shards)
        more = True
        payload: dict[int, Any] = {}  # shard index -> its input, kept until its result is in (for a retry)
        done: dict[int, Any] = {}  # finished, waiting for an earlier shard
        pending: dict[Any, tuple[int, int, Any, int]] = {}  # ref -> (shard, slot, actor, attempt)
        load = [0] * len(self.actors)
        live = set(range(len(self.actors)))
        submitted = emitted = 0

        def submit(si: int, attempt: int) -> None:
            if not live:
                raise CrossgymError("every Ray verification actor was lost and none could be started in their "
                                    "place (fix: check the cluster with `ray status`; rerun to resume --out)")
            slot = min(live, key=lambda i: load[i])
            load[slot] += 1
            actor = self.actors[slot]
            pending[getattr(actor, method).remote(payload[si], *args)] = (si, slot, actor, attempt)
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], len(pending))

        failed: tuple[int, BaseException] | None = None  # the first shard that cannot be scored, and why
        while True:
            while failed is None and more and len(pending) < self.in_flight * len(live) and \
                    len(payload) + len(done) < self.window:
                try:
                    shard = next(it)
                except StopIteration:
                    more = False
                    break
                payload[submitted] = shard
                submit(submitted, 1)
                submitted += 1
                self.stats["max_held"] = max(self.stats["max_held"], len(payload) + len(done))
            if failed is not None and not any(si < failed[0] for si, *_ in pending.values()):
                break  # every shard before the failed one is in: yield them, then raise
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                si, slot, actor, attempt = pending.pop(ref)
                load[slot] -= 1
                try:
                    result = ray.get(ref)
                except lost as exc:
                    if attempt >= self.attempts:
                        error: BaseException = CrossgymError(
                            f"shard {si} was lost {attempt} times with its Ray actor ({type(exc).__name__}; see the "
                            "Ray logs); --out holds every shard before it (fix: rerun to resume)")
                        failed = (si, error) if failed is None or si < failed[0] else failed
                        continue
                    if slot in live and self.actors[slot] is actor:  # its first lost shard: a fresh actor instead
                        self._replace(slot, live)
                    log.warning("Ray actor %d was lost (%s); shard %d is redone (run %d of %d)", slot,
                                type(exc).__name__, si, attempt + 1, self.attempts)
                    self.stats["retries"] += 1
                    submit(si, attempt + 1)
                    continue
                except ray.exceptions.RayTaskError as exc:  # the shard's own error (a bad line): not retried
                    cause = getattr(exc, "cause", None)
                    error = cause if isinstance(cause, CrossgymError) else exc
                    failed = (si, error) if failed is None or si < failed[0] else failed
                    continue
                del payload[si]
                done[si] = result
            while emitted in done:  # results arrive only just above: when the loop breaks, none is left to yield
                self.stats["shards"] += 1
                yield done.pop(emitted)
                emitted += 1
        if failed is not None:
            raise failed[1]

    def _replace(self, slot: int, live: set[int]) -> None:
        """A fresh actor in ``slot``'s place (its CPUs come back when Ray has reaped the dead one); a slot that
        cannot be refilled in START_TIMEOUT_S is dropped."""
        ray = _ray()
        old = self.actors[slot]
        _forget([old])
        try:
            ray.kill(old)
        except Exception:  # already gone
            pass
        slots = max(1, int(math.ceil(self.cpus_per_worker)))
        cls = ray.remote(num_cpus=self.cpus_per_worker, max_restarts=0)(_VerifyWorker)
        new = cls.remote(slots, slot if self.pin_cpus else None)
        try:
            ray.get(new.ready.remote(), timeout=START_TIMEOUT_S)
        except Exception as exc:  # no room for it (a lost node), or it died starting
            log.warning("no Ray actor could replace actor %d (%s): going on with %d", slot, type(exc).__name__,
                        len(live) - 1)
            try:
                ray.kill(new)
            except Exception:
                pass
            live.discard(slot)
            return
        self.actors[slot] = new
        self.stats["replaced"] += 1
        with _lock:
            _workers.setdefault((self.cpus_per_worker, self.pin_cpus), []).append(new)
