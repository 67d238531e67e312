"""The seccomp filter every task loads, compiled once to BPF with pyseccomp (when it is importable)."""

from __future__ import annotations

import errno
import functools
import logging
import socket
import tempfile

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
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()
