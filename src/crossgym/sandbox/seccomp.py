"""The seccomp filter every task loads, compiled once to BPF with pyseccomp (when it is importable)."""

from __future__ import annotations

import errno
import functools
import logging
import socket
import tempfile
from typing import Any

log = logging.getLogger(__name__)

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_by_handle_at",
    "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "setsid", "setpgid",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "iopl", "ioperm", "syslog", "fanotify_init", "lookup_dcookie", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    # System V IPC and POSIX message queues outlive a task and are shared by every task of a uid (and, in a
    # group, by the solutions one after another): a channel Landlock does not cover
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
    "semctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)
#: calls that change another process's scheduling when their first argument (a pid) is not 0, "itself". Landlock
#: does not cover them (no ptrace check: the same uid is enough), and every process of a task has its slot's uid:
#: the harness, a group's other solution processes waiting for their turn, the slot's spawner (which outlives the
#: task and whose later processes inherit what it was given), and without root the caller itself
SELF_ONLY = ("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                   0x00000080)  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET NEWTIME


@functools.lru_cache(maxsize=1)
def bpf() -> bytes | None:
    """The compiled filter, or None when pyseccomp or libseccomp is missing."""
    try:
        import pyseccomp as sc
    except Exception as exc:  # ImportError, or OSError when libseccomp.so is absent
        log.info("seccomp unavailable: %s", exc)
        return None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    f.add_rule(eperm, "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))  # no internet (or netlink...) sockets
    f.add_rule(eperm, "socketpair", sc.Arg(0, sc.NE, socket.AF_UNIX))
    for name in DENIED:
        try:
            f.add_rule(eperm, name)
        except (OSError, ValueError, RuntimeError):
            log.debug("seccomp: no syscall %s here", name)
    for flag in NAMESPACE_FLAGS:
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # its flags are out of reach: libc falls back to clone
    f.add_rule(eperm, "kill", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, 0xFFFFFFFF))  # kill(-1, ...)
    f.add_rule(eperm, "prlimit64", sc.Arg(0, sc.NE, 0))  # only one's own limits, and only downwards
    f.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, 0x5412))  # TIOCSTI
    _self_only(f, sc, eperm)
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def _self_only(f: Any, sc: Any, eperm: Any) -> None:
    """Scheduling (nice, policy, CPU affinity, I/O priority) only of the calling process itself. A solution that
    set every process of its uid to SCHED_IDLE, nice 19 and one CPU (``setpriority(PRIO_USER, 0, 19)``, or pid by
    pid from /proc) slowed its harness and the siblings judged after it in a group (their units timed out, their
    solo verdicts lost), and the slot's spawner, whose processes in every later task of the slot inherited it;
    without root it reniced the caller. ``os.nice``, ``nice``, ``taskset``/``ionice`` of a command (pid 0) still
    work; naming a process, even its own pid, is EPERM."""
    rules = [(name, 0, 0) for name in SELF_ONLY]
    rules += [("setpriority", 0, 0), ("setpriority", 1, 0),  # PRIO_PROCESS (a group or a user reaches others), of 0
              ("ioprio_set", 0, 1), ("ioprio_set", 1, 0)]  # IOPRIO_WHO_PROCESS, of 0
    for name, index, allowed in rules:
        try:
            f.add_rule(eperm, name, sc.Arg(index, sc.NE, allowed))
        except (OSError, ValueError, RuntimeError):
            log.debug("seccomp: no syscall %s here", name)
