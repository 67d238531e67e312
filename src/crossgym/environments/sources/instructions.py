"""instructions: IFEval-style writing prompts with checkable constraints, scored by ``instructions``.

difficulty = how many constraints (1, 2 or 3, drawn without conflicts). Counting bounds are set around a reference
response the generator builds to satisfy every constraint (``metadata["reference"]``, checked by the verifier at
generation time), so every task is satisfiable.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from crossgym.environments.sources.common import check_count, check_int, make_task, rng_for
from crossgym.protocol.task import Task

TOPICS = ["the ocean", "city gardens", "night trains", "honeybees", "old libraries", "winter hiking", "tea", "volcanoes",
          "public parks", "lighthouses", "bread baking", "desert stars", "river boats", "chess clubs", "rainy days"]
NOUNS = ["people", "history", "weather", "mornings", "journeys", "colour", "seasons", "markets", "evenings", "gardens",
         "friends", "memories"]
ADJS = ["quiet", "bright", "careful", "simple", "gentle", "lively", "calm", "strange"]
KEYWORDS = ["curious", "balance", "wonder", "patience", "rhythm", "harvest", "compass", "lantern", "echo", "meadow"]
PREFIXES = ["Here is my answer", "In short", "Let me explain"]
SUFFIXES = ["Is there anything else I can help with?", "That is all.", "Thanks for reading."]
KINDS = ["title", "starts_with", "ends_with", "bullets", "keywords_include", "keywords_exclude", "lowercase",
         "uppercase", "no_commas", "postscript", "highlights", "placeholders", "word_count"]
CONFLICTS = {frozenset({"lowercase", "uppercase"}), frozenset({"lowercase", "postscript"}),
             frozenset({"lowercase", "title"}), frozenset({"uppercase", "placeholders"})}


def _conflicts(chosen: list[str], kind: str) -> bool:
    return any(frozenset({c, kind}) in CONFLICTS for c in chosen)


def _sentence(rng: random.Random, topic: str) -> str:
    a, b = rng.choice(NOUNS), rng.choice(ADJS)
    return rng.choice([f"I think about {topic} and the {a} they bring.", f"There is a {b} side to {topic}.",
                       f"Many stories about {a} start with {topic}.", f"{topic[0].upper()}{topic[1:]} can feel {b}."])


def build(rng: random.Random, topic: str, kinds: list[str]) -> tuple[str, list[dict[str, Any]], list[str]]:
    """(reference response, constraints, instruction lines) for the chosen constraint kinds."""
    constraints: list[dict[str, Any]] = []
    lines_out: list[str] = []
    body: list[str] = [_sentence(rng, topic) for _ in range(rng.randint(2, 3))]
    text_parts: list[str] = []
    if "title" in kinds:
        text_parts.append(f"<<{topic.title()}>>")
        constraints.append({"type": "title"})
        lines_out.append("Give the response a title wrapped in double angular brackets, such as <<my title>>.")
    if "starts_with" in kinds:
        prefix = rng.choice(PREFIXES)
        body[0] = f"{prefix}: {body[0][0].lower()}{body[0][1:]}"
        constraints.append({"type": "starts_with", "prefix": prefix})
        lines_out.append(f'Start the response with "{prefix}".')
        if "title" in kinds:  # the title would come first: put it after the opening
            text_parts.clear()
            body.insert(1, f"<<{topic.title()}>>")
    if "keywords_include" in kinds:
        kws = rng.sample(KEYWORDS, 2)
        body.append(f"It asks for {kws[0]} and {kws[1]}.")
        constraints.append({"type": "keywords_include", "keywords": kws})
        lines_out.append(f"Use the words \"{kws[0]}\" and \"{kws[1]}\".")
    if "highlights" in kinds:
        k = rng.randint(1, 3)
        body.append(" and ".join(f"*{w}*" for w in rng.sample(NOUNS, k)) + " matter most.")
        constraints.append({"type": "highlighted_sections", "min": k})
        lines_out.append(f"Highlight at least {k} section{'s' if k > 1 else ''} with markdown, like *this*.")
    if "placeholders" in kinds:
        k = rng.randint(1, 2)
        body.append("Write to " + " at ".join(["[name]", "[address]"][:k]) + " for more.")
        constraints.append({"type": "placeholders", "min": k})
        lines_out.append(f"Include at least {k} placeholder{'s' if k > 1 else ''} in square brackets, like [name].")
    if "bullets" in kinds:
        k = rng.randint(2, 4)
        bullets = [f"* {s}" for s in (_sentence(rng, topic) for _ in range(k))]
        body.append("\n".join(bullets))
        constraints.append({"type": "bullet_count", "exactly": k})
        lines_out.append(f"Include exactly {k} markdown bullet points (lines starting with '* ').")
    tail: list[str] = []
    if "postscript" in kinds:
        tail.append(f"P.S. I still like {topic}.")
        constraints.append({"type": "postscript", "marker": "P.S."})
        lines_out.append("End with a postscript starting with P.S.")
    if "ends_with" in kinds:
        suffix = rng.choice(SUFFIXES)
        if tail:
            tail[-1] = tail[-1] + " " + suffix
        else:
            tail.append(suffix)
        constraints.append({"type": "ends_with", "suffix": suffix})
        lines_out.append(f'Finish the response with the exact phrase "{suffix}" and nothing after it.')
    text = "\n\n".join(text_parts + [" ".join(s for s in body if not s.startswith("* ")) if not any(
        s.startswith("* ") for s in body) else _join_body(body)] + tail)
    if "keywords_exclude" in kinds:
        unused = [w for w in KEYWORDS + NOUNS + ADJS if w not in text.lower()]
        bad = rng.sample(unused, 2)
        constraints.append({"type": "keywords_exclude", "keywords": bad})
        lines_out.append(f"Do not use the words \"{bad[0]}\" or \"{bad[1]}\".")
    if "no_commas" in kinds:
        text = text.replace(",", "")
        constraints.append({"type": "no_commas"})
        lines_out.append("Do not use any commas.")
    if "lowercase" in kinds:
        text = text.lower()
        constraints.append({"type": "lowercase"})
        lines_out.append("Write everything in lowercase letters; no capital letters at all.")
    if "uppercase" in kinds:
        text = text.upper()
        constraints.append({"type": "uppercase"})
        lines_out.append("Write everything in capital letters.")
    if "word_count" in kinds:
        from crossgym.verifiers.constraints import words

        n = len(words(text))
        if rng.random() < 0.5:
            bound = n + rng.randint(3, 15)
            constraints.append({"type": "word_count", "max": bound})
            lines_out.append(f"Use at most {bound} words.")
        else:
            bound = max(5, n - rng.randint(3, 10))
            constraints.append({"type": "word_count", "min": bound})
            lines_out.append(f"Use at least {bound} words.")
    return text, constraints, lines_out


def _join_body(body: list[str]) -> str:
    out: list[str] = []
    for s in body:
        if s.startswith("* "):
            out.append("\n" + s + "\n")
        else:
            out.append(s)
    return " ".join(out).replace(" \n", "\n").replace("\n ", "\n").strip()


def instructions(n: int = 100, seed: int = 0, difficulty: int = 1, system_prompt: str | None = None) -> Iterator[Task]:
    """Short writing tasks with ``difficulty`` (1-3) checkable constraints."""
    from crossgym.api import load_verifier
    from crossgym.protocol.task import Completion

    src = "instructions"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    verifier = load_verifier("instructions")
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        for _attempt in range(50):
            kinds: list[str] = []
            for kind in rng.sample(KINDS, len(KINDS)):
                if len(kinds) == difficulty:
                    break
                if not _conflicts(kinds, kind):
                    kinds.append(kind)
            topic = rng.choice(TOPICS)
            reference, constraints, lines = build(rng, topic, kinds)
            task = make_task(src, i, seed, "", constraints, "instructions", tag=f"d{difficulty}")
            if verifier.verify(task, Completion.from_text(reference)).passed:
                break
        else:  # pragma: no cover - the builder is written to satisfy its own constraints
            raise RuntimeError(f"instructions: could not build a satisfiable task for {kinds}")
        prompt = f"Write a short piece about {topic}.\n" + "\n".join(f"- {line}" for line in lines)
        yield make_task(src, i, seed, prompt, constraints, "instructions", tag=f"d{difficulty}", system=system_prompt,
                        metadata={"difficulty": difficulty, "reference": reference, "topic": topic})
