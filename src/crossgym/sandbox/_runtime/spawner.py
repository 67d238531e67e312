"""Solution spawners: processes that fork a test harness's fresh solution processes once the harness has read
the tests (it may not fork them itself then: they would hold the tests). A task forks its first ones before it
reads the payload (:mod:`.prefork`); a spawner gives it a fresh one after a solution's process died or hung, and
those of solutions beyond the ones it forked.

In a slot, one confined spawner serves every task (:class:`Handle`, ``cg-spawner`` in ``ps``). The slot's zygote
starts it the first time a harness asks for a process, and keeps it. It is confined as a task is (the slot's uid,
Landlock, seccomp, its own session) and never sees a payload: each tests task gets a socket whose other end the
zygote holds, and hands over to the spawner (with the task's directory and rlimits) only when the harness first
asks for a process, so a task that never does costs the spawner nothing. Solution processes are forked from it
already confined, each with its own pipes (requests, replies, stdout, stderr: the harness reads them all) and
its own directory below the task's in a Landlock domain of its own (so none can signal it, the harness or each
other, nor reach another's files), and lower their rlimits to the task's. When the harness's socket closes (the
task ended or was killed) it kills and reaps every process the task's solutions left and says so to the zygote,
which looks at the slot's directories only then. A task the server forks itself (no slot) forks a spawner of its own
(:func:`local`) before it reads the payload.

Messages from a harness: ``spawn``, ``clear+spawn`` (first kill what the last solution left), either with ``+``
when another solution follows, ``clear`` (answered ``ok``) and ``kill PID``; a spawn is answered with the pid and
the directory, and the four pipe ends (see :mod:`.solution`).
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import socket
import struct

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import cleanup, confine, solution

CTL_FD, RULES_FD = 3, 4  # in the spawner: its socket to the zygote, the slot's Landlock ruleset
FDS = struct.Struct("4i")  # a new solution process's pipe ends (requests, replies, stdout, stderr), as SCM_RIGHTS
CLEAR_S = 2.0  # the most the spawner waits for what one solution (or one task) left to die
WIPE_S = 0.5  # without Landlock: the most emptying one solution's directory may take between two solutions
DONE_S = 5.0  # the most the zygote waits for the spawner to clear up after a task


class Handle:
    """The zygote's end: start the spawner, hand it each tests task, wait until it has cleared up after one."""

    def __init__(self, conf: confine.Confinement, scratch: str, uid: int | None, ruleset: int | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote = os.getpid()
        rules = None if ruleset is None else os.dup(ruleset)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                ours.close()
                _main(theirs, conf, scratch, uid, rules, zygote)
            finally:
                os._exit(0)
        if rules is not None:
            os.close(rules)
        theirs.close()
        self.sock = ours
        self.pidfd = os.pidfd_open(self.pid)

    def hand_over(self, conn: int, hdr: dict[str, Any], task_dir: str) -> None:
        """Give the spawner a task's socket (its harness's end asks for processes), with the task's directory (its
        solutions' directories go below) and limits (OSError when the spawner is gone)."""
        msg = json.dumps({"limits": hdr.get("limits", {}), "nproc": int(hdr.get("nproc", 0)),
                          "dir": task_dir, "shared": bool(hdr.get("shared"))}).encode()
        socket.send_fds(self.sock, [msg], [conn])

    def finish(self) -> float | None:
        """Wait until the spawner has killed and reaped what the task's solutions left: the CPU seconds of its
        processes for the task, or None (stop using this spawner)."""
        import select

        ready, _, _ = select.select([self.sock], [], [], DONE_S)
        try:
            reply = self.sock.recv(64).split() if ready else []
        except OSError:
            reply = []
        if len(reply) != 2 or reply[0] != b"done":
            return None
        return float(reply[1])

    def alive(self) -> bool:
        import select

        return not select.select([self.pidfd], [], [], 0)[0]

    def close(self) -> None:
        """Kill the spawner (its solutions die with it: they are killed when it goes) and reap it."""
        import signal

        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.pidfd)
        self.sock.close()


class Client:
    """The harness's end of a spawner's socket. ``pid``: the spawner, when it is the task's own child (which the
    harness's clearing up must leave alone), else 0."""

    def __init__(self, fd: int, pid: int = 0) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fileno=fd)  # no asking the kernel
        self.pid = pid
        self._dirty = False
        self._left = 1

    def fileno(self) -> int:
        return self._sock.fileno()

    def expect(self, solutions: int) -> None:
        """How many solutions the harness will ask processes for (so the next can be forked ahead)."""
        self._left = solutions

    def spawn(self, where: str | None = None) -> tuple[int, int, int, int, int, str]:
        """A fresh solution process: (pid, fd to send requests, fd to read replies, its stdout, its stderr, its
        directory); ``where``: a solution's directory it works in (a fresh process for a solution that had one).
        EOFError when the spawner is gone."""
        if where is None:
            self._left -= 1
        msg = (b"clear+spawn" if self._dirty else b"spawn") + (b"+" if self._left > 0 and where is None else b"")
        if where is not None:
            msg += b" " + os.fsencode(where)
        self._dirty = False
        try:
            self._sock.send(msg)
        except OSError:
            raise EOFError("the solution spawner is gone") from None
        data, fds, _, _ = socket.recv_fds(self._sock, 4096, 4)
        if not data or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            raise EOFError("the solution spawner is gone")
        pid, _, path = data.partition(b" ")
        return int(pid), fds[0], fds[1], fds[2], fds[3], os.fsdecode(path)

    def clear(self) -> None:
        """Between two solutions of a group: what the last one left is killed and the directory emptied, by the
        spawner, just before it forks the next (one round trip for both)."""
        self._dirty = True

    def kill(self, pid: int) -> None:
        try:
            self._sock.send(b"kill %d" % pid)
        except OSError:
            pass

    def clear_now(self) -> None:
        """Kill what this spawner's last solution left and empty the directory, now (the next solution's
        process comes from elsewhere)."""
        self._dirty = False
        try:
            self._sock.send(b"clear")
            self._sock.recv(16)
        except OSError:
            pass


