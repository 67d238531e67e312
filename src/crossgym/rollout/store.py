"""An append-only JSONL rollout store: one Rollout per line, each batch flushed and fsync'd before it counts.

An interrupted run leaves at most one torn last line; opening the store for writing cuts it off, and the keys
of every complete line (``provenance["key"]``) tell the runner which rollouts are done. One writer at a time
(an exclusive flock); readers need no lock.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError
from crossgym.scoring.records import dumps_record, iter_records, stored_keys
from crossgym.scoring.records import read_rollouts as _read_rollouts

__all__ = ["RolloutStore", "cut_torn_tail", "iter_records", "read_rollouts"]

log = logging.getLogger(__name__)


def read_rollouts(path: str | Path) -> list[Rollout]:
    """Every complete rollout in a store file (in file order); see crossgym.scoring.records."""
    return _read_rollouts(path)


def cut_torn_tail(fd: int, path: Path) -> int:
    """Cut a torn last line (no newline: an interrupted write) off the file open for writing at ``fd``;
    returns how many bytes were cut (0 when the file ends in a complete line or is empty)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    with path.open("rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        # find the last complete line
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                pos = pos - step + nl + 1
                break
            pos -= step
    log.warning("%s: cutting a torn last record (%d bytes) left by an interrupted run", path, size - pos)
    os.ftruncate(fd, pos)
    os.fsync(fd)
    return size - pos


class RolloutStore:
    """Append-only rollouts at ``path``: ``keys()`` of finished ones, ``append(batch)`` durable per batch."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def open(self) -> RolloutStore:
        """Take the writer lock and cut a torn last line left by an interrupted run."""
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a device, FIFO or socket: never written (nor cut) as a store
            os.close(fd)
            raise ConfigError("is not a regular file; rollouts are stored in a file of their own", where=str(self.path),
                              fix="remove it, or choose another output path")
        os.set_blocking(fd, True)
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError("another run is writing this rollout store", where=str(self.path),
                              fix="wait for it to finish, or use another --output-dir") from None
        except ImportError:  # no flock on this platform: one writer is the caller's promise
            pass
        self._fd = fd
        self._repair_tail()
        return self

    def _repair_tail(self) -> None:
        assert self._fd is not None
        cut_torn_tail(self._fd, self.path)

    def keys(self, quiet: bool = False) -> set[str]:
        """Keys of the complete rollouts already stored (a damaged record's key is not one: see
        crossgym.scoring.records.stored_keys, which names it in a warning unless ``quiet``)."""
        return stored_keys(self.path, quiet)

    def append(self, rollouts: Sequence[Rollout]) -> None:
        """Write a batch as JSON lines in one write, then flush and fsync it."""
        if not rollouts:
            return
        self.append_docs([r.to_dict() for r in rollouts])

    def append_docs(self, docs: Sequence[Mapping[str, Any]]) -> None:
        """Write JSON records (already in rollout-record form) as lines in one write, then flush and fsync."""
        if not docs:
            return
        self.append_text("".join(dumps_record(d) for d in docs))

    def append_text(self, data: str) -> None:
        """Write lines already rendered by ``dumps_record`` (e.g. by a Ray actor) in one write, flush and fsync."""
        if not data:
            return
        self.open()
        assert self._fd is not None
        buf = memoryview(data.encode("utf-8"))
        while buf:
            written = os.write(self._fd, buf)
            buf = buf[written:]
        os.fsync(self._fd)

    def read(self) -> list[Rollout]:
        return read_rollouts(self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None

    def __enter__(self) -> RolloutStore:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
