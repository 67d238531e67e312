"""Finding the answer in a completion and normalising text; shared by the text, numeric and choice verifiers.

Every function here is linear-time in its input (no regex with nested quantifiers), so inline verifiers stay safe
on the 1 MB inputs ``verify`` lets through.
"""

from __future__ import annotations

import collections
import functools
import re
import string
import unicodedata
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.verifiers.base import Malformed, clip

#: where a verifier looks for the answer (the ``extract`` param)
EXTRACT_MODES = ("auto", "full", "answer_tag", "boxed", "marker", "last_line")

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_MARKER = re.compile(r"(?:final answer|the answer|answer)\s*(?:is(?:[ \t]*[:=])?|:|=)[ \t]*", re.I)
#: the fast check before _MARKER, with its case rules (re.I folds any case mix, and "ſ" to "s")
_MARKER_HINT = re.compile("nswer", re.I)
_TAG_CACHE: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def check_extract(mode: str, label: str) -> str:
    """Validate an ``extract`` param."""
    if mode not in EXTRACT_MODES:
        raise VerifierError(f"verifier {label!r}: extract={mode!r} is not one of {', '.join(EXTRACT_MODES)} "
                            "(fix: pass one of them, or leave it out for the default)")
    return mode


def strip_think(text: str) -> str:
    """The text after the reasoning: everything after the last ``</think>``. An unclosed ``<think>`` means the model
    never finished reasoning: Malformed."""
    close = text.rfind(_THINK_CLOSE)
    if close >= 0:
        return text[close + len(_THINK_CLOSE):]
    if _THINK_OPEN in text:
        raise Malformed("<think> is never closed (no answer after the reasoning)")
    return text


def _tag_patterns(tag: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    pats = _TAG_CACHE.get(tag)
    if pats is None:
        t = re.escape(tag)
        pats = (re.compile(rf"<{t}(?:\s[^<>]{{0,200}})?>"), re.compile(rf"</{t}\s*>"))
        _TAG_CACHE[tag] = pats
    return pats


def tag_contents(text: str, tag: str) -> list[str]:
    """Bodies of every ``<tag>...</tag>`` (attributes allowed, case-sensitive like XML); Malformed on unbalanced
    tags."""
    if "<" + tag not in text and "</" + tag not in text:  # fast path: no such tag at all
        return []
    open_re, close_re = _tag_patterns(tag)
    opens = list(open_re.finditer(text))
    closes = list(close_re.finditer(text))
    if len(opens) != len(closes):
        raise Malformed(f"<{tag}> tags are unbalanced ({len(opens)} opening, {len(closes)} closing)")
    out = []
    prev_end = -1
    for o, c in zip(opens, closes, strict=True):
        if c.start() < o.end() or o.start() < prev_end:
            raise Malformed(f"<{tag}> tags are nested or out of order")
        out.append(text[o.end():c.start()])
        prev_end = c.end()
    return out


_BOX = re.compile(r"\\(?:boxed|fbox)\{")
_BRACE = re.compile(r"[{}]")


def boxed_contents(text: str) -> list[str]:
    """Bodies of every ``\\boxed{...}`` / ``\\fbox{...}`` (braces balanced); Malformed on an unclosed one.
    Linear: one scan for the boxes and one, brace by brace, for each box's body (the next box was looked for from
    every box to the end of the text for both names: 125,000 ``\\boxed{}`` took 47 s)."""
    out: list[str] = []
    pos = 0
    while True:
        box = _BOX.search(text, pos)
        if box is None:
            return out
        j = box.end() - 1
        depth = 0
        for m in _BRACE.finditer(text, j):
            if m.group() == "{":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    out.append(text[j + 1:m.start()])
                    pos = m.end()
                    break
        else:
            raise Malformed("\\boxed{ is never closed")


def one_of(values: list[str], what: str) -> str:
    """The single answer among ``values``: several that differ (after whitespace trimming) are Malformed, since
    a completion listing many answers must not collect the reward for any one of them."""
    if len(values) == 1:
        return values[0].strip()
    distinct = list(dict.fromkeys(v.strip() for v in values))
    if len(distinct) > 1:
        raise Malformed(f"{len(distinct)} different {what} answers: " + ", ".join(clip(d, 30) for d in distinct[:4]))
    return distinct[0]


def marker_answer(text: str) -> str | None:
    """The rest of the line after the last "answer is"/"answer:"/"final answer:" marker, or None."""
    if _MARKER_HINT.search(text) is None:  # fast path: no marker at all
        return None
    last = None
    for m in _MARKER.finditer(text):
        last = m
    if last is None:
        return None
    rest = text[last.end():]
    line = rest.split("\n", 1)[0].strip()
    return sentence_answer(line) or None


def sentence_answer(text: str) -> str:
    """``text`` without the sentence's final period(s) and bold marks: what ``marker_answer`` keeps of its line,
    applied to references too, so "The answer is U.S." matches "U.S."."""
    return text.strip().rstrip(".").strip().strip("*").strip()


def extract_answer(text: str, mode: str = "auto", *, tag: str = "answer", think: bool = True) -> str:
    """The answer span of ``text`` per ``mode`` (see ``locate_answer``)."""
    return locate_answer(text, mode, tag=tag, think=think)[0]


def locate_answer(text: str, mode: str = "auto", *, tag: str = "answer", think: bool = True) -> tuple[str, str]:
    """(answer span, where it came from) per ``mode``:

    * ``full``: the whole text (after any ``</think>``), stripped.
    * ``answer_tag``: the body of ``<answer>...</answer>`` (``tag`` renames it); required, and several that differ
      are Malformed.
    * ``boxed``: the body of ``\\boxed{...}``; required, several that differ are Malformed.
    * ``marker``: the rest of the line after the last "answer is" / "answer:" / "final answer:".
    * ``last_line``: the last non-empty line.
    * ``auto``: answer tag if present, else boxed, else marker, else the whole text ("full").
    """
    if think:
        text = strip_think(text)
    if mode == "full":
        return text.strip(), "full"
    if mode in ("answer_tag", "auto"):
        bodies = tag_contents(text, tag)
        if bodies:
            return one_of(bodies, f"<{tag}>"), "answer_tag"
        if mode == "answer_tag":
            raise Malformed(f"no <{tag}>...</{tag}> in the completion")
    if mode in ("boxed", "auto"):
        boxes = boxed_contents(text)
        if boxes:
            return one_of(boxes, "\\boxed"), "boxed"
        if mode == "boxed":
            raise Malformed("no \\boxed{...} in the completion")
    if mode in ("marker", "auto"):
        found = marker_answer(text)
        if found is not None:
            return found, "marker"
        if mode == "marker":
            raise Malformed('no "answer is" / "answer:" line in the completion')
    if mode == "last_line":
        for line in reversed(text.splitlines()):
            if line.strip():
                return line.strip(), "last_line"
        raise Malformed("empty completion")
    return text.strip(), "full"


# ---------------------------------------------------------------------------------------------- normalisation
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”«»…–—·¿¡")
#: English articles in any case, but a capital "A" inside a phrase is a letter ("Vitamin A", "Plan A")
_ARTICLES = re.compile(r"\b(?i:an|the)\b|\ba\b|(?:^|(?<=[.!?:]\s))\s*A\b")
#: what dropping punctuation keeps: a number's sign, decimal point, separators, fraction bar and percent ("-5",
#: "3.14", "1/2", "12%"), and "++"/"#" after a letter ("C++", "C#"); without them "-5" matched "5" and "3.14" "314"
_KEPT_PUNCT = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,/:]\d+)*%?|(?<![^\W\d_])[^\W\d_](?:\+\+|#)(?!\w)")
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|operatorname)\{([^{}]*)\}")


