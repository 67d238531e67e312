"""IFEval-style checkable constraints: each is a linear-time function of the response text and its arguments."""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.text import MalformedJSON, is_blank, parse_json_text
from crossgym.verifiers import _lookalikes
from crossgym.verifiers.extract import nfkc

_VIEWS = threading.local()
#: texts shorter than this are read again by each constraint (cheaper than keeping them)
_SHARED_MIN = 4096


@contextlib.contextmanager
def shared_views() -> Iterator[None]:
    """Within it, each view of a text (``_visible``, ``canonical``, ``_skeleton``) is computed once in this thread,
    however many constraints read it: one instructions task of k constraints read a 1 MB response k times over
    (its NFKC, its scripts, its skeleton). Per call only: nothing outlives the ``with``."""
    outer = getattr(_VIEWS, "memo", None)
    _VIEWS.memo = {} if outer is None else outer
    try:
        yield
    finally:
        _VIEWS.memo = outer


def _shared(fn: Callable[[str], str]) -> Callable[[str], str]:
    """``fn`` (a view of a text) computed once per text within ``shared_views``."""
    @functools.wraps(fn)
    def view(text: str) -> str:
        memo: dict[tuple[str, str], str] | None = getattr(_VIEWS, "memo", None)
        if memo is None or len(text) < _SHARED_MIN:
            return fn(text)
        key = (fn.__name__, text)
        got = memo.get(key)
        if got is None:
            got = memo[key] = fn(text)
        return got

    return view


Result = tuple[bool, str]
#: a word as written (``don't``, ``well-known`` whole): what first_word_of_paragraph compares
_WHOLE_WORD = re.compile(r"\w+(?:['’-]\w+)*")
#: CJK scripts written without spaces: Han (with extensions and compatibility ideographs), the letters of hiragana
#: and katakana, and the ideographic iteration and closing marks (々 〆 〇 〻 〼). Not the kana blocks' combining and
#: spacing sound marks (U+3099-U+309C), their iteration and length marks (ゝ ゞ ヽ ヾ ー) or punctuation (゠ ・):
#: each of those counted as a word, so 300 near-invisible U+3099 made "The sky is blue." 300 words long
_CJK = ("\u3005-\u3007\u303b\u303c\u3041-\u3096\u309f\u30a1-\u30fa\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
        "\uf900-\ufaff\U00020000-\U0003134f")
_IS_CJK = re.compile(f"[{_CJK}]")
#: the unit words are counted in: IFEval's (nltk's RegexpTokenizer(r"\w+"): a run of letters and digits, so
#: "well-known" and "don't" are two each, and hyphen-chained text cannot pass as one word), except that each CJK
#: character is a word of its own (a run of them is a sentence, not one word); counted in ``canonical`` text, so
#: "_" and modifier letters such as ʼ separate words as hyphens do and invisible characters join nothing
_COUNTED = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
#: invisible characters that are not format characters (Cf, all dropped too): combining grapheme joiner, Khmer
#: inherent vowels, Mongolian variation selectors, variation selectors
_INVISIBLE = re.compile("[\u034f\u17b4\u17b5\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef"
                        # and the default-ignorable code points not yet assigned (drawn as nothing: U+2065 between
                        # letters made 9 words 46, and hid "dog")
                        "\u2060-\u206f\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                        "\U000e0000-\U000e0fff]")
#: letters that show as a blank (Hangul fillers): a space
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
_SEA_ZWSP = re.compile("(?<=[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff])\u200b")
_TATWEEL = "\u0640"
_ARABIC_TATWEEL = re.compile("(?<=[\u0620-\u06ff\u0750-\u077f\u08a0-\u08ff])\u0640+")
#: Cyrillic, Greek and other letters drawn like Latin ones: a keyword is matched on these skeletons (so "dоg" with a
#: Cyrillic о is "dog"), the text's and the keyword's alike
_HAND_CONFUSABLES = (
    "аеорсухіјѕԁԛԝһӏкАВЕКМНОРСТУХІЈЅԌԚԜҮ"  # Cyrillic
    "οαειϲκνρτυχϳΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹ"  # Greek
    "ıɡɑօ"  # Latin dotless i, script g, alpha; Armenian o
    "ᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢɗø\u0ed0"  # Latin small capitals, d with hook, o with stroke; Lao zero
    "ᎠᎡᎢᎩᎪᎫᎬᎳᎷᎻᏀᏃᏒᏚᏞᏟᏢᏦᏴ",  # Cherokee letters drawn as Latin capitals
    "aeopcyxijsdqwhlkABEKMHOPCTYXIJSGQWY"
    "oaeickvptuxjABEZHIKMNOPTYXC"
    "igao"
    "abcdeghijklmnoprstuvwyzdoo"
    "DRTYAJEWMHGZRSLCPKB")
