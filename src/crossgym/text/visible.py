"""Untrusted text made safe to print: ``visible(text)`` writes the characters a terminal or a log reader acts on
as their escapes, and leaves every other character (letters of any script, emoji, tabs) as it is.

What crossgym prints holds text an RL policy wrote or a sandboxed program printed: completions, verifier reasons
(which quote both), task ids and sources from datasets, tool names. A policy can learn to emit anything, and a
terminal obeys what it is sent: ``ESC [`` sequences recolour or erase the screen, ``ESC ] 8`` makes a hyperlink
of innocent text, ``ESC ] 52`` writes the clipboard, ``\\r`` and backspaces overwrite what was printed before
them, a newline forges a line of its own ("x\\nERROR ..." in a log), U+202E reverses what follows it. Each such
character is shown as its backslash escape (``\\x1b``, ``\\r``, ``\\u202e``), as Python's repr shows it, so the
text reads the same and a person sees that it was there. Backslashes are left alone: normal text (paths, LaTeX)
prints unchanged.
"""

from __future__ import annotations

import re

#: bidirectional controls: embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), and the marks
#: (U+200E, U+200F, U+061C) that reorder what a reader sees without showing themselves
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
#: C0 controls but tab (ESC, CR, BEL, backspace, newline...), DEL, C1 controls (U+009B is CSI on some
#: terminals), line and paragraph separators (a line break to many readers), and the bidi controls
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029" + BIDI + "]")
#: the same but newline, for text of several lines shown as such (a completion in a block)
_UNSAFE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + BIDI + "]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def visible(text: object, *, lines: bool = False) -> str:
    """``text`` (made a str) with each control character as its escape: ESC as ``\\x1b``, CR as ``\\r``, U+202E as
    ``\\u202e``; a newline too unless ``lines`` (text shown as several lines: a completion; a one-line field such
    as a task id or a reason must not start a line of its own). Other text, tabs included, is returned unchanged."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # the common case, no regex pass: isprintable() is False for every character escaped here
        return s
    return (_UNSAFE_KEEP_LINES if lines else _UNSAFE).sub(_escape, s)
