"""IFEval-style checkable constraints: each is a linear-time function of the response text and its arguments."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from crossgym.text import MalformedJSON, parse_json_text

Result = tuple[bool, str]
#: a word as written (``don't``, ``well-known`` whole): what first_word_of_paragraph compares
_WHOLE_WORD = re.compile(r"\w+(?:['’-]\w+)*")
#: CJK scripts written without spaces: Han (with extensions and compatibility ideographs), hiragana, katakana
_CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
#: the unit words are counted in: IFEval's (nltk's RegexpTokenizer(r"\w+"): a run of letters and digits, so
#: "well-known" and "don't" are two each, and hyphen-chained text cannot pass as one word), except that each CJK
#: character is a word of its own (a run of them is a sentence, not one word)
_COUNTED = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_SENT_END = re.compile(r"[.!?]+(?=\s|$)")
_BULLET = re.compile(r"^[ \t]*[*\-•+][ \t]+\S", re.M)
_NUMBERED = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+\S", re.M)
_PLACEHOLDER = re.compile(r"\[[^\[\]\n]{1,100}\]")
_HIGHLIGHT = re.compile(r"\*[^\n*]{1,500}\*")
_CAP_WORD = re.compile(r"\b[A-Z][A-Z0-9]+\b")


def _range(count: int, what: str, min: int | None = None, max: int | None = None,  # noqa: A002
           exactly: int | None = None) -> Result:
    if exactly is not None:
        return count == exactly, f"{count} {what} (need exactly {exactly})"
    if min is None and max is None:
        raise TypeError(f"{what}: give min, max or exactly")
    ok = (min is None or count >= min) and (max is None or count <= max)
    bounds = " and ".join(x for x in (f">= {min}" if min is not None else "", f"<= {max}" if max is not None else "")
                          if x)
    return ok, f"{count} {what} (need {bounds})"


def words(text: str) -> list[str]:
    """The words a word count counts (see ``_COUNTED``)."""
    return _COUNTED.findall(text)


def word_count(text: str, **kw: Any) -> Result:
    return _range(len(words(text)), "words", **kw)


def char_count(text: str, **kw: Any) -> Result:
    return _range(len(text.strip()), "characters", **kw)


def sentence_count(text: str, **kw: Any) -> Result:
    body = text.strip()
    n = len(_SENT_END.findall(body))
    if body and not _SENT_END.search(body[-3:] + " "):
        n += 1  # a trailing sentence without final punctuation
    return _range(n, "sentences", **kw)


def paragraphs(text: str, separator: str = "blank") -> list[str]:
    parts = text.split("***") if separator == "***" else re.split(r"\n[ \t]*\n", text)
    return [p for p in parts if p.strip()]


def paragraph_count(text: str, separator: str = "blank", **kw: Any) -> Result:
    if separator not in ("blank", "***"):
        raise TypeError("separator must be 'blank' or '***'")
    if separator == "***" and any(not p.strip() for p in text.strip().split("***")[1:-1]):
        return False, "an empty paragraph between *** dividers"
    return _range(len(paragraphs(text, separator)), "paragraphs", **kw)


def first_word_of_paragraph(text: str, n: int, word: str, separator: str = "blank") -> Result:
    ps = paragraphs(text, separator)
    if len(ps) < n:
        return False, f"only {len(ps)} paragraphs"
    w = _WHOLE_WORD.findall(ps[n - 1])
    ok = bool(w) and w[0].casefold() == word.casefold()
    return ok, f"paragraph {n} starts with {w[0] if w else '(nothing)'!r}"


def _has_word(text: str, kw: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(kw)}(?!\w)", text, re.I))


def keywords_include(text: str, keywords: list[str]) -> Result:
    missing = [k for k in keywords if not _has_word(text, k)]
    return not missing, f"missing {missing}" if missing else "all keywords present"


def keywords_exclude(text: str, keywords: list[str]) -> Result:
    found = [k for k in keywords if _has_word(text, k)]
    return not found, f"forbidden {found}" if found else "no forbidden words"


def keyword_frequency(text: str, keyword: str, **kw: Any) -> Result:
    return _range(_has_word(text, keyword), f"times {keyword!r}", **kw)


def letter_frequency(text: str, letter: str, **kw: Any) -> Result:
    if len(letter) != 1:
        raise TypeError("letter must be one character")
    return _range(text.lower().count(letter.lower()), f"letters {letter!r}", **kw)


def lowercase(text: str) -> Result:
    return text == text.lower(), "all lowercase" if text == text.lower() else "has capital letters"


def uppercase(text: str) -> Result:
    return text == text.upper(), "all capitals" if text == text.upper() else "has lowercase letters"


def capital_word_frequency(text: str, **kw: Any) -> Result:
    return _range(len(_CAP_WORD.findall(text)), "all-capital words", **kw)


def placeholders(text: str, **kw: Any) -> Result:
    return _range(len(_PLACEHOLDER.findall(text)), "[placeholders]", **kw)


def bullet_count(text: str, **kw: Any) -> Result:
    return _range(len(_BULLET.findall(text)), "bullet points", **kw)


def numbered_count(text: str, **kw: Any) -> Result:
    return _range(len(_NUMBERED.findall(text)), "numbered items", **kw)


def highlighted_sections(text: str, **kw: Any) -> Result:
    return _range(len([h for h in _HIGHLIGHT.findall(text) if h.strip("*").strip()]), "*highlighted* sections",
                  **kw)


def sections(text: str, marker: str = "SECTION", **kw: Any) -> Result:
    n = len(re.findall(rf"(?m)^[ \t]*{re.escape(marker)}[ \t]+\d+", text))
    return _range(n, f"{marker} headers", **kw)


def json_format(text: str) -> Result:
    try:
        parse_json_text(text, fenced="allow")
        return True, "valid JSON"
    except MalformedJSON as exc:
        return False, str(exc)


def starts_with(text: str, prefix: str, case_sensitive: bool = False) -> Result:
    t, p = (text.strip(), prefix) if case_sensitive else (text.strip().casefold(), prefix.casefold())
    return t.startswith(p), f"starts with {text.strip()[:30]!r}"


def ends_with(text: str, suffix: str, case_sensitive: bool = False) -> Result:
    t, s = (text.strip(), suffix) if case_sensitive else (text.strip().casefold(), suffix.casefold())
    return t.endswith(s), f"ends with {text.strip()[-30:]!r}"


def no_commas(text: str) -> Result:
    n = text.count(",") + text.count("，")
    return n == 0, f"{n} commas"


def quotation(text: str) -> Result:
    t = text.strip()
    ok = len(t) >= 2 and t[0] in "\"“" and t[-1] in "\"”"
    return ok, "wrapped in double quotes" if ok else "not wrapped in double quotes"


def title(text: str) -> Result:
    ok = re.search(r"<<[^<>\n]{1,200}>>", text) is not None
    return ok, "has a <<title>>" if ok else "no <<title>>"


def postscript(text: str, marker: str = "P.S.") -> Result:
    ok = re.search(rf"(?m)^[ \t]*{re.escape(marker)}", text) is not None
    return ok, f"has a {marker} line" if ok else f"no {marker} line"


def two_responses(text: str, separator: str = "******") -> Result:
    parts = text.split(separator)
    ok = len(parts) == 2 and all(p.strip() for p in parts) and parts[0].strip() != parts[1].strip()
    return ok, "two different responses" if ok else "not exactly two different responses"


def contains(text: str, phrase: str, case_sensitive: bool = False) -> Result:
    ok = phrase in text if case_sensitive else phrase.casefold() in text.casefold()
    return ok, f"contains {phrase[:30]!r}" if ok else f"lacks {phrase[:30]!r}"


CHECKS: dict[str, Callable[..., Result]] = {
    "word_count": word_count, "char_count": char_count, "sentence_count": sentence_count,
    "paragraph_count": paragraph_count, "first_word_of_paragraph": first_word_of_paragraph,
    "keywords_include": keywords_include, "keywords_exclude": keywords_exclude,
    "keyword_frequency": keyword_frequency, "letter_frequency": letter_frequency, "lowercase": lowercase,
    "uppercase": uppercase, "capital_word_frequency": capital_word_frequency, "placeholders": placeholders,
    "bullet_count": bullet_count, "numbered_count": numbered_count, "highlighted_sections": highlighted_sections,
    "sections": sections, "json_format": json_format, "starts_with": starts_with, "ends_with": ends_with,
    "no_commas": no_commas, "quotation": quotation, "title": title, "postscript": postscript,
    "two_responses": two_responses, "contains": contains,
}
