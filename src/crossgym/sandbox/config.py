"""What this machine offers the sandbox (bubblewrap, Landlock, seccomp, root) and which tier to use."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from crossgym.protocol.errors import ConfigError, SandboxError

log = logging.getLogger(__name__)

TIERS = ("default", "strong")
ENV_TIER = "CROSSGYM_SANDBOX_TIER"
ENV_WORKERS = "CROSSGYM_SANDBOX_WORKERS"
ENV_PYTHON = "CROSSGYM_SANDBOX_PYTHON"
ENV_SCRATCH = "CROSSGYM_SANDBOX_SCRATCH"
ENV_UID_BASE = "CROSSGYM_SANDBOX_UID_BASE"
ENV_DISABLE = "CROSSGYM_SANDBOX_DISABLE"  # comma list of landlock,seccomp,uid: to measure what each layer adds
DEFAULT_UID_BASE = 4_000_000
RUNTIME_PARENT = os.path.dirname(os.path.abspath(__file__))  # holds the _runtime package
BWRAP_HINT = "apt-get install bubblewrap (or set CROSSGYM_SANDBOX_TIER=default)"


def requested_tier(tier: str | None = None) -> str:
    """The tier asked for: the argument, else $CROSSGYM_SANDBOX_TIER, else "auto"."""
    name = (tier or os.environ.get(ENV_TIER) or "auto").strip().lower()
    if name not in TIERS + ("auto",):
        raise ConfigError(f"unknown sandbox tier {name!r}", where=ENV_TIER if not tier else "tier",
                          fix="use default, strong or auto")
    return name


def resolve_tier(tier: str | None = None) -> str:
    """"default" or "strong"; auto picks strong where bubblewrap works here."""
    name = requested_tier(tier)
    if name == "auto":
        return "strong" if bwrap_works() else "default"
    if name == "strong" and not bwrap_works():
        raise SandboxError(f"the strong sandbox tier needs a working bubblewrap (bwrap); install it: {BWRAP_HINT}")
    return name


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """The bwrap executable, or None."""
    return shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)),
                                         None)


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """bwrap exists and can create pid and network namespaces here (it cannot in some containers)."""
    path = bwrap_path()
    if not path:
        return False
    argv = [path, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    if os.geteuid() != 0:
        argv.append("--unshare-user")
    try:
        done = subprocess.run(argv + ["--", "/bin/sh", "-c", "exit 0"], env={}, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if done.returncode != 0:
        log.info("bwrap is present but does not work here: %s", done.stderr.decode(errors="replace").strip())
    return done.returncode == 0


@functools.lru_cache(maxsize=1)
def python() -> str:
    """The interpreter for untrusted Python: $CROSSGYM_SANDBOX_PYTHON, /usr/bin/python3 (>= 3.10), else ours."""
    chosen = os.environ.get(ENV_PYTHON)
    if chosen:
        return chosen
    system = "/usr/bin/python3"
    if os.access(system, os.X_OK):
        name = os.path.basename(os.path.realpath(system))  # python3.11
        try:
            major, minor = (int(x) for x in name.removeprefix("python").split(".")[:2])
            if (major, minor) >= (3, 10):
                return system
        except ValueError:
            pass
    if os.geteuid() == 0 and not _others_can_reach(os.path.realpath(sys.executable)):
        log.warning("the sandbox falls back to %s, which unprivileged task uids cannot reach: only modules the "
                    "server preloads will import; install python3 (>= 3.10) in /usr/bin or set %s",
                    sys.executable, ENV_PYTHON)
    return sys.executable


def _others_can_reach(path: str) -> bool:
    """Every directory above ``path`` lets other users through (o+x)."""
    parent = os.path.dirname(path)
    while parent and parent != "/":
        try:
            if not os.stat(parent).st_mode & 0o001:
                return False
        except OSError:
            return False
        parent = os.path.dirname(parent)
    return True


def python_dirs(interpreter: str) -> list[str]:
    """Directories outside /usr the interpreter needs to read (a pyenv or venv install)."""
    if interpreter.startswith("/usr/"):
        return []
    dirs = {os.path.dirname(os.path.dirname(os.path.realpath(interpreter))),
            os.path.dirname(os.path.dirname(os.path.abspath(interpreter))), sys.base_prefix, sys.prefix}
    return sorted(d for d in dirs if d and d != "/" and not d.startswith("/usr/"))


def workers() -> int:
    """One slot per core available to us, or $CROSSGYM_SANDBOX_WORKERS."""
    if os.environ.get(ENV_WORKERS):
        return max(1, int(os.environ[ENV_WORKERS]))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def disabled(layer: str) -> bool:
    """True when $CROSSGYM_SANDBOX_DISABLE names this layer (landlock, seccomp or uid)."""
    return layer in {x.strip() for x in os.environ.get(ENV_DISABLE, "").split(",")}


@functools.lru_cache(maxsize=1)
def uid_base() -> int | None:
    """First uid of the per-slot range when we are root (and may switch uid); None otherwise."""
    if os.geteuid() != 0 or disabled("uid"):
        return None
    wanted = int(os.environ.get(ENV_UID_BASE, DEFAULT_UID_BASE))
    for base in (wanted, 60_000):
        if _can_switch_to(base):
            return base
    log.warning("running as root but cannot switch to an unprivileged uid; tasks share the caller's uid")
    return None


def _can_switch_to(uid: int) -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def scratch_base() -> str:
    """Where per-pool scratch roots go: $CROSSGYM_SANDBOX_SCRATCH or the system temp directory."""
    return os.environ.get(ENV_SCRATCH) or tempfile.gettempdir()


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    from ._runtime import landlock

    return 0 if disabled("landlock") else landlock.abi()


def seccomp_available() -> bool:
    """pyseccomp and libseccomp are both here."""
    from . import seccomp

    return not disabled("seccomp") and seccomp.bpf() is not None


def describe(tier: str | None = None) -> dict[str, Any]:
    """Which tiers exist here and what the one in use contains (for ``crossgym list``); starts nothing."""
    try:
        in_use: str | None = resolve_tier(tier)
        problem = None
    except (SandboxError, ConfigError) as exc:
        in_use, problem = None, str(exc)
    abi = landlock_abi()
    return {
        "tier": in_use,
        "requested": requested_tier(tier) if problem is None or "unknown" not in problem else tier,
        "available": ["default"] + (["strong"] if bwrap_works() else []),
        "error": problem,
        "bwrap": bwrap_path(),
        "python": python(),
        "workers": workers(),
        "root": os.geteuid() == 0,
        "uid_per_slot": uid_base() is not None,
        "seccomp": seccomp_available(),
        "landlock_abi": abi,
        "contains": _contains(in_use, abi),
    }


def _contains(tier: str | None, abi: int) -> list[str]:
    items = ["fork per task from a clean zygote per slot (empty environment)", "new session + process-group kill",
             "tests: each solution in a process of its own, forked before the tests are read",
             "rlimits (memory, cpu, file size, open files, processes)", "wall deadline", "scratch removed"]
    if uid_base() is not None:
        items.append("unprivileged uid per worker slot")
    if seccomp_available():
        items.append("seccomp: no internet sockets, setsid, ptrace, mount, unshare, bpf")
    if abi:
        items.append(f"landlock v{abi}: writes only in scratch, reads only system dirs"
                     + (", no TCP" if abi >= 4 else "") + (", no signals out" if abi >= 6 else ""))
    if tier == "strong":
        items.append("bubblewrap: own pid/net/ipc/uts namespaces, read-only system, private /tmp")
        items.append("shell tasks: one bubblewrap per task")
    return items
