"""instructions: IFEval-style verifiable instructions, several per task; reward = share satisfied (or all)."""

from __future__ import annotations

from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed
from crossgym.verifiers.constraints import CHECKS, arg_error, shared_views
from crossgym.verifiers.extract import strip_think


class Instructions(BaseVerifier):
    """The response follows every listed instruction.

    answer: a list of constraints, each ``{"type": NAME, ...arguments}``; counts take ``min``, ``max`` or
    ``exactly``. Types: word_count, char_count, sentence_count, paragraph_count (separator "blank" | "***"),
    first_word_of_paragraph (n, word, paragraphs), keywords_include (keywords), keywords_exclude (keywords),
    keyword_frequency (keyword), letter_frequency (letter), lowercase, uppercase (both: language, a code: langdetect
    must read the text so too), capital_word_frequency,
    placeholders ([like this]), bullet_count, numbered_count, highlighted_sections (*like this*), sections
    (marker "SECTION"), json_format, starts_with (prefix), ends_with (suffix), no_commas, quotation, title
    (<<like this>>), postscript (marker "P.S."), two_responses (separator "******"), contains (phrase),
    contains_any (phrases; only_one: no other phrase shows too), language (code: langdetect's language, seeded;
    needs langdetect).
    params: reward ("fraction": share of constraints met, passed only when all are | "all": 1.0 or 0.0),
    think (True: check only the text after </think>). Each constraint is reported in components as
    "<index>:<type>". A blank response is malformed.
    """

    name = "instructions"
    # 2: words are counted as IFEval counts them (runs of letters and digits: "well-known" is two words, so a
    # hyphen-chained reply is no longer one word) and each CJK character is a word (a run of them was one)
    # 3: words, keywords and commas are read in NFKC without invisible characters: "_" and modifier letters (ʼ)
    # separate words as hyphens do, a zero-width space or a Cyrillic о no longer hides a forbidden word, every
    # script's commas count; lowercase/uppercase need a cased letter (IFEval's islower/isupper: "12345 !!!" is
    # neither) and read 𝐓 as T; every constraint argument is type- and range-checked (a bad one is a bad task)
    # 4: the kana blocks' sound, length and iteration marks and punctuation are no words (300 combining U+3099
    # passed a 300-word minimum); more look-alike letters (small capitals, Cherokee, ø) and commas (͵ ˏ ٫ ¸); letters
    # drawn as a dot or bar (ㆍ ٠ ǀ) beside Latin letters separate words; 5: any script's letters or digits inside a
    # word separate it (runic ᛁ, Tamil ஃ, Thai ๐ hid 25 words and a forbidden one), symbols drawn as Latin letters
    # (🅣🅗🅔, regional indicators) are those letters, in counts and keywords; unassigned invisible code points are
    # dropped, Latin letters drawn as punctuation (ꞌ ʔ ǂ) separate words; 6: a response over 2,000,000 characters in
    # NFKC is malformed (1 MB of U+FDFA is 18 MB there: 17.8 s for three constraints against the 10 s timeout); 7: a
    # combining mark is part of its letter's word in scripts written with spaces ("q\u0301" x 100 was 100 words)
    # 8: a title, placeholder, highlight or list item showing nothing counts for nothing ("<< >>" was a title); as
    # IFEval, ends_with allows a quoted response's closing quotes, postscript reads any case and "P. S.", and
    # two_responses allows a separator before the first or after the last
    # 9: measured against IFEval's own verdicts on its 541 GPT-4 responses (bench/ifeval_reference.py): a sentence
    # ends at a mark followed by closing quotes, brackets or emphasis ('"*Why?*"' ended none) and a numbered list's
    # "1." ends none (10 items were 20 sentences); a sections header may follow markup or quotes ("**SECTION 1**");
    # letter_frequency takes any visible character (IFEval asks for '#' and '!'); first_word_of_paragraph takes
    # paragraphs (exactly that many, as IFEval's nth_paragraph_first_word asks)
    # 10: every character Unicode's confusables data (UTS #39) draws as one Latin letter is read as it where keywords
    # and phrases are matched (Cyrillic ү, Armenian ս and ո, ∨ hid forbidden words and a second only_one option;
    # crossgym's own table missed them), other scripts' full stops as "." there ("maybe。" named no option)
    version = "10"
    description = "IFEval-style checkable constraints (counts, keywords, case, format...), several per task"

    def __init__(self, *, reward: str = "fraction", think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        if reward not in ("fraction", "all"):
            raise VerifierError(f"verifier 'instructions': reward={reward!r} must be 'fraction' or 'all' "
                                  "(fix: reward: fraction for the share met, all for 1.0 only when every one is)")
        self.reward, self.think = reward, bool(think)

    @staticmethod
    def constraints(answer: Any) -> list[tuple[str, dict[str, Any]]]:
        """The task's constraints as (type, kwargs), validated; BadTask on a bad one."""
        if isinstance(answer, dict):
            answer = [answer]
        if not isinstance(answer, list) or not answer:
            raise BadTask("instructions answer must be a non-empty list of {'type': ..., ...} constraints")
        out = []
        for i, c in enumerate(answer):
            if not isinstance(c, dict) or c.get("type") not in CHECKS:
                raise BadTask(f"constraint {i + 1}: type must be one of {', '.join(sorted(CHECKS))}, got "
                              f"{c.get('type') if isinstance(c, dict) else c!r}")
            kwargs = {k: v for k, v in c.items() if k != "type"}
            err = arg_error(c["type"], kwargs)
            if err:
                raise BadTask(f"constraint {i + 1} ({c['type']}): {err}")
            out.append((c["type"], kwargs))
        return out

    def score(self, task: Task, completion: Completion) -> Verdict:
        cons = self.constraints(task.answer)
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Malformed("blank response")
        comps: dict[str, float] = {}
        failed = []
        with shared_views():  # the response's NFKC, words and skeleton read once for all its constraints
            for i, (kind, kwargs) in enumerate(cons):
                try:
                    ok, detail = CHECKS[kind](text, **kwargs)
                except TypeError as exc:
                    raise BadTask(f"constraint {i + 1} ({kind}): {exc}") from None
                comps[f"{i}:{kind}"] = float(ok)
                if not ok:
                    failed.append(f"{kind}: {detail}")
        frac = sum(comps.values()) / len(comps)
        passed = not failed
        reward = frac if self.reward == "fraction" else float(passed)
        reason = f"all {len(cons)} instructions followed" if passed else "; ".join(failed)[:300]
        return Verdict.ok(reward, passed=passed, components=comps, reason=reason)

    @classmethod
    def examples(cls) -> list[Example]:
        rules = [{"type": "word_count", "max": 12}, {"type": "lowercase"}, {"type": "no_commas"},
                 {"type": "keywords_include", "keywords": ["ocean"]}]
        return [
            cls.example(rules, "the ocean is wide and deep and very blue", "pass"),
            cls.example(rules, "The ocean, wide and deep, is blue.", "fail", "capitals and commas: reward 0.5"),
            cls.example([{"type": "bullet_count", "exactly": 3}, {"type": "ends_with", "suffix": "Any questions?"}],
                        "* one\n* two\n* three\nAny questions?", "pass"),
            cls.example(rules, "   ", "malformed", "blank response"),
        ]
