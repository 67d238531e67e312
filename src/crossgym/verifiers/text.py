"""exact_match and string_similarity: compare the answer span with reference strings after normalisation."""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import (
    answers_list,
    check_extract,
    locate_answer,
    nfkc,
    normalize,
    normalize_cached,
    sentence_answer,
)

#: markdown an answer may come wrapped in as a whole: bold, italics, inline code ("__" is left: ``__init__``)
_EMPHASIS = ("**", "*", "`")


def unwrap_emphasis(span: str) -> str:
    """``span`` without the markdown emphasis or code marks that wrap it whole (``**Paris**``, ``*`Paris`*``); a
    span with the mark inside too (``*a* or *b*``) is left as it is."""
    s = span.strip()
    while True:
        for m in _EMPHASIS:
            k = len(m)
            if len(s) > 2 * k and s.startswith(m) and s.endswith(m) and m not in s[k:-k]:
                s = s[k:-k].strip()
                break
        else:
            return s


#: the ``normalize`` param: crossgym's rules, or the SQuAD evaluate script's ``normalize_answer`` exactly
NORMALIZE_MODES = ("default", "squad")
_SQUAD_PUNCT = str.maketrans("", "", string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")
#: a thousands separator: a comma between a digit and a group of exactly three digits ("1,000" but not "1,2")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
#: a percent sign set apart from its number ("12 %"), joined to it before punctuation is dropped
_PERCENT_APART = re.compile(r"(?<=\d)\s+%")


def squad_normalize(text: str) -> str:
    """SQuAD v1.1/v2.0 ``normalize_answer`` (also HotpotQA's and NQ-open's): lower-case, delete ASCII punctuation,
    replace a/an/the with a space, collapse whitespace; no Unicode folding."""
    text = text.lower().translate(_SQUAD_PUNCT)
    return " ".join(_SQUAD_ARTICLES.sub(" ", text).split())


def text_normalize(text: str, *, case_sensitive: bool = False, whitespace: bool = True, punctuation: bool = False,
                   articles: bool = False) -> str:
    """``extract.normalize`` with the order SQuAD uses when both punctuation and articles are dropped: punctuation
    first, so an article glued to punctuation stays part of its word ("a.m." is "am", "u.s.a." "usa", "A-ha" "Aha";
    they lost their "a" and "10 a.m." failed "10 am"), a thousands separator goes too ("1,000" is "1000") and a
    percent sign set apart stays with its number ("12 %" is "12%")."""
    if punctuation and "%" in text:
        text = _PERCENT_APART.sub("%", text)
    if punctuation and articles:
        text = normalize(text, case_sensitive=True, whitespace=False, punctuation=True)
    elif not punctuation:
        return normalize(text, case_sensitive=case_sensitive, whitespace=whitespace, articles=articles)
    text = normalize(text, case_sensitive=case_sensitive, whitespace=whitespace, articles=articles,
                     punctuation=not articles)
    return _THOUSANDS.sub("", text) if "," in text else text


@functools.lru_cache(maxsize=65536)
def text_normalize_cached(text: str, case_sensitive: bool = False, whitespace: bool = True,
                          punctuation: bool = False, articles: bool = False) -> str:
    """``text_normalize`` memoised, for references."""
    if not (punctuation or articles):
        return normalize_cached(text, case_sensitive, whitespace)
    return text_normalize(text, case_sensitive=case_sensitive, whitespace=whitespace, punctuation=punctuation,
                          articles=articles)


class _TextBase(BaseVerifier):
    def __init__(self, *, extract: str = "auto", tag: str = "answer", case_sensitive: bool = False,
                 whitespace: bool = True, punctuation: bool = False, articles: bool = False,
                 normalize: str = "default", **params: Any) -> None:
        super().__init__(**params)
        self.extract = check_extract(extract, self.name)
        self.tag = str(tag)
        if normalize not in NORMALIZE_MODES:
            raise VerifierError(f"verifier {self.name!r}: normalize={normalize!r} must be 'default' or 'squad' "
                                "(fix: pass one of them, or leave it out for the default)")
        self.squad = normalize == "squad"
        self.norm = {"case_sensitive": bool(case_sensitive), "whitespace": bool(whitespace),
                     "punctuation": bool(punctuation), "articles": bool(articles)}

    def _pred(self, completion: Completion) -> tuple[str, str]:
        """(the answer span, where it came from: see ``locate_answer``)."""
        span, where = locate_answer(completion.text, self.extract, tag=self.tag)
        if not span.strip():
            raise Malformed("no answer in the completion")
        return span, where

    def _pairs(self, span: str, refs: list[str], where: str) -> list[tuple[str, str, str]]:
        """(reference, normalised span, normalised reference) per reference. A reference normalised as the span
        was: an "answer is" line loses its final period, so the reference does too ("U.S." against "The answer is
        U.S."). A reference that punctuation or article dropping leaves empty ("?", "the") is compared with both
        kept, on both sides: two empty strings matched any such answer. With normalize="squad" both sides go
        through SQuAD's ``normalize_answer`` instead (a reference it leaves empty: lower-case and whitespace only)."""
        if self.squad:
            if not span.isascii():
                nfkc(span)  # the same cap on compatibility characters as the default rules
            pred = squad_normalize(span)
        else:
            pred = text_normalize(span, **self.norm)
        out = []
        for r in refs:
            ref = sentence_answer(r) if where == "marker" else r
            n = squad_normalize(ref) if self.squad else text_normalize_cached(ref, **self.norm)
            if n or not (self.squad or self.norm["punctuation"] or self.norm["articles"]):
                out.append((r, pred, n))
                continue
            if self.squad:
                out.append((r, " ".join(span.lower().split()), " ".join(ref.lower().split())))
                continue
            light = {**self.norm, "punctuation": False, "articles": False}
            out.append((r, normalize(span, **light), normalize_cached(ref, **light)))
        return out


class ExactMatch(_TextBase):
    """The answer span equals one of the references after normalisation.

    answer: a string, or a list of accepted strings.
    params: extract ("auto" | "full" | "answer_tag" | "boxed" | "marker" | "last_line", default "auto": an
    <answer> tag, else \\boxed{}, else an "answer:" line, else the whole text), tag ("answer"), case_sensitive
    (False), whitespace (True: collapse runs), punctuation (False: True drops it), articles (False: True drops
    a/an/the; with punctuation, punctuation goes first, as in SQuAD), normalize ("default" | "squad": SQuAD's
    normalize_answer exactly, overriding the four). Unicode is NFKC-normalised and \\text{..}/$..$ unwrapped.
    """

    name = "exact_match"
    # 2: <answer> tags are case-sensitive, like XML; 3: the answer marker in any case mix; 4: "answer is: X" reads
    # X, and a reference ending in a period ("U.S.") matches an "answer is" line, which loses its final period;
    # dropping punctuation keeps a number's sign and point ("-5" is not "5") and C++/C#, dropping articles keeps
    # "Vitamin A"'s letter, a reference left empty by them ("?") is compared with both kept; 5: an answer over
    # 2,000,000 characters in NFKC is malformed (1 MB of U+FDFA is 18 MB there: 1.4 s); 6: an answer wrapped whole
    # in markdown emphasis or code (**Paris**, *Paris*, `Paris`) is also read without it (it failed "Paris"); 7: with
    # punctuation and articles both dropped, punctuation goes first, as in SQuAD ("10 a.m." lost its "a" and failed
    # "10 am"), and a thousands separator goes with it ("1,000" is "1000"); normalize="squad" (SQuAD's rule exactly)
    version = "7"
    description = "answer equals the reference after normalisation (case, whitespace, punctuation, articles)"

    def score(self, task: Task, completion: Completion) -> Verdict:
        refs = answers_list(task.answer, self.name)
        span, where = self._pred(completion)
        pairs = self._pairs(span, refs, where)
        bare = unwrap_emphasis(span)
        tries = pairs if not bare or bare == span.strip() else pairs + self._pairs(bare, refs, where)  # as written first
        for r, pred, ref in tries:
            if pred == ref:
                return Verdict.ok(1.0, reason=f"matches {clip(r)!r}")
        pred = pairs[0][1]
        return Verdict.ok(0.0, reason=f"{clip(pred)!r} matches none of {len(refs)} reference(s)")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example("Paris", "<think>France's capital...</think><answer> paris </answer>", "pass",
                        "case and spaces ignored"),
            cls.example(["New York City", "NYC"], "The answer is NYC.", "pass", "one of several references"),
            cls.example("The Beatles", "beatles", "pass", "articles dropped", params={"articles": True}),
            cls.example("Paris", "<answer>Lyon</answer>", "fail"),
            cls.example("Paris", "<answer>Paris</answer><answer>Lyon</answer>", "malformed",
                        "two different answers"),
            cls.example("Paris", "", "malformed", "empty completion"),
        ]


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance by Myers/Hyyrö's bit-parallel algorithm: one pass over ``a`` with ``len(b)``-bit
    integers, so 10,000 x 10,000 characters take well under a second in pure Python."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    peq: dict[str, int] = {}
    for i, ch in enumerate(b):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    full = (1 << m) - 1
    top = 1 << (m - 1)
    pv, mv, score = full, 0, m
    for ch in a:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & full)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & full
        mh = (mh << 1) & full
        pv = mh | (~(xv | ph) & full)
        mv = ph & xv
    return score


