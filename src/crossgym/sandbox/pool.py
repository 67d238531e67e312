"""The caller's side of the pool: starts the server, sends tasks, collects their output. Thread-safe.

Each call creates its own pipes (payload, stdout, stderr, status and, for tests, a private result pipe),
hands the task's ends to the server with SCM_RIGHTS, writes the payload itself and reads everything back
in the calling thread: the server never sees a task's data, and callers never wait on each other.
"""

from __future__ import annotations

import atexit
import base64
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from typing import Any

from crossgym.protocol.errors import SandboxError

from . import bwrap, config, seccomp
from ._runtime import cleanup
from ._runtime.cleanup import TRASH
from .result import Limits
from .transport import BACKSTOP_S, Pipes, Raw, pump

log = logging.getLogger(__name__)

STALE_ROOT_S = 3600.0
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from _runtime.server import main; main(sys.argv[2:])"
_ALL: weakref.WeakSet[Sandbox] = weakref.WeakSet()


class Sandbox:
    """A pool of confined workers of one tier. Use the module functions for the shared default pools."""

    def __init__(self, tier: str | None = None, *, workers: int | None = None, python: str | None = None) -> None:
        self.tier = config.resolve_tier(tier)
        self.workers = workers or config.workers()
        self.python = python or config.python()
        self.root = os.geteuid() == 0
        self._lock = threading.Lock()
        self._send = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._scratch_root: str | None = None
        self._ids = itertools.count(1)
        self._owner = os.getpid()
        self._task_uids = list(range(self.workers * 4))  # per-task bwrap uids (root only), after the slots
        self._uid_lock = threading.Lock()
        self._uid_free = threading.Condition(self._uid_lock)
        _ALL.add(self)

    # ------------------------------------------------------------ lifecycle
    @property
    def scratch_root(self) -> str:
        """This pool's private directory of scratch directories (created on first use)."""
        with self._lock:
            self._check_owner()
            if self._scratch_root is None:
                _sweep_stale_roots(config.scratch_base())
                path = tempfile.mkdtemp(prefix=f"crossgym-sbx-{os.getpid()}-", dir=config.scratch_base())
                os.chmod(path, 0o711 if config.uid_base() is not None else 0o700)
                self._check_reachable(path)
                self._scratch_root = path
            return self._scratch_root

    def _check_reachable(self, path: str) -> None:
        """With a uid per slot the tasks must be able to pass through every directory above the scratch root: under
        a private one ($TMPDIR in a 0700 home or /run/user/N) every task failed to reach its own directory and
        every verdict was 0, silently. Refused with the reason instead (the strong tier builds its own parents)."""
        if config.uid_base() is None or self.tier == "strong":
            return
        parent = os.path.dirname(path)
        while parent != os.path.dirname(parent):
            if not os.stat(parent).st_mode & 0o001:
                os.rmdir(path)
                raise SandboxError(f"the sandbox's tasks run as other uids and cannot pass through {parent!r} "
                                   f"(no search permission for others): set ${config.ENV_SCRATCH} or $TMPDIR to "
                                   "a directory they can reach, such as /tmp")
            parent = os.path.dirname(parent)

    def new_scratch(self) -> str:
        """A fresh empty directory under the scratch root (for shell tasks and sessions)."""
        return tempfile.mkdtemp(prefix="s", dir=self.scratch_root)

    def discard(self, path: str) -> None:
        """Remove a scratch directory of this pool without waiting: it is moved to the trash, which the server's
        sweeper empties in the background (the server is started for that if it is not running; removed here,
        now, only when it cannot be)."""
        root = self._scratch_root
        if root is not None and os.path.dirname(path) == root:
            try:
                self._server()
                os.rename(path, os.path.join(root, TRASH, "c" + os.urandom(8).hex()))
                return
            except (OSError, SandboxError):
                pass
        cleanup.remove_tree(path)

    def close(self) -> None:
        """Stop the server (it kills every task) and remove the scratch root."""
        with self._lock:
            self._stop()
            if self._scratch_root and self._owner == os.getpid():
                cleanup.remove_tree(self._scratch_root)  # however deep or unwritable what tasks left
            self._scratch_root = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_owner(self) -> None:
        if self._owner != os.getpid():  # we were forked: the server belongs to the parent
            self._forget()

    def _forget(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._proc = None
        self._scratch_root = None
        self._owner = os.getpid()

    def _stop(self) -> None:
        sock, proc = self._sock, self._proc
        self._sock = self._proc = None
        if sock is not None:
            try:  # (so the server leaves the scratch root to us: one that sees EOF unannounced removes it)
                sock.send(b'{"op": "bye"}')
            except OSError:
                pass
            sock.close()  # the server sees EOF, kills its tasks and exits
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def server_config(self, scratch_root: str, workers: int, uid: int | None) -> dict[str, Any]:
        """The JSON the server starts from (no secrets: limits, paths, the seccomp program)."""
        program = None if config.disabled("seccomp") else seccomp.bpf()
        return {"workers": workers, "scratch_root": scratch_root, "uid_base": uid,
                "landlock": not config.disabled("landlock"),
                "bpf": base64.b64encode(program).decode() if program else None,
                "ro_paths": config.python_dirs(self.python)}

    def _server(self) -> socket.socket:
        root = self.scratch_root
        with self._lock:
            if self._sock is not None and self._proc is not None and self._proc.poll() is None:
                return self._sock
            self._stop()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            cfg = self.server_config(root, self.workers, config.uid_base())
            cfg["sock_fd"] = theirs.fileno()
            argv = [self.python, "-S", "-I", "-c", BOOT, config.RUNTIME_PARENT, "serve",
                    json.dumps(cfg)]
            if self.tier == "strong":
                read_only = [config.RUNTIME_PARENT] + config.python_dirs(self.python)
                argv = bwrap.pool_argv(str(config.bwrap_path()), self.root, root, read_only) + argv
            try:
                self._proc = subprocess.Popen(argv, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              pass_fds=[theirs.fileno()], close_fds=True, start_new_session=True)
            except OSError as exc:
                raise SandboxError(f"cannot start the sandbox server ({argv[0]}): {exc}") from exc
            finally:
                theirs.close()
            self._sock = ours
            log.debug("sandbox server %d started (tier %s, %d workers)", self._proc.pid, self.tier, self.workers)
            return ours

    def _broken(self, proc: subprocess.Popen[bytes] | None) -> None:
        with self._lock:
            if proc is not None and proc is self._proc:
                self._stop()

    # ------------------------------------------------------------ execution
    def submit(self, hdr: dict[str, Any], payload: bytes, *, timeout: float, limits: Limits,
               result_pipe: bool = False) -> Raw:
        """Run one task in the pool's server and wait for it."""
        sock = self._server()
        proc = self._proc
        hdr = dict(hdr, id=next(self._ids), timeout=timeout)
        ends = Pipes(result_pipe)
        try:
            with self._send:
                socket.send_fds(sock, [json.dumps(hdr).encode()], ends.theirs())
        except OSError as exc:
            ends.close_all()
            self._broken(proc)
            raise SandboxError(f"the sandbox server is gone: {exc}") from exc
        ends.close_theirs()

        def kill(reason: str) -> None:
            try:
                with self._send:
                    sock.send(json.dumps({"op": "kill", "id": hdr["id"], "reason": reason}).encode())
            except OSError:
                pass

        try:
            return pump(ends, payload, timeout, limits, kill)
        except SandboxError:
            self._broken(proc)
            raise

    def submit_isolated(self, hdr: dict[str, Any], payload: bytes, *, scratch: str, timeout: float,
                        limits: Limits) -> Raw:
        """Run one task in its own bubblewrap (strong tier shell tasks); ``scratch`` is its only writable dir."""
        uid_index = self._take_uid()
        try:
            base = config.uid_base()
            uid = None if base is None else base + self.workers + uid_index
            cfg = self.server_config(os.path.dirname(bwrap.TASK_DIR), 1, uid)
            ends = Pipes(False)
            fds = dict(zip(("payload", "stdout", "stderr", "status"), ends.theirs(), strict=True))
            read_only = [config.RUNTIME_PARENT] + config.python_dirs(self.python)
            argv = bwrap.task_argv(str(config.bwrap_path()), self.root, scratch, read_only) + [
                self.python, "-S", "-I", "-c", BOOT, config.RUNTIME_PARENT, "oneshot",
                json.dumps(cfg),
                json.dumps(dict(hdr, id=0, timeout=timeout, scratch=bwrap.TASK_DIR)), json.dumps(fds)]
            try:
                proc = subprocess.Popen(argv, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, pass_fds=list(fds.values()), close_fds=True,
                                        start_new_session=True)
            except OSError as exc:
                ends.close_all()
                raise SandboxError(f"cannot start bubblewrap: {exc}") from exc
            ends.close_theirs()

            def kill(reason: str) -> None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            try:
                return pump(ends, payload, timeout, limits, kill, dead_is_final=True)
            except SandboxError as exc:
                kill("error")
                said = proc.communicate(timeout=BACKSTOP_S)[1].decode(errors="replace").strip()[-500:]
                raise SandboxError(f"{exc}: {said}" if said else str(exc)) from None
            finally:
                try:
                    proc.communicate(timeout=BACKSTOP_S)
                except subprocess.TimeoutExpired:
                    kill("backstop")
                    proc.communicate()
        finally:
            self._give_uid(uid_index)

    def _take_uid(self) -> int:
        with self._uid_free:
            while not self._task_uids:
                self._uid_free.wait()
            return self._task_uids.pop()

    def _give_uid(self, index: int) -> None:
        with self._uid_free:
            self._task_uids.append(index)
            self._uid_free.notify()


def _sweep_stale_roots(base: str) -> None:
    """Remove scratch roots of our uid left an hour ago or more by processes that died without closing their pools
    (SIGKILL); the age guards against a live pool whose process is in another pid namespace."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 4 or parts[:2] != ["crossgym", "sbx"] or not parts[2].isdigit():
            continue
        path = os.path.join(base, name)
        try:
            info = os.lstat(path)
            if info.st_uid != os.getuid() or time.time() - info.st_mtime < STALE_ROOT_S:
                continue
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:
            log.info("removing the scratch root of dead process %s: %s", parts[2], path)
            cleanup.remove_tree(path)  # however deep (shutil.rmtree recurses) or unwritable
        except OSError:
            continue


def _close_all() -> None:
    for sandbox in list(_ALL):
        try:
            sandbox.close()
        except Exception:  # interpreter shutdown: best effort
            pass


def _after_fork() -> None:
    for sandbox in list(_ALL):
        sandbox._lock = threading.Lock()
        sandbox._send = threading.Lock()
        sandbox._uid_lock = threading.Lock()
        sandbox._uid_free = threading.Condition(sandbox._uid_lock)
        sandbox._forget()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork)
