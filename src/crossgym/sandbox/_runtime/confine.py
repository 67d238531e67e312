"""Confinement applied in each task's process before untrusted code runs: uid, rlimits, Landlock, seccomp."""

from __future__ import annotations

import base64
import ctypes
import os
import resource
import signal
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import landlock

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP = 1, 4, 22
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
PR_SET_TIMERSLACK = 29
TIMERSLACK_NS = 50_000  # the kernel's default
MIN_OPEN_FILES = 1024  # the usual soft default; the runtime parks fds at 200+ before a task's own limit
SECCOMP_MODE_FILTER = 2

libc = ctypes.CDLL(None, use_errno=True)

RO_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc"]
DEV_FILES = {"/dev/null": landlock.FILE_RIGHTS, "/dev/zero": landlock.FILE_RIGHTS,
             "/dev/full": landlock.FILE_RIGHTS, "/dev/urandom": landlock.READ_FILE,
             "/dev/random": landlock.READ_FILE}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Confinement:
    """Prepared once in the server; :meth:`apply` runs in every forked task process."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.landlock_abi = landlock.abi() if cfg.get("landlock", True) else 0
        self.ro_dirs = RO_DIRS + [p for p in cfg.get("ro_paths", []) if p]
        self._bpf = None
        self._prog = None
        bpf = base64.b64decode(cfg["bpf"]) if cfg.get("bpf") else b""
        if bpf:
            self._bpf = ctypes.create_string_buffer(bpf, len(bpf))
            self._prog = _SockFprog(len(bpf) // 8, ctypes.addressof(self._bpf))
        self.seccomp = self._prog is not None
        self._ruleset: int | None = None
        self._restrict: tuple[int, Any] | None = None  # (ruleset, prepared landlock_restrict_self call)
        self._system_rules: tuple[int, list[tuple[int, int]]] | None = None  # (pid, O_PATH fds of ro_dirs)

    def ruleset(self, scratch: str) -> int | None:
        """A Landlock ruleset fd for tasks working in ``scratch`` (None without Landlock): full access below it,
        read and execute on system directories. Made once by a slot's zygote, applied by each task it forks."""
        if not self.landlock_abi:
            return None
        rules = landlock.open_rules([scratch], self.ro_dirs, DEV_FILES)
        try:
            return landlock.create(self.landlock_abi, rules)
        finally:
            landlock.close_rules(rules)

    def own_ruleset(self, path: str, *more: str) -> int | None:
        """A ruleset for one solution process: full access below ``path`` (its own fresh directory) only, read and
        execute on system directories (None without Landlock). Nested in its parent's domain, it can reach no
        sibling's directory, files or process. The system directories are opened once per process."""
        if not self.landlock_abi:
            return None
        if self._system_rules is None or self._system_rules[0] != os.getpid():  # fds of this process only
            self._system_rules = (os.getpid(), landlock.open_rules([], self.ro_dirs, DEV_FILES))
        own = landlock.open_rules([path, *more], [], {})
        try:
            return landlock.create(self.landlock_abi, own + self._system_rules[1])
        finally:
            landlock.close_rules(own)

    def apply(self, limits: dict[str, int], scratch: str, uid: int | None, nproc_base: int = 0,
              keep_rules: bool = False, ruleset: int | None = None) -> None:
        """Drop to ``uid`` (when given), set rlimits, then Landlock and seccomp. Raises OSError.
        ``ruleset``: a prepared one from :meth:`ruleset` (this call owns it), else one is made for ``scratch``.
        ``keep_rules`` keeps the ruleset open for one :meth:`nest` later."""
        if ruleset is None:
            ruleset = self.ruleset(scratch)
        try:
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            rlimits(limits, nproc_base)
            no_new_privs()
            if ruleset is not None:
                landlock.restrict_self(ruleset)
            self.apply_seccomp()
        finally:
            if keep_rules:
                self._ruleset = ruleset
            elif ruleset is not None:
                os.close(ruleset)

    def nest(self, keep: bool = False) -> None:
        """A nested Landlock domain (same rules): its processes cannot signal the parent domain.
        ``keep``: keep the ruleset for the processes this one forks, to nest each of them once more."""
        ruleset = self._ruleset
        if ruleset is None:
            return
        self.prepare_nest()
        if not keep:
            self._ruleset = None
        try:
            self._restrict[1]()  # type: ignore[index]
        finally:
            if not keep:
                os.close(ruleset)

    def prepare_nest(self) -> None:
        """Make the :meth:`nest` call ahead, in a process that will fork many that nest."""
        if self._ruleset is not None and (self._restrict is None or self._restrict[0] != self._ruleset):
            self._restrict = (self._ruleset, landlock.restrictor(self._ruleset))

    def drop_rules(self) -> None:
        """Close the ruleset kept for :meth:`nest` (in the process that will not nest)."""
        if self._ruleset is not None:
            os.close(self._ruleset)
        self._ruleset = None

    def apply_seccomp(self) -> None:
        """Load the pre-built BPF filter (no internet sockets, no setsid, ptrace, mount, unshare, bpf...)."""
        if self._prog is not None and libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                   ctypes.byref(self._prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp filter failed to load")


def normalise_inherited() -> None:
    """Undo what the caller's process state would pass on to every task (all of it survives fork and exec): a
    umask of 027 or 077 made the slots' directories closed to their own uids (every verdict 0), a soft
    ``ulimit -n`` under 200 failed every task's set-up (the runtime parks descriptors at 200 and above), and a timer
    slack the caller raised (``prctl``, systemd's TimerSlackNSec) stretched every sleep of a solution."""
    os.umask(0o022)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < MIN_OPEN_FILES:
        wanted = MIN_OPEN_FILES if hard == resource.RLIM_INFINITY else min(MIN_OPEN_FILES, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    libc.prctl(PR_SET_TIMERSLACK, TIMERSLACK_NS, 0, 0, 0)


def rlimits(limits: dict[str, int], nproc_base: int) -> None:
    """Lower this process's rlimits to a task's (never raising one) and turn core dumps off."""
    apply_rlimits(rlimit_plan(limits, nproc_base))


def rlimit_plan(limits: dict[str, int], nproc_base: int, core: bool = True) -> list[tuple[int, tuple[int, int]]]:
    """The setrlimit calls that lower this process's limits (or a child's, forked later) to a task's, and turn
    core dumps off (``core``; a child of a process that did so already need not)."""
    table = {"memory": resource.RLIMIT_AS, "file_size": resource.RLIMIT_FSIZE,
             "open_files": resource.RLIMIT_NOFILE, "stack": resource.RLIMIT_STACK}
    wanted = [(res, int(limits[key])) for key, res in table.items() if limits.get(key)]
    if limits.get("processes"):
        wanted.append((resource.RLIMIT_NPROC, int(limits["processes"]) + nproc_base))
    plan = [(res, (_capped(res, value),) * 2) for res, value in wanted]
    if limits.get("cpu"):
        soft = int(limits["cpu"])
        hard = _capped(resource.RLIMIT_CPU, soft + 1)
        plan.append((resource.RLIMIT_CPU, (min(soft, hard), hard)))
    if core and _limit(resource.RLIMIT_CORE) != (0, 0):
        plan.append((resource.RLIMIT_CORE, (0, 0)))
    # limits a task does not set are not the caller's either: a soft one it lowered (``ulimit -d``) is lifted
    for res in LIFTED:
        soft, hard = _limit(res)
        if soft != hard:
            plan.append((res, (hard, hard)))
    return plan


LIFTED = (resource.RLIMIT_DATA, resource.RLIMIT_MEMLOCK, resource.RLIMIT_SIGPENDING, resource.RLIMIT_MSGQUEUE)


def apply_rlimits(plan: list[tuple[int, tuple[int, int]]]) -> None:
    for res, pair in plan:
        resource.setrlimit(res, pair)
    if plan:
        _LIMITS.clear()  # read again when next needed


def prepare_rlimits() -> None:
    """In a slot's zygote, once: lift the limits every task lifts and turn its own core dumps off (every task turns
    them off), and read its limits, so that a task it forks plans its own without a getrlimit call and applies only
    the limits it sets (each system call costs more in a virtual machine than the Python around it)."""
    apply_rlimits([(res, (_limit(res)[1],) * 2) for res in LIFTED] + [(resource.RLIMIT_CORE, (0, 0))])
    rlimit_plan({"memory": 1, "file_size": 1, "open_files": 1, "stack": 1, "processes": 1, "cpu": 1}, 0)


def _limit(res: int) -> tuple[int, int]:
    """This process's (soft, hard) limit, read once (until it applies a plan)."""
    got = _LIMITS.get(res)
    if got is None:
        got = _LIMITS[res] = resource.getrlimit(res)
    return got


_LIMITS: dict[int, tuple[int, int]] = {}


def _capped(res: int, value: int) -> int:
    hard = _limit(res)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def start_session(server_pid: int) -> None:
    """New session and process group; die with the server."""
    os.setsid()
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server_pid:
        os._exit(70)


def reset_signals(for_exec: bool) -> None:
    """Undo the server's signal set-up; a program gets SIGPIPE/SIGXFSZ back at their defaults."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    keep = {signal.SIGKILL, signal.SIGSTOP, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ}
    for sig in signal.valid_signals():  # every one: a signal the caller ignored (nohup, a launcher) stays ignored
        if sig not in keep:  # across exec, and would change how a solution fares
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    signal.signal(signal.SIGINT, signal.SIG_DFL if for_exec else signal.default_int_handler)
    if for_exec:
        default_pipe_signals()
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def default_pipe_signals() -> None:
    """SIGPIPE and SIGXFSZ back at their defaults (Python ignores them; programs expect them to kill)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


def set_dumpable(flag: bool) -> None:
    """A non-dumpable process's memory, fds and environ are closed to other processes of its uid."""
    libc.prctl(PR_SET_DUMPABLE, 1 if flag else 0, 0, 0, 0)


def subreaper() -> None:
    """Orphans of tasks are re-parented to this process (the server), which reaps them."""
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stdlib_path() -> list[str]:
    """The interpreter's own module path, without the directory that holds this package."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [p for p in sys.path if p and os.path.abspath(p) != here]


def name(title: bytes) -> None:
    """The process's name in ps and top (cg-zygote, cg-task, cg-spawner), written without ctypes (cheap)."""
    try:
        fd = os.open("/proc/self/comm", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, title)
    except OSError:
        pass
    finally:
        os.close(fd)


_NO_NEW_PRIVS: list[bool] = []  # set in a zygote, inherited by what it forks (the flag and this list alike)


def no_new_privs() -> None:
    """No execve can gain privileges (required for an unprivileged seccomp filter); once per process tree."""
    if not _NO_NEW_PRIVS:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        _NO_NEW_PRIVS.append(True)
