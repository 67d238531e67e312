"""JSON in and out of the server and client: orjson when installed (the serve extra brings it), else the stdlib.

Both give the same documents: a body orjson refuses (integers past 64 bits, NaN literals) is read again by the
standard library, and a reply orjson cannot write (such integers) is written by it.
"""

from __future__ import annotations

import json
import math
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - the serve extra installs it
    orjson = None  # type: ignore[assignment]


def loads(data: bytes | str) -> Any:
    """Parse one JSON document; raises json.JSONDecodeError like the standard library. A document nested past the
    interpreter's recursion limit is one too (json raised RecursionError: a 500 where a bad body is a 422)."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(data)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply (arrays and objects over ~1,000 levels)",
                                   data if isinstance(data, str) else "", 0) from None


def dumps(doc: Any) -> bytes:
    """Compact UTF-8 JSON; anything not JSON-native is written as its str(). Text that is not valid Unicode (a lone
    surrogate from untrusted code, or echoed from a request that escaped one) is written as JSON escapes, which
    read back to the same string: a reply never fails over it."""
    if orjson is not None:
        try:
            return orjson.dumps(doc, default=str, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson refuses surrogates too: the standard library below escapes them
            pass
    try:
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
    except (ValueError, TypeError):  # NaN/infinity, or a key json refuses: written as orjson writes them
        doc = _plain(doc)
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, allow_nan=False, default=str, separators=(",", ":")).encode("ascii")


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as orjson writes it, for the standard library: NaN and infinities null, every key text (a key
    json refuses, such as a tuple, as its str()). A document with a NaN and a lone surrogate (or an integer past
    64 bits) failed: orjson refused the surrogate, and json, told not to write NaN, raised instead of writing it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 1000:  # a cycle or absurd nesting: json's own error, as before
        raise ValueError("document nested too deeply to write as JSON")
    if isinstance(value, dict):
        return {_key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return value


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, (bool, int)):
        return json.dumps(k)
    if isinstance(k, float):
        return json.dumps(k) if math.isfinite(k) else "null"
    return str(k)


def key(doc: Any) -> bytes:
    """Bytes that tell JSON values apart, for cache keys: orjson writes NaN and infinities as null, so a document
    that gives "null" is written again by the standard library (which writes NaN)."""
    out = dumps(doc)
    if b"null" in out:
        return json.dumps(doc, ensure_ascii=True, allow_nan=True, default=str, separators=(",", ":")).encode("ascii")
    return out
