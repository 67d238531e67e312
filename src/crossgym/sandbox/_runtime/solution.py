"""The solution's side of a test run: processes forked before the tests are read, which hold the
solution and answer the harness's calls with plain values.

The harness (the task's first process) keeps the test source, the expected values and the private
result pipe; none of them ever exists in these processes.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import signal
import socket
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import child, cleanup, codec, confine, wire

MAX_MESSAGE = 1000
CLEAR_S = 2.0  # the most the zygote waits for what one solution left to die
REQ_FD, REP_FD = 3, 4  # a solution process's only fds besides 0-2


class Spawner:
    """Solution processes for the harness: one forked up front; after a hang or a crash, fresh ones from a
    zygote (forked up front too, only when the run asks for per-unit isolation). A group (``batch``) takes
    every solution's process from the zygote, which clears up after each one (see :meth:`clear`)."""

    def __init__(self, conf: confine.Confinement, respawn: bool, batch: bool = False) -> None:
        self._first: tuple[int, int, int] | None = None if batch else fork_solution(conf, prepared=False)
        self._own = {self._first[0]} if self._first else set()
        self._zygote: socket.socket | None = None
        self._batch = batch
        self._dirty = False
        if respawn or batch:
            hsock, zsock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pid = os.fork()
            if pid == 0:
                try:
                    hsock.close()
                    if self._first:
                        os.close(self._first[1])
                        os.close(self._first[2])
                    conf.nest(keep=True)  # and each solution process nests once more: none can signal it
                    if batch:
                        confine.subreaper()  # what a solution leaves behind comes to the zygote, to be killed
                    _zygote_loop(zsock, conf)
                finally:
                    os._exit(0)
            zsock.close()
            self._zygote = hsock

    def spawn(self) -> tuple[int, int, int]:
        """A fresh solution process: (pid, fd to send requests, fd to read replies)."""
        if self._first is not None:
            first, self._first = self._first, None
            return first
        if self._zygote is None:
            raise EOFError("no fresh solution process (per-unit isolation is off)")
        msg, self._dirty = b"clear+spawn" if self._dirty else b"spawn", False
        return request_process(self._zygote, msg, "solution zygote")

    def clear(self) -> None:
        """Between two solutions of a group: every process the last one left is killed and reaped, and the
        scratch directory is emptied, so it cannot leave anything for the next."""
        self._dirty = True  # done by the zygote just before it forks the next one (one round trip for both)

    def expect(self, solutions: int) -> None:
        """How many solutions will be judged (the slot's spawner forks ahead; this one does not)."""

    def kill(self, pid: int) -> None:
        """Kill one solution process (the zygote's children are out of the harness's reach)."""
        try:
            if pid in self._own:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            elif self._zygote is not None:
                self._zygote.send(b"kill %d" % pid)
        except OSError:
            pass


def request_process(sock: socket.socket, msg: bytes, who: str) -> tuple[int, int, int]:
    """Ask a solution zygote or the slot's spawner for a fresh solution process: (pid, fd to send requests, fd to
    read replies); EOFError when it is gone."""
    try:
        sock.send(msg)
    except OSError:
        raise EOFError(f"the {who} is gone") from None
    data, fds, _, _ = socket.recv_fds(sock, 64, 2)
    if not data or len(fds) != 2:
        raise EOFError(f"the {who} is gone")
    return int(data), fds[0], fds[1]


