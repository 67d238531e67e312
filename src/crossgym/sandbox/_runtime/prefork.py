"""A tests task's solution processes, forked by the task itself before it reads the tests (so none holds them):
one per solution of the call, up to :data:`PREFORK`, in one burst.

Forking them in a burst from the task costs less than one at a time from another process between solutions:
the parent touches a few pages between two forks instead of a whole request loop (every page a forking parent
touches afterwards is a copy), and no round trip is needed to get the next one. The task is their subreaper:
before the next solution's process is handed over, everything the last one left running is killed and reaped.
Each has its own pipes (requests, replies, stdout, stderr) and its own directory, and waits idle in a Landlock
domain of its own until its solution is sent, so no other solution can signal it, reach its pipes or its files. A fresh process for a solution whose process
died or hung (the rest of its units run in it) and the processes of solutions beyond :data:`PREFORK` come from
the slot's spawner (:mod:`.spawner`).
"""

from __future__ import annotations

import os
import signal

from . import cleanup, confine, solution, spawner

PREFORK = 16  # the most solution processes a task forks ahead (each is a process of the task's uid while idle)


class Prefork:
    """The harness's source of solution processes: the ones forked ahead, then the spawner's."""

    def __init__(self, conf: confine.Confinement, count: int, fallback: spawner.Client, shared: bool = False,
                 dirs: list[str] | None = None, rules: list[int] | None = None) -> None:
        confine.subreaper()  # what a solution leaves running comes to this process, to be killed
        if shared:
            conf.prepare_nest()  # once, not in each child
        self._conf = conf
        self._idle: list[tuple[int, int, int, int, int, str]] = []
        here = os.getcwd()
        state = solution.enter_state(here)  # made once here, not in each of them
        try:
            for i in range(max(0, min(count, PREFORK))):
                own = dirs[i] if dirs and i < len(dirs) else None
                ready = rules[i] if own is not None and rules and i < len(rules) else None
                self._idle.append(solution.fork_solution(conf, here, stdin=True, shared=shared, own=own,
                                                         rules=ready))
        except OSError:  # the task's process limit: the rest come from the spawner
            pass
        finally:
            solution.leave_state(state)
            for fd in rules or ():
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._own = {given[0] for given in self._idle}
        self._used: list[int] = []
        self._fallback = fallback
        self._fallback_used = False
        self._dirty = False

    def fds(self) -> list[int]:
        """The file descriptors it holds now: the pipes of the processes still waiting, the spawner's socket."""
        return [fd for given in self._idle for fd in given[1:5]] + [self._fallback.fileno()]

    def waiting(self) -> set[int]:
        """Its children that hold no solution: the processes still waiting, and a spawner of its own."""
        return {given[0] for given in self._idle} | ({self._fallback.pid} if self._fallback.pid else set())

    def expect(self, solutions: int) -> None:
        self._fallback.expect(max(0, solutions - len(self._idle)))

    def spawn(self, where: str | None = None) -> tuple[int, int, int, int, int, str]:
        """A fresh solution process: (pid, fd to send requests, fd to read replies, its stdout, its stderr, its
        directory). ``where``: the directory of the solution it replaces a process of (one died or hung): the
        spawner makes it one there (a waiting one is bound to the next solution's directory)."""
        if self._dirty:
            self._clear()
        while self._idle and where is None:
            given = self._idle.pop(0)
            self._used.append(given[0])
            if not os.waitpid(given[0], os.WNOHANG)[0]:  # still waiting (one killed meanwhile is skipped)
                _resume(given[0])
                return given
            for fd in given[1:5]:
                os.close(fd)
        self._fallback_used = True
        made = self._fallback.spawn(where)
        _resume(made[0])
        return made

    def clear(self) -> None:
        """Between two solutions of a group: what the last one left is killed before the next one's process is
        handed over (its files are in a directory of its own that no later solution can reach)."""
        self._dirty = True
        self._fallback.clear()

    def kill(self, pid: int) -> None:
        if pid in self._own:
            cleanup.kill_quietly(pid)  # reaped at the next clear, or by the zygote
        else:
            self._fallback.kill(pid)

    def _clear(self) -> None:
        self._dirty = False
        cleanup.reap_children(spawner.CLEAR_S, {given[0] for given in self._idle} | {self._fallback.pid})
        for pid in self._used:
            solution.wipe(self._conf, pid, spawner.WIPE_S)
        self._used = []
        if self._fallback_used and self._idle:  # the spawner's processes are its to clear: ask and wait
            self._fallback.clear_now()
            self._fallback_used = False


def _resume(pid: int) -> None:
    """Let a waiting process go on if something stopped it: a program the tests ran (a child of this process, of
    its uid and domain) could SIGSTOP the next solutions' waiting processes, which then timed out loading while
    the solution whose tests ran it kept its verdict."""
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
