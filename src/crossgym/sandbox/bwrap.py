"""bubblewrap command lines for the strong tier: the pool's server, and one sandbox per shell task."""

from __future__ import annotations

import os

# what the server needs when it runs as root inside bwrap (tasks drop all of it with their uid)
POOL_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL")
SYSTEM_DIRS = ("/usr", "/etc")
MAYBE_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _system() -> list[str]:
    """Read-only /usr and /etc; /bin, /lib... as the same symlinks or read-only binds as on the host."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in MAYBE_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _common(bwrap: str, root: bool, read_only: list[str]) -> list[str]:
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not root:
        args.append("--unshare-user")
    args += ["--new-session", *_system(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--tmpfs", "/var/tmp", "--tmpfs", "/run"]
    for path in read_only:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    if root:
        args += ["--cap-drop", "ALL"]
        for cap in POOL_CAPS:
            args += ["--cap-add", cap]
    return args


def pool_argv(bwrap: str, root: bool, scratch_root: str, read_only: list[str]) -> list[str]:
    """The long-lived server inside one bubblewrap; the scratch root is the only writable host path."""
    return _common(bwrap, root, read_only) + _ancestors(scratch_root) + ["--bind", scratch_root, scratch_root,
                                                                         "--chdir", "/", "--"]


def _ancestors(path: str) -> list[str]:
    """The directories above ``path`` made searchable (0755) before it is bound: bubblewrap creates the missing
    ones (inside its tmpfs /tmp, /run, / itself) as 0700 root, and a scratch root under $TMPDIR=/tmp/x left every
    slot's uid unable to reach its own directory (every verdict 0). An existing directory keeps its mode."""
    parts = [p for p in os.path.abspath(path).split("/") if p][:-1]
    args: list[str] = []
    for i in range(1, len(parts) + 1):
        args += ["--perms", "0755", "--dir", "/" + "/".join(parts[:i])]
    return args


TASK_DIR = "/scratch"


def task_argv(bwrap: str, root: bool, scratch: str, read_only: list[str]) -> list[str]:
    """One task's own bubblewrap (shell tasks): its scratch directory, seen as /scratch, is the only
    writable place; it dies with us."""
    return _common(bwrap, root, read_only) + ["--die-with-parent", "--bind", scratch, TASK_DIR,
                                              "--chdir", TASK_DIR, "--"]