def fork_solution(conf: confine.Confinement, rlimits: list[Any] | None = None, prepared: bool = True,
                  stdin: bool = False) -> tuple[int, int, int]:
    """Fork a process that will hold the solution; it keeps nothing of the harness's (fds, domain).
    ``prepared``: forked by a zygote or the slot's spawner, which did the rest of :func:`prepare` once for all
    its children; ``stdin``: all of it but stdin (a task forking in :func:`enter_state`). ``rlimits``: a task's
    :func:`confine.rlimit_plan`, for a child of the slot's spawner. The child does as little as it can before the
    solution: each page it touches is a copy."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if not prepared:
                prepare(os.getcwd())
            elif stdin:
                stdin_from_null()
            if rlimits:
                confine.apply_rlimits(rlimits)
            conf.nest()  # a nested Landlock domain of its own: it cannot signal the harness, the zygote or siblings
            if min(req_r, rep_w) <= REP_FD:
                req_r, rep_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (req_r, rep_w))
            os.dup2(req_r, REQ_FD)
            os.dup2(rep_w, REP_FD)
            os.closerange(REP_FD + 1, 1 << 16)  # nothing else: not the harness's result and status pipes, not the
            _serve(REQ_FD, REP_FD)  # spawner's sockets, not another solution's pipes
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(rep_w)
    return pid, req_w, rep_r


def _zygote_loop(sock: socket.socket, conf: confine.Confinement) -> None:
    """In the zygote: fork a solution process per request, kill on request, until the harness goes."""
    prepare(os.getcwd())
    for fd in (3, 9):
        try:
            os.close(fd)
        except OSError:
            pass
    children: set[int] = set()
    while True:
        try:
            msg = sock.recv(64)
        except OSError:
            msg = b""
        if not msg:
            break
        _reap(children)
        if msg == b"clear+spawn":
            cleanup.reap_children(CLEAR_S)  # every process the last solution left, orphans included
            children.clear()
            cleanup.empty_dir(os.getcwd())
            msg = b"spawn"
        if msg == b"spawn":
            pid, req_w, rep_r = fork_solution(conf)
            children.add(pid)
            socket.send_fds(sock, [b"%d" % pid], [req_w, rep_r])
            os.close(req_w)
            os.close(rep_r)
        elif msg.startswith(b"kill "):
            pid = int(msg[5:])
            if pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


class _Server:
    """Holds the solution's namespace and the objects handed out as handles."""

    def __init__(self, scratch: str) -> None:
        self.ns: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
        self.handles: dict[int, Any] = {}
        self.scratch = scratch

    def handle(self, obj: Any) -> int:
        self.handles[id(obj)] = obj
        return id(obj)

    def enc(self, value: Any) -> Any:
        return codec.encode(value, self.handle)

    def dec(self, tree: Any) -> Any:
        return codec.decode(tree, lambda hid, _t: self.handles[hid])

    def init(self, source: str) -> Any:
        code = compile(source, "solution.py", "exec")
        try:
            exec(code, self.ns)
        except SystemExit as exc:  # leaving at import time is an error, never a pass
            raise RuntimeError(f"the solution called exit({exc.code!r}) while loading") from None
        manifest = {}
        for name, value in list(self.ns.items()):
            if name.startswith("__"):
                continue
            if type(value).__name__ == "module":
                manifest[name] = ["m", getattr(value, "__name__", name)]
            elif callable(value):
                manifest[name] = ["f"]
            else:
                manifest[name] = ["v", self.enc(value)]
        return manifest

    def call(self, target: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        fn = self.ns[target[1]] if target[0] == "n" else self.handles[target[1]]
        pargs = [self.dec(a) for a in args]
        kw = {k: self.dec(v) for k, v in kwargs.items()}
        result = fn(*pargs, **kw)
        mutated = {}
        for i, (sent, now) in enumerate(zip(args, pargs, strict=True)):
            if type(now) in (list, dict, set, bytearray):
                after = self.enc(now)
                if after != sent:
                    mutated[str(i)] = after
        return [self.enc(result), mutated]

    def op(self, name: str, hid: int, args: list[Any]) -> Any:
        obj = self.handles[hid]
        if name == "getattr":
            return self.enc(getattr(obj, args[0]))
        if name == "iter":
            return self.enc(iter(obj))
        if name == "next":
            return self.enc(next(obj))
        if name == "getitem":
            return self.enc(obj[self.dec(args[0])])
        if name == "len":
            return _exact(len(obj), int)
        if name == "bool":
            return _exact(bool(obj), bool)
        if name == "contains":
            return _exact(self.dec(args[0]) in obj, bool)
        if name in ("repr", "str"):
            return _exact((repr if name == "repr" else str)(obj), str)[:100_000]
        raise ValueError(f"unknown operation {name!r}")


def _exact(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise TypeError(f"expected a {kind.__name__}, got {type(value).__name__}")
    return value


def prepare(scratch: str) -> None:
    """What a solution process needs that is the same for all: stdin from /dev/null (never the task's payload
    pipe), the interpreter's path and argv as for ``python3 solution.py``, the sandbox's modules hidden, streams."""
    stdin_from_null()
    enter_state(scratch)
    if not child.READY.get("streams"):  # a slot's zygote made fresh ones for fds 0-2 (flushed after each reply)
        child.set_streams()


def stdin_from_null() -> None:
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def enter_state(scratch: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """sys.path, argv and sys.modules as a solution sees them; returns what :func:`leave_state` puts back (a task
    enters this state just while it forks its solution processes, so that none of them has to)."""
    saved: tuple[list[str], list[str], dict[str, Any]] = (list(sys.path), list(sys.argv), {})
    for name in child.READY.get("modules") or [m for m in sys.modules if m.split(".")[0] == "_runtime"]:
        if name not in KEEP and name in sys.modules:
            saved[2][name] = sys.modules.pop(name)  # kept alive: freeing them would copy shared pages
    child.HIDDEN.append(saved[2])
    sys.path[:] = child.READY.get("path") or [scratch] + confine.stdlib_path()
    sys.argv[:] = ["solution.py"]
    return saved


def leave_state(saved: tuple[list[str], list[str], dict[str, Any]]) -> None:
    sys.path[:], sys.argv[:] = saved[0], saved[1]
    sys.modules.update(saved[2])


KEEP = ("_runtime", "_runtime.solution", "_runtime.codec", "_runtime.wire")


def _serve(req: int, rep: int) -> None:
    """Answer the harness until it closes the request pipe."""
    server = _Server(os.getcwd())
    while True:
        try:
            msg = wire.read_obj(req)
        except (EOFError, OSError, ValueError):
            break
        try:
            if msg[0] == "init":
                reply: list[Any] = ["ok", server.init(msg[1])]
            elif msg[0] == "call":
                reply = ["ok", server.call(msg[1], msg[2], msg[3])]
            else:
                reply = ["ok", server.op(msg[0], msg[1], msg[2])]
        except BaseException as exc:  # includes SystemExit: reported as an exception, never a pass
            reply = ["raise", type(exc).__name__, getattr(type(exc), "__module__", ""), _message(exc)]
        try:
            data = wire.pack(reply)
        except BaseException as exc:
            data = wire.pack(["raise", "TypeError", "builtins", f"unsendable reply: {type(exc).__name__}"])
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        wire.write_all(rep, data)


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        return "<unprintable>"
    return text[:MAX_MESSAGE] if type(text) is str else "<unprintable>"
