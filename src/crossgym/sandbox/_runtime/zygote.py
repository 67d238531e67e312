"""A slot's zygote: forked from the server once per slot, it forks that slot's tasks one at a time.

A fresh interpreter that imports only what tasks need (a small process is cheaper to fork and to tear down),
it prepares once what every task of the slot shares (the Landlock ruleset of the slot's scratch directory,
signal dispositions, the subreaper role), so a task costs one fork from it plus a session, the uid, rlimits,
the prepared ruleset, seccomp and the code. After a task it kills the task's process group while the leader
is still a zombie (the pid cannot be reused by then), reaps, and empties the directory; a directory it cannot
empty retires the zygote. It never sees a task's data: payloads go from the caller straight to the task.

On its socket the server sends a JSON header with the task's fds, or ``K`` (kill the task); the zygote answers
with one JSON object: the exit status and usage.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import resource
import select
import signal
import socket
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import child, cleanup, confine, prefork, spawner, wire

FDS = ("payload", "stdout", "stderr", "status", "result")
TRASH = cleanup.TRASH
SOCK_FD = 3
REAP_S = 1.0
TEST_MODULES = ("typing", "math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string",
                "copy", "operator")  # small ones only: every module makes each fork a little dearer
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from _runtime.zygote import boot; boot(sys.argv[2])"


def boot(cfg_json: str) -> None:
    """``python3 -S -I -c BOOT RUNTIME_PARENT CFG``, exec'd by the server with fd 3 as the zygote's socket."""
    cfg = json.loads(cfg_json)
    os.environ.clear()
    conf = confine.Confinement(cfg)
    os.environ.update(child.base_env(cfg["scratch"]))
    child.READY["path"] = [cfg["scratch"]] + confine.stdlib_path()
    child.set_streams()  # fresh, never used: every task of the slot takes them over (fds 0-2 are its own)
    child.install_quitters()
    confine.prepare_rlimits()
    warm_up()
    child.READY["streams"] = True
    main(int(cfg["server_pid"]), conf, cfg["scratch"], cfg.get("uid"))


def warm_up(tests: bool = False) -> None:
    """Run once here what every task runs, so that tasks find it initialised: the first compile() in a process
    costs milliseconds of lazy set-up (and page faults), paid once here instead of in every forked task."""
    data = wire.pack({"source": "x = [1]\nassert x[0] + 1 == 2\n", "env": {}, "files": []})
    exec(compile(wire.loads(data[4:])["source"], "main.py", "exec"), {"__name__": "__main__"})
    if tests:
        import importlib

        from . import codec, harness, plan, prefork, solution  # noqa: F401  tasks cannot read this directory: load them here

        for name in TEST_MODULES:  # what tests and solutions commonly import, loaded once instead of per process
            try:
                importlib.import_module(name)
            except ImportError:
                pass

        plan.build("def check(candidate):\n    assert candidate([1]) == [1]\n", "f")
        server = solution._Server("/")  # both ends of a call, often enough for the interpreter to specialise them
        server.init("from typing import List\n\n\ndef f(xs: List[int]) -> List[int]:\n    return sorted(xs)\n")
        remote = harness.Remote(None, "")  # type: ignore[arg-type]  # the harness's end, answered right here
        remote.pid = 1
        remote.request = lambda msg: wire.loads(wire.pack(["ok", server.call(*msg[1:])])[4:])[1]  # type: ignore
        for call in (harness.Proxy(remote, "f"), harness._function(remote, "f", None)):
            for _ in range(20):
                call([3, 1, 2])
    child.READY["modules"] = [m for m in sys.modules if m == "_runtime" or m.startswith("_runtime.")]
    gc.collect()
    gc.freeze()  # the objects made so far stay out of tasks' garbage collections (and their pages untouched)


def main(server_pid: int, conf: confine.Confinement, scratch: str, uid: int | None) -> None:
    """The zygote's loop (fd 3 is its socket to the server). Never returns."""
    confine.name(b"cg-zygote")
    confine.start_session(server_pid)  # its own group, and it dies with the server
    confine.set_dumpable(False)  # and its tasks, forked, stay so
    confine.no_new_privs()  # once for all its tasks
    confine.subreaper()
    confine.reset_signals(for_exec=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ruleset = conf.ruleset(scratch)  # the slot's spawner's: every task directory of the slot
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=SOCK_FD)
    me = os.getpid()
    solutions = _SlotSpawner(conf, scratch, uid, ruleset)
    dirs = _Dirs(conf, scratch, uid)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, len(FDS))
        except OSError:
            data, fds = b"", []
        if not data or data == b"K":
            for fd in fds:
                os.close(fd)
            if data:
                continue  # a kill for a task that already ended
            break
        hdr = wire.loads(data)
        task_fds = dict(zip(FDS, fds, strict=False))
        asks: socket.socket | None = None  # the zygote's end of a tests task's socket to the spawner
        if hdr.get("mode") == "tests":
            if "_runtime.harness" not in sys.modules:
                warm_up(tests=True)
            task_end, asks = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            task_fds["spawn"] = task_end.detach()
        task_dir, rules, solution_dirs, solution_rules = dirs.prepare(
            int(hdr.get("solutions", 0)) if hdr.get("mode") == "tests" else 0)
        if solution_dirs:
            hdr["dirs"] = solution_dirs
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                child.main(me, conf, hdr, task_fds, task_dir, uid, int(hdr.get("nproc", 0)), rules, solution_rules)
            finally:
                os._exit(child.SETUP_FAILED)
        for fd in task_fds.values():
            os.close(fd)
        on_ask = None if asks is None else functools.partial(solutions.hand_over, asks, hdr, task_dir)
        status, usage, gone = _watch(sock, pid, asks, on_ask)
        cpu, rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
        if asks is not None:
            asks.close()
        cpu += solutions.finish()  # the task's solution processes are gone before its directory is emptied
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        clean = _clean(pid, uid, conf.seccomp, scratch, keep=solutions.pids())
        clean = dirs.after() and clean  # nothing of this task reaches the next: what it changed is replaced
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the task's orphans (a group's last solution)
        cpu += after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if uid is not None and not conf.seccomp:
            solutions.close()  # killed with everything else of the slot's uid
        sock.send(wire.dumps({"status": status, "cpu": cpu, "maxrss_kb": rss, "clean": clean}).encode())
        if gone or not clean:
            break
    solutions.close()
    os._exit(0)


