"""The seeded files of a test run, kept as the tests seeded them: a change the solution makes is undone.

The tests may read a fixture to work out what they expect (``expected = total(open("data.csv"))``), so a solution
that rewrites it could choose its own expected value. The harness checks every fixture before it sends a request to
the solution (a change found then was made by the tests: it is theirs, and kept) and after the reply (a change
found then was the solution's: the seeded bytes are written back). A check is one ``lstat`` per fixture; the content
is compared only while a timestamp cannot tell (it is within the file system's clock granularity of now).
"""

from __future__ import annotations

import os
import stat
import time

if False:  # annotations only: the server does not import typing
    from typing import Any

RACY_NS = 50_000_000  # a file changed within this of its stamp may have changed again in the same clock tick


class FixtureError(BaseException):
    """A fixture the solution changed could not be put back (a BaseException: the tests' own ``except
    Exception`` does not hide it)."""


class Fixtures:
    def __init__(self, seeded: dict[str, tuple[bytes, int]]) -> None:
        self.files = dict(seeded)
        self.stamps: dict[str, Any] = dict.fromkeys(self.files)

    def __bool__(self) -> bool:
        return bool(self.files)

    def adopt(self) -> None:
        """Before a request: what the tests changed is theirs (a file they removed is no longer watched)."""
        for rel in list(self.files):
            if not self._same(rel):
                data = _read(rel)
                if data is None:
                    if not os.path.lexists(rel):
                        del self.files[rel], self.stamps[rel]
                else:
                    self.files[rel] = (data, self.files[rel][1])
                    self.stamps[rel] = _stamp(rel)

    def restore(self) -> list[str]:
        """After a reply: put back what the solution changed; the paths it changed."""
        changed = []
        for rel in list(self.files):
            if not self._same(rel):
                changed.append(rel)
                try:
                    _write(rel, *self.files[rel])
                    self.stamps[rel] = _stamp(rel)
                except OSError as exc:
                    self.stamps[rel] = None
                    raise FixtureError(f"the solution changed the seeded file {rel!r} and it could not be put "
                                       f"back ({exc.strerror})") from None
        return changed

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


def _write(rel: str, data: bytes, mode: int) -> None:
    """Write the seeded bytes back as a new file, never following a link the solution may have planted."""
    parts = rel.split("/")
    dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=dfd)
            except FileExistsError:
                pass
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
