"""multiple_choice and numeric against the answer extractors of common evaluation harnesses: a generated set of
realistic model outputs with their gold letters (numbers), each judged by crossgym and by a reimplementation of
each harness's rule.

    OMP_NUM_THREADS=1 python bench/choice_reference.py [--show 8] [--options]

The rules, reimplemented from their public source (no code of theirs is used):

- ``se_mmlu``: openai/simple-evals ``mmlu_eval``: the response loses ``**``, ``$``, ``\\boxed``, ``\\text``, ``{`` and
  the like (``normalize_response``), then for each of its ~40 "Answer:" spellings in order (Answer, Respuesta,
  Réponse, 答案, ...) the first case-insensitive ``MARKER[ \\t]*([A-D]|Arabic/Bengali/fullwidth letters)``; the
  first spelling found wins, its letter is mapped to A-D and compared with the gold letter as written (so a
  lower-case "answer: b" fails, as there).
- ``se_gpqa``: simple-evals ``gpqa_eval``: the first ``(?i)Answer[ \\t]*:[ \\t]*\\$?([A-D])\\$?`` in the raw text.
- ``lm_strict``: lm-evaluation-harness GPQA CoT / MMLU flan-CoT "strict-match": the first "The answer is ",
  "answer is ", "The answer: " or "The final answer: " and the rest of its line but one character, compared with
  "(X)" ignoring case and ASCII punctuation.
- ``lm_flex``: lm-evaluation-harness "flexible-extract" (``multi_choice_regex``): the last "(X)"; else the last
  option text found in the lower-cased, unpunctuated response; else the last ": X"; same comparison.
- ``lm_best``: lm-evaluation-harness llama3 MMLU-Pro / ARC-chat: the last "[tT]he best answer is ([A-Z])".

Numeric (GSM8K-style), against crossgym's ``numeric``:

- ``gsm_strict``: lm-evaluation-harness gsm8k "strict-match": the first ``#### (-?[0-9.,]+)``; the gold and the pick
  lose commas, "$" and a final "." and must then be equal as text.
- ``gsm_flex``: gsm8k "flexible-extract": the last ``-?[$0-9.,]{2,}`` or ``-?[0-9]+``, compared as above.
- ``gsm_cot``: gsm8k-cot "strict-match": the first "The answer is (-?[0-9.,]+).".
- ``se_mgsm``: simple-evals ``mgsm_eval``: the last ``\\d+\\.?\\d*`` after the last "Answer", trailing zeros after
  a point and the point dropped.

Every case carries the intent of its writer: the one letter (number) the output honestly commits to, or none (a
hedge "A or B", a list, a refusal, an answer only inside <think>). The ideal verdict is "passes" exactly when the
intent is the gold. Each disagreement of crossgym with a harness is put in one class:

- ``crossgym misses``: crossgym fails an honest right answer the harness passes (a crossgym bug when every
  harness passes it);
- ``crossgym fooled``: crossgym passes what it should not;
- ``strict on purpose``: the harness passes a hedge, a list, a letter inside a word, an answer left in <think> or
  (numeric) a marked answer holding several numbers ("The answer is 72 (48 + 24)."), which crossgym refuses by
  design;
- ``harness misses``: crossgym passes an honest right answer the harness's format does not read;
- ``harness fooled``: the harness passes an honest answer that is wrong (an earlier letter, a word's initial).

Default: letter-only tasks ("B"); ``--options`` also gives crossgym the option texts. Not a timing.
"""

from __future__ import annotations

import argparse
import collections
import re
import string
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from crossgym.protocol.task import Completion
from crossgym.verifiers.choice import MultipleChoice
from crossgym.verifiers.numeric import Numeric

LETTERS = "ABCD"
QUESTIONS = [
    ["Lyon", "Paris", "Nice", "Lille"],
    ["Mitochondria", "Ribosome", "Nucleus", "Golgi apparatus"],
    ["2", "4", "8", "16"],
    ["Increases", "Decreases", "Stays the same", "Cannot be determined"],
    ["Covalent bond", "Ionic bond", "Hydrogen bond", "Metallic bond"],
]


@dataclass(frozen=True)
class Case:
    text: str
    gold: str  # a letter, or a number's text
    intent: str | None  # what the writer commits to; None: a hedge, a list, nothing
    family: str
    kind: str  # honest | hedge | think | none | several (numbers in a marked answer, refused by design)
    options: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------- the generated outputs
