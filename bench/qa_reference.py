"""exact_match and string_similarity against the official QA metrics: a generated set of (prediction, gold answers)
cases, each judged by crossgym in several modes and by a reimplementation of each official metric.

    OMP_NUM_THREADS=1 python bench/qa_reference.py [--show 6] [--head]

``--head`` also judges with the text verifiers of ``git show HEAD:src/crossgym/verifiers/text.py`` (the figures
before this change). The official rules, reimplemented from their public source (no code of theirs is used):

- ``squad1``: SQuAD v1.1 ``evaluate-v1.1.py``: ``normalize_answer`` lower-cases, deletes ``string.punctuation``,
  replaces ``\\b(a|an|the)\\b`` with a space and collapses whitespace; EM and token F1 (Counter overlap, 0 when no
  token is shared, so two empty answers score 0) are each the max over the golds. NQ-open (DPR/ORQA) and HotpotQA
  EM use this same normalisation and EM.
- ``squad2``: SQuAD v2.0 ``evaluate-v2.0.py``: the same normalisation; golds that normalise to "" are dropped, and
  a question with none left is a no-answer question whose only gold is ""; F1 is 1 when both token lists are empty,
  0 when one is.
- ``trivia``: TriviaQA ``triviaqa_evaluation.py``: "_" becomes a space, lower-case, ASCII punctuation and ‘ ’ ´ `
  become a space (not deleted: "U.S." is "u s"), articles dropped, whitespace collapsed; EM and F1 max over aliases.
- ``hotpot``: HotpotQA ``hotpot_evaluate_v1.py`` F1: SQuAD v1.1's, except that a prediction or gold normalised to
  "yes", "no" or "noanswer" scores 0 unless both are equal (max over golds here; HotpotQA has one gold).
- DROP's metric (numbers compared as floats, multi-span bags aligned) has no counterpart in crossgym: not compared.

crossgym modes: ``em`` (exact_match defaults), ``em_pa`` (punctuation and articles dropped: the closest to the
official EM), ``em_squad`` (normalize="squad"), ``f1`` (string_similarity metric="token_f1", its reward) and
``f1_squad`` (the same with normalize="squad"). The completion is the prediction as written, read with
extract="auto" (an "answer is" line or a tag is read for its answer; an empty completion is malformed: reward 0).
EM agreement is exact; F1 agreement is within 1e-9.

Each case has a kind and the intent of its writer: ``right`` (an honest right answer, however written), ``wrong``
or ``hack`` (a list of candidates, or the gold among other words: a reward hack against lenient matching). The
disagreements are printed per class: mode, official metric, kind, direction.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import string
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from crossgym.protocol.task import Completion
from crossgym.verifiers.text import ExactMatch, StringSimilarity

# ------------------------------------------------------------------------------------------ official metrics
_ART = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = set(string.punctuation)
_TRIVIA_PUNCT = _ASCII_PUNCT | {"‘", "’", "´", "`"}


def norm_squad(s: str) -> str:
    s = "".join(c for c in s.lower() if c not in _ASCII_PUNCT)
    return " ".join(_ART.sub(" ", s).split())


def norm_trivia(s: str) -> str:
    s = "".join(" " if c in _TRIVIA_PUNCT else c for c in s.replace("_", " ").lower())
    return " ".join(_ART.sub(" ", s).split()).strip()


def _overlap_f1(p: list[str], g: list[str]) -> float:
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def squad1(pred: str, golds: list[str]) -> tuple[float, float]:
    em = max(float(norm_squad(pred) == norm_squad(g)) for g in golds)
    f1 = max(_overlap_f1(norm_squad(pred).split(), norm_squad(g).split()) for g in golds)
    return em, f1


def squad2(pred: str, golds: list[str]) -> tuple[float, float]:
    golds = [g for g in golds if norm_squad(g)] or [""]

    def f1(g: str) -> float:
        p, t = norm_squad(pred).split(), norm_squad(g).split()
        if not p or not t:
            return float(p == t)
        return _overlap_f1(p, t)

    return max(float(norm_squad(pred) == norm_squad(g)) for g in golds), max(f1(g) for g in golds)


def trivia(pred: str, golds: list[str]) -> tuple[float, float]:
    em = max(float(norm_trivia(pred) == norm_trivia(g)) for g in golds)
    f1 = max(_overlap_f1(norm_trivia(pred).split(), norm_trivia(g).split()) for g in golds)
    return em, f1


def hotpot(pred: str, golds: list[str]) -> tuple[float, float]:
    def f1(g: str) -> float:
        p, t = norm_squad(pred), norm_squad(g)
        if (p in ("yes", "no", "noanswer") or t in ("yes", "no", "noanswer")) and p != t:
            return 0.0
        return _overlap_f1(p.split(), t.split())

    return squad1(pred, golds)[0], max(f1(g) for g in golds)


OFFICIAL = {"squad1": squad1, "squad2": squad2, "trivia": trivia, "hotpot": hotpot}

# -------------------------------------------------------------------------------------------------- the cases
#: (gold, other spellings an honest writer uses that every SQuAD-style metric accepts)
BASE = [
    ("Paris", []), ("New York City", ["new york city"]), ("The Beatles", ["Beatles", "the beatles"]),
    ("Albert Einstein", ["albert einstein", "ALBERT EINSTEIN"]), ("George Washington", []),
    ("an apple", ["apple", "An apple"]), ("U.S.", ["US", "u.s."]), ("Washington, D.C.", ["Washington DC"]),
    ("Jack's house", ["Jacks house"]), ("rock 'n' roll", ["rock n roll"]), ("A Tale of Two Cities", []),
    ("10 a.m.", ["10 am", "10 A.M."]), ("1,000", ["1000"]), ("1,000,000", ["1000000"]), ("1969", []),
    ("the Nile", ["Nile", "The Nile River"]), ("Mount Everest", ["Mt. Everest"]), ("u.s.a.", ["usa", "U.S.A."]),
    ("A-ha", ["aha", "a-ha"]), ("self-driving car", ["selfdriving car"]), ("Martin Luther King, Jr.", []),
    ("oxygen", []), ("Leonardo da Vinci", []), ("the Renaissance", ["Renaissance"]), ("H2O", ["h2o"]),
    ("World War II", ["world war ii"]), ("42", []), ("3.14", []), ("Vitamin C", ["vitamin c"]),
    ("Marie Curie", []), ("yes", ["Yes"]), ("no", ["No."]), ("Tokyo", []), ("Charles Darwin", []),
]
WRONG = {"Paris": "Lyon", "42": "24", "3.14": "314", "yes": "no", "no": "yes", "1969": "1968", "Tokyo": "Kyoto",
         "oxygen": "hydrogen", "Marie Curie": "Pierre Curie", "Albert Einstein": "Isaac Newton"}
NUMBER_WORDS = [("3", "three"), ("12", "twelve"), ("1,000", "one thousand"), ("2", "two"), ("7", "seven")]
ALIASES = [(["New York City", "NYC", "New York"], ["nyc", "NYC.", "New York"]),
           (["Mao Zedong", "Mao Tse-tung", "Chairman Mao"], ["mao tsetung", "Chairman Mao"]),
           (["J. K. Rowling", "Joanne Rowling", "JK Rowling"], ["JK Rowling", "j k rowling"]),
           (["the United Kingdom", "UK", "Britain"], ["United Kingdom", "u.k.", "Britain"])]


def _variants(text: str) -> dict[str, str]:
    """Honest spellings of ``text``: case, whitespace, punctuation around it, articles, Unicode."""
    out = {"as-is": text, "lower": text.lower(), "upper": text.upper(), "spaces": "  " + text.replace(" ", "   ") + " ",
           "period": text + ".", "quoted": f'"{text}"', "curly": f"“{text}”", "bold": f"**{text}**",
           "nbsp": text.replace(" ", "\u00a0"), "tabs": text.replace(" ", "\t"),
           "the": "the " + text if not text.lower().startswith(("the ", "a ", "an ")) else text,
           "fullwidth": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text),
           "sentence": f"The answer is {text}.", "tag": f"<answer>{text}</answer>"}
    if "'" in text:
        out["curly-apostrophe"] = text.replace("'", "’")
    return out


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(kind: str, pred: str, golds: list[str], intent: str) -> None:
        out.append({"kind": kind, "pred": pred, "golds": golds, "intent": intent})

    for gold, spellings in BASE:
        for name, v in _variants(gold).items():
            add("unicode" if name in ("nbsp", "fullwidth", "curly", "curly-apostrophe") else
                "sentence" if name in ("sentence", "tag") else "format", v, [gold], "right")
        for s in spellings:
            add("spelling", s, [gold], "right")
        add("in-prose", f"I believe it is {gold}, as the passage says.", [gold], "right")
        add("wrong", WRONG.get(gold, "something else entirely"), [gold], "wrong")
        add("contains", f"{gold} or maybe something else, I am not sure at all about this one", [gold], "hack")
        add("contains", f"Possible answers include {gold}, Lyon, Berlin, Rome, Madrid and more", [gold], "hack")
        add("list", f"{gold}, Lyon, Berlin", [gold], "hack")
        add("list", f"Lyon or {gold}", [gold], "hack")
        add("empty-gold", gold, ["", gold], "right")
    for digits, words in NUMBER_WORDS:
        add("number-words", words, [digits], "right")
        add("number-words", digits, [words], "right")
        add("number-words", words, [digits, words], "right")
    for golds, preds in ALIASES:
        for p in preds:
            add("aliases", p, golds, "right")
        add("list", " / ".join(golds), golds, "hack")
    for p in ["", "unanswerable", "No answer"]:
        add("no-answer", p, [""], "right" if not p else "wrong")
    add("no-answer", "", ["Paris"], "wrong")
    add("accents", "Café de Flore", ["Cafe de Flore"], "right")
    add("accents", "Cafe\u0301 de Flore", ["Café de Flore"], "right")  # decomposed é
    add("accents", "Straße", ["Strasse"], "right")
    add("accents", "Zürich", ["Zurich"], "right")
    add("signs", "-5", ["5"], "wrong")
    add("signs", "5", ["-5"], "wrong")
    add("signs", "12 %", ["12%"], "right")
    add("signs", "C++", ["C"], "wrong")
    add("signs", "10:30", ["1030"], "wrong")
    add("signs", "1/2", ["12"], "wrong")
    add("yes-no", "yes sir", ["yes"], "right")
    add("yes-no", "no way", ["no"], "right")
    add("underscore", "New_York", ["New York"], "right")
    return out


# ------------------------------------------------------------------------------------------------- judging
def _head_module() -> Any:
    src = subprocess.run(["git", "show", "HEAD:src/crossgym/verifiers/text.py"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent).stdout
    spec = importlib.util.spec_from_loader("crossgym.verifiers._text_head", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, "text_head.py", "exec"), mod.__dict__)  # noqa: S102 - the repository's own file
    return mod


def modes(em: type, ss: type, squad: bool = True) -> dict[str, tuple[Any, str]]:
    m = {"em": (em(), "em"), "em_pa": (em(punctuation=True, articles=True), "em"),
         "f1": (ss(metric="token_f1"), "f1")}
    if squad:
        m["em_squad"] = (em(normalize="squad"), "em")
        m["f1_squad"] = (ss(metric="token_f1", normalize="squad"), "f1")
    return m


def judge(v: Any, pred: str, golds: list[str]) -> float:
    verdict = v.verify(v.task(golds), Completion.from_text(pred))
    return float(verdict.reward)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--show", type=int, default=4, help="examples shown per disagreement class")
    ap.add_argument("--head", action="store_true", help="also judge with HEAD's text.py")
    args = ap.parse_args()
    cs = cases()
    sets = {"": modes(ExactMatch, StringSimilarity)}
    if args.head:
        h = _head_module()
        sets["head:"] = modes(h.ExactMatch, h.StringSimilarity, squad=False)
    off = {name: [fn(c["pred"], c["golds"]) for c in cs] for name, fn in OFFICIAL.items()}
    print(f"{len(cs)} cases: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(c["kind"] for c in cs).items())))
    classes: dict[tuple[str, str, str, str], list[str]] = defaultdict(list)
    print(f"\n{'mode':<16}" + "".join(f"{o:>16}" for o in OFFICIAL))
    for prefix, ms in sets.items():
        for mname, (v, what) in ms.items():
            got = [judge(v, c["pred"], c["golds"]) for c in cs]
            row = []
            for oname in OFFICIAL:
                idx = 0 if what == "em" else 1
                agree = 0
                for c, g, o in zip(cs, got, off[oname], strict=True):
                    ok = abs(g - o[idx]) <= 1e-9
                    agree += ok
                    if not ok and not prefix and mname != "em":
                        way = "stricter" if g < o[idx] else "more lenient"
                        classes[(mname, c["kind"], way, oname)].append(
                            f"{c['pred']!r} vs {c['golds']!r}: crossgym {g:.3f}, {oname} {o[idx]:.3f}")
                row.append(f"{agree}/{len(cs)} {100 * agree / len(cs):5.1f}%")
            print(f"{prefix + mname:<16}" + "".join(f"{r:>16}" for r in row))
    # honest answers every official EM accepts that a crossgym EM mode fails, and hacks it passes
    print("\nhonest right answers every official EM accepts:")
    every = [i for i, c in enumerate(cs) if c["intent"] == "right" and all(off[o][i][0] == 1.0 for o in OFFICIAL)]
    for prefix, ms in sets.items():
        for mname, (v, what) in ms.items():
            if what != "em":
                continue
            fails = [cs[i] for i in every if judge(v, cs[i]["pred"], cs[i]["golds"]) < 1.0]
            hacks = [c for c in cs if c["intent"] in ("hack", "wrong") and judge(v, c["pred"], c["golds"]) == 1.0]
            print(f"  {prefix + mname:<14} fails {len(fails)}/{len(every)}"
                  + (": " + "; ".join(f"{c['pred']!r} vs {c['golds']!r}" for c in fails[:args.show]) if fails else "")
                  + f" | passes {len(hacks)} hack/wrong case(s)"
                  + (": " + "; ".join(f"{c['pred']!r}" for c in hacks[:args.show]) if hacks else ""))
    print("\ndisagreement classes of the modes but em (mode / kind / crossgym is ...): count per official, examples")
    merged: dict[tuple[str, str, str], dict[str, list[str]]] = defaultdict(dict)
    for (mname, kind, way, oname), items in classes.items():
        merged[(mname, kind, way)][oname] = items
    for key in sorted(merged):
        per = merged[key]
        print(f"  {' / '.join(key)}: " + ", ".join(f"{o} {len(per[o])}" for o in OFFICIAL if o in per))
        seen = list(dict.fromkeys(x.rsplit(":", 1)[0] + ": " + x.rsplit(": ", 1)[1].split(",")[0]
                                  for items in per.values() for x in items))
        for s in seen[:args.show]:
            print(f"      {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
