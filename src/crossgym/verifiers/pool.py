"""A small crossgym-owned pool of worker processes with hard per-call deadlines.

Processes: one *zygote* (a fresh ``python -c`` child that imports crossgym and the warm modules such as
math-verify once) forks the workers on request, so a new or replacement worker is ready in milliseconds. This
uses no multiprocessing start method: nothing re-imports the caller's ``__main__`` and no global forkserver state
is shared with other parts. Jobs and results travel pickled over socket pairs.

A job that overruns its deadline gets its worker killed (by the zygote, its parent) and replaced in the
background, so the pool heals; the caller gets ``PoolTimeout`` at the deadline. Thread-safe: many threads may
call at once, each holding one worker per job. No signals touch the caller, so this works from any thread.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

log = logging.getLogger(__name__)

#: modules the zygote imports before forking workers (math-verify's import alone takes ~1 s)
DEFAULT_WARM = ("crossgym.verifiers.base",)

#: bytes of memory a worker may allocate beyond what it holds when forked (the zygote's imports: sympy, math-verify,
#: a plugin's torch): past it an allocation fails with MemoryError, the job's input is at fault and the worker is
#: replaced. Without it one completion took a worker to any size: ``\operatorname{zeros}(12000, 12000)`` (44
#: characters) to math reached 4.5 GB in 5 s, and sql's temp B-trees grew 3 GB (1.2 GB of /var/tmp on disk) in 8 s
DEFAULT_WORKER_MEMORY = 2**30
#: the environment variable that sets it (bytes, or a number with K, M or G: "512M", "4G"; "off" for no limit)
MEMORY_ENV = "CROSSGYM_VERIFIER_WORKER_MEMORY"
_MEMORY_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:ib|b)?")


class PoolTimeout(Exception):
    """The job ran past its deadline; its worker was killed. ``cpu_s``: the CPU seconds the worker spent on it (a
    job that ran out of time busy is its input's doing; one that waited for a core, the machine's)."""

    def __init__(self, message: str, cpu_s: float = 0.0) -> None:
        super().__init__(message)
        self.cpu_s = cpu_s


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used; 0.0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class PoolError(Exception):
    """The job could not run (worker died, result not picklable); the message says why."""


def memory_budget(text: str | None = None) -> int | None:
    """The per-worker memory budget ``text`` (default: $CROSSGYM_VERIFIER_WORKER_MEMORY) names, in bytes; None for
    no limit ("0", "off", "none"), DEFAULT_WORKER_MEMORY when unset. Raises ConfigError on anything else."""
    raw = os.environ.get(MEMORY_ENV, "") if text is None else text
    word = raw.strip().lower()
    if not word:
        return DEFAULT_WORKER_MEMORY
    if word in ("0", "off", "none", "unlimited"):
        return None
    m = _MEMORY_SIZE.fullmatch(word)
    value = float(m[1]) * 2 ** (10 * " kmgt".index(m[2] or " ")) if m else 0.0
    if not 2**20 <= value < 2**60:
        from crossgym.protocol.errors import ConfigError

        raise ConfigError(f"{MEMORY_ENV}={raw!r} is not a memory size of 1M or more", where=MEMORY_ENV,
                          fix='give bytes or a number with K, M or G ("2G", "512M"), or "off" for no limit')
    return int(value)


# ------------------------------------------------------------------------------------------------ worker side
_IN_WORKER = [False]
#: (budget, VmData and VmRSS in bytes when the worker started) in a memory-limited worker, else None
_LIMIT: list[tuple[int, int, int] | None] = [None]
#: set when a job in this worker ran out of memory: the worker retires after replying (its heap may be left
#: fragmented or a library's state half-built), however the job's code handled the MemoryError
_MEMORY_HIT = [False]


def in_worker() -> bool:
    """Whether this process is one of a pool's workers (where a job must not hand work to a pool of its own)."""
    return _IN_WORKER[0]


def worker_memory() -> int | None:
    """The memory budget this worker runs under (bytes beyond what it held when forked), None when unlimited or
    outside a worker. A job that can keep its scratch data in memory or on disk (sql's temp B-trees) picks memory
    where this bounds it."""
    lim = _LIMIT[0]
    return lim[0] if lim is not None and _IN_WORKER[0] else None