#: sentence-ending full stops of other scripts, read as "." where phrases are matched (IFEval's "My answer is
#: maybe." ended with an ideographic 。 was no option named)
_FULL_STOPS = "\u3002\u0589\u06d4\u0964\u1362\u166e\u1803\u1809\ua4ff\ua60e\ua6f3\u2e3c"
#: look-alikes of Latin letters mapped to those letters where keywords and phrases are matched: every character
#: Unicode's confusables data (UTS #39) draws as one Latin letter (_lookalikes, generated), and crossgym's own
#: table beside it (it wins where both list a character: Cherokee, small capitals, Lao zero...)
_CONFUSABLES = str.maketrans({**dict(zip(_lookalikes.CHARACTERS, _lookalikes.LETTERS, strict=True)),
                              **dict(zip(*_HAND_CONFUSABLES, strict=True)), **dict.fromkeys(_FULL_STOPS, ".")})
#: caseless letters and symbols drawn as Latin capitals (Lisu letters, negative circled and squared capitals): they
#: count as capitals in the case checks
_CAPITAL_LOOKALIKE = re.compile("[\ua4d0-\ua4f7\U0001f150-\U0001f169\U0001f170-\U0001f189]")
#: commas of every script, after NFKC (which maps fullwidth ， small ﹐ and vertical ︐ to ",", and ﹑ ､ to 、)
_COMMAS = re.compile("[,\u201a\u3001\u060c\u2e41\u2e32\u2e34\u2e4c\u055d\u07f8\u1363\u1802\u1808\ua4fe"
                     "\ua60d\ua6f5\ufe50\ufe51\uff0c\uff64"
                     "\u0375\u02cf\u066b\u0326\u0327\u0312\u0313\u0314\u0315]")  # and those drawn as one (¸ is \u0327)


def _symbol_letters() -> dict[int, str]:
    """Symbols drawn as Latin letters that NFKC leaves alone: negative circled and negative squared capitals
    (🅣🅗🅔), regional indicators (🇹🇭🇪): the letter each names. "🅣🅗🅔 🅓🅞🅖" read as no words, and no "dog"."""
    out = {}
    for cp in [*range(0x1F150, 0x1F16A), *range(0x1F170, 0x1F18A), *range(0x1F1E6, 0x1F200)]:
        name = unicodedata.name(chr(cp), "")
        if name.rsplit(" ", 2)[-2:-1] == ["LETTER"] and len(name.rsplit(" ", 1)[-1]) == 1:
            out[cp] = name[-1]
    return out


_SYMBOL_LETTERS = _symbol_letters()
_SYMBOL_LETTER = re.compile("[\U0001f150-\U0001f169\U0001f170-\U0001f189\U0001f1e6-\U0001f1ff]")


@_shared
def _visible(text: str) -> str:
    """``text`` in NFKC without format characters (Cf: zero-width space, joiners, soft hyphen...) or other
    invisible ones, and symbols drawn as Latin letters written as those letters (``_SYMBOL_LETTERS``)."""
    if text.isascii():
        return text
    t = nfkc(text)  # (Malformed past MAX_NFKC_CHARS: U+FDFA is 18 characters in NFKC)
    if "\u200b" in t:  # a zero-width space marks a word break in Thai, Lao, Myanmar and Khmer: keep it as a space
        t = _SEA_ZWSP.sub(" ", t)
    drop: dict[int, str | None] = {ord(c): None for c in set(t) if unicodedata.category(c) == "Cf"
                                   or _INVISIBLE.match(c)}
    if _SYMBOL_LETTER.search(t):
        drop.update(_SYMBOL_LETTERS)
    return t.translate(drop) if drop else t


#: letters and digits of other scripts drawn as a dot or a bar (ㆍ ٠ ۰ ᐧ ǀ ǁ ǃ ꞏ): beside a Latin letter or digit they
#: join nothing ("wordㆍword" x 200 counted as one word); in their own scripts' words they are left alone
_JOINERS = ("\u318d\u119e\u0660\u06f0\u1427\u01c0\u01c1\u01c3\ua78f"
            "\ua78b\ua78c\u0294\u0295\u01c2\u0298")  # and Latin letters drawn as ' ? ǂ ʘ (saltillo, glottal stop)
_DOT_JOINERS = re.compile(f"(?<=[A-Za-z0-9])[{_JOINERS}]+|[{_JOINERS}]+(?=[A-Za-z0-9])")


@_shared
def canonical(text: str) -> str:
    """The text words are counted and keywords matched in: ``_visible`` (NFKC, invisible characters dropped), with
    connector punctuation (``_``), modifier letters used as joiners (ʼ ˈ ː; an Arabic tatweel only outside Arabic
    words, where it is dropped) and blank letters (Hangul fillers) turned into spaces, so they separate words as a
    hyphen does."""
    if text.isascii():
        return text.replace("_", " ")
    t = _visible(text)
    if _TATWEEL in t:
        t = _ARABIC_TATWEEL.sub("", t)
    space = {}
    for c in set(t):
        if c.isascii():
            continue
        cat = unicodedata.category(c)
        if cat == "Pc" or c in _BLANK_LETTERS or (cat == "Lm" and not _IS_CJK.match(c)):
            space[ord(c)] = " "
    t = (t.translate(space) if space else t).replace("_", " ")
    return _split_scripts(_DOT_JOINERS.sub(" ", t))


