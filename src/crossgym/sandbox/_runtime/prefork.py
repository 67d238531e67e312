"""A tests task's solution processes, forked by the task itself before it reads the tests (so none holds them):
one per solution of the call, up to :data:`PREFORK`, in one burst.

Forking them in a burst from the task costs less than one at a time from another process between solutions:
the parent touches a few pages between two forks instead of a whole request loop (every page a forking parent
touches afterwards is a copy), and no round trip is needed to get the next one. The task is their subreaper:
before the next solution's process is handed over, everything the last one left running is killed and reaped
and the scratch directory emptied. Each waits idle in a Landlock domain of its own until its solution is sent,
so the solution before it can neither signal it nor reach its pipes. A fresh process for a solution whose process
died or hung (the rest of its units run in it) and the processes of solutions beyond :data:`PREFORK` come from
the slot's spawner (:mod:`.spawner`).
"""

from __future__ import annotations

import os

from . import cleanup, confine, solution, spawner

PREFORK = 16  # the most solution processes a task forks ahead (each is a process of the task's uid while idle)


class Prefork:
    """The harness's source of solution processes: the ones forked ahead, then the spawner's."""

    def __init__(self, conf: confine.Confinement, count: int, fallback: spawner.Client) -> None:
        confine.subreaper()  # what a solution leaves running comes to this process, to be killed
        conf.prepare_nest()  # once, not in each child
        self._idle: list[tuple[int, int, int]] = []
        state = solution.enter_state(os.getcwd())  # made once here, not in each of them
        try:
            for _ in range(max(0, min(count, PREFORK))):
                self._idle.append(solution.fork_solution(conf, stdin=True))
        except OSError:  # the task's process limit: the rest come from the spawner
            pass
        finally:
            solution.leave_state(state)
        self._own = {pid for pid, _, _ in self._idle}
        self._fallback = fallback
        self._fallback_used = False
        self._dirty = False

    def expect(self, solutions: int) -> None:
        self._fallback.expect(max(0, solutions - len(self._idle)))

    def spawn(self) -> tuple[int, int, int]:
        """A fresh solution process: (pid, fd to send requests, fd to read replies)."""
        if self._dirty:
            self._clear()
        while self._idle:
            given = self._idle.pop(0)
            if not os.waitpid(given[0], os.WNOHANG)[0]:  # still waiting (one killed meanwhile is skipped)
                return given
            os.close(given[1])
            os.close(given[2])
        self._fallback_used = True
        return self._fallback.spawn()

    def clear(self) -> None:
        """Between two solutions of a group: what the last one left is killed and the directory emptied before
        the next one's process is handed over."""
        self._dirty = True
        self._fallback.clear()

    def kill(self, pid: int) -> None:
        if pid in self._own:
            cleanup.kill_quietly(pid)  # reaped at the next clear, or by the zygote
        else:
            self._fallback.kill(pid)

    def _clear(self) -> None:
        self._dirty = False
        cleanup.reap_children(spawner.CLEAR_S, {pid for pid, _, _ in self._idle} | {self._fallback.pid})
        if self._fallback_used and self._idle:  # the spawner's processes are its to clear: ask and wait
            self._fallback.clear_now()
            self._fallback_used = False
        cleanup.empty_dir(os.getcwd())
