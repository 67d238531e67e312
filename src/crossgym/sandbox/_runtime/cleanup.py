"""Cleaning up after tasks: kill what a slot's uid left running, hand directories over, empty and remove them
(through directory fds, never following links; shutil would pull in bz2, lzma, zlib...)."""

from __future__ import annotations

import os
import select
import signal
import stat
import time

if False:  # annotations only: the server does not import typing
    from typing import Any


def chown_tree(path: str, uid: int, budget_s: float = 0.5) -> None:
    """Hand a session directory to a uid (never following links; entries that vanish are skipped), down to
    :data:`DEPTH` levels and within ``budget_s`` (it runs in the server's loop: a task that left a million entries
    or a tree deeper than any walk must not stall it; what is left keeps its owner, which no other task can reach).
    Iterative: no recursion limit, one open directory at a time. Called while no process of the task runs."""
    deadline = time.monotonic() + budget_s
    os.chown(path, uid, uid, follow_symlinks=False)
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    todo = [""]
    try:
        while todo:
            rel = todo.pop()
            try:
                fd = os.open(rel, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top) if rel else os.dup(top)
            except OSError:
                continue
            try:
                with os.scandir(fd) as entries:
                    found = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                for name, is_dir in found:
                    if time.monotonic() > deadline:
                        return
                    try:
                        os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        pass
                    if is_dir and rel.count("/") < DEPTH:
                        todo.append(f"{rel}/{name}" if rel else name)
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        os.close(top)