def _why(opts: list[str], x: str) -> str:
    return f"{opts[LETTERS.index(x)]} fits every clue"


def _other(x: str, k: int = 1) -> str:
    return LETTERS[(LETTERS.index(x) + k) % 4]


def _reason(opts: list[str], x: str) -> str:
    y = _other(x)
    return (f"Let's think step by step. {opts[LETTERS.index(y)]} does not fit the second clue, and "
            f"{opts[LETTERS.index(x)].lower()} matches what the question describes.")


#: honest outputs: (family, writer) with writer(letter, options) -> text
HONEST: list[tuple[str, Callable[[str, list[str]], str]]] = [
    ("answer-colon-last", lambda x, o: f"{_reason(o, x)}\n\nAnswer: {x}"),
    ("answer-colon-period", lambda x, o: f"{_reason(o, x)}\nAnswer: {x}."),
    ("bold-answer-paren", lambda x, o: f"{_reason(o, x)}\n\n**Answer:** ({x})"),
    ("bold-answer-letter", lambda x, o: f"{_reason(o, x)}\n\n**Answer: {x}**"),
    ("answer-is", lambda x, o: f"{_reason(o, x)} The answer is {x}."),
    ("answer-is-paren", lambda x, o: f"{_reason(o, x)} The answer is ({x})."),
    ("answer-is-paren-text", lambda x, o: f"{_reason(o, x)} The answer is ({x}) {o[LETTERS.index(x)]}."),
    ("correct-answer-bold", lambda x, o: f"{_reason(o, x)}\n\nThe correct answer is **{x}**."),
    ("correct-answer-bold-text",
     lambda x, o: f"{_reason(o, x)}\n\nThe correct answer is **{x}) {o[LETTERS.index(x)]}**."),
    ("best-answer", lambda x, o: f"{_reason(o, x)}\n\nThe best answer is {x}."),
    ("final-answer", lambda x, o: f"{_reason(o, x)}\n\nFinal Answer: {x}"),
    ("final-answer-bold", lambda x, o: f"{_reason(o, x)}\n\n**Final Answer:** {x}"),
    ("lowercase-answer", lambda x, o: f"{_reason(o, x).lower()}\nanswer: {x.lower()}"),
    ("upper-marker", lambda x, o: f"{_reason(o, x)}\nANSWER: {x}"),
    ("boxed", lambda x, o: f"{_reason(o, x)}\n\n\\boxed{{{x}}}"),
    ("boxed-dollar", lambda x, o: f"{_reason(o, x)} So the answer is $\\boxed{{{x}}}$."),
    ("boxed-text", lambda x, o: f"{_reason(o, x)}\n\n$\\boxed{{\\text{{{x}}}}}$"),
    ("answer-dollar", lambda x, o: f"{_reason(o, x)}\nAnswer: ${x}$"),
    ("answer-tag", lambda x, o: f"{_reason(o, x)}\n<answer>{x}</answer>"),
    ("think-then-answer", lambda x, o: f"<think>{_reason(o, x)}</think>\nAnswer: {x}"),
    ("think-then-letter", lambda x, o: f"<think>{_reason(o, x)}</think>\n\n{x}"),
    ("options-restated",
     lambda x, o: (f"Option {_other(x)} is wrong, {x} is right, and {_other(x, 2)} and {_other(x, 3)} are "
                   f"distractors.\nAnswer: {x}")),
    ("options-walkthrough",
     lambda x, o: "\n".join(f"({y}) {o[i]}: {'correct' if y == x else 'incorrect'}." for i, y in enumerate(LETTERS))
     + f"\n\nAnswer: {x}"),
    ("trailing-explanation",
     lambda x, o: f"Answer: {x}\n\nExplanation: {_why(o, x)}; option {_other(x)} fails the second clue."),
    ("answer-then-because", lambda x, o: f"Answer: {x}, because {_why(o, x).lower()}."),
    ("answer-is-because", lambda x, o: f"The answer is {x} because {_why(o, x).lower()}."),
    ("answer-with-text", lambda x, o: f"{_reason(o, x)}\nAnswer: {x}) {o[LETTERS.index(x)]}"),
    ("answer-with-dot-text", lambda x, o: f"{_reason(o, x)}\nAnswer: {x}. {o[LETTERS.index(x)]}"),
    ("answer-option-word", lambda x, o: f"{_reason(o, x)}\nAnswer: Option {x}"),
    ("answer-brackets", lambda x, o: f"{_reason(o, x)}\nAnswer: [{x}]"),
    ("answer-next-line", lambda x, o: f"{_reason(o, x)}\nAnswer:\n{x}"),
    ("heading-answer", lambda x, o: f"{_reason(o, x)}\n\n## Answer\n\n**{x}**"),
    ("i-choose", lambda x, o: f"{_reason(o, x)} I'll go with {x}."),
    ("therefore", lambda x, o: f"{_reason(o, x)} Therefore, the correct option is ({x})."),
    ("letter-only", lambda x, o: x),
    ("paren-only", lambda x, o: f"({x})"),
    ("es", lambda x, o: f"Analicemos cada opción.\nRespuesta: {x}"),
    ("fr", lambda x, o: f"Analysons chaque option.\nRéponse : {x}"),
    ("de", lambda x, o: f"Schauen wir uns die Optionen an.\nAntwort: {x}"),
    ("pt", lambda x, o: f"Vamos analisar.\nResposta: {x}"),
    ("zh", lambda x, o: f"逐项分析。\n答案：{x}"),
    ("fullwidth-letter", lambda x, o: f"{_reason(o, x)}\nAnswer: {chr(0xFF21 + LETTERS.index(x))}"),
    ("self-correction",
     lambda x, o: f"At first I thought the answer is {_other(x)}. Wait, that ignores the second clue.\nAnswer: {x}"),
    ("bold-answer-with-text", lambda x, o: f"{_reason(o, x)}\n\n**Answer: ({x}) {o[LETTERS.index(x)]}**"),
    ("answer-bold-letter", lambda x, o: f"{_reason(o, x)}\nAnswer: **{x}**"),
    ("answer-dash", lambda x, o: f"{_reason(o, x)}\nAnswer - {x}"),
    ("correct-answer-colon", lambda x, o: f"{_reason(o, x)}\nThe correct answer is: {x}"),
    ("answer-is-option", lambda x, o: f"{_reason(o, x)} So the answer is option {x}."),
    ("answer-paren-text", lambda x, o: f"{_reason(o, x)}\nAnswer: {x} ({o[LETTERS.index(x)]})"),
    ("answer-text-since", lambda x, o: f"Answer: ({x}) {o[LETTERS.index(x)]}, since {_why(o, x).lower()}."),
    ("my-final-answer", lambda x, o: f"{_reason(o, x)} My final answer is {x}."),
    ("letter-is-correct", lambda x, o: f"{_reason(o, x)} {x} is the correct answer."),
    ("answer-then-labels",
     lambda x, o: f"Answer: {x}\n\n({_other(x)}) is wrong: it fails the first clue. ({_other(x, 2)}) fails the "
                  "second."),
    ("answer-then-confidence", lambda x, o: f"{_reason(o, x)}\nAnswer: {x}\nConfidence: 90%"),
    ("boxed-textbf", lambda x, o: f"{_reason(o, x)}\n\\[\\boxed{{\\textbf{{{x}}}}}\\]"),
    ("because-marker", lambda x, o: f"{_reason(o, x)}\nAnswer: Because of the second clue, it's {x}."),
    ("es-sentence", lambda x, o: f"Analicemos cada opción. La respuesta correcta es {x}."),
    ("word-initial-marker",
     lambda x, o: f"{_reason(o, x)}\nAnswer: {'Definitely' if x != 'D' else 'Clearly'} {x}"),
]

