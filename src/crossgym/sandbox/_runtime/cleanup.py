"""Cleaning up after tasks: kill what a slot's uid left running, hand directories over, empty and remove them
(through directory fds, never following links; shutil would pull in bz2, lzma, zlib...)."""

from __future__ import annotations

import os
import select
import signal
import time

if False:  # annotations only: the server does not import typing
    from typing import Any


def chown_tree(path: str, uid: int) -> None:
    """Hand a session directory to a uid (never following links; entries that vanish are skipped)."""
    os.chown(path, uid, uid, follow_symlinks=False)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)
            except OSError:
                pass


def remove_tree(path: str) -> None:
    """rm -rf ``path`` (never following links)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        _empty(fd, 0)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def empty_dir(path: str) -> bool:
    """Remove everything below ``path`` (a slot's scratch directory); False when something is left or the
    directory itself is no longer ours to use (gone, a link, not searchable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not os.listdir(fd):
            return True
        _empty(fd, 0)
        return not os.listdir(fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def _empty(dfd: int, depth: int) -> None:
    for name in os.listdir(dfd):
        try:
            os.unlink(name, dir_fd=dfd)
            continue
        except IsADirectoryError:
            pass
        except OSError:
            continue
        if depth > 200:
            continue
        try:
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
        except OSError:
            continue
        try:
            _empty(sub, depth + 1)
        finally:
            os.close(sub)
        try:
            os.rmdir(name, dir_fd=dfd)
        except OSError:
            pass


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
