"""Byte framing shared by the client, the server and the processes of a task."""

from __future__ import annotations

import json
import os
import struct

if False:  # annotations only: the server does not import typing
    from typing import Any

MAX_FRAME = 256 << 20


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to a blocking fd."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes; EOFError if the writer closes first."""
    parts = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def pack(obj: Any) -> bytes:
    """One length-prefixed JSON frame."""
    data = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(data)) + data


def read_obj(fd: int, limit: int = MAX_FRAME) -> Any:
    """Read one frame written by :func:`pack`."""
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    if n > limit:
        raise ValueError(f"frame of {n} bytes exceeds {limit}")
    return json.loads(read_exact(fd, n))


def line(obj: Any) -> bytes:
    """One newline-terminated JSON message (status and result pipes)."""
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"