#: outputs that commit to no single option: (family, kind, writer)
HEDGES: list[tuple[str, str, Callable[[str, list[str]], str]]] = [
    ("or", "hedge", lambda x, o: f"{_reason(o, x)}\nThe answer is {x} or {_other(x)}."),
    ("or-paren", "hedge", lambda x, o: f"{_reason(o, x)}\nThe answer is ({x}) or ({_other(x)})."),
    ("answer-or", "hedge", lambda x, o: f"{_reason(o, x)}\nAnswer: {x} or {_other(x)}"),
    ("answer-and", "hedge", lambda x, o: f"Answer: {x} and {_other(x, 2)}"),
    ("answer-list", "hedge", lambda x, o: f"Answer: {x}, {_other(x)}, {_other(x, 2)}"),
    ("all-options", "hedge", lambda x, o: "Answer: A, B, C, D"),
    ("label-list", "hedge", lambda x, o: "(A) (B) (C) (D)"),
    ("boxed-two", "hedge", lambda x, o: f"\\boxed{{{x}}} or \\boxed{{{_other(x)}}}"),
    ("tag-lines", "hedge", lambda x, o: f"<answer>{x}\n{_other(x)}</answer>"),
    ("undecided", "hedge", lambda x, o: f"I can't decide between {x} and {_other(x)}; both look plausible."),
    ("either", "hedge", lambda x, o: f"Either ({x}) or ({_other(x)}) could be correct."),
    ("answer-or-possibly", "hedge", lambda x, o: f"Answer: {x} (or possibly {_other(x)})"),
    ("answer-slash", "hedge", lambda x, o: f"Answer: {x}/{_other(x)}"),
    ("word-initial", "hedge", lambda x, o: f"{_reason(o, x)}\nAnswer: {['All', 'Both', 'Cannot say', 'Depends'][LETTERS.index(x)]}"),
    ("none-of", "none", lambda x, o: "None of the options is correct."),
    ("refusal", "none", lambda x, o: "I'm not sure; I would need more information to answer."),
    ("think-only", "think", lambda x, o: f"<think>{_reason(o, x)}\nAnswer: {x}</think>"),
    ("think-unclosed", "think", lambda x, o: f"<think>{_reason(o, x)} The answer is ({x})."),
]