def note_out_of_memory() -> None:
    """Record that the current job hit MemoryError (a verifier that catches it calls this): the worker retires."""
    _MEMORY_HIT[0] = True


def _vm_bytes(*fields: str) -> list[int]:
    """This process's /proc/self/status ``fields`` (VmData, VmRSS...) in bytes, 0 where unreadable."""
    found = dict.fromkeys(fields, 0)
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                key = line.split(b":", 1)[0].decode()
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return [found[f] for f in fields]


def _limit_memory(budget: int | None) -> None:
    """In a fresh worker: cap its data segment (RLIMIT_DATA: heap, anonymous and private writable mappings, what
    Python's allocators use) at what it holds now plus ``budget``. Not RLIMIT_AS: address space only reserved
    (thread arenas, CUDA's and jemalloc's PROT_NONE reservations after a plugin imports torch) would count too."""
    if budget is None:
        return
    try:
        import resource

        data, rss = _vm_bytes("VmData", "VmRSS")
        if not data:
            return  # no /proc (not Linux): no baseline to add the budget to
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        soft = data + budget if hard == resource.RLIM_INFINITY else min(hard, data + budget)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
        _LIMIT[0] = (budget, data, rss)
    except (ImportError, OSError, ValueError) as exc:  # the worker runs unlimited rather than not at all
        log.debug("could not limit a verifier worker's memory: %s", exc)


