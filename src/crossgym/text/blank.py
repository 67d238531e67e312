"""Text that shows nothing: whitespace, format and control characters, lone combining marks, blank letters."""

from __future__ import annotations

import unicodedata

#: letters and symbols that render as blank space (Hangul fillers, the braille blank)
BLANK_CHARS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
#: categories that show nothing on their own: format (zero-width space, joiners, BOM, bidi marks), control,
#: separators, combining marks
_BLANK_CATEGORIES = frozenset(("Cf", "Cc", "Zs", "Zl", "Zp", "Mn", "Me"))


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: "\\u200b", "\\u2060\\u00a0", "\\u3164" are blank as "" and " " are."""
    if text.isascii():
        return not text.strip()
    return all(c in BLANK_CHARS or unicodedata.category(c) in _BLANK_CATEGORIES for c in text)
