"""The seeded files of a test run, kept as the tests seeded them: a change the solution makes is undone.

The tests may read a fixture to work out what they expect (``expected = total(open("data.csv"))``), so a solution
that rewrites it could choose its own expected value. The harness checks every fixture after each reply of the
solution, before each request, and whenever the tests open one (an audit hook on the harness's ``open``): a change
the tests made (they opened it for writing, renamed, removed...) is theirs and kept; any other change is the
solution's (in a call, while loading, or from a thread it left running) and the seeded bytes are written back. A
check is one ``lstat`` per fixture; the content is compared only while a timestamp cannot tell (it is within the
file system's clock granularity of now).
"""

from __future__ import annotations

import os
import stat
import sys
import time

if False:  # annotations only: the server does not import typing
    from typing import Any

RACY_NS = 50_000_000  # a file changed within this of its stamp may have changed again in the same clock tick


class FixtureError(BaseException):
    """A fixture the solution changed could not be put back (a BaseException: the tests' own ``except
    Exception`` does not hide it)."""


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# audit events by which the tests change files (the indices of their path arguments)
_CHANGES = {"os.remove": (0,), "os.rename": (0, 1), "os.truncate": (0,), "os.chmod": (0,), "os.link": (0, 1),
            "os.symlink": (1,), "os.utime": (0,), "os.rmdir": (0,), "shutil.rmtree": (0,), "shutil.copyfile": (1,),
            "shutil.move": (0, 1), "os.chown": (0,), "os.setxattr": (0,), "os.removexattr": (0,),
            "sqlite3.connect": (0,)}


class Fixtures:
    def __init__(self, seeded: dict[str, tuple[bytes, int]], watch: bool = True) -> None:
        self.files = dict(seeded)
        self.stamps: dict[str, Any] = dict.fromkeys(self.files)
        self.root = os.getcwd()
        self.theirs: set[str] = set()  # fixtures the tests changed since the last check
        self._busy = False
        if watch:
            sys.addaudithook(self._audit)

    def __bool__(self) -> bool:
        return bool(self.files)

    def adopt(self) -> None:
        """Before a request: what the tests changed is theirs; anything else is undone."""
        self.restore()

    def restore(self, only: Any = None) -> list[str]:
        """Take what the tests changed as theirs, put back what the solution changed (FixtureError when that
        fails); the paths put back. ``only``: just these fixtures (one the tests are about to read)."""
        changed = []
        self._busy = True
        try:
            for rel in list(self.files) if only is None else only:
                if rel in self.theirs:
                    self.theirs.discard(rel)
                    self._take(rel)
                elif not self._same(rel):
                    changed.append(rel)
                    try:
                        write_file(rel, *self.files[rel])
                        self.stamps[rel] = _stamp(rel)
                    except OSError as exc:
                        self.stamps[rel] = None
                        raise FixtureError(f"the solution changed the seeded file {rel!r} and it could not be "
                                           f"put back ({exc.strerror})") from None
        finally:
            self._busy = False
        return changed

    def _take(self, rel: str) -> None:
        """The tests changed ``rel``: its content now is the one to keep (removed: no longer watched)."""
        data = _read(rel)
        if data is not None:
            self.files[rel] = (data, stat.S_IMODE(os.lstat(rel).st_mode))
            self.stamps[rel] = _stamp(rel)
        elif not os.path.lexists(rel):
            del self.files[rel], self.stamps[rel]

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy or not self.files:
            return
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, 0))[:3]
            rels = self._rels(path, False)
            if not rels:
                return
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS):
                self.theirs.update(rels)
            else:
                self.restore(rels)  # about to be read: as seeded, or as the tests left it
        elif event in _CHANGES:
            for i in _CHANGES[event]:
                if i < len(args):
                    self.theirs.update(self._rels(args[i], True))

    def _rels(self, path: Any, below: bool) -> list[str]:
        """The fixtures ``path`` names (``below``: or holds)."""
        try:
            name = os.fsdecode(os.fspath(path))
        except TypeError:
            return []  # an fd
        rel = os.path.relpath(os.path.normpath(os.path.join(self.root, name)), self.root)
        if rel in self.files:
            return [rel]
        if below:
            return [r for r in self.files if rel == "." or r.startswith(rel + "/")]
        return []

    def _same(self, rel: str) -> bool:
        stamp = self.stamps[rel]
        try:
            now = _stamp(rel)
        except OSError:
            return False
        if stamp is not None and stamp[0] == now[0] and not stamp[1]:
            return True
        data, mode = self.files[rel]
        if not stat.S_ISREG(now[0][5]) or now[0][5] & 0o777 != mode or _read(rel) != data:
            return False
        self.stamps[rel] = now
        return True


def _stamp(rel: str) -> tuple[tuple[int, ...], bool]:
    st = os.lstat(rel)
    key = (st.st_ino, st.st_dev, st.st_size, st.st_ctime_ns, st.st_mtime_ns, st.st_mode, st.st_nlink)
    return key, time.time_ns() - st.st_ctime_ns < RACY_NS


def _read(rel: str) -> bytes | None:
    try:
        fd = os.open(rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        parts: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(rel: str, data: bytes, mode: int) -> None:
    """Write the seeded bytes back as a new file, never following a link the solution may have planted."""
    parts = rel.split("/")
    dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=dfd)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(part, dir_fd=dfd).st_mode):  # a link or a file in its place
                    os.unlink(part, dir_fd=dfd)
                    os.mkdir(part, 0o755, dir_fd=dfd)
            nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
            os.close(dfd)
            dfd = nfd
        try:
            os.unlink(parts[-1], dir_fd=dfd)
        except FileNotFoundError:
            pass
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