def remove_tree(path: str) -> None:
    """rm -rf ``path`` (never following links; modes a task took away are given back first)."""
    fd = _open_dir(path)
    if fd is None:
        return
    try:
        _drain(fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def empty_dir(path: str, budget_s: float | None = None) -> bool:
    """Remove everything below ``path``, within ``budget_s`` when given; False when something is left or the
    directory itself is no longer ours to use (gone, a link, not searchable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not os.listdir(fd):
            return True
        _empty(fd, 0, None if budget_s is None else time.monotonic() + budget_s)
        return not os.listdir(fd)
    except (OSError, _OutOfTime):
        return False
    finally:
        os.close(fd)


class _OutOfTime(Exception):
    pass


def _own(path: str, dir_fd: int | None = None) -> None:
    """Give a directory a task made unusable (mode 000, read-only) back to its owner: we are its owner or root."""
    try:
        os.chmod(path, 0o700, dir_fd=dir_fd)
    except OSError:
        pass


def _open_dir(name: str, dfd: int | None = None) -> int | None:
    """A descriptor of the directory ``name`` (under ``dfd`` when given; taken over first when its mode locks us
    out); None when it is gone or not a directory (never following a link)."""
    for attempt in range(2):
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
        except PermissionError:
            if attempt:
                return None
            _own(name, dfd)
        except OSError:
            return None
    return None


def _empty(dfd: int, depth: int, deadline: float | None, hoist: int | None = None) -> None:
    """Empty the directory ``dfd``. ``hoist``: a directory fd to which subdirectories deeper than :data:`DEPTH`
    are moved (to be emptied as entries of their own: no tree is too deep and no more than DEPTH fds are open);
    without it they are left."""
    try:
        names = os.listdir(dfd)
    except PermissionError:
        os.fchmod(dfd, 0o700)
        names = os.listdir(dfd)
    writable = False
    for name in names:
        if deadline is not None and time.monotonic() > deadline:
            raise _OutOfTime
        try:
            os.unlink(name, dir_fd=dfd)
            continue
        except IsADirectoryError:
            pass
        except PermissionError:
            if writable:
                continue
            writable = True
            try:
                os.fchmod(dfd, 0o700)
                os.unlink(name, dir_fd=dfd)
                continue
            except IsADirectoryError:
                pass
            except OSError:
                continue
        except OSError:
            continue
        if depth >= DEPTH:
            if hoist is not None:
                try:
                    _own(name, dfd)
                    os.rename(name, "h" + os.urandom(8).hex(), src_dir_fd=dfd, dst_dir_fd=hoist)
                except OSError:
                    pass
            continue
        sub = _open_dir(name, dfd)
        if sub is None:
            continue
        try:
            _empty(sub, depth + 1, deadline, hoist)
        finally:
            os.close(sub)
        try:
            os.rmdir(name, dir_fd=dfd)
        except OSError:
            pass


DEPTH = 48  # directories nested deeper are moved up (by the sweeper) or left (elsewhere)


def sweep(trash: str) -> int:
    """Remove every entry of ``trash`` (the pool's directory of what tasks left), however deep, big or unwritable;
    how many top-level entries went. Run by the sweeper, never on a task's path."""
    try:
        top = os.open(trash, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        return _drain(top)
    finally:
        os.close(top)


def _drain(top: int) -> int:
    """Empty ``top``, moving subdirectories deeper than :data:`DEPTH` up into it, until nothing is left or a pass
    made no progress."""
    removed = 0
    before: set[str] = set()
    while True:
        try:
            names = set(os.listdir(top))
        except OSError:
            return removed
        if not names or names == before:
            return removed
        before = names
        for name in names:
            try:
                os.unlink(name, dir_fd=top)
                removed += 1
                continue
            except IsADirectoryError:
                pass
            except OSError:
                continue
            sub = _open_dir(name, top)
            if sub is None:
                continue
            try:
                _empty(sub, 0, None, hoist=top)
            except OSError:
                pass
            finally:
                os.close(sub)
            try:
                os.rmdir(name, dir_fd=top)
                removed += 1
            except OSError:
                pass


def discard_entries(path: str, trash: str, pristine: Any = None) -> bool:
    """Move every entry of ``path`` into ``trash`` (one rename each, whatever it holds: the sweeper removes it
    later) and give ``path`` back the mode, timestamps and (no) extended attributes of ``pristine`` (its
    ``os.stat`` when it was made). False when something could not be moved or reset."""
    ok = True
    fd = _open_dir(path)
    if fd is None:
        return False
    try:
        if pristine is not None:
            os.fchmod(fd, stat.S_IMODE(pristine.st_mode))
        for name in os.listdir(fd):
            try:
                os.rename(name, "t" + os.urandom(8).hex(), src_dir_fd=fd, dst_dir_fd=_trash_fd(trash))
            except OSError:
                ok = False
        if pristine is not None:
            for attr in os.listxattr(fd):
                os.removexattr(fd, attr)
            os.utime(fd, ns=(pristine.st_atime_ns, pristine.st_mtime_ns))
    except OSError:
        ok = False
    finally:
        os.close(fd)
    return ok


_TRASH: dict[str, int] = {}


def _trash_fd(trash: str) -> int:
    fd = _TRASH.get(trash)
    if fd is None:
        fd = _TRASH[trash] = os.open(trash, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return fd


TRASH = ".trash"  # in the pool's root: what tasks left, removed by the server's sweeper


def discard(path: str, trash: str) -> bool:
    """Move one directory into ``trash`` (for the sweeper); False when it cannot be moved."""
    try:
        os.rename(path, os.path.join(trash, "t" + os.urandom(8).hex()))
        return True
    except OSError:
        return False


def start_sweeper(trash: str, parent: int) -> int:
    """Fork the pool's sweeper (``cg-sweeper``): it empties ``trash`` at the lowest CPU priority (SCHED_IDLE), so
    what a task left (a million directories, a deep tree, huge files) never delays a report or a running task;
    with more than :data:`BACKLOG` entries waiting it runs at nice 19 instead, so leftovers cannot pile up on a busy
    machine. It dies with ``parent``."""
    pid = os.fork()
    if pid:
        return pid
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(0)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.nice(19)
        idle = _idle(True)
        os.closerange(3, 1 << 16)
        try:
            with open("/proc/self/comm", "wb") as fh:
                fh.write(b"cg-sweeper")
        except OSError:
            pass
        while True:
            try:
                backlog = len(os.listdir(trash))
            except OSError:
                backlog = 0
            if idle != (backlog <= BACKLOG):  # falling behind (busy cores, big leftovers): nice 19, not idle,
                idle = _idle(not idle)  # so the disk cannot fill up with what nobody removes
            if not sweep(trash):
                time.sleep(SWEEP_S)
    finally:
        os._exit(0)


def _idle(flag: bool) -> bool:
    """SCHED_IDLE (runs only on CPU nobody else wants) or back to the normal policy; the one now in force."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE if flag else os.SCHED_OTHER, os.sched_param(0))
        return flag
    except (AttributeError, OSError):
        return not flag


SWEEP_S = 0.1  # how often the sweeper looks for something to remove
BACKLOG = 64  # trash entries beyond which the sweeper leaves SCHED_IDLE


def kill_uid(uid: int) -> None:
    """Without seccomp a task may leave its process group; kill everything its slot uid runs."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_quietly(pid: int) -> None:
    """SIGKILL ``pid``, which may have ended already (an unreaped child of the caller: its pid is not reused)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def reap_children(timeout: float, keep: Any = ()) -> bool:
    """Kill every child of this process but those in ``keep`` (a subreaper's orphans included) and reap them, waiting on
    pidfds rather than polling; orphans that appear as their parents die are killed in the next round. True when
    no other child is left, False when one outlived ``timeout`` (a process stuck in the kernel). Lean on purpose:
    it runs between two forks, where every page it touches is copied."""
    deadline = 0.0
    while True:
        kids = [pid for pid in children(os.getpid()) if pid not in keep]
        if not kids:
            return True
        for pid in kids:  # unreaped children: their pids cannot have been reused
            os.kill(pid, signal.SIGKILL)
        for pid in kids:
            if os.waitpid(pid, os.WNOHANG)[0]:
                continue
            deadline = deadline or time.monotonic() + timeout
            fd = os.pidfd_open(pid)
            try:
                ready = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]
            finally:
                os.close(fd)
            if not ready:
                return False
            os.waitpid(pid, 0)


def children(pid: int) -> list[int]:
    """The live and zombie children of a single-threaded process."""
    try:
        fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY)
    except OSError:
        return []
    try:
        return [int(c) for c in os.read(fd, 1 << 16).split()]
    finally:
        os.close(fd)