def choice_cases() -> list[Case]:
    out = []
    for qi, opts in enumerate(QUESTIONS):
        for xi, x in enumerate(LETTERS):
            if (qi + xi) % 2:  # half the grid keeps the set a few hundred; every letter still shows per family
                continue
            for family, write in HONEST:
                text = write(x, opts)
                out.append(Case(text, x, x, family, "honest", tuple(opts)))  # right
                out.append(Case(text, _other(x, 2), x, family, "honest", tuple(opts)))  # wrong
            for family, kind, write in HEDGES:
                text = write(x, opts)
                out.append(Case(text, x, None, family, kind, tuple(opts)))
    return out


def numeric_cases() -> list[Case]:
    steps = "Natalia sold 48 clips in April and half as many in May: 48 / 2 = 24. In total 48 + 24 = {n}."
    writers: list[tuple[str, Callable[[str], str]]] = [
        ("hashes", lambda n: f"{steps.format(n=n)}\n#### {n}"),
        ("answer-is", lambda n: f"{steps.format(n=n)} The answer is {n}."),
        ("answer-colon", lambda n: f"{steps.format(n=n)}\nAnswer: {n}"),
        ("boxed", lambda n: f"{steps.format(n=n)}\n\\boxed{{{n}}}"),
        ("final-boxed", lambda n: f"{steps.format(n=n)}\nThe final answer is $\\boxed{{{n}}}$."),
        ("last-number", lambda n: steps.format(n=n)),
        ("currency", lambda n: f"{steps.format(n=n)} The answer is ${n}."),
        ("unit", lambda n: f"{steps.format(n=n)}\nAnswer: {n} clips"),
        ("bold", lambda n: f"{steps.format(n=n)}\n**Answer:** {n}"),
        ("trailing-numbers", lambda n: f"Answer: {n}\n\nExplanation: 48 in April and 24 in May."),
        ("hashes-then-prose", lambda n: f"{steps.format(n=n)}\n#### {n}\nThat took 2 steps."),
        ("answer-then-sentence", lambda n: f"The answer is {n}. She sold 24 of them in May."),
        ("decimal-zeros", lambda n: f"{steps.format(n=n)}\nAnswer: {n}.00"),
        ("thousands", lambda n: f"{steps.format(n=n)} So 1000 * {n} = {int(n) * 1000:,}.\nAnswer: {int(n) * 1000:,}"),
        ("lowercase", lambda n: f"{steps.format(n=n).lower()}\nanswer: {n}"),
        ("es", lambda n: f"Vendió 48 y luego 24.\nRespuesta: {n}"),
        ("answer-is-colon", lambda n: f"{steps.format(n=n)}\nThe answer is: {n}"),
        ("think-then-answer", lambda n: f"<think>{steps.format(n=n)}</think>\nThe answer is {n}."),
        ("bold-last", lambda n: f"{steps.format(n=n)}\n\n**{n}**"),
        ("answer-dollar-cents", lambda n: f"{steps.format(n=n)}\nAnswer: ${n}.00"),
        ("answer-next-line", lambda n: f"{steps.format(n=n)}\nAnswer:\n{n}"),
        ("hashes-bold", lambda n: f"{steps.format(n=n)}\n#### **{n}**"),
    ]
    hedges: list[tuple[str, str, Callable[[str], str]]] = [
        ("or", "hedge", lambda n: f"{steps.format(n=n)} The answer is {n} or {int(n) + 1}."),
        ("boxed-or", "hedge", lambda n: f"\\boxed{{{n}}} or \\boxed{{{int(n) + 1}}}"),
        ("hashes-or", "hedge", lambda n: f"{steps.format(n=n)}\n#### {n} or {int(n) + 1}"),
        ("between", "hedge", lambda n: f"Answer: between {int(n) - 1} and {int(n) + 1}"),
        ("think-only", "think", lambda n: f"<think>{steps.format(n=n)}\nThe answer is {n}.</think>"),
        # honest, but a marked answer holding several numbers is malformed by design ("5 (or 6)" reads the same)
        ("with-work", "several", lambda n: f"The answer is {n} (48 + 24)."),
    ]
    out = []
    for n in ("72", "18", "5", "105", "1234"):
        for family, write in writers:
            if family == "thousands":
                out.append(Case(write(n), str(int(n) * 1000), str(int(n) * 1000), family, "honest"))
                out.append(Case(write(n), str(int(n) * 1000 + 500), str(int(n) * 1000), family, "honest"))
                continue
            out.append(Case(write(n), n, n, family, "honest"))
            out.append(Case(write(n), str(int(n) + 3), n, family, "honest"))
        for family, kind, write in hedges:
            out.append(Case(write(n), n, None, family, kind))
    return out


