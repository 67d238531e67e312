"""Cleaning up after tasks: kill what a slot's uid left running, hand directories over, empty and remove them
(through directory fds, never following links; shutil would pull in bz2, lzma, zlib...)."""

from __future__ import annotations

import os
import select
import signal
import time


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


def reap_children(timeout: float, spare: int = 0) -> bool:
    """Kill every child of this process but ``spare`` (a subreaper's orphans included) and reap them, waiting on
    pidfds rather than polling; orphans that appear as their parents die are killed in the next round. True when
    no other child is left, False when one outlived ``timeout`` (a process stuck in the kernel)."""
    me = os.getpid()
    deadline = time.monotonic() + timeout
    while True:
        try:
            while True:
                if not os.waitpid(-1, os.WNOHANG)[0]:
                    break
        except ChildProcessError:
            return True
        kids = children(me) - {spare}
        if not kids:
            return True
        waits = []
        for pid in kids:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue  # reaped meanwhile
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            waits.append(fd)
        try:
            poller = select.poll()
            for fd in waits:
                poller.register(fd, select.POLLIN)
            pending = len(waits)
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                ready = poller.poll(left * 1000)
                for fd, _ in ready:
                    poller.unregister(fd)
                pending -= len(ready)
        finally:
            for fd in waits:
                os.close(fd)
        for pid in kids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def children(pid: int) -> set[int]:
    """The live and zombie children of a single-threaded process."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return {int(c) for c in fh.read().split()}
    except OSError:
        return set()
