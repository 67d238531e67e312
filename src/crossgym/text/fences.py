"""Fenced code blocks (``` or ~~~) in model text: find them, read their language and body (stdlib only, linear)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

_FENCE = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)[ \t]*+([\w+.#-]*+)[^\n]*+\n", re.M)  # possessive: linear on ``````…


def iter_fenced(text: str) -> Iterator[tuple[str, str]]:
    """(language, body) for each fenced code block (``` or ~~~), in order; an unclosed fence runs to the end."""
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            return
        fence, lang = m.group(1), m.group(2).lower()
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.M)
        c = close.search(text, m.end())
        if c is None:
            yield lang, text[m.end():]
            return
        yield lang, text[m.end():c.start()].rstrip("\n")
        pos = c.end()


def extract_fenced(text: str, lang: str | Sequence[str] | None = None, *, last: bool = True) -> str | None:
    """The body of the last (or first) fenced block whose language is ``lang`` (any of several, "" = unlabelled;
    None = any), or None when there is none."""
    want = None if lang is None else {lang.lower()} if isinstance(lang, str) else {x.lower() for x in lang}
    found = None
    for block_lang, body in iter_fenced(text):
        if want is None or block_lang in want:
            if not last:
                return body
            found = body
    return found



def is_single_block(text: str) -> bool:
    """Whether the whole (stripped) text is one fenced block: a fence line first and a closing fence line last."""
    lines = text.strip().splitlines()
    return len(lines) >= 2 and lines[0].lstrip()[:3] in ("```", "~~~") and lines[-1].strip()[:3] in ("```", "~~~")