# ----------------------------------------------------------------------------------------------------- the rules
_SE_MARKERS = [
    r"Answer\s*:", r"Answer\s*:\u200b\u200b\u200b\u200b\u200b\u200b", r"উত্তর\s*:", r"उत्तर\s*:", r"উত্তরঃ",
    r"Antwort\s*:", r"답변\s*:", r"정답\s*:", r"답\s*:", r"答案\s*：", r"答案\s*:", r"答\s*：", r"答\s*:", r"答复\s*：",
    r"答曰\s*：", r"الإجابة:", r"الجواب:", r"إجابة:", r"الإجابة النهائية:", r"الإجابة الصحيحة:",
    r"الإجابة الصحيحة هي:", r"الإجابة هي:", r"الجواب النهائي:", r"Respuesta\s*:", r"Risposta\s*:", r"答え\s*:",
    r"答え\s*：", r"回答\s*:", r"回答\s*：", r"解答\s*:", r"Jawaban\s*:", r"Réponse\s*:", r"Resposta\s*:", r"Jibu\s*:",
    r"Idahun\s*:", r"Ìdáhùn\s*:", r"Idáhùn\s*:", r"Àmọ̀nà\s*:", r"Àdáhùn\s*:", r"Ànúgọ\s*:", r"Àṣàyàn\s*:",
]
_SE_LETTER = "([A-D]|[أ-د]|[অ]|[ব]|[ড]|[ঢ]|[Ａ]|[Ｂ]|[Ｃ]|[Ｄ])"
_SE_MAP = str.maketrans({"أ": " A", "ب": " B", "ج": " C", "د": " D", "অ": " A", "ব": " B", "ড": " C", "ঢ": " D",
                         "Ａ": " A", "Ｂ": " B", "Ｃ": " C", "Ｄ": " D"})
_SE_STRIP = ("**", "$\\boxed{", "}$", "\\$", "$\\text{", "$", "\\mathrm{", "\\{", "\\text", "\\(", "\\mathbf{", "{",
             "\\boxed")


def se_mmlu(text: str, gold: str, opts: tuple[str, ...]) -> bool | None:
    for s in _SE_STRIP:
        text = text.replace(s, "")
    for marker in _SE_MARKERS:
        m = re.search(f"(?i){marker}[ \t]*{_SE_LETTER}", text)
        if m:
            return m.group(1).translate(_SE_MAP).strip() == gold
    return None