#: a run of at most this many letters or digits of another script inside a word is a joiner, not a word
_JOINER_RUN = 2
#: letters of any word they sit in: crossgym's table, and the cased letters of Unicode's confusables (Cyrillic ү,
#: Armenian ս: "sսn" is "sun"); not their uncased letters and digits, which other scripts draw as a bar, dots or a
#: circle and which keep separating Latin words (runic ᛁ, the Thai and Devanagari zeros: _split_scripts)
_LATIN_LOOKALIKES = frozenset(_HAND_CONFUSABLES[0]) | frozenset(
    c for c in _lookalikes.CHARACTERS if unicodedata.category(c) in ("Lu", "Ll") and c not in _JOINERS)


@functools.lru_cache(maxsize=4096)
def _script_of(c: str) -> str | None:
    """The script a word character belongs to, by its Unicode name's first word ("LATIN", "CYRILLIC", "RUNIC",
    "THAI"...); "" for characters that belong to any word (ASCII digits, combining marks, look-alikes of Latin
    letters, CJK characters, which are words of their own); None for a character that is no part of a word."""
    if c.isascii():
        return "LATIN" if c.isalpha() else "" if c.isdigit() else None
    if c in _LATIN_LOOKALIKES:
        return ""  # (drawn as a Latin letter: a letter of the Latin word it sits in, and of its own script's)
    cat = unicodedata.category(c)
    if cat[0] == "M" or _IS_CJK.match(c):
        return ""
    if cat[0] not in "LN":
        return None
    return unicodedata.name(c, "?").split(" ", 1)[0]


def _split_scripts(t: str) -> str:
    """A run of at most ``_JOINER_RUN`` letters or digits of another script between two runs of one script inside
    a word is a space (runic ᛁ, Tamil ஃ, Lao ະ, Tifinagh ⵂ and the zero of about 30 scripts are drawn as a bar,
    dots or a circle: "the᛫quick᛫brown..." was one word, and hid "dog"). Any other change of script inside a word
    is left as IFEval counts it ("AI기술과", "ΔT" and "٢٠٢٣م" are one word each)."""
    if t.isascii():
        return t
    script = {c: _script_of(c) for c in set(t)}  # (once per character: the cache holds 4,096 of them)
    scripts = set(script.values())
    scripts.discard(None)
    scripts.discard("")
    if len(scripts) < 2:
        return t
    # one code character per character: " " no part of a word, "*" part of any word, a script's own letter
    letter = {name: chr(0x4E00 + i) for i, name in enumerate(scripts)}
    codes = t.translate({ord(c): " " if name is None else "*" if not name else letter[name]
                         for c, name in script.items()})
    cuts: list[tuple[int, int]] = []  # spans of t written as one space
    runs: list[tuple[str, int]] = []  # the current word's runs of one script: (its code, where it starts)
    prev = ""
    for i, code in enumerate(codes):
        if code == prev:
            continue  # (the same code as the character before: nothing changes)
        prev = code
        if code == " ":
            runs = []
        elif code != "*":
            if runs and runs[-1][0] != code:
                if len(runs) >= 2 and runs[-2][0] == code and i - runs[-1][1] <= _JOINER_RUN:
                    cuts.append((runs[-1][1], i))  # a short run of another script between two of this one: a joiner
                    runs.pop()
                else:
                    runs.append((code, i))
            elif not runs:
                runs.append((code, i))
    if not cuts:
        return t
    out: list[str] = []
    pos = 0
    for a, b in cuts:
        out += (t[pos:a], " ")
        pos = b
    out.append(t[pos:])
    return "".join(out)


@_shared
def _skeleton(text: str) -> str:
    """``canonical`` text with look-alike letters mapped to Latin, case-folded: what keywords are matched in."""
    t = canonical(text)
    if t.isascii():
        return t.casefold()
    t = t.translate(_CONFUSABLES).casefold()
    return t if t.isascii() else unicodedata.normalize("NFKC", t)
