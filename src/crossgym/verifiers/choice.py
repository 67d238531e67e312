"""multiple_choice: the chosen option, read from a letter or the option's text in many phrasings."""

from __future__ import annotations

import re
import string
from typing import Any

from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.extract import locate_answer, nfkc, normalize, sentence_answer, strip_think

_DECOR = str.maketrans("", "", "*_`$")
_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}")
_ALONE = re.compile(r"[(\[]?\s*([A-Za-z])\s*[)\]]?\s*[.:)]?")
_LEAD = re.compile(r"(?:(?i:option|choice)\s+)?(?:[(\[]([A-Z])[)\]]|([A-Z])(?:[.:)]|\s*$))")
#: an option label after the first one on the line: "(B)", "[C]", "D)", "B.", "C:"
_LISTED = re.compile(r"(?<![A-Za-z])(?:[(\[]([A-Z])[)\]]|([A-Z])[.:)](?!\w))")
_PHRASE = re.compile(
    r"(?i:answer|option|choice)\s{0,3}(?i:is|would be|should be)?\s{0,3}[:\-]?\s{0,3}(?i:option\s|choice\s)?"
    r"[(\[]?([A-Z])[)\]]?(?![\w'])"
    r"|(?i:I(?:'ll|'d| will| would)?\s(?:choose|pick|select|go with)|selected|select|choose)\s(?i:option\s)?"
    r"[(\[]?([A-Z])[)\]]?(?![\w'])"
    r"|(?i:it is|it's|it must be|must be)\s(?i:option\s)?[(\[]?([A-Z])[)\]]?(?=\s{0,3}(?:[.!,;]|$))"
    # version 7: "B is the correct answer."
    r"|(?<![\w'])(?<![Ss]tatement )(?i:option\s|choice\s)?[(\[]?([A-Z])[)\]]?\s(?i:is\s(?:the\s)?(?:correct|right|best))"
    r"(?![\w'])")
#: "Respuesta: C", "La réponse est C", "答案：C" (version 7; simple-evals reads these spellings): the rest of the line
#: after the last one is the answer, as after "Answer:"
_FOREIGN_MARKER = re.compile(
    r"(?i:respuesta|r[ée]ponse|antwort|resposta|risposta|jawaban|jibu|ответ)"
    r"(?:\s(?i:correcta|correcte|correta|corretta|richtige|final|finale|finala|benar))?"
    r"(?:\s*[:：]|\s(?i:es|est|ist|é|è|adalah)\s)[ \t]*"
    r"|(?:正确答案|答案|答え|回答|解答|正解|答|정답|답변|답|उत्तर|উত্তর|الإجابة|الجواب|إجابة)\s*(?:[:：ঃ]|是|为|は)[ \t]*")
#: a marked answer that starts with its one option letter: "B (Paris)", "B, because ...", "(B) since ...",
#: "Definitely B"
_FIRST = re.compile(r"(?:(?i:definitely|clearly|certainly|surely|obviously)\s+)?(?:(?i:option|choice)\s+)?"
                    r"[(\[]?([A-Z])[)\]]?(?![\w'])")
#: a lone capital letter in a marked answer; "I" before a lower-case word or an apostrophe is the pronoun
_LONE = re.compile(r"(?<![A-Za-z])([A-Z])(?![A-Za-z'])(?<!I(?=\s[a-z]))")


#: what joins two stated choices into a hedge when no sentence ends between them ("A is correct or B is correct")
_HEDGE = re.compile(r"(?i:\bor\b|\band\b|\beither\b|/)")


def _no_hedge(text: str, picks: list[tuple[re.Match[str], str]]) -> None:
    """Malformed when the last stated choice and the one before it (another letter) are joined in one sentence
    by "or"/"and"/"/": "A is the correct answer or B is the correct answer" hedges. A later sentence that picks
    again ("I choose A. Actually, I choose B.") is a change of mind, and the last choice stands."""
    last_match, last = picks[-1]
    for m, letter in reversed(picks[:-1]):
        if letter != last:
            between = text[m.end():last_match.start()]
            if _HEDGE.search(between) and not re.search(r"[.!?;\n]", between):
                raise Malformed(f"the answer names several options: {', '.join(sorted({letter, last}))}")
            return


def _letters(n: int) -> str:
    return string.ascii_uppercase[:n]