def se_gpqa(text: str, gold: str, opts: tuple[str, ...]) -> bool | None:
    m = re.search(r"(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?", text)
    return None if m is None else m.group(1) == gold


def _lm_equal(pred: str, gold: str, ignore: tuple[str, ...] = ()) -> bool:
    """lm-evaluation-harness exact_match with ignore_case and ignore_punctuation (ASCII punctuation)."""
    drop = str.maketrans("", "", string.punctuation)
    for r in ignore:
        pred, gold = re.sub(r, "", pred), re.sub(r, "", gold)
    return pred.lower().translate(drop) == gold.lower().translate(drop)


def _lm_regex(text: str, pattern: str, select: int) -> str | None:
    found = re.findall(pattern, text)
    if not found:
        return None
    m = found[select]
    if isinstance(m, tuple):
        m = next((g for g in m if g), None)
        if m is None:
            return None
    return str(m).strip()


_LM_STRICT = r"((?<=The answer is )(.*)(?=.)|(?<=answer is )(.*)(?=.)|(?<=The answer: )(.*)(?=.)|(?<=The final answer: )(.*)(?=.))"


def lm_strict(text: str, gold: str, opts: tuple[str, ...]) -> bool | None:
    pred = _lm_regex(text, _LM_STRICT, 0)
    return None if pred is None else _lm_equal(pred, f"({gold})")


_UNICODE_PUNCT = dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))


def lm_flex(text: str, gold: str, opts: tuple[str, ...]) -> bool | None:
    pred = _lm_regex(text, r"(\([A-Z]\))", -1)
    if not pred:
        def ignores(s: str) -> str:
            return s.lower().translate(_UNICODE_PUNCT)
        to_letter = {ignores(c.strip()): f"({LETTERS[i]})" for i, c in enumerate(opts)}
        pred = _lm_regex(ignores(text), "|".join(re.escape(ignores(c.strip())) for c in opts), -1) if opts else None
        pred = to_letter.get(pred, pred) if pred else None
        if not pred:
            pred = _lm_regex(text, r":[\s]*(A|B|C|D)", -1)
            pred = f"({pred})" if pred else None
    return None if pred is None else _lm_equal(pred, f"({gold})")


def lm_best(text: str, gold: str, opts: tuple[str, ...]) -> bool | None:
    pred = _lm_regex(text, r"[tT]he best answer is ([A-Z])", -1)
    return None if pred is None else _lm_equal(pred, gold, (r"\$", r"\.$"))


CHOICE_RULES: dict[str, Callable[[str, str, tuple[str, ...]], bool | None]] = {
    "se_mmlu": se_mmlu, "se_gpqa": se_gpqa, "lm_strict": lm_strict, "lm_flex": lm_flex, "lm_best": lm_best}

_GSM_IGNORE = (",", r"\$", r"(?s).*#### ", r"\.$")


def _gsm(pred: str | None, gold: str) -> bool | None:
    """gsm8k's exact_match: ignore_case, regexes_to_ignore, punctuation kept."""
    return None if pred is None else _gsm_norm(pred) == _gsm_norm(gold)


def _gsm_norm(s: str) -> str:
    for r in _GSM_IGNORE:
        s = re.sub(r, "", s)
    return s.lower()


def gsm_strict(text: str, gold: str) -> bool | None:
    return _gsm(_lm_regex(text, r"#### (\-?[0-9\.\,]+)", 0), gold)


def gsm_flex(text: str, gold: str) -> bool | None:
    return _gsm(_lm_regex(text, r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1), gold)


def gsm_cot(text: str, gold: str) -> bool | None:
    return _gsm(_lm_regex(text, r"The answer is (\-?[0-9\.\,]+).", 0), gold)


def se_mgsm(text: str, gold: str) -> bool | None:
    if "Answer" not in text:
        return None
    nums = re.findall(r"\d+\.?\d*", text.split("Answer")[-1].strip().replace(",", ""))
    if not nums:
        return None
    pred = nums[-1].rstrip(".")
    if "." in pred:
        pred = pred.rstrip("0").rstrip(".")
    return pred == gold.replace(",", "")


NUMERIC_RULES: dict[str, Callable[[str, str], bool | None]] = {
    "gsm_strict": gsm_strict, "gsm_flex": gsm_flex, "gsm_cot": gsm_cot, "se_mgsm": se_mgsm}