#: what may close a sentence after its mark: closing quotes and brackets, markdown emphasis (version 9: the "?" of
#: '"*Why?*"' ended no sentence, so a reply of quoted or emphasised sentences counted short)
_CLOSERS = "\"'\u201d\u2019\u00bb)]*_"
#: a whole run of sentence-ending marks (from its first mark, taken whole) followed by a space or the end: a run
#: not followed by one was tried from each of its marks, each attempt backtracking through the rest of the run
#: ("!?" * 50,000 took 98 s)
_SENT_END = re.compile(r"(?<![.!?])[.!?]++[" + re.escape(_CLOSERS) + r"]*+(?=\s|$)")
#: a numbered list item's marker ("1. ", at a line's start): no sentence end (version 9: a list of 10 one-sentence
#: items was 20 sentences, where IFEval's tokenizer counts 10)
_LIST_MARKER = re.compile(r"(?m)^([ \t]*\d{1,3})\.(?=[ \t])")
_BULLET = re.compile(r"^[ \t]*[*\-•+][ \t]+(\S.*)$", re.M)
_NUMBERED = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+(\S.*)$", re.M)
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
    """The words a word count counts (see ``_COUNTED``), combining marks joined to their letters (``_in_word``)."""
    t = canonical(text)
    if not t.isascii():
        marks = {ord(c): None for c in set(t) if not c.isascii() and _in_word(c)}
        if marks:
            t = t.translate(marks)
    return _COUNTED.findall(t)


#: scripts written without spaces between words: their marks (vowel and tone signs) still end a word, as IFEval
#: counts them (a run of such text has no other break to count by)
_UNSPACED = frozenset(("THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "BALINESE", "JAVANESE", "SUNDANESE", "TAI",
                       "NEW", "BUGINESE", "CHAM", "LEPCHA"))


@functools.lru_cache(maxsize=4096)
def _in_word(c: str) -> bool:
    """Whether ``c`` is a combining mark drawn on the letter before it, in a script written with spaces: part of
    that letter's word. IFEval's ``\\w+`` ends a word at every mark, so a mark NFKC cannot compose away split one
    word into many: "q\\u0301" x 100 counted 100 words and a Devanagari vowel sign ends a word in the middle
    ("हिन्दी" was 3), which a policy can use to pass any minimum."""
    return unicodedata.category(c)[0] == "M" and unicodedata.name(c, "?").split(" ", 1)[0] not in _UNSPACED


def word_count(text: str, **kw: Any) -> Result:
    return _range(len(words(text)), "words", **kw)


def char_count(text: str, **kw: Any) -> Result:
    """Characters as they show: in NFKC, without invisible ones (zero-width padding does not reach a minimum)."""
    return _range(len(visible_chars(text).strip()), "characters", **kw)


def visible_chars(text: str) -> str:
    """``text`` in NFKC without invisible characters: what a character count counts."""
    return _visible(text)


def sentence_count(text: str, **kw: Any) -> Result:
    body = _LIST_MARKER.sub(r"\1", text.strip())
    n = len(_SENT_END.findall(body))
    if body and body.rstrip(_CLOSERS)[-1:] not in (".", "!", "?"):
        n += 1  # a trailing sentence without final punctuation
    return _range(n, "sentences", **kw)


def paragraphs(text: str, separator: str = "blank") -> list[str]:
    parts = text.split("***") if separator == "***" else re.split(r"\n[ \t]*\n", text)
    return [p for p in parts if p.strip()]


_paragraphs = paragraphs


def paragraph_count(text: str, separator: str = "blank", **kw: Any) -> Result:
    if separator not in ("blank", "***"):
        raise TypeError("separator must be 'blank' or '***'")
    if separator == "***" and any(not p.strip() for p in text.strip().split("***")[1:-1]):
        return False, "an empty paragraph between *** dividers"
    return _range(len(paragraphs(text, separator)), "paragraphs", **kw)


def first_word_of_paragraph(text: str, n: int, word: str, separator: str = "blank",
                            paragraphs: int | None = None) -> Result:
    """Paragraph ``n`` starts with ``word``; with ``paragraphs``, the response also has exactly that many (IFEval's
    nth_paragraph_first_word asks both)."""
    ps = _paragraphs(text, separator)
    if paragraphs is not None and len(ps) != paragraphs:
        return False, f"{len(ps)} paragraphs (need exactly {paragraphs})"
    if len(ps) < n:
        return False, f"only {len(ps)} paragraphs"
    w = _WHOLE_WORD.findall(_visible(ps[n - 1]))
    ok = bool(w) and w[0].casefold() == _visible(word).casefold()
    return ok, f"paragraph {n} starts with {w[0] if w else '(nothing)'!r}"


@functools.lru_cache(maxsize=4096)
def _keyword_re(kw: str) -> re.Pattern[str]:
    """The keyword as a whole word (or words: any run of spaces between them) in ``_skeleton`` text."""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(p) for p in _skeleton(kw).split()) + r"(?!\w)")


def _has_word(skeleton: str, kw: str) -> int:
    """How often ``kw`` occurs as a whole word in ``skeleton`` (a ``_skeleton`` text): NFKC, case-folded, without
    invisible characters, look-alike Cyrillic and Greek letters read as the Latin ones, ``_`` and ʼ separating words.
    A whole word, deliberately (IFEval's keywords:existence and keywords:frequency match a substring, as a regex): a
    keyword inside another word is not that keyword ("war" in "toward" or "software", "cat" in "education"), which
    a substring match counts; so "wars" is not "war" here either."""
    return len(_keyword_re(kw).findall(skeleton))


