"""JSON in and out of the server and client: orjson when installed (the serve extra brings it), else the stdlib.

Both give the same documents: a body orjson refuses (integers past 64 bits, NaN literals) is read again by the
standard library, and a reply orjson cannot write (such integers) is written by it.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - the serve extra installs it
    orjson = None  # type: ignore[assignment]


def loads(data: bytes | str) -> Any:
    """Parse one JSON document; raises json.JSONDecodeError like the standard library."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


def dumps(doc: Any) -> bytes:
    """Compact UTF-8 JSON; anything not JSON-native is written as its str(). Text that is not valid Unicode (a lone
    surrogate from untrusted code, or echoed from a request that escaped one) is written as JSON escapes, which
    read back to the same string: a reply never fails over it."""
    if orjson is not None:
        try:
            return orjson.dumps(doc, default=str, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson refuses surrogates too: the standard library below escapes them
            pass
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, allow_nan=False, default=str, separators=(",", ":")).encode("ascii")


def key(doc: Any) -> bytes:
    """Bytes that tell JSON values apart, for cache keys: orjson writes NaN and infinities as null, so a document
    that gives "null" is written again by the standard library (which writes NaN)."""
    out = dumps(doc)
    if b"null" in out:
        return json.dumps(doc, ensure_ascii=True, allow_nan=True, default=str, separators=(",", ":")).encode("ascii")
    return out
