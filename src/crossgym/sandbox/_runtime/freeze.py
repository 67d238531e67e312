"""While the tests run their own code, nothing of the solution runs: its processes are stopped between calls.

Only for a run with seeded files (the tests may read a fixture to work out what they expect). The harness puts
back a fixture the solution changed before the tests read it (fixtures.py), but a thread or a process the
solution left running could write it again between that check and the tests' read: a child rewriting the file in
a loop made a wrong solution pass 3 runs in 10. So after each reply of the solution (and after it loads) every
process of the solution is sent SIGSTOP (which stops all its threads and cannot be caught), and SIGCONT just
before the next request: the solution only ever runs while the tests wait for it.

Its processes: the solution's process and everything below it (``/proc/<pid>/task/<tid>/children``), and what it
left as orphans, which come to the harness (a subreaper): the harness's children that are neither a process
waiting for a later solution nor a spawner. The tests may start programs of their own, which are the harness's
children too; once they have (an audit event: fork, spawn, exec, system, Popen) such orphans can no longer be told
from them and only the solution's own tree is stopped. The walk is repeated until it finds no process it has not
stopped, so one forked meanwhile is stopped too (the task's process limit bounds it).
"""

from __future__ import annotations

import os
import signal
import sys
import time

if False:  # annotations only: the server does not import typing
    from typing import Any

#: how long a freeze waits at most for what it signalled to have stopped (a thread in a system call stops when it
#: returns; past this the fixtures are checked anyway)
SETTLE_S = 0.2
#: walks of the process tree at most per freeze (each stops what the last one found: a fork bomb is bounded by the
#: task's process limit well before this)
MAX_WALKS = 1024
_STARTS = frozenset(("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
                     "os.exec", "pty.spawn"))


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (none when it is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            pass
    return out


def _still_running(pid: int) -> bool:
    """Whether some thread of ``pid`` has not stopped yet (a group stop ends when each thread takes it)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split(None, 1)[0]
        except (OSError, IndexError):
            continue
        if state not in (b"T", b"t", b"Z", b"X"):
            return True
    return False


def _tree(roots: list[int]) -> set[int]:
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid not in seen:
            seen.add(pid)
            stack.extend(_children(pid))
    return seen


class Freezer:
    """Stops a solution's processes while the tests run; see the module docstring."""

    def __init__(self, known: Any) -> None:
        self._known = known  # () -> the pids among the harness's children that are not the solution's
        self._me = os.getpid()
        self._tests_started = False
        self.stopped: set[int] = set()
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: Any) -> None:
        if event in _STARTS and os.getpid() == self._me:
            self._tests_started = True

    def _solutions(self, pid: int) -> set[int]:
        roots = [pid] if pid > 0 else []
        if not self._tests_started:
            known = self._known()
            roots += [c for c in _children(self._me) if c != pid and c not in known]
        return _tree(roots)

    def freeze(self, pid: int) -> None:
        """Stop ``pid`` (the solution's process), what it started and what it left behind; returns once they have
        stopped (or after SETTLE_S)."""
        end = time.monotonic() + SETTLE_S
        quiet = 0  # walks in a row that found nothing new with everything stopped: two, a millisecond apart, end it
        for _ in range(MAX_WALKS):  # (an orphan being handed to the harness can be in no list for an instant)
            new = self._solutions(pid) - self.stopped
            if new:
                quiet = 0
                for p in new:
                    try:
                        os.kill(p, signal.SIGSTOP)
                    except OSError:
                        pass
                self.stopped |= new
                continue
            if any(_still_running(p) for p in self.stopped):
                quiet = 0
            else:
                quiet += 1
                if quiet >= 2:
                    return
            if time.monotonic() > end:
                return
            time.sleep(0.001)

    def thaw(self) -> None:
        """Let them run again (before a request: the solution's call may need a thread it started)."""
        for p in self.stopped:
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass
        self.stopped = set()