def keywords_include(text: str, keywords: list[str]) -> Result:
    sk = _skeleton(text)
    missing = [k for k in keywords if not _has_word(sk, k)]
    return not missing, f"missing {missing}" if missing else "all keywords present"


def keywords_exclude(text: str, keywords: list[str]) -> Result:
    sk = _skeleton(text)
    found = [k for k in keywords if _has_word(sk, k)]
    return not found, f"forbidden {found}" if found else "no forbidden words"


def keyword_frequency(text: str, keyword: str, **kw: Any) -> Result:
    return _range(_has_word(_skeleton(text), keyword), f"times {keyword!r}", **kw)


def letter_frequency(text: str, letter: str, **kw: Any) -> Result:
    if len(letter) != 1:
        raise TypeError("letter must be one character")
    return _range(_skeleton(text).count(_skeleton(letter)), f"letters {letter!r}", **kw)


def _cased(text: str) -> str:
    """The text the case checks read: NFKC (𝐓 is T), look-alike capitals (Lisu letters, 🅃) as capitals."""
    return _CAPITAL_LOOKALIKE.sub("A", _visible(text))


def lowercase(text: str, language: str | None = None) -> Result:
    """IFEval's str.islower: every cased letter is lower-case, and there is one ("12345 !!!" is not lowercase).
    ``language``: langdetect must also read the text as that language (IFEval's english_lowercase asks "en")."""
    ok = _cased(text).islower()
    if not ok:
        return False, "has capital letters or no letters"
    return (True, "all lowercase") if language is None else _in_language(text, language, "all lowercase")


def uppercase(text: str, language: str | None = None) -> Result:
    """str.isupper, as lowercase reads it; ``language`` as there (IFEval's english_capital asks "en")."""
    ok = _cased(text).isupper()
    if not ok:
        return False, "has lowercase letters or no letters"
    return (True, "all capitals") if language is None else _in_language(text, language, "all capitals")


def _in_language(text: str, code: str, met: str) -> Result:
    """``language``'s verdict on ``text``, after a case check that held (``met`` says which)."""
    ok, detail = language(text, code)
    return ok, f"{met}, {detail}"


def capital_word_frequency(text: str, **kw: Any) -> Result:
    """Words of two or more capitals (or capitals and digits: "B6"). Unlike IFEval, which counts every token that
    ``isupper()``, a single capital is no such word: the pronoun "I", the article "A" and vitamin "D" are capitals by
    rule, not written in capitals (IFEval failed an honest riddle's "less than 5" on its "I"s), and "I I I"
    would meet any "at least N"."""
    t = _cased(canonical(text))
    n = len(_CAP_WORD.findall(t)) if t.isascii() else sum(
        1 for w in re.findall(r"\w+", t) if len(w) > 1 and w[0].isupper() and all(c.isupper() or c.isdigit()
                                                                                  for c in w[1:]))
    return _range(n, "all-capital words", **kw)


def _shows_something(text: str) -> bool:
    """``text`` has a visible character: not only spaces, zero-width and other invisible characters or blank
    letters (a title, placeholder, highlight or list item made of them shows nothing)."""
    return not is_blank(_visible(text))


def placeholders(text: str, **kw: Any) -> Result:
    # (version 8: "[ ]" and "[\u200b]" counted)
    return _range(sum(_shows_something(p[1:-1]) for p in _PLACEHOLDER.findall(text)), "[placeholders]", **kw)


def bullet_count(text: str, **kw: Any) -> Result:
    return _range(sum(_shows_something(b) for b in _BULLET.findall(text)), "bullet points", **kw)


def numbered_count(text: str, **kw: Any) -> Result:
    return _range(sum(_shows_something(b) for b in _NUMBERED.findall(text)), "numbered items", **kw)


def highlighted_sections(text: str, **kw: Any) -> Result:
    # as IFEval: a highlight with nothing in it is none (version 8: nor one of invisible characters, "*\u200b*")
    return _range(sum(_shows_something(h.strip("*")) for h in _HIGHLIGHT.findall(text)), "*highlighted* sections",
                  **kw)


def sections(text: str, marker: str = "SECTION", **kw: Any) -> Result:
    # at a line's start, after any markup or quotes (version 9: "**SECTION 1**" and '"SECTION 1' were no headers)
    n = len(re.findall(rf"(?m)^[ \t]*(?:(?:[^\w\s]|_)+[ \t]*)?{re.escape(marker)}[ \t]+\d+", text))
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
    """As IFEval's end checker: the closing double quotes of a quoted response come after the suffix (version 8:
    '"... Any questions?"' failed, so a response asked for quotes and a final phrase could not pass both)."""
    t, s = (text.strip(), suffix) if case_sensitive else (text.strip().casefold(), suffix.casefold())
    return t.endswith(s) or t.rstrip('"”').endswith(s), f"ends with {text.strip()[-30:]!r}"


