"""The sandbox server: a clean single-threaded process that forks one confined child per task.

It never reads a task's payload (source, stdin, files, tests): those travel on a pipe straight from the
caller to the task's process, so nothing one task sends can be found in the memory a later task inherits.
Requests arrive on a SOCK_SEQPACKET socket as a small JSON header plus the task's pipe ends (SCM_RIGHTS);
the outcome goes back on the task's own status pipe.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import select
import signal
import socket
import sys
import time
import traceback

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import child, cleanup, codec, confine, harness, plan, solution, wire, zygote  # noqa: F401  preloaded: tasks cannot read this directory

FD_NAMES = ("payload", "stdout", "stderr", "status", "result")


class Task:
    """A request: queued, then running in a slot, then reported."""

    def __init__(self, hdr: dict[str, Any], fds: dict[str, int]) -> None:
        self.id = hdr.get("id")
        self.hdr = hdr
        self.fds = fds
        self.slot = -1
        self.pid = 0
        self.start = 0.0
        self.deadline = 0.0
        self.timed_out = False
        self.killed_for: str | None = None
        self.scratch = ""
        self.keep = bool(hdr.get("keep"))
        self.zygote: zygote.Link | None = None


class Server:
    """Slots, a queue, deadlines and reaping; one process for the whole pool."""

    def __init__(self, cfg: dict[str, Any], zygotes: bool = True) -> None:
        self.cfg = cfg
        self.pid = os.getpid()
        self.root = cfg["scratch_root"]
        self.parted = False  # the caller said goodbye before closing (else it died: the scratch root is ours to remove)
        self.uid_base = cfg.get("uid_base")
        self.free = list(range(int(cfg.get("workers", 1))))[::-1]
        self.queue: collections.deque[Task] = collections.deque()
        self.running: dict[int, Task] = {}  # by pid; tasks of a slot's zygote by -1 - slot
        self.zygotes: dict[int, zygote.Link] | None = {} if zygotes else None
        self.zygote_failures = 0
        self.conf = confine.Confinement(cfg)
        self._nproc = (0, 0.0)
        confine.subreaper()
        confine.set_dumpable(False)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.trash = os.path.join(self.root, zygote.TRASH)
        self.sweeper = 0
        if zygotes:  # serve mode: what tasks leave goes to the trash, emptied by the sweeper, off every task's path
            os.makedirs(self.trash, 0o700, exist_ok=True)
            self.sweeper = cleanup.start_sweeper(self.trash, self.pid)

    # ------------------------------------------------------------------ loops
    def serve(self, sock: socket.socket) -> None:
        """Handle requests until the caller closes its end of ``sock``."""
        while True:
            timeout = self._next_timeout()
            links = list(self.zygotes.values()) if self.zygotes else []
            readable, _, _ = select.select([sock, self.wake_r, *links], [], [], timeout)  # type: ignore[type-var]
            if self.wake_r in readable:
                self._drain_wakeups()
            self._reap()
            for link in links:
                if link in readable:
                    self._from_zygote(link)
            if sock in readable:
                try:
                    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, len(FD_NAMES))
                except (ConnectionError, OSError):
                    data, fds = b"", []
                if not data:
                    break
                try:
                    self._request(data, fds)
                except Exception:
                    traceback.print_exc()
            self._expire()
            self._start_queued()
        self.shutdown()
        if not self.parted:  # the caller died (killed, out of memory) or dropped the pool unclosed: nobody else will
            cleanup.remove_tree(self.root)

    def run_one(self, hdr: dict[str, Any], fds: dict[str, int]) -> None:
        """Oneshot mode (one task inside its own bubblewrap): run it, report it, exit."""
        self.queue.append(Task(hdr, fds))
        self._start_queued()
        while self.running or self.queue:
            readable, _, _ = select.select([self.wake_r], [], [], self._next_timeout())
            if readable:
                self._drain_wakeups()
            self._reap()
            self._expire()

    def shutdown(self) -> None:
        """Kill every task, reap, remove scratch directories that nobody keeps."""
        for task in list(self.running.values()):
            self._kill(task)
        for link in list((self.zygotes or {}).values()):
            self._retire(link)  # its task dies with it (parent-death signal)
        for key, task in list(self.running.items()):
            if task.zygote is not None:
                del self.running[key]
                self._finish(task, signal.SIGKILL, 0.0, 0)
        deadline = time.monotonic() + 5
        while self.running and time.monotonic() < deadline:
            self._reap(block_s=0.05)
        for task in self.queue:
            self._close_fds(task)

    # --------------------------------------------------------------- requests
    def _request(self, data: bytes, fds: list[int]) -> None:
        try:
            hdr = json.loads(data)
        except ValueError:
            for fd in fds:
                os.close(fd)
            return
        if hdr.get("op") == "bye":  # (the caller closes next, and removes the scratch root itself, or starts again)
            self.parted = True
            return
        if hdr.get("op") == "kill":
            for fd in fds:
                os.close(fd)
            self._kill_id(hdr.get("id"), hdr.get("reason") or "cancelled")
            return
        names = FD_NAMES[: len(fds)]
        task = Task(hdr, dict(zip(names, fds, strict=True)))
        if "status" not in task.fds:
            self._close_fds(task)
            return
        os.set_blocking(task.fds["status"], False)
        self.queue.append(task)

    def _kill_id(self, task_id: Any, reason: str) -> None:
        for task in self.running.values():
            if task.id == task_id:
                task.killed_for = task.killed_for or reason
                self._kill(task)
                return
        for task in list(self.queue):
            if task.id == task_id:
                self.queue.remove(task)
                self._report(task, {"cancelled": reason})
                self._close_fds(task)
                return

    def _start_queued(self) -> None:
        while self.queue and self.free:
            task = self.queue.popleft()
            try:
                self._start(task)
            except Exception as exc:  # a bad request: say so, keep serving
                self._report(task, {"setup_error": f"{type(exc).__name__}: {exc}"})
                self._close_fds(task)
                if task.slot >= 0:
                    self.free.append(task.slot)

    def _start(self, task: Task) -> None:
        task.slot = self.free.pop()
        uid = None if self.uid_base is None else int(self.uid_base) + task.slot
        nproc = self._nproc_base() if uid is None else 0
        if self.zygotes is not None and not task.hdr.get("scratch"):
            self._start_in_zygote(task, uid, nproc)
        else:
            task.scratch = self._scratch(task, uid)
            pid = os.fork()
            if pid == 0:
                try:
                    self.queue.clear()
                    self.running.clear()
                    child.main(self.pid, self.conf, task.hdr, task.fds, task.scratch, uid, nproc)
                finally:
                    os._exit(child.SETUP_FAILED)
            task.pid = pid
            self.running[pid] = task
        task.start = time.monotonic()
        task.deadline = task.start + float(task.hdr.get("timeout", 10.0))
        for name, fd in task.fds.items():
            if name != "status":
                os.close(fd)
        task.fds = {"status": task.fds["status"]}
        self._report(task, {"started": task.pid}, final=False)

    def _start_in_zygote(self, task: Task, uid: int | None, nproc: int) -> None:
        """Hand the task to its slot's zygote (started on first use, restarted when it is gone)."""
        assert self.zygotes is not None
        for attempt in (1, 2):
            link: zygote.Link = self.zygotes.get(task.slot) or zygote.Link(self.cfg, self.root, task.slot, uid)
            self.zygotes[task.slot] = link
            try:
                link.send(dict(task.hdr, nproc=nproc), task.fds)
                break
            except OSError:
                self._retire(link)
                if attempt == 2:
                    raise
        task.zygote, link.task, task.scratch = link, task, link.scratch
        self.running[-1 - task.slot] = task

    def _from_zygote(self, link: zygote.Link) -> None:
        kind, value = link.receive()
        task: Task | None = link.task
        if kind == "gone":
            self._retire(link)
            if not link.served:  # it never got going (cannot exec the interpreter?): after 3, fork tasks here
                self.zygote_failures += 1
                if self.zygote_failures >= 3 and self.zygotes is not None:
                    sys.stderr.write("crossgym sandbox: slot zygotes keep failing; forking tasks from the server\n")
                    for other in list(self.zygotes.values()):
                        self._retire(other)
                    self.zygotes = None
                if task is not None and self.running.get(-1 - task.slot) is task:
                    del self.running[-1 - task.slot]
                    self._report(task, {"setup_error": "the slot's zygote ended before the task"})
                    self._close_fds(task)
                    self.free.append(task.slot)
                return
            value = {"status": signal.SIGKILL, "cpu": 0.0, "maxrss_kb": 0, "clean": False}
        else:
            link.served += 1
            if not value.get("clean"):
                self._retire(link)
        link.task = None
        if task is not None and self.running.get(-1 - task.slot) is task:
            del self.running[-1 - task.slot]
            self._finish(task, value["status"], value["cpu"], value["maxrss_kb"])

    def _retire(self, link: zygote.Link) -> None:
        if self.zygotes and self.zygotes.get(link.slot) is link:
            del self.zygotes[link.slot]
        link.close()

    def _scratch(self, task: Task, uid: int | None) -> str:
        """A fresh private directory, or the caller's session directory handed back to this slot's uid."""
        given = task.hdr.get("scratch")
        if given:
            path = os.path.abspath(given)
            st = os.lstat(path)
            if os.path.dirname(path) != self.root or not os.path.isdir(path) or os.path.islink(path):
                raise ValueError(f"scratch {given!r} is not a directory of this pool")
            if uid is not None:
                cleanup.chown_tree(path, uid)
            elif st.st_uid != os.getuid():
                raise ValueError(f"scratch {given!r} belongs to another user")
            task.keep = True
            return str(path)
        path = os.path.join(self.root, f"t{task.id}-{os.urandom(6).hex()}")
        os.mkdir(path, 0o700)
        if uid is not None:
            os.chown(path, uid, uid)
        return path

    def _nproc_base(self) -> int:
        """Processes this uid already has (RLIMIT_NPROC counts them all); cached for a second."""
        count, when = self._nproc
        now = time.monotonic()
        if now - when > 1.0:
            me = os.getuid()
            count = 0
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        count += os.stat(f"/proc/{entry}").st_uid == me
                    except OSError:
                        pass
            self._nproc = (count, now)
        return count

    # ----------------------------------------------------------- completion
    def _next_timeout(self) -> float | None:
        if not self.running:
            return None
        return max(0.0, min(t.deadline for t in self.running.values()) - time.monotonic())

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _expire(self) -> None:
        now = time.monotonic()
        for task in list(self.running.values()):
            if now >= task.deadline and not task.timed_out:
                task.timed_out = True
                self._kill(task)

    def _kill(self, task: Task) -> None:
        if task.zygote is not None:
            task.zygote.kill()
            return
        for kill in (os.kill, os.killpg):
            try:
                kill(task.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _reap(self, block_s: float = 0.0) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                if block_s:
                    time.sleep(block_s)
                    block_s = 0.0
                    continue
                return
            if pid == self.sweeper:
                self.sweeper = cleanup.start_sweeper(self.trash, self.pid)
                continue
            task = self.running.pop(pid, None)
            if task is not None:
                self._finish(task, status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)

    def _finish(self, task: Task, status: int, cpu: float, maxrss_kb: int) -> None:
        try:
            self._complete(task, status, cpu, maxrss_kb)
        except Exception:  # never lose the slot or the server over one task
            traceback.print_exc()
            self._close_fds(task)
        finally:
            self.free.append(task.slot)

    def _complete(self, task: Task, status: int, cpu: float, maxrss_kb: int) -> None:
        wall = time.monotonic() - task.start
        if task.zygote is None:
            self._kill(task)  # whatever the task left running in its process group (a zygote did that itself)
        if self.uid_base is not None and not self.conf.seccomp and task.zygote is None:
            cleanup.kill_uid(int(self.uid_base) + task.slot)
        code = os.waitstatus_to_exitcode(status)
        msg = {"exit": code, "signal": -code if code < 0 else None, "timed_out": task.timed_out,
               "killed_for": task.killed_for, "wall": wall, "cpu": cpu,
               "maxrss_kb": maxrss_kb, "scratch": task.scratch if task.keep else None}
        if task.keep and self.uid_base is not None and not task.hdr.get("discard"):
            cleanup.chown_tree(task.scratch, os.getuid())  # a session's is nobody's until its next command
        self._report(task, msg)
        self._close_fds(task)
        if not task.keep and task.zygote is None:
            if not self.sweeper or not cleanup.discard(task.scratch, self.trash):
                cleanup.remove_tree(task.scratch)

    def _report(self, task: Task, msg: dict[str, Any], final: bool = True) -> None:
        fd = task.fds.get("status")
        if fd is None:
            return
        try:
            os.write(fd, wire.line(msg))
        except OSError:
            pass

    def _close_fds(self, task: Task) -> None:
        for fd in task.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        task.fds = {}


def main(argv: list[str]) -> None:
    """``python3 -S -I -c BOOT serve CFG`` (fd 3 is the request socket) or ``oneshot CFG HDR FDS``."""
    mode, cfg = argv[0], json.loads(argv[1])
    os.environ.clear()
    confine.normalise_inherited()  # the caller's umask, fd limit and timer slack are not the tasks'
    server = Server(cfg, zygotes=mode == "serve" and not cfg.get("no_zygotes"))
    child.install_quitters()  # (the tasks it forks itself)
    gc.collect()
    gc.freeze()  # forked tasks then leave the server's objects (and their memory pages) alone
    if mode == "serve":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(cfg["sock_fd"]))
        server.serve(sock)
    else:
        hdr, fds = json.loads(argv[2]), json.loads(argv[3])
        os.set_blocking(fds["status"], False)
        server.run_one(hdr, fds)
    sys.exit(0)