def _edit_distance_dp(a: str, b: str) -> int:
    """The textbook dynamic programme (reference for tests)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


#: edit distance refuses longer normalised answers (use metric="token_f1")
MAX_EDIT_CHARS = 10_000


def edit_similarity(a: str, b: str) -> float:
    """1 - Levenshtein(a, b) / max(len): 1.0 for equal strings, 0.0 for nothing in common."""
    n = max(len(a), len(b))
    if n == 0:
        return 1.0
    if n > MAX_EDIT_CHARS:
        raise Malformed(f"answer is over {MAX_EDIT_CHARS} characters, too long for edit distance "
                        "(use metric=token_f1)")
    return 1.0 - _edit_distance(a, b) / n


def token_f1(pred: str, ref: str) -> float:
    """SQuAD token F1 on whitespace tokens."""
    p, r = pred.split(), ref.split()
    if not p or not r:
        return float(p == r)
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    prec, rec = common / len(p), common / len(r)
    return 2 * prec * rec / (prec + rec)


class StringSimilarity(_TextBase):
    """Similarity between the answer span and the closest reference: normalised edit distance or token F1.

    answer: a string, or a list of accepted strings (the best one counts).
    params: metric ("edit" | "token_f1", default "edit"), threshold (0.8: passed when similarity >= it),
    reward ("similarity": the similarity itself | "binary": 1.0 at or above the threshold, else 0.0), plus
    exact_match's extract, tag and normalisation params (punctuation and articles default to True here; normalize
    "squad" with metric "token_f1" is SQuAD v2.0's F1).
    Edit distance refuses answers over 10,000 characters (malformed); token F1 is linear.
    """

    name = "string_similarity"
    # 2: the answer marker in any case mix; 3: "answer is: X", final periods, kept punctuation (-5, 3.14, C++),
    # "Vitamin A" and references left empty by normalisation, as exact_match 4 (its defaults drop both); 4: an answer
    # over 2,000,000 characters in NFKC is malformed, as exact_match 5 (1 MB of U+FDFA took 5 s); 5: punctuation
    # dropped before articles and thousands separators dropped, normalize="squad", as exact_match 7 (token_f1 with
    # it is SQuAD v2.0's F1 to 1e-9)
    version = "5"
    description = "normalised edit distance or token F1 against a reference, with a threshold"

    def __init__(self, *, metric: str = "edit", threshold: float = 0.8, reward: str = "similarity",
                 punctuation: bool = True, articles: bool = True, **params: Any) -> None:
        super().__init__(punctuation=punctuation, articles=articles, **params)
        if metric not in ("edit", "token_f1"):
            raise VerifierError(f"verifier 'string_similarity': metric={metric!r} must be 'edit' or 'token_f1' "
                                "(fix: pass one of them, or leave it out for edit)")
        if reward not in ("similarity", "binary"):
            raise VerifierError(f"verifier 'string_similarity': reward={reward!r} must be 'similarity' or 'binary' "
                                "(fix: pass one of them, or leave it out for similarity)")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise VerifierError(f"verifier 'string_similarity': threshold must be in [0, 1], got {threshold!r} "
                                "(fix: pass e.g. 0.8)")
        self.metric, self.threshold, self.reward = metric, float(threshold), reward

    def score(self, task: Task, completion: Completion) -> Verdict:
        refs = answers_list(task.answer, self.name)
        span, where = self._pred(completion)
        fn = edit_similarity if self.metric == "edit" else token_f1
        best, best_ref = -1.0, ""
        for r, pred, ref in self._pairs(span, refs, where):
            s = fn(pred, ref)
            if s > best:
                best, best_ref = s, r
        passed = best >= self.threshold
        reward = best if self.reward == "similarity" else float(passed)
        return Verdict.ok(reward, passed=passed, components={self.metric: best},
                          reason=f"{self.metric} {best:.3f} vs {clip(best_ref)!r} (threshold {self.threshold:g})")

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example("Albert Einstein", "Answer: Albert Einstien", "pass", "one transposition"),
            cls.example("the quick brown fox", "quick brown fox jumps", "pass", "token F1 0.86",
                        params={"metric": "token_f1"}),
            cls.example("Albert Einstein", "Answer: Isaac Newton", "fail"),
            cls.example("Albert Einstein", "   ", "malformed", "blank completion"),
        ]