#: text whose NFKC form would be longer than this is malformed: compatibility characters expand up to 18 times
#: (U+FDFA ﷺ is 18 characters), so 1,000,000 of them were 18,000,000 characters to normalise, fold and split
#: (4.8 s in string_similarity, 8 s per constraint in instructions)
MAX_NFKC_CHARS = 2_000_000
#: the most characters one code point becomes in NFKC (U+FDFA)
_NFKC_MAX_GROWTH = 18


def nfkc(text: str) -> str:
    """``text`` in Unicode NFKC; Malformed when that form would be over MAX_NFKC_CHARS characters (judged before
    normalising, from each distinct character's own NFKC length, so refusing costs linear time too)."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    if len(text) * _NFKC_MAX_GROWTH > MAX_NFKC_CHARS:
        grown = sum(n * len(unicodedata.normalize("NFKC", c)) for c, n in collections.Counter(text).items())
        if grown > MAX_NFKC_CHARS:
            raise Malformed(f"the text is over {MAX_NFKC_CHARS:,} characters in Unicode NFKC ({grown:,}: "
                            "compatibility characters such as U+FDFA expand up to 18 times)")
    return unicodedata.normalize("NFKC", text)


def normalize(text: str, *, case_sensitive: bool = False, whitespace: bool = True, punctuation: bool = False,
              articles: bool = False, latex: bool = True) -> str:
    """Unicode NFKC, then optionally: unwrap ``\\text{..}`` and ``$..$``, lower-case, drop punctuation, drop
    English articles, collapse whitespace."""
    if not text.isascii():
        text = nfkc(text)
    if latex:
        if "\\" in text:
            text = _LATEX_WRAP.sub(r"\1", text)
        if "$" in text:
            s = text.strip()
            if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
                text = s.strip("$")
    if articles:  # before case folding: "Vitamin A" keeps its letter
        text = _ARTICLES.sub(" ", text)
    if not case_sensitive:
        text = text.casefold()
    if punctuation:
        text = _drop_punctuation(text)
    if whitespace:
        text = " ".join(text.split())
    return text


def _drop_punctuation(text: str) -> str:
    """``text`` without punctuation, except what ``_KEPT_PUNCT`` keeps."""
    out, pos = [], 0
    for m in _KEPT_PUNCT.finditer(text):
        out.append(text[pos:m.start()].translate(_PUNCT))
        out.append(m.group())
        pos = m.end()
    out.append(text[pos:].translate(_PUNCT))
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def normalize_cached(text: str, case_sensitive: bool = False, whitespace: bool = True, punctuation: bool = False,
                     articles: bool = False) -> str:
    """``normalize`` memoised, for references (the same few strings are compared against many completions)."""
    return normalize(text, case_sensitive=case_sensitive, whitespace=whitespace, punctuation=punctuation,
                     articles=articles)


def answers_list(answer: Any, label: str) -> list[str]:
    """A task answer given as one string (or number) or a list of accepted ones, as strings."""
    from crossgym.verifiers.base import BadTask

    items = answer if isinstance(answer, list) else [answer]
    if not items:
        raise BadTask(f"{label}: the answer list is empty")
    out = []
    for a in items:
        if isinstance(a, bool) or a is None or isinstance(a, (dict, list)):
            raise BadTask(f"{label}: answer must be a string or a list of strings, got {type(a).__name__}")
        out.append(str(a))
    return out