def _should_retire(exc: BaseException | None) -> bool:
    """Whether this worker must not take another job: it ran out of memory, or still holds over half its budget
    more than it started with (freed memory not given back)."""
    hit = _MEMORY_HIT[0] or isinstance(exc, MemoryError)
    _MEMORY_HIT[0] = False
    lim = _LIMIT[0]
    if hit or lim is None:
        return hit
    return _rss() > lim[2] + lim[0] // 2


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss() -> int:
    """This process's resident bytes from /proc/self/statm (5 us a job, where status takes 20), 0 if unreadable."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _serve_jobs(conn: Any, memory: int | None = None) -> None:
    """Worker loop: (fn, jobs) batches in, one ("ok"|"err", value, cpu, retire) reply per job out; a worker that
    replied retire=True (it ran out of its ``memory`` budget) is killed and replaced by the pool."""
    _IN_WORKER[0] = True
    _limit_memory(memory)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        except Exception as exc:  # an unpicklable job (e.g. a class defined in the caller's __main__)
            conn.send(("err", f"job could not be loaded in the worker: {type(exc).__name__}: {exc}"))
            continue
        if msg is None:
            return
        fn, jobs = msg
        for args in jobs:
            failed: BaseException | None = None
            try:
                out: tuple[Any, ...] = ("ok", fn(*args))
            except BaseException as exc:  # noqa: BLE001 - reported to the caller, never raised here
                out, failed = ("err", f"{type(exc).__name__}: {exc}"), exc
            retire = _should_retire(failed)
            try:
                cpu = os.times()  # (one system call, the same clock as /proc's: where the next job's CPU starts)
                conn.send(out + (cpu.user + cpu.system, retire))
            except Exception as exc:  # unpicklable result
                conn.send(("err", f"result could not be sent back: {type(exc).__name__}: {exc}", 0.0, retire))
            if retire:
                return  # (the pool kills and replaces it; it takes nothing more meanwhile)


def _import_all(modules: Sequence[str]) -> None:
    import importlib

    for m in modules:
        importlib.import_module(m)


def _preload(module: str) -> None:
    """Import ``module`` in the zygote and run its ``zygote_warm()`` hook if it has one (e.g. math compiles
    math-verify's regexes), so every forked worker starts warm."""
    import importlib

    try:
        mod = importlib.import_module(module)
        hook = getattr(mod, "zygote_warm", None)
        if callable(hook):
            hook()
    except Exception as exc:  # a missing optional module must not stop the pool
        log.debug("zygote could not preload %s: %s", module, exc)


def _exit_with_parent() -> None:
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def zygote_main(fd: int) -> None:
    """Entry point of the zygote (``python -c``): pre-import, then fork a worker per "spawn" request, sending
    its socket back with SCM_RIGHTS; "kill PID" kills and reaps one of its workers."""
    import signal
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the caller, which closes us
    ctl = socket.socket(fileno=fd)
    path, warm, memory = pickle.loads(ctl.recv(1 << 20))
    sys.path[:] = list(dict.fromkeys(list(path) + sys.path))
    for mod in warm:
        _preload(mod)
    children: set[int] = set()
    ctl.send(b"ready")
    while True:
        for pid in list(children):  # reap workers that exited on their own
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    children.discard(pid)
            except ChildProcessError:
                children.discard(pid)
        try:
            msg = ctl.recv(256)
        except OSError:
            msg = b""
        if not msg:  # the pool is gone: so are we (workers notice and exit)
            os._exit(0)
        if msg == b"spawn":
            mine, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # worker
                try:
                    ctl.close()
                    mine.close()
                    _exit_with_parent()
                    _serve_jobs(Connection(theirs.detach()), memory)
                finally:
                    os._exit(0)
            theirs.close()
            children.add(pid)
            try:
                socket.send_fds(ctl, [str(pid).encode()], [mine.fileno()])
            except OSError:  # the pool went while we forked (its process is exiting): so do we, quietly
                os._exit(0)
            mine.close()
        elif msg.startswith(b"import "):
            _preload(msg[7:].decode())
            try:
                ctl.send(b"ok")
            except OSError:
                os._exit(0)
        elif msg.startswith(b"kill "):
            pid = int(msg[5:])
            if pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                children.discard(pid)
            ctl.send(b"ok")


# ------------------------------------------------------------------------------------------------ pool side
class _Zygote:
    """The parent's handle on the zygote process; requests are serialised by a lock."""

    def __init__(self, warm: Sequence[str], startup_timeout: float, memory: int | None = None) -> None:
        import subprocess

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd = theirs.fileno()
        cmd = [sys.executable, "-c", f"from crossgym.verifiers.pool import zygote_main; zygote_main({fd})"]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(cmd, pass_fds=(fd,), stdin=subprocess.DEVNULL, env=env, close_fds=True)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        self.imported: set[str] = set(warm)
        ours.send(pickle.dumps((list(sys.path), tuple(warm), memory)))
        ours.settimeout(startup_timeout)
        try:
            ready = ours.recv(16)
        except OSError:
            ready = b""
        ours.settimeout(None)
        if ready != b"ready":
            self.close()
            raise PoolError(f"the verifier worker zygote did not start within {startup_timeout:g} s")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self) -> tuple[int, int]:
        """(pid, fd) of a new worker."""
        with self.lock:
            self.sock.send(b"spawn")
            msg, fds, _, _ = socket.recv_fds(self.sock, 64, 1)
        if not msg or not fds:
            raise PoolError("the verifier worker zygote died")
        return int(msg), fds[0]

    def preload(self, module: str) -> None:
        """Import ``module`` in the zygote, so workers forked from now on start with it."""
        with self.lock:
            try:
                self.sock.send(f"import {module}".encode())
                self.sock.recv(16)
            except OSError:
                pass

    def kill(self, pid: int) -> None:
        with self.lock:
            try:
                self.sock.send(f"kill {pid}".encode())
                self.sock.recv(16)
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


class _Worker:
    def __init__(self, zygote: _Zygote) -> None:
        from multiprocessing.connection import Connection

        self.zygote = zygote
        self.pid, fd = zygote.spawn()
        self.conn = Connection(fd)
        self.ready = False
        self.imported: set[str] = set(zygote.imported)
        self.cpu = 0.0  # its CPU seconds when it reported its last job done

    def wait_ready(self, timeout: float) -> bool:
        if not self.ready and self.conn.poll(timeout):
            try:
                tag, _ = self.conn.recv()
                self.ready = tag == "ready"
            except (EOFError, OSError):
                return False
        return self.ready

    def kill(self) -> None:
        self.zygote.kill(self.pid)
        try:
            self.conn.close()
        except Exception:
            pass