def no_commas(text: str) -> Result:
    n = len(_COMMAS.findall(_visible(text)))
    return n == 0, f"{n} commas"


def quotation(text: str) -> Result:
    t = text.strip()
    ok = len(t) >= 2 and t[0] in "\"“" and t[-1] in "\"”"
    return ok, "wrapped in double quotes" if ok else "not wrapped in double quotes"


_TITLE = re.compile(r"<<([^<>\n]{1,200})>>")


def title(text: str) -> Result:
    # as IFEval, a title shows something (version 8: "<< >>" and "<<\u200b>>" were titles)
    ok = any(_shows_something(m.group(1)) for m in _TITLE.finditer(text))
    return ok, "has a <<title>>" if ok else "no <<title>>"


@functools.lru_cache(maxsize=256)
def _postscript_re(marker: str) -> re.Pattern[str]:
    """A line starting with ``marker`` in any case, a space allowed after each of its inner dots (IFEval's
    ``p\\.\\s?s\\.`` for "P.S.")."""
    body = r"\.[ \t]?".join(re.escape(part) for part in marker.split(".")[:-1]) + r"\." if marker.endswith(".") \
        else r"\.[ \t]?".join(re.escape(part) for part in marker.split("."))
    return re.compile(rf"^[ \t]*{body}", re.M | re.I)


def postscript(text: str, marker: str = "P.S.") -> Result:
    # in any case, as IFEval reads it (version 8: a lowercase response's "p.s." was no postscript)
    ok = _postscript_re(marker).search(text) is not None
    return ok, f"has a {marker} line" if ok else f"no {marker} line"


def two_responses(text: str, separator: str = "******") -> Result:
    """Two different responses around the separator; as IFEval, a separator before the first or after the last
    is allowed (version 8: "A ****** B ******" failed)."""
    parts = text.split(separator)
    if parts and not parts[0].strip():
        parts = parts[1:]
    if len(parts) > 2 and not parts[-1].strip():
        parts = parts[:-1]
    ok = len(parts) == 2 and all(p.strip() for p in parts) and parts[0].strip() != parts[1].strip()
    return ok, "two different responses" if ok else "not exactly two different responses"


def contains(text: str, phrase: str, case_sensitive: bool = False) -> Result:
    ok = phrase in text if case_sensitive else phrase.casefold() in text.casefold()
    return ok, f"contains {phrase[:30]!r}" if ok else f"lacks {phrase[:30]!r}"


@functools.lru_cache(maxsize=256)
def _phrase_re(phrase: str) -> re.Pattern[str]:
    """``phrase`` anywhere in ``_skeleton`` text (a substring, as ``contains`` matches; its spaces any run of them)."""
    return re.compile(r"\s+".join(re.escape(p) for p in _skeleton(phrase).split()))


def contains_any(text: str, phrases: list[str], case_sensitive: bool = False, only_one: bool = False) -> Result:
    """One of ``phrases`` is in the text, matched as ``contains`` matches one (IFEval's constrained_response: "My
    answer is yes." or "... no." or "... maybe."). With ``only_one``, no other phrase shows as well: a response that
    names every option has chosen none. That second look reads the text as keywords are read (NFKC, case-folded,
    invisible characters dropped, look-alike letters as Latin ones), so an option with a Cyrillic о or a zero-width
    space in it still counts as named."""
    if case_sensitive:
        found = [p for p in phrases if p in text]
    else:
        folded = text.casefold()
        found = [p for p in phrases if p.casefold() in folded]
    if not found:
        return False, f"contains none of {[p[:30] for p in phrases[:5]]}"
    if only_one:
        sk = _skeleton(text)
        shown = [p for p in phrases if _phrase_re(p).search(sk)]
        if len(shown) > 1:
            return False, f"names {len(shown)} of the phrases ({', '.join(repr(p[:30]) for p in shown[:3])}), not one"
    return True, f"contains {found[0][:30]!r}"


#: the language codes langdetect (1.0.9) returns: ISO 639-1, and zh-cn / zh-tw for Chinese; "zh" stands for either
LANGUAGE_CODES = frozenset((
    "af", "ar", "bg", "bn", "ca", "cs", "cy", "da", "de", "el", "en", "es", "et", "fa", "fi", "fr", "gu", "he", "hi",
    "hr", "hu", "id", "it", "ja", "kn", "ko", "lt", "lv", "mk", "ml", "mr", "ne", "nl", "no", "pa", "pl", "pt", "ro",
    "ru", "sk", "sl", "so", "sq", "sv", "sw", "ta", "te", "th", "tl", "tr", "uk", "ur", "vi", "zh-cn", "zh-tw", "zh"))