class _SlotSpawner:
    """The slot's solution spawner, started the first time a harness asks for a process and restarted when it is
    gone (see :mod:`.spawner`)."""

    def __init__(self, conf: confine.Confinement, scratch: str, uid: int | None, ruleset: int | None) -> None:
        self._args = (conf, scratch, uid, ruleset)
        self._handle: spawner.Handle | None = None
        self._handed = False  # whether the current task's socket went to it

    def hand_over(self, asks: socket.socket, hdr: dict[str, Any], task_dir: str) -> None:
        """The task's harness asked for a process: hand its socket over (closed here: without a spawner the
        harness sees it close)."""
        if self._handle is not None and not self._handle.alive():
            self.close()
        try:
            if self._handle is None:
                self._handle = spawner.Handle(*self._args)
            self._handle.hand_over(asks.fileno(), hdr, task_dir)
            self._handed = True
        except OSError:
            self.close()
        asks.close()

    def finish(self) -> float:
        """After a task: wait until the spawner cleared up after it; the CPU seconds its processes used for it."""
        if not self._handed or self._handle is None:
            return 0.0
        self._handed = False
        cpu = self._handle.finish()
        if cpu is None:
            self.close()
        return cpu or 0.0

    def pids(self) -> tuple[int, ...]:
        return () if self._handle is None else (self._handle.pid,)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _watch(sock: socket.socket, pid: int, asks: socket.socket | None = None,
           on_ask: Any = None) -> tuple[int, Any, bool]:
    """Wait for the task to end, killing its group when the server says so, and calling ``on_ask`` once when the
    task first writes to ``asks``; then kill what is left of the group (its leader is a zombie until reaped, so
    the group id is still this task's) and reap the leader."""
    pidfd = os.pidfd_open(pid)
    gone = False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(sock.fileno(), select.POLLIN)
        if asks is not None:
            poller.register(asks.fileno(), select.POLLIN)
        while True:
            ready = [fd for fd, _ in poller.poll()]
            if pidfd in ready:
                break
            if asks is not None and asks.fileno() in ready:
                asked = _asked(asks)  # an ending task closes its end: no spawner round trip for that
                if asked is not None:
                    poller.unregister(asks.fileno())
                    if asked:
                        on_ask()
                    asks = None
            if sock.fileno() in ready:
                msg = sock.recv(64)
                if not msg:  # the server is gone: end the task, then leave
                    gone = True
                    poller.unregister(sock.fileno())
                _kill(pid)
    finally:
        os.close(pidfd)
    _kill(pid)
    _, status, usage = os.wait4(pid, 0)
    return status, usage, gone