class MultipleChoice(BaseVerifier):
    """The chosen option is the correct one.

    answer: the correct letter ("B"), or {"answer": "B", "options": ["Paris", "Lyon", ...]} (options in letter
    order; the model may then answer with the option text too). Options may also come from task.metadata["options"].
    params: num_options (default: the number of options, else 10: letters A-J), extract ("auto", as exact_match).
    Reads "B", "(B)", "B.", "**B**", "\\boxed{B}", "<answer>B</answer>", "Answer: B", "The correct option is (B)",
    "I choose B", "B) Paris", "Answer: B, because ...", "Respuesta: B", "答案：B", or the option text alone. Naming
    two different options is malformed.
    """

    name = "multiple_choice"
    # 2: <answer> tags are case-sensitive, like XML; 3: the answer marker in any case mix; 4: a line listing the
    # options ("(A) (B) (C) (D)") picks none, "answer is: B" reads B; 5: an answer over 2,000,000 characters in
    # NFKC is malformed (1 MB of U+FDFA took 4.1 s); 6: a marked answer with other option letters alone on later lines
    # names several options ("<answer>A\nB\nC\nD</answer>" chose A); 7: answers the harnesses read that were
    # malformed: a marked answer starting with its one letter ("Answer: B, because ...", "Answer: B (Paris)", "The
    # answer is B because ..."; "I" before a lower-case word is the pronoun), non-English markers ("Respuesta: C",
    # "答案：C"), fullwidth letters ("Answer: Ｃ"), "I'll go with B", "B is the correct answer"
    version = "7"
    description = "multiple-choice letter or option text from varied phrasings"

    def __init__(self, *, num_options: int | None = None, extract: str = "auto", **params: Any) -> None:
        super().__init__(**params)
        from crossgym.protocol.errors import VerifierError
        from crossgym.verifiers.extract import check_extract

        if num_options is not None and (isinstance(num_options, bool) or not isinstance(num_options, int)
                                        or not 2 <= num_options <= 26):
            raise VerifierError(f"verifier 'multiple_choice': num_options must be 2..26, got {num_options!r} "
                                "(fix: pass the number of options A, B, ... the prompts offer, e.g. 4)")
        self.num_options = num_options
        self.extract = check_extract(extract, self.name)

    def _task_parts(self, task: Task) -> tuple[str, list[str]]:
        a = task.answer
        options = task.metadata.get("options") if isinstance(task.metadata, dict) else None
        if isinstance(a, dict):
            options = a.get("options", options)
            a = a.get("answer")
        if options is not None and (not isinstance(options, list) or not all(isinstance(o, str) for o in options)
                                    or not 2 <= len(options) <= 26):
            raise BadTask("options must be a list of 2..26 strings")
        if not isinstance(a, str) or not a.strip():
            raise BadTask(f"multiple_choice answer must be a letter, got {a!r}")
        a = a.strip().strip("()").upper()
        letters = _letters(self.num_options or (len(options) if options else 10))
        if options and len(a) > 1:  # the answer given as option text
            norm = [normalize(o, punctuation=True) for o in options]
            t = normalize(a, punctuation=True)
            if t in norm:
                a = letters[norm.index(t)]
        if len(a) != 1 or a not in letters:
            raise BadTask(f"multiple_choice answer {a!r} is not one of the letters {letters}")
        return a, list(options or [])

    def _locate(self, text: str) -> tuple[str, str]:
        """``locate_answer``, then where it found no marked answer, the last non-English answer marker's line."""
        try:
            span, where = locate_answer(text, self.extract)
        except Malformed:
            if self.extract != "marker":
                raise
            span, where = "", "none"
        if where in ("full", "none") and self.extract in ("auto", "marker"):
            body = strip_think(text)
            last = None
            for last in _FOREIGN_MARKER.finditer(body):  # noqa: B007
                pass
            found = sentence_answer(body[last.end():].split("\n", 1)[0]) if last is not None else ""
            if found:
                return found, "marker"
            if where == "none":
                return locate_answer(text, self.extract)  # raises its Malformed
        return span, where

    def choose(self, text: str, letters: str, options: list[str]) -> str:
        """The one letter the completion picks; Malformed when there is none or there are several."""
        span, where = self._locate(text)
        if not span.isascii():  # fullwidth "Ｂ", mathematical bold letters (version 7)
            span = nfkc(span)
        span = _WRAP.sub(r"\1", span).translate(_DECOR).strip()
        if not span:
            raise Malformed("empty answer")
        first_line = span.split("\n", 1)[0].strip()
        m = _ALONE.fullmatch(first_line) if len(first_line) <= 8 else None
        if m and m.group(1).upper() in letters and (where != "full" or first_line == span):
            letter = m.group(1).upper()
            others = {x for x in self._lone_letters(span.split("\n")[1:], letters) if x != letter}
            if others:  # "<answer>A\nB\nC\nD</answer>" lists the options one a line (version 6: it chose A)
                raise Malformed(f"the answer names several options: {', '.join(sorted(others | {letter}))}")
            return letter
        if where != "full":  # a marked answer span: a letter list is ambiguous
            found = {x.upper() for x in _LONE.findall(span) if x in letters}
            if len(found) > 1:
                raise Malformed(f"the answer names several options: {', '.join(sorted(found))}")
            m = _FIRST.match(span)
            if m and {m.group(1)} == found:  # "B (Paris)", "B, because ..." (version 7: malformed)
                return self._agree(m.group(1), span[m.end():], letters, options)
        m = _LEAD.match(first_line)
        if m and (m.group(1) or m.group(2)) in letters:
            letter = m.group(1) or m.group(2)
            listed = {x or y for x, y in _LISTED.findall(first_line[m.end():])} & set(letters)
            if listed - {letter}:  # "(A) (B) (C) (D)" lists the options, it picks none of them
                raise Malformed(f"the answer lists several options: {', '.join(sorted(listed | {letter}))}")
            return self._agree(letter, first_line[m.end():], letters, options)
        tail = span[-2000:]
        picks = [(m, next(g for g in m.groups() if g)) for m in _PHRASE.finditer(tail)]
        picks = [(m, p) for m, p in picks if p in letters]
        if picks:
            _no_hedge(tail, picks)
            return picks[-1][1]
        if options:
            t = normalize(span, punctuation=True)
            norm = [normalize(o, punctuation=True) for o in options]
            if t in norm:
                return letters[norm.index(t)]
            hits = {i for i, o in enumerate(norm) if o and re.search(rf"(?<!\w){re.escape(o)}(?!\w)", t)}
            if len(hits) == 1 and where != "full":
                return letters[hits.pop()]
            if len(hits) > 1:
                raise Malformed("the answer names several options")
        raise Malformed(f"no option letter found in {clip(span, 60)!r}")

    @staticmethod
    def _lone_letters(lines: list[str], letters: str) -> set[str]:
        """The option letters standing alone on a line ("C", "(C)", "C."), as the first line's is read."""
        found = set()
        for line in lines:
            line = line.translate(_DECOR).strip()
            m = _ALONE.fullmatch(line) if len(line) <= 8 else None
            if m and m.group(1).upper() in letters:
                found.add(m.group(1).upper())
        return found

    def _agree(self, letter: str, rest: str, letters: str, options: list[str]) -> str:
        """"B) Lyon" when B is Paris and A is Lyon names two options: malformed."""
        rest = normalize(rest, punctuation=True)
        if options and rest:
            norm = [normalize(o, punctuation=True) for o in options]
            if rest in norm and letters[norm.index(rest)] != letter:
                raise Malformed(f"letter {letter} and option text {clip(rest, 30)!r} disagree")
        return letter

    def score(self, task: Task, completion: Completion) -> Verdict:
        correct, options = self._task_parts(task)
        letters = _letters(self.num_options or (len(options) if options else 10))
        got = self.choose(completion.text, letters, options)
        ok = got == correct
        return Verdict.ok(float(ok), reason=f"chose {got}, correct {correct}")

    @classmethod
    def examples(cls) -> list[Example]:
        opts = {"answer": "B", "options": ["Lyon", "Paris", "Nice", "Lille"]}
        return [
            cls.example("C", "The correct answer is (C).", "pass"),
            cls.example(opts, "Paris", "pass", "option text"),
            cls.example("B", "**B**", "pass", "markdown"),
            cls.example("A", "<answer>D</answer>", "fail"),
            cls.example("A", "Answer: A, B, C, D", "malformed", "listing every option"),
            cls.example("A", "I am not sure.", "malformed", "no choice"),
        ]