class WorkerPool:
    """``size`` worker processes; ``call`` and ``map`` run picklable top-level functions with deadlines.
    ``memory``: bytes each worker may allocate beyond what it holds when forked (None: no limit); a job that runs
    out fails with MemoryError (jobs scored by ``BaseVerifier`` get a malformed Verdict) and its worker is replaced."""

    def __init__(self, size: int | None = None, *, warm: Sequence[str] = DEFAULT_WARM,
                 startup_timeout: float = 60.0, memory: int | None = None) -> None:
        self.size = max(1, size or min(os.cpu_count() or 1, 8))
        self.memory = memory
        self.warm = tuple(warm)
        self.startup_timeout = startup_timeout
        self._zygote: _Zygote | None = None
        self._zlock = threading.Lock()
        self._modules: set[str] = set(self.warm)
        self._idle: deque[_Worker] = deque()
        self._cv = threading.Condition()
        self._live = 0  # workers started and not killed (idle, busy or starting)
        self._closed = False
        self.kills = 0

    # -- worker lifecycle
    def _spawn(self) -> _Worker:
        with self._zlock:
            if self._zygote is None or not self._zygote.alive():
                if self._zygote is not None:
                    self._zygote.close()
                self._zygote = _Zygote(tuple(sorted(self._modules)), self.startup_timeout, self.memory)
            zygote = self._zygote
        return _Worker(zygote)

    def _replace_async(self) -> None:
        def start() -> None:
            w: _Worker | None = None
            try:
                w = self._spawn()
                ok = w.wait_ready(self.startup_timeout)
            except Exception as exc:
                if not self._closed:  # (at exit the pool closes under it: its pipes go, nothing is wrong)
                    log.warning("verifier worker failed to start: %s", exc)
                ok, w = False, None
            with self._cv:
                if ok and w is not None and not self._closed:
                    self._idle.append(w)
                else:
                    self._live -= 1
                    if w is not None:
                        w.kill()
                self._cv.notify()

        threading.Thread(target=start, daemon=True, name="crossgym-pool-heal").start()

    def _acquire(self) -> _Worker:
        with self._cv:
            while True:
                if self._closed:
                    raise PoolError("the verifier worker pool is closed")
                if self._idle:
                    return self._idle.popleft()
                if self._live < self.size:
                    self._live += 1
                    break
                self._cv.wait()
        try:
            w = self._spawn()
            if not w.wait_ready(self.startup_timeout):
                w.kill()
                raise PoolError(f"a verifier worker did not start within {self.startup_timeout:g} s")
            return w
        except BaseException:
            with self._cv:
                self._live -= 1
                self._cv.notify()
            raise

    def _release(self, w: _Worker) -> None:
        with self._cv:
            if self._closed:
                w.kill()
                self._live -= 1
            else:
                self._idle.append(w)
            self._cv.notify()

    def _discard(self, w: _Worker) -> None:
        """Kill a worker (it overran or broke) and start its replacement in the background."""
        w.kill()
        self.kills += 1
        with self._cv:
            if self._closed:
                self._live -= 1
                self._cv.notify()
                return
        self._replace_async()

    def require(self, module: str) -> None:
        """Make sure workers have imported ``module`` before they run a job (imports do not eat deadlines)."""
        if module not in self._modules:
            with self._zlock:
                self._modules.add(module)
                if self._zygote is not None:
                    self._zygote.preload(module)
                    self._zygote.imported.add(module)

    def _prepare(self, w: _Worker) -> bool:
        missing = tuple(sorted(self._modules - w.imported))
        if not missing:
            return True
        try:
            w.conn.send((_import_all, [(missing,)]))
            if not w.conn.poll(self.startup_timeout):
                return False
            w.conn.recv()  # an import error shows up again, with its message, when the job runs
        except (EOFError, OSError):
            return False
        w.imported.update(missing)
        return True

    # -- running jobs
    def warm_up(self) -> None:
        """Start every worker now (otherwise they start on first use)."""
        ws = [self._acquire() for _ in range(self.size)]
        for w in ws:
            self._release(w)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        """``fn(*args)`` in a worker; raises PoolTimeout at the deadline, PoolError if it failed."""
        return self.run_batch(fn, [args], timeout)[0]

    def run_batch(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], timeout: float,
                  on_timeout: Any = PoolTimeout) -> list[Any]:
        """Run ``jobs`` on one worker, each with its own deadline; an overrun job yields PoolTimeout (or raises it
        when there is a single job) and the rest continue on a fresh worker."""
        results: list[Any] = []
        pending = list(jobs)
        while pending:
            w = self._acquire()
            if not self._prepare(w):
                self._discard(w)
                raise PoolError(f"a verifier worker could not import {sorted(self._modules)} within "
                                f"{self.startup_timeout:g} s")
            try:
                w.conn.send((fn, pending))
            except Exception as exc:
                self._discard(w)
                raise PoolError(f"could not send the job to a worker: {type(exc).__name__}: {exc}") from None
            broke = False
            for i in range(len(pending)):
                if not w.conn.poll(timeout):
                    used = max(0.0, _cpu_of(w.pid) - w.cpu)  # (read before the kill)
                    self._discard(w)
                    results.append(PoolTimeout(f"exceeded {timeout:g} s", used))
                    pending = pending[i + 1:]
                    broke = True
                    break
                try:
                    tag, value, *rest = w.conn.recv()
                    if rest and type(rest[0]) is float:
                        w.cpu = rest[0]
                except (EOFError, OSError) as exc:
                    self._discard(w)
                    results.append(PoolError(f"worker died: {type(exc).__name__}"))
                    pending = pending[i + 1:]
                    broke = True
                    break
                results.append(value if tag == "ok" else PoolError(value))
                if len(rest) > 1 and rest[1] is True:  # it ran out of memory: the rest go to a fresh worker
                    self._discard(w)
                    pending = pending[i + 1:]
                    broke = True
                    break
            if not broke:
                self._release(w)
                pending = []
        if len(jobs) == 1 and isinstance(results[0], Exception):
            raise results[0]
        return results

    def map(self, fn: Callable[..., Any], jobs: Iterable[tuple[Any, ...]], timeout: float,
            chunksize: int = 16) -> list[Any]:
        """Run many jobs across all workers, order preserved; failed jobs come back as exception objects."""
        jobs = list(jobs)
        chunks = [jobs[i:i + chunksize] for i in range(0, len(jobs), chunksize)]
        out: list[list[Any]] = [[] for _ in chunks]
        lock = threading.Lock()
        next_chunk = [0]

        def drain() -> None:
            while True:
                with lock:
                    k = next_chunk[0]
                    next_chunk[0] += 1
                if k >= len(chunks):
                    return
                try:
                    out[k] = self.run_batch(fn, chunks[k], timeout) if len(chunks[k]) > 1 else \
                        [self._safe_call(fn, chunks[k][0], timeout)]
                except Exception as exc:  # pool-level failure: report per job
                    out[k] = [exc] * len(chunks[k])

        threads = [threading.Thread(target=drain, daemon=True) for _ in range(min(self.size, len(chunks)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for chunk in out for r in chunk]

    def _safe_call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        try:
            return self.call(fn, args, timeout)
        except (PoolTimeout, PoolError) as exc:
            return exc

    def close(self) -> None:
        """Stop idle workers and the zygote (busy workers exit when the zygote goes)."""
        with self._cv:
            self._closed = True
            idle, self._idle = list(self._idle), deque()
            self._live -= len(idle)
            self._cv.notify_all()
        for w in idle:
            w.kill()
        with self._zlock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()
_POOL_PID = 0


def get_pool() -> WorkerPool:
    """The process-wide verifier pool (size from CROSSGYM_VERIFIER_WORKERS, default min(cpus, 8); each worker's
    memory budget from CROSSGYM_VERIFIER_WORKER_MEMORY, default DEFAULT_WORKER_MEMORY)."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or _POOL_PID != os.getpid():
            size = int(os.environ.get("CROSSGYM_VERIFIER_WORKERS", "0") or 0) or None
            _POOL = WorkerPool(size, warm=DEFAULT_WARM + ("math_verify",), memory=memory_budget())
            _POOL_PID = os.getpid()
        return _POOL


def shutdown_pool() -> None:
    """Stop the process-wide pool's workers (a later call starts a new pool)."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None and _POOL_PID == os.getpid():
        pool.close()


atexit.register(shutdown_pool)
