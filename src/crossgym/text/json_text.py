"""JSON in model text: bounded strict loading, a JSON value wrapped in a fence or prose, balanced spans (stdlib; orjson
when installed, read exactly as json reads).

Every function here is linear-time or bounded on its input; NaN/Infinity and (optionally) duplicate keys are refused.
"""

from __future__ import annotations

import json
from typing import Any

from crossgym.text.fences import extract_fenced, is_single_block, iter_fenced

#: JSON nested deeper than this is refused before json.loads can hit the recursion limit
MAX_JSON_DEPTH = 200


class MalformedJSON(ValueError):
    """No usable JSON value in the text; the message says why."""


class JSONTooDeep(MalformedJSON):
    """The JSON nests deeper than the limit (or than the parser can go): unreadable, not merely invalid."""


def json_depth_ok(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets nest at most ``limit`` deep (ignoring brackets inside strings); linear time."""
    if text.count("[") + text.count("{") <= limit:
        return True
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _reject_constant(name: str) -> Any:
    raise MalformedJSON(f"{name} is not valid JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise MalformedJSON(f"duplicate key {dup!r} in a JSON object")
    return d


_DECODE = json.JSONDecoder(parse_constant=_reject_constant).decode
_DECODE_UNIQUE = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_pairs).decode


# orjson (Rust, ~4x json.loads here) when installed, imported on first use (``import crossgym`` loads no extension);
# every text it might read otherwise than json takes json's path
_oloads: Any = None
_odumps: Any = None


def _first_fast_loads(text: str, unique_keys: bool) -> Any:
    """``_fast``'s first call: import orjson, then ``_fast`` is ``_fast_loads`` (or None without orjson)."""
    global _fast, _oloads, _odumps
    try:
        from orjson import dumps, loads
    except ImportError:  # pragma: no cover - the verifiers extra installs it
        _fast = None
        return None
    _oloads, _odumps, _fast = loads, dumps, _fast_loads
    return _fast_loads(text, unique_keys)


def _fast_loads(text: str, unique_keys: bool) -> Any:
    """orjson's reading of ``text`` when it is the same as json's, else None (the caller then runs json's path).

    orjson refuses what json refuses (in other words, so every refusal goes to json for its message), and also
    NaN/Infinity, 1e400, lone surrogates and a BOM, which json takes or words otherwise: those go to json too.
    Two silent differences are caught by encoding the value again:
    * integers past 64 bits become floats (json keeps them exact); such a float is encoded ``9.2...e+18``, so an
      encoding with ``e+`` takes json's path;
    * duplicate keys keep the first key's place and the last value, as in json, but ``unique_keys`` must refuse
      them. Every object member in ``text`` owns one ``:`` outside strings, and strings keep their own ``:``, so
      the encoding has as many ``:`` as ``text`` exactly when no member was dropped (an escaped ``\\u003a`` would
      turn into one, so text with a ``\\u`` escape takes json's path)."""
    try:
        value = _oloads(text)
        encoded = _odumps(value)
    except (ValueError, TypeError):  # orjson.JSONDecodeError, JSONEncodeError
        return None
    if b"e+" in encoded:
        return None
    if unique_keys and ("\\u" in text or encoded.count(b":") != text.count(":")):
        return None
    return value


#: the fast reader, or None without orjson (set by its first call)
_fast: Any = _first_fast_loads


def loads_strict(text: str, limit: int = MAX_JSON_DEPTH, *, unique_keys: bool = False) -> Any:
    """``json.loads`` that refuses NaN/Infinity, nesting deeper than ``limit`` and (``unique_keys``) duplicate
    keys, which parsers resolve differently; raises MalformedJSON."""
    return read_strict(text, limit, unique_keys)[0]


def read_strict(text: str, limit: int = MAX_JSON_DEPTH, unique_keys: bool = False) -> tuple[Any, bool]:
    """``loads_strict``'s value, and whether it is known to hold no infinite float: True when orjson read it (it
    refuses a number that overflows a double), False when json did (it reads ``1e400`` as inf)."""
    if text.count("[") + text.count("{") > limit and not json_depth_ok(text, limit):  # (its cheap test, inline)
        raise JSONTooDeep(f"JSON nests deeper than {limit} levels")
    fast = _fast
    if fast is not None:
        value = fast(text, unique_keys)
        if value is not None:
            return value, True
    return _json_loads(text, unique_keys), False


def _json_loads(text: str, unique_keys: bool) -> Any:
    """json's reading of ``text`` (the reference the fast path must equal) and every error message."""
    try:
        return (_DECODE_UNIQUE if unique_keys else _DECODE)(text)
    except json.JSONDecodeError as exc:
        raise MalformedJSON(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except MalformedJSON:
        raise
    except ValueError as exc:  # e.g. an integer over Python's 4300-digit conversion limit
        raise MalformedJSON(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise JSONTooDeep("JSON nests too deeply") from None


def parse_json_text(text: str, *, fenced: str = "allow", allow_surrounding: bool = False,
                    limit: int = MAX_JSON_DEPTH, unique_keys: bool = False) -> Any:
    """The JSON value in ``text``.

    ``fenced``: "allow" (the whole text, or the whole text being one ```json/``` block), "require" (a fenced block
    must hold it; text around the block is allowed), "forbid" (the whole text only). ``allow_surrounding``: also
    accept prose around a single top-level object/array (the first balanced one). Raises MalformedJSON.
    """
    return read_json_text(text, fenced=fenced, allow_surrounding=allow_surrounding, limit=limit,
                          unique_keys=unique_keys)[0]


def read_json_text(text: str, *, fenced: str = "allow", allow_surrounding: bool = False,
                   limit: int = MAX_JSON_DEPTH, unique_keys: bool = False) -> tuple[Any, bool]:
    """``parse_json_text``'s value, and whether it is known to hold no infinite float (``read_strict``)."""
    stripped = text.strip()
    if not stripped:
        raise MalformedJSON("empty text")
    if fenced == "require":
        body = extract_fenced(stripped, ("json", "jsonc", ""))
        if body is None:
            raise MalformedJSON("no ```json fenced block")
        return read_strict(body, limit, unique_keys)
    if fenced != "allow" and fenced != "forbid":
        raise ValueError(f"fenced must be allow, require or forbid, got {fenced!r}")
    if fenced == "allow" and stripped.startswith(("```", "~~~")):
        blocks = list(iter_fenced(stripped))
        if len(blocks) == 1 and blocks[0][0] in ("json", "jsonc", "") and is_single_block(stripped):
            return read_strict(blocks[0][1], limit, unique_keys)
    try:
        return read_strict(stripped, limit, unique_keys)
    except MalformedJSON:
        if not allow_surrounding:
            raise
    return _read_span(stripped, limit, unique_keys)


def _read_span(stripped: str, limit: int, unique_keys: bool) -> tuple[Any, bool]:
    """The first balanced object or array in prose (``allow_surrounding``)."""
    span = find_json_span(stripped)
    if span is None:
        raise MalformedJSON("no JSON object or array in the text")
    return read_strict(stripped[span[0]:span[1]], limit, unique_keys)


#: characters scanned in all by one find_json_span, per character of the text (and at least SPAN_SCAN_MIN): each
#: opener that does not close is scanned from anew, so "{" * 8000 took 2.3 s and 1 MB would take hours
SPAN_SCAN_PER_CHAR, SPAN_SCAN_MIN = 8, 100_000


def find_json_span(text: str, start: int = 0) -> tuple[int, int] | None:
    """(start, end) of the first balanced {...} or [...] at or after ``start`` (string-aware). The scans from
    every opener together read at most SPAN_SCAN_PER_CHAR times the text (past that: None, no span), so text of
    unclosed openers costs linear time, not quadratic."""
    i = start
    n = len(text)
    budget = [max(SPAN_SCAN_MIN, SPAN_SCAN_PER_CHAR * n)]
    while i < n:
        j1, j2 = text.find("{", i), text.find("[", i)
        cands = [j for j in (j1, j2) if j >= 0]
        if not cands:
            return None
        s = min(cands)
        end = _balanced_end(text, s, budget)
        if end is not None:
            return s, end
        if budget[0] <= 0:
            return None
        i = s + 1
    return None


def _balanced_end(text: str, s: int, budget: list[int] | None = None) -> int | None:
    stack: list[str] = []
    in_str = esc = False
    pairs = {"{": "}", "[": "]"}
    last = len(text) if budget is None else min(len(text), s + max(0, budget[0]))
    if budget is not None:
        budget[0] -= last - s
    for k in range(s, last):
        ch = text[k]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return k + 1
    return None

