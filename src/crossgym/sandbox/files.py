"""Seed files in, file trees out: validation, a capped snapshot that never follows links, and a diff."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from crossgym.protocol.errors import SandboxError

from .result import Limits


def normalize(files: Mapping[str, str | bytes] | None) -> dict[str, bytes]:
    """Relative, clean paths to bytes; SandboxError for an absolute path, '..', or an empty name."""
    out: dict[str, bytes] = {}
    for path, content in (files or {}).items():
        parts = [p for p in str(path).split("/") if p not in ("", ".")]
        if not parts or str(path).startswith("/") or ".." in parts or any("\0" in p for p in parts):
            raise SandboxError(f"bad file path {path!r}: use a relative path inside the scratch directory")
        out["/".join(parts)] = content.encode() if isinstance(content, str) else bytes(content)
    return out


def snapshot(root: str, limits: Limits) -> tuple[dict[str, bytes], bool]:
    """Regular files below ``root`` (relative path -> bytes), capped; True when something was cut."""
    files: dict[str, bytes] = {}
    state = {"bytes": 0, "cut": False, "entries": 0}
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return files, False
    try:
        _walk(top, "", files, state, limits, 0)
    finally:
        os.close(top)
    return dict(sorted(files.items())), bool(state["cut"])


def _walk(dfd: int, prefix: str, files: dict[str, bytes], state: dict[str, int | bool], limits: Limits,
          depth: int) -> None:
    if depth > 64:
        state["cut"] = True
        return
    room = max(0, ENTRIES_PER_FILE * limits.max_files - int(state["entries"]))
    with os.scandir(dfd) as entries:  # at most ``room`` of them: a task may leave millions (empty directories)
        listed = [entry for _, entry in zip(range(room + 1), entries, strict=False)]
    if len(listed) > room:
        state["cut"] = True
        listed = listed[:room]
    state["entries"] = int(state["entries"]) + len(listed)
    ordered = sorted(listed, key=lambda e: e.name)
    for entry in ordered:
        rel = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
                try:
                    _walk(sub, rel + "/", files, state, limits, depth + 1)
                finally:
                    os.close(sub)
            elif entry.is_file(follow_symlinks=False):
                if len(files) >= limits.max_files:
                    state["cut"] = True
                    continue
                files[rel] = _read(dfd, entry.name, limits, state)
        except FileNotFoundError:
            continue  # vanished: not part of the result
        except OSError:  # unreadable (a caller that is not root reads a file the task made mode 000): unseen, so the
            state["cut"] = True  # snapshot is incomplete, never a directory without it
            continue


ENTRIES_PER_FILE = 4  # a snapshot looks at no more than this many entries (directories included) per file it may keep


def _read(dfd: int, name: str, limits: Limits, state: dict[str, int | bool]) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        room = min(limits.max_file_bytes, max(0, limits.max_files_bytes - int(state["bytes"])))
        data = os.read(fd, room) if room else b""
        while room and len(data) < min(room, info.st_size):
            more = os.read(fd, room - len(data))
            if not more:
                break
            data += more
        if info.st_size > len(data):
            state["cut"] = True
        state["bytes"] = int(state["bytes"]) + len(data)
        return data
    finally:
        os.close(fd)


def entries(root: str, limits: Limits) -> tuple[set[str], bool]:
    """The paths below ``root`` that are not regular files (directories, links, fifos, sockets, devices), read
    without following links, at most as many entries as a snapshot looks at; True when that cap or the depth cut
    the walk (what lies beyond is unknown)."""
    out: set[str] = set()
    state = {"room": ENTRIES_PER_FILE * limits.max_files, "cut": False}
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return out, False
    try:
        _walk_entries(top, "", out, state, 0)
    finally:
        os.close(top)
    return out, bool(state["cut"])


def _walk_entries(dfd: int, prefix: str, out: set[str], state: dict[str, int | bool], depth: int) -> None:
    room = int(state["room"])
    with os.scandir(dfd) as listing:
        batch = [entry for _, entry in zip(range(room + 1), listing, strict=False)]
    if len(batch) > room:
        state["cut"], batch = True, batch[:room]
    state["room"] = room - len(batch)
    for entry in batch:
        rel = prefix + entry.name
        try:
            if entry.is_file(follow_symlinks=False):
                continue
            out.add(rel)
            if not entry.is_dir(follow_symlinks=False):
                continue
            if depth >= 64:
                state["cut"] = True
                continue
            sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
            try:
                _walk_entries(sub, rel + "/", out, state, depth + 1)
            finally:
                os.close(sub)
        except FileNotFoundError:
            continue
        except OSError:
            state["cut"] = True


def present(root: str, rel: str) -> bool:
    """Whether anything is at ``rel`` below ``root``: a regular file, a directory (empty or not), a link or a special
    file, looked at without following links. A link on the way there counts as something present (it may lead to
    the path); a file on the way means nothing can be there. A snapshot holds regular files only, so a "must not
    exist" check asks this instead."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise SandboxError(f"bad file path {rel!r}: use a relative path inside the scratch directory")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        for i, name in enumerate(parts):
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            except OSError:  # unreadable, a name too long: what is there is unknown, so something is
                return True
            if i == len(parts) - 1 or stat.S_ISLNK(info.st_mode):
                return True
            if not stat.S_ISDIR(info.st_mode):
                return False
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                return True
            os.close(fd)
            fd = sub
        return True
    finally:
        os.close(fd)


def changed(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> tuple[str, ...]:
    """Paths added, modified or removed."""
    return tuple(sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)))
