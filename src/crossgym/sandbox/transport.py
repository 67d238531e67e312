"""One task's pipes and the loop that feeds its payload and reads its output, status and results.

Runs in the calling thread: each call owns its pipes, so callers never wait on each other.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.errors import SandboxError

from .result import Limits

BACKSTOP_S = 5.0
DRAIN_S = 2.0
QUEUE_LIMIT_S = 3600.0


@dataclass
class Raw:
    """What came back for one task, before decoding."""

    exit: int = -1
    signal: int | None = None
    timed_out: bool = False
    killed_for: str | None = None
    wall: float = 0.0
    cpu: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""
    truncated: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)
    scratch: str | None = None
    setup_error: str | None = None


class Pipes:
    """One task's pipes; ``ours`` stay here, ``theirs`` go to the task."""

    def __init__(self, result: bool) -> None:
        names = ["payload", "stdout", "stderr", "status"] + (["result"] if result else [])
        self.ours: dict[str, int] = {}
        self._theirs: list[int] = []
        for name in names:
            r, w = os.pipe()
            if name == "payload":
                self.ours[name], mine = w, r
            else:
                self.ours[name], mine = r, w
            self._theirs.append(mine)

    def theirs(self) -> list[int]:
        return list(self._theirs)

    def close_theirs(self) -> None:
        for fd in self._theirs:
            os.close(fd)
        self._theirs = []

    def close_all(self) -> None:
        self.close_theirs()
        for fd in self.ours.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.ours = {}


def pump(ends: Pipes, payload: bytes, timeout: float, limits: Limits, kill: Callable[[str], None],
          dead_is_final: bool = False) -> Raw:
    """Feed the payload and read output, status and results until the task is over."""
    raw = Raw()
    fds, ends.ours = dict(ends.ours), {}
    pay = fds.pop("payload")
    names = {fd: name for name, fd in fds.items()}
    bufs: dict[str, bytearray] = {name: bytearray() for name in fds}
    poller = select.poll()
    for fd in names:
        poller.register(fd, select.POLLIN)
    view = memoryview(payload)
    os.set_blocking(pay, False)
    poller.register(pay, select.POLLOUT)
    open_reads = set(names)
    total = 0
    queued_since = time.monotonic()
    started = final = None
    killed = False
    try:
        while final is None or open_reads:
            now = time.monotonic()
            if final is not None:
                if now > final + DRAIN_S:
                    break
                wait = final + DRAIN_S - now
            elif started is not None:
                late = now - (started + timeout + BACKSTOP_S)
                if late > BACKSTOP_S:
                    raise SandboxError("the sandbox server did not end a task after its deadline")
                if late > 0 and not killed:
                    kill("backstop")
                    killed = True
                wait = max(0.05, started + timeout + 2 * BACKSTOP_S - now)
            else:
                if now - queued_since > QUEUE_LIMIT_S:
                    raise SandboxError(f"a task waited more than {QUEUE_LIMIT_S:.0f} s for a free worker")
                wait = 60.0
            for fd, _event in poller.poll(wait * 1000):
                if fd == pay:
                    try:
                        view = view[os.write(fd, view[: 1 << 16]):] if view else view
                    except BlockingIOError:
                        continue
                    except OSError:
                        view = view[:0]
                    if not view:
                        poller.unregister(fd)
                        os.close(fd)
                        pay = -1
                    continue
                name = names[fd]
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    poller.unregister(fd)
                    open_reads.discard(fd)
                    if name == "status" and final is None:
                        if raw.setup_error is None and not dead_is_final:
                            raise SandboxError("the sandbox server exited while running a task")
                        if raw.setup_error is None and started is None:
                            raise SandboxError("the task's bubblewrap exited before the task started")
                        final = time.monotonic()
                        if raw.setup_error is None:  # our own bubblewrap was killed (deadline or output)
                            raw.exit, raw.signal = -signal.SIGKILL, signal.SIGKILL
                            raw.timed_out = raw.killed_for is None
                    continue
                if name in ("stdout", "stderr"):
                    total += len(chunk)
                    buf = bufs[name]
                    if len(buf) + len(chunk) > limits.output_bytes:
                        raw.truncated = True
                    if len(buf) < limits.output_bytes:
                        buf += chunk[: limits.output_bytes - len(buf)]
                    if total > limits.max_output_bytes and not killed:
                        kill("output")
                        killed = True
                        raw.killed_for = "output"
                    continue
                bufs[name] += chunk
                if name == "status":
                    started, final = _status(raw, bufs["status"], started, final)
    finally:
        for fd in [pay, *names]:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
    raw.stdout, raw.stderr = bytes(bufs["stdout"]), bytes(bufs["stderr"])
    raw.results = _result_lines(bytes(bufs.get("result", b"")))
    return raw


def _result_lines(data: bytes) -> list[Any]:
    """The task's result lines, parsed in one go; lines after one that does not parse are dropped."""
    lines = data.splitlines()
    try:
        return list(json.loads(b"[" + b",".join(lines) + b"]"))
    except ValueError:
        pass
    results = []
    for line in lines:
        try:
            results.append(json.loads(line))
        except ValueError:
            break
    return results


def _status(raw: Raw, buf: bytearray, started: float | None, final: float | None) -> tuple[Any, Any]:
    while b"\n" in buf:
        line, _, rest = bytes(buf).partition(b"\n")
        buf[:] = rest
        msg = json.loads(line)
        if "started" in msg:
            started = time.monotonic()
        elif "setup_error" in msg:
            raw.setup_error = msg["setup_error"]
        elif "cancelled" in msg:
            raw.setup_error = f"cancelled: {msg['cancelled']}"
        elif "exit" in msg:
            final = time.monotonic()
            raw.exit, raw.signal, raw.timed_out = msg["exit"], msg["signal"], msg["timed_out"]
            raw.killed_for = msg.get("killed_for") or raw.killed_for
            raw.wall, raw.cpu, raw.scratch = msg["wall"], msg["cpu"], msg.get("scratch")
    return started, final