def local(conf: confine.Confinement, shared: bool = False) -> Client:
    """A spawner of the task's own (a task the server forked itself, outside any slot), forked now, before the
    payload is read, so confined as the task is. It nests a Landlock domain (its solutions, one deeper, cannot
    signal it) and is their subreaper; it ends when the harness's socket closes."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            for fd in (3, 9):  # the task's result and status pipes (its payload pipe: see solution.prepare)
                os.close(fd)
            conf.nest(keep=True)
            conf.prepare_nest()
            confine.subreaper()
            solution.prepare(os.getcwd())
            _serve(theirs, conf, [], os.getcwd(), shared)
            cleanup.reap_children(CLEAR_S)
        finally:
            os._exit(0)
    theirs.close()
    return Client(ours.detach(), pid)


def _main(ctl: socket.socket, conf: confine.Confinement, scratch: str, uid: int | None, rules: int | None,
          zygote: int) -> None:
    """In the spawner: confine, then serve one task's harness at a time. Never returns."""
    confine.start_session(zygote)  # its own session (tasks cannot setsid under seccomp); dies with the zygote
    confine.name(b"cg-spawner")
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):  # the zygote's spare streams are no task's; tasks' come with each task
        os.dup2(null, fd)
    os.close(null)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in [ctl.detach()] + ([] if rules is None else [rules])]
    for fd, target in zip(high, (CTL_FD, RULES_FD), strict=False):
        os.dup2(fd, target, inheritable=False)
    os.closerange(RULES_FD + 1 if rules is not None else CTL_FD + 1, 1 << 16)  # nothing else of the zygote's
    ctl = socket.socket(fileno=CTL_FD)
    rules = None if rules is None else RULES_FD
    conf.apply({}, scratch, uid, 0, keep_rules=True, ruleset=rules)  # each solution lowers its own rlimits
    conf.prepare_nest()
    if uid is None:
        confine.set_dumpable(False)
    confine.subreaper()  # what a solution leaves behind comes here, to be killed
    solution.prepare(scratch)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(ctl, 1 << 12, 3)
        except OSError:
            data, fds = b"", []
        if not data or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            break
        task = json.loads(data)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        plan = confine.rlimit_plan(task.get("limits") or {}, int(task.get("nproc", 0)), core=False)
        _serve(socket.socket(fileno=fds[0]), conf, plan, str(task.get("dir") or scratch), bool(task.get("shared")))
        cleanup.reap_children(CLEAR_S)
        solution.DIRS.clear()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        try:
            ctl.send(b"done %.6f" % cpu)
        except OSError:
            break
    os._exit(0)


def _serve(conn: socket.socket, conf: confine.Confinement, rlimits: list[Any], task_dir: str,
           shared: bool = False) -> None:
    """Answer one harness until its socket closes. A request ending in ``+`` says another solution follows: the
    next process is forked right after this one is handed over, while the harness judges, and waits idle (its
    own Landlock domain, pipes and directory, nothing of anyone's) until it is asked for."""
    children: set[int] = set()
    spare: tuple[int, int, int, int, int, str] | None = None
    try:
        while True:
            try:
                msg = conn.recv(4096)
            except OSError:
                msg = b""
            if not msg:
                break
            if msg.startswith(b"kill "):
                pid = int(msg[5:])
                if pid in children:
                    cleanup.kill_quietly(pid)
                continue
            if msg.startswith(b"clear"):  # what the last solution left: killed, reaped (its files: see wipe)
                cleanup.reap_children(CLEAR_S, (spare[0],) if spare else ())
                for pid in children:
                    solution.wipe(conf, pid, WIPE_S)
                children.clear()
            if msg == b"clear":  # the harness hands the next solution a process of its own
                try:
                    conn.send(b"ok")
                except OSError:
                    break
                continue
            command, _, where = msg.partition(b" ")
            more = command.endswith(b"+")
            if where:  # a fresh process for a solution that had one: in that solution's directory
                given = solution.fork_solution(conf, task_dir, rlimits, shared=shared, own=os.fsdecode(where))
            else:
                given, spare = spare or solution.fork_solution(conf, task_dir, rlimits, shared=shared), None
            children.add(given[0])
            try:
                conn.sendmsg([b"%d %s" % (given[0], os.fsencode(given[5]))],
                             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, FDS.pack(*given[1:5]))])
            except OSError:
                break
            finally:
                for fd in given[1:5]:
                    os.close(fd)
            if more:
                spare = solution.fork_solution(conf, task_dir, rlimits, shared=shared)
    finally:
        if spare is not None:
            for fd in spare[1:5]:
                os.close(fd)
        conn.close()
