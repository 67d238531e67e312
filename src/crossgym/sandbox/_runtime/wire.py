"""Byte framing shared by the client, the server and the processes of a task."""

from __future__ import annotations

import json
import json.encoder
import os
import struct

if False:  # annotations only: the server does not import typing
    from typing import Any

MAX_FRAME = 256 << 20
_HEADER = struct.Struct(">I")
_DECODER = json.JSONDecoder()


def _unsendable(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
if _MAKE_ENCODER is not None:  # one reusable C encoder: json.dumps builds a new one per call
    _ENCODER = _MAKE_ENCODER(None, _unsendable, json.encoder.encode_basestring_ascii, None, ":", ",", False, False,
                             True)

    def dumps(obj: Any) -> str:
        """Compact JSON, as ``json.dumps(obj, separators=(",", ":"))`` writes it (frames nest a bounded depth)."""
        return "".join(_ENCODER(obj, 0))
else:  # an interpreter without the C accelerator
    def dumps(obj: Any) -> str:
        """Compact JSON."""
        return json.dumps(obj, separators=(",", ":"))


def loads(data: bytes | str) -> Any:
    """One JSON value, nothing after it (ValueError otherwise)."""
    text = data.decode() if isinstance(data, bytes) else data
    obj, end = _DECODER.raw_decode(text)
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return obj


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to a blocking fd."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes; EOFError if the writer closes first."""
    chunk = os.read(fd, min(n, 1 << 20))
    if len(chunk) == n:  # the common case: one read
        return chunk
    parts = []
    while True:
        if not chunk:
            raise EOFError("pipe closed")
        parts.append(chunk)
        n -= len(chunk)
        if not n:
            return b"".join(parts)
        chunk = os.read(fd, min(n, 1 << 20))


def pack(obj: Any) -> bytes:
    """One length-prefixed JSON frame."""
    data = dumps(obj).encode()
    return _HEADER.pack(len(data)) + data


def read_obj(fd: int, limit: int = MAX_FRAME) -> Any:
    """Read one frame written by :func:`pack`."""
    (n,) = _HEADER.unpack(read_exact(fd, 4))
    if n > limit:
        raise ValueError(f"frame of {n} bytes exceeds {limit}")
    return loads(read_exact(fd, n))


def line(obj: Any) -> bytes:
    """One newline-terminated JSON message (status and result pipes)."""
    return dumps(obj).encode() + b"\n"