# ------------------------------------------------------------------------------------------------------ comparing
def _classify(case: Case, ours: bool, theirs: bool) -> str:
    ideal = case.intent is not None and case.intent == case.gold
    if ours != ideal:
        return "crossgym misses" if ideal else "crossgym fooled"
    if case.kind != "honest":
        return "strict on purpose"
    return "harness misses" if ideal else "harness fooled"


def _report(title: str, cases: list[Case], ours: list[bool], found: dict[str, list[bool | None]], show: int) -> int:
    """Print the agreement per rule (on every output, and on those where the rule finds an answer: None is none,
    a fail) and its disagreements by class; return the number of crossgym bugs (honest right answers that a rule
    passes and crossgym fails, or anything crossgym passes that it should not)."""
    rules = {name: [bool(v) for v in verdicts] for name, verdicts in found.items()}
    n = len(cases)
    ideal = [c.intent is not None and c.intent == c.gold for c in cases]
    print(f"\n== {title}: {n} outputs ({sum(c.kind == 'honest' for c in cases)} honest, "
          f"{sum(c.kind != 'honest' for c in cases)} hedges, lists, refusals, <think>-only); "
          f"crossgym right on {sum(o == i for o, i in zip(ours, ideal, strict=True))}/{n}")
    print(f"{'rule':<11} {'agree, all':>16} {'where it reads one':>20}   disagreements by class")
    for name, verdicts in rules.items():
        classes: collections.Counter[str] = collections.Counter()
        families: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for c, o, t in zip(cases, ours, verdicts, strict=True):
            if o != t:
                k = _classify(c, o, t)
                classes[k] += 1
                families[k][c.family] += 1
        agree = n - sum(classes.values())
        read = [i for i, v in enumerate(found[name]) if v is not None]
        agree_read = sum(ours[i] == verdicts[i] for i in read)
        print(f"{name:<11} {agree:>5}/{n} {100 * agree / n:5.1f}% {agree_read:>7}/{len(read)} "
              f"{100 * agree_read / max(1, len(read)):5.1f}%   "
              + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())))
        if show:
            for k in sorted(families):
                print(f"{'':<30}{k}: " + ", ".join(f"{f} {v}" for f, v in families[k].most_common(show)))
    bugs = 0
    for i, c in enumerate(cases):
        someone = any(v[i] for v in rules.values())
        if (ideal[i] and not ours[i] and someone) or (ours[i] and not ideal[i]):
            bugs += 1
            if bugs <= show:
                print(f"  BUG [{c.family}] gold {c.gold}, intent {c.intent}: {c.text[-90:]!r}")
    print(f"crossgym wrong: {bugs} (an honest right answer a rule passes and crossgym fails, or a pass crossgym "
          "should not give)")
    return bugs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--show", type=int, default=6, help="families shown per class, bugs listed (0: none)")
    ap.add_argument("--options", action="store_true", help="give multiple_choice the option texts too")
    args = ap.parse_args(argv)

    mc = MultipleChoice()
    cases = choice_cases()
    ours = []
    for c in cases:
        answer = {"answer": c.gold, "options": list(c.options)} if args.options else c.gold
        ours.append(bool(mc.verify(mc.task(answer), Completion.from_text(c.text)).passed))
    rules: dict[str, list[bool | None]] = {name: [rule(c.text, c.gold, c.options) for c in cases] for name, rule in CHOICE_RULES.items()}
    print("agree, all: same pass/fail on every output (a rule that reads nothing fails it); where it reads one: on\n"
          "the outputs where the rule finds an answer. Classes: see the module docstring.")
    bugs = _report("multiple_choice" + (" (with option texts)" if args.options else " (letter-only tasks)"),
                   cases, ours, rules, args.show)

    num = Numeric()
    ncases = numeric_cases()
    nours = [bool(num.verify(num.task(c.gold), Completion.from_text(c.text)).passed) for c in ncases]
    nrules: dict[str, list[bool | None]] = {name: [rule(c.text, c.gold) for c in ncases]
                                            for name, rule in NUMERIC_RULES.items()}
    bugs += _report("numeric (GSM8K-style)", ncases, nours, nrules, args.show)
    return 1 if bugs else 0


if __name__ == "__main__":
    raise SystemExit(main())