def _asked(asks: socket.socket) -> bool | None:
    """Whether a request waits on a task's socket to the spawner: True, False when the task closed its end without
    asking (as every task that needs no spawner does when it ends, seen before its exit), None when nothing is there
    yet. Requests are never empty."""
    try:
        return bool(asks.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return None
    except OSError:
        return True  # the spawner sees what it is, as before


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class _Dirs:
    """The slot's task directory and its solution directories (one per solution of a group, up to
    :data:`prefork.PREFORK`), each kept for the next task while the last one left it untouched (same mode, owner,
    links, ctime and mtime: no entry made or removed, no mode, extended attribute or timestamp changed; nobody can
    set a ctime back). Most tasks write nothing, and a fresh directory costs a journaled mkdir, a rename and a
    removal. A changed one goes to the trash, whatever it holds, and a fresh one replaces it."""

    def __init__(self, conf: confine.Confinement, scratch: str, uid: int | None) -> None:
        self.conf, self.scratch, self.uid = conf, scratch, uid
        self.trash = os.path.join(os.path.dirname(scratch), TRASH)
        self.pristine = os.stat(scratch)
        self.task: tuple[str, Any] | None = None
        self.solutions: list[tuple[str, Any, int | None]] = []  # path, stamp, its own ruleset (made once, here)
        self.rules: int | None = None  # full access to the task's and the solutions' directories
        self.slot: Any = None

    def prepare(self, solutions: int) -> tuple[str, int | None, list[str], list[int]]:
        """The next task's directory, a Landlock ruleset for it (and its solutions' directories), those
        directories and a ruleset for each (a solution process's own domain)."""
        want = 0 if solutions < 2 else min(solutions, prefork.PREFORK)
        if self.task is None or len(self.solutions) < want:
            if self.task is None:
                self.task = self._make("w")
            while len(self.solutions) < want:
                path, stamp = self._make("s")
                self.solutions.append((path, stamp, self.conf.own_ruleset(path)))
            if self.rules is not None:
                os.close(self.rules)
                self.rules = None
        if self.rules is None:
            self.rules = self.conf.own_ruleset(self.task[0], *[entry[0] for entry in self.solutions])
        self.slot = _stamp(self.scratch)
        path = self.task[0]
        os.environ["HOME"] = os.environ["TMPDIR"] = path  # what the task inherits
        if child.READY.get("path"):
            child.READY["path"][0] = path
        chosen = self.solutions[:want]
        rules = [entry[2] for entry in chosen if entry[2] is not None]
        return path, self.rules, [entry[0] for entry in chosen], rules if len(rules) == len(chosen) else []

    def after(self) -> bool:
        """After a task: replace what it changed (moved to the trash); False when something could not be."""
        try:
            if _stamp(self.scratch) != self.slot:  # a pool without a uid per slot: the task changed the slot's own
                self._drop_all()
                return cleanup.discard_entries(self.scratch, self.trash, self.pristine)
            ok, changed = True, False
            if self.task is not None and not _same(*self.task):
                ok, changed, self.task = cleanup.discard(self.task[0], self.trash), True, None
            kept = []
            for path, stamp, rules in self.solutions:
                if _same(path, stamp):
                    kept.append((path, stamp, rules))
                else:
                    ok, changed = cleanup.discard(path, self.trash) and ok, True
                    if rules is not None:
                        os.close(rules)
            self.solutions = kept
            if changed and self.rules is not None:
                os.close(self.rules)
                self.rules = None
            return ok
        except OSError:
            self._drop_all()
            return cleanup.discard_entries(self.scratch, self.trash, self.pristine)

    def _drop_all(self) -> None:
        for _, _, rules in self.solutions:
            if rules is not None:
                os.close(rules)
        self.task, self.solutions = None, []
        if self.rules is not None:
            os.close(self.rules)
            self.rules = None

    def _make(self, prefix: str) -> tuple[str, Any]:
        path = os.path.join(self.scratch, prefix + os.urandom(6).hex())
        os.mkdir(path, 0o700)
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        return path, _stamp(path)


def _stamp(path: str) -> tuple[int, ...]:
    st = os.lstat(path)
    return st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_ctime_ns, st.st_mtime_ns


def _same(path: str, stamp: Any) -> bool:
    try:
        return bool(_stamp(path) == stamp)
    except OSError:
        return False


def _clean(pid: int, uid: int | None, seccomp: bool, scratch: str, keep: tuple[int, ...] = ()) -> bool:
    """Kill and reap what the task left (orphans come to us, the subreaper). Its files are the caller's business:
    a task directory it changed is moved, with whatever it holds, to the pool's trash, which the sweeper empties in
    the background (a task's leftovers never delay its report nor the next task), and the slot's directory gets
    back its mode, extended attributes and timestamps (see :func:`cleanup.discard_entries`).
    ``keep``: the slot's solution spawner, which has cleared up after the task itself."""
    if uid is not None and not seccomp:  # without seccomp a task may leave its process group
        cleanup.kill_uid(uid)
    cleanup.reap_children(REAP_S, keep)  # one stuck in the kernel is reaped after a later task
    return True


class Link:
    """The server's end of one slot's zygote."""

    def __init__(self, cfg: dict[str, Any], root: str, slot: int, uid: int | None) -> None:
        self.slot = slot
        self.scratch = os.path.join(root, f"z{slot}-{os.urandom(6).hex()}")
        os.mkdir(self.scratch, 0o700 if uid is None else 0o711)  # with a uid per slot: not the tasks' to change
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd = theirs.detach()
        argv = [sys.executable, "-S", "-I", "-c", BOOT, os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                json.dumps(dict(cfg, server_pid=os.getpid(), scratch=self.scratch, uid=uid))]
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.dup2(fd, SOCK_FD)
                os.closerange(SOCK_FD + 1, 1 << 16)  # nothing of the server's: no request socket, no task's fds
                os.execve(argv[0], argv, {})
            finally:
                os._exit(127)
        os.close(fd)
        self.sock = ours
        self.task: Any = None
        self.served = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, hdr: dict[str, Any], fds: dict[str, int]) -> None:
        """Hand a task to the zygote (OSError when it is gone)."""
        socket.send_fds(self.sock, [json.dumps(hdr).encode()], [fds[n] for n in FDS if n in fds])

    def kill(self) -> None:
        """Ask the zygote to kill its task's process group (it alone may: it has not reaped the task yet)."""
        try:
            self.sock.send(b"K")
        except OSError:
            pass

    def receive(self) -> tuple[str, Any]:
        """("end", report) when the task ended, or ("gone", None)."""
        try:
            data = self.sock.recv(1 << 12)
        except OSError:
            data = b""
        if not data:
            return "gone", None
        return "end", json.loads(data)

    def close(self) -> None:
        """Stop the zygote (its task dies with it) and remove the slot's directory."""
        self.sock.close()
        cleanup.kill_quietly(self.pid)
        cleanup.remove_tree(self.scratch)