#: what installs langdetect, which the ``language`` constraint needs
LANGDETECT_INSTALL = "pip install 'crossgym[verifiers]' (or: pip install langdetect)"
#: the language is detected in the response's first this many characters (langdetect itself reads the first 10,000
#: after removing URLs and e-mail addresses; 1 MB took it up to 0.17 s, the first 100,000 characters ~0.02 s)
LANGUAGE_MAX_CHARS = 100_000
_LANGDETECT_LOCK = threading.Lock()
_LANGDETECT: tuple[Any, type[Exception]] | None = None


def langdetect_missing() -> str:
    """Why the ``language`` constraint cannot run here ("" when langdetect imports): the one message naming the fix."""
    try:
        import langdetect  # noqa: F401
    except ImportError:
        return ("instructions: reading a response's language (constraint 'language', or lowercase/uppercase with "
                f"'language') needs langdetect, which is not installed (fix: {LANGDETECT_INSTALL})")
    return ""


def _language_detector() -> tuple[Any, type[Exception]]:
    """langdetect's detector factory with seed 0, and its exception class: built once per process under a lock.

    A factory of our own, not langdetect's module-level one: its ``seed`` (0) is set on this instance before any
    detection, so every verdict is the same on every run and in every thread (each Detector seeds its own
    ``random.Random`` from it), whatever other code sets on ``DetectorFactory.seed``; its profiles are loaded in sorted
    order (``load_profile`` takes the directory's listing order). VerifierError naming the fix when langdetect is
    not installed."""
    global _LANGDETECT
    got = _LANGDETECT
    if got is not None:
        return got
    with _LANGDETECT_LOCK:
        if _LANGDETECT is None:
            missing = langdetect_missing()
            if missing:
                raise VerifierError(missing)
            import os

            from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
            from langdetect.lang_detect_exception import LangDetectException

            factory = DetectorFactory()
            profiles = []
            for name in sorted(os.listdir(PROFILES_DIRECTORY)):
                if not name.startswith("."):
                    with open(os.path.join(PROFILES_DIRECTORY, name), encoding="utf-8") as fh:
                        profiles.append(fh.read())
            factory.load_json_profile(profiles)
            factory.set_seed(0)
            _LANGDETECT = (factory, LangDetectException)
        return _LANGDETECT


def language(text: str, code: str) -> Result:
    """langdetect's most probable language for the text is ``code`` (IFEval's response_language:
    ``langdetect.detect(response) == language``), with its random sampling seeded (the same verdict every run).

    Read as the other constraints read a text: in NFKC without invisible characters (𝐁𝐨𝐧𝐣𝐨𝐮𝐫 is Bonjour, a
    zero-width space splits no word into letters), the first ``LANGUAGE_MAX_CHARS`` characters. A text in which
    langdetect finds nothing to read (digits, punctuation, emoji, a script it has no profile for) fails: IFEval
    passes it (it logs the error and counts the instruction followed), which would pay "12345" for any language.
    ``code`` "zh" is either of langdetect's zh-cn and zh-tw."""
    factory, no_features = _language_detector()
    detector = factory.create()
    detector.append(_visible(text[:LANGUAGE_MAX_CHARS]))
    try:
        got = detector.detect()
    except no_features:
        return False, f"no language detected (need {code!r}): langdetect reads no letters in the text"
    ok = got == code or (code == "zh" and got in ("zh-cn", "zh-tw"))
    return ok, f"detected language {got!r} (need {code!r})"


CHECKS: dict[str, Callable[..., Result]] = {
    "word_count": word_count, "char_count": char_count, "sentence_count": sentence_count,
    "paragraph_count": paragraph_count, "first_word_of_paragraph": first_word_of_paragraph,
    "keywords_include": keywords_include, "keywords_exclude": keywords_exclude,
    "keyword_frequency": keyword_frequency, "letter_frequency": letter_frequency, "lowercase": lowercase,
    "uppercase": uppercase, "capital_word_frequency": capital_word_frequency, "placeholders": placeholders,
    "bullet_count": bullet_count, "numbered_count": numbered_count, "highlighted_sections": highlighted_sections,
    "sections": sections, "json_format": json_format, "starts_with": starts_with, "ends_with": ends_with,
    "no_commas": no_commas, "quotation": quotation, "title": title, "postscript": postscript,
    "two_responses": two_responses, "contains": contains, "contains_any": contains_any, "language": language,
}

_BOUNDS = {"min": "count", "max": "count", "exactly": "count"}
#: each constraint's arguments (name -> kind) and which of them are required; every counted constraint (the ones
#: taking min/max/exactly) needs at least one bound
ARGS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "word_count": (_BOUNDS, ()), "char_count": (_BOUNDS, ()), "sentence_count": (_BOUNDS, ()),
    "paragraph_count": ({**_BOUNDS, "separator": "separator"}, ()),
    "first_word_of_paragraph": ({"n": "index", "word": "word", "separator": "separator", "paragraphs": "index"},
                                ("n", "word")),
    "keywords_include": ({"keywords": "keywords"}, ("keywords",)),
    "keywords_exclude": ({"keywords": "keywords"}, ("keywords",)),
    "keyword_frequency": ({**_BOUNDS, "keyword": "keyword"}, ("keyword",)),
    "letter_frequency": ({**_BOUNDS, "letter": "letter"}, ("letter",)),
    "lowercase": ({"language": "language"}, ()), "uppercase": ({"language": "language"}, ()),
    "capital_word_frequency": (_BOUNDS, ()),
    "placeholders": (_BOUNDS, ()), "bullet_count": (_BOUNDS, ()), "numbered_count": (_BOUNDS, ()),
    "highlighted_sections": (_BOUNDS, ()), "sections": ({**_BOUNDS, "marker": "text"}, ()),
    "json_format": ({}, ()), "starts_with": ({"prefix": "text", "case_sensitive": "flag"}, ("prefix",)),
    "ends_with": ({"suffix": "text", "case_sensitive": "flag"}, ("suffix",)),
    "no_commas": ({}, ()), "quotation": ({}, ()), "title": ({}, ()), "postscript": ({"marker": "text"}, ()),
    "two_responses": ({"separator": "text"}, ()),
    "contains": ({"phrase": "text", "case_sensitive": "flag"}, ("phrase",)),
    "contains_any": ({"phrases": "keywords", "case_sensitive": "flag", "only_one": "flag"}, ("phrases",)),
    "language": ({"code": "language"}, ("code",)),
}
_EXPECTED = {
    "count": "a non-negative integer", "index": "a positive integer (1 is the first)",
    "text": "a non-blank string", "flag": "true or false", "separator": "'blank' or '***'",
    "word": "one word (a non-blank string without spaces)", "keyword": "a non-blank string with a visible character",
    "keywords": "a non-empty list of non-blank strings",
    "letter": "one letter or other visible character (a string of length 1)",
    "language": "a language code langdetect returns (ISO 639-1, lowercase: en, fr, hi...; zh-cn, zh-tw, or zh for "
                "either)",
}


def _keyword_ok(v: Any) -> bool:
    return isinstance(v, str) and bool(_skeleton(v).strip())


_VALID: dict[str, Callable[[Any], bool]] = {
    "count": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "index": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
    "text": lambda v: isinstance(v, str) and bool(v.strip()),
    "flag": lambda v: isinstance(v, bool),
    "separator": lambda v: v in ("blank", "***") and isinstance(v, str),
    "word": lambda v: isinstance(v, str) and _WHOLE_WORD.fullmatch(_visible(v).strip()) is not None,
    "keyword": _keyword_ok,
    "keywords": lambda v: isinstance(v, (list, tuple)) and bool(v) and all(_keyword_ok(k) for k in v),
    # a letter, or any other character that shows (IFEval asks for '#' and '!' too; before version 9, letters only)
    "letter": lambda v: isinstance(v, str) and len(v) == 1 and (v.isalpha() or bool(_skeleton(v).strip())),
    "language": lambda v: isinstance(v, str) and v in LANGUAGE_CODES,
}


def arg_error(kind: str, kwargs: dict[str, Any]) -> str:
    """What is wrong with constraint ``kind``'s arguments ("" when nothing): an unknown or missing argument, one of
    the wrong type or out of range (a string where a list is expected, a count below 0, an index below 1, a bool
    where a number is), or bounds that contradict each other."""
    spec, required = ARGS[kind]
    for name, value in kwargs.items():
        if name not in spec:
            takes = ", ".join(spec) or "no arguments"
            return f"unknown argument {name!r} (it takes {takes})"
        if not _VALID[spec[name]](value):
            return f"argument {name!r} must be {_EXPECTED[spec[name]]}, got {value!r} ({type(value).__name__})"
    missing = [n for n in required if n not in kwargs]
    if missing:
        return f"missing argument {missing[0]!r} ({_EXPECTED[spec[missing[0]]]})"
    if kwargs.get("paragraphs") is not None and kwargs["n"] > kwargs["paragraphs"]:
        return f"n {kwargs['n']!r} is over paragraphs {kwargs['paragraphs']!r}"
    if kwargs.get("only_one"):
        # (each phrase as only_one reads it: one inside another would make every response that has it name two)
        seen = [(" ".join(_skeleton(p).split()), p) for p in kwargs["phrases"]]
        for i, (a, pa) in enumerate(seen):
            for b, pb in seen[i + 1:]:
                if a in b or b in a:
                    return f"with only_one, phrases {pa!r} and {pb!r} overlap (one is inside the other)"
    if "min" in spec:
        lo, hi, ex = kwargs.get("min"), kwargs.get("max"), kwargs.get("exactly")
        if lo is None and hi is None and ex is None:
            return "give min, max or exactly (a non-negative integer)"
        if ex is not None and (lo is not None or hi is not None):
            return f"give exactly or min/max, not both (got exactly={ex!r}, min={lo!r}, max={hi!r})"
        if lo is not None and hi is not None and lo > hi:
            return f"min {lo!r} is over max {hi!r}"
    return ""
