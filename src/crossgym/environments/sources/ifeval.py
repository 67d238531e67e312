"""ifeval: the IFEval benchmark's rows as tasks scored by ``instructions``.

A row of google/IFEval (``key``, ``prompt``, ``instruction_id_list``, ``kwargs``; JSONL, as its ``input_data.jsonl``
or a Hugging Face export, whose unused kwargs are null) becomes a Task: the prompt as the user message, the key as
its id, and one ``instructions`` constraint per IFEval instruction, in IFEval's order (so component ``"<i>:<type>"``
is the row's i-th instruction). IFEval's "less than N" is ``max: N - 1`` and "at least N" is ``min: N``.

Every IFEval instruction id is mapped. ``detectable_format:constrained_response`` is ``contains_any`` of IFEval's
three phrases, case-sensitive as IFEval's (GPT-4's "Therefore, my answer is no." fails there), with ``only_one``: a
response naming two of the options chose none (IFEval passes it). ``language:response_language`` is ``language``,
and ``change_case:english_capital``/``english_lowercase`` are ``uppercase``/``lowercase`` with ``language: en`` (as
IFEval, the case check and langdetect's reading as English); these need langdetect (``pip install
'crossgym[verifiers]'``). Where it is not installed, a row with one of those ids is an error naming the row, the id
and the fix, unless ``skip_unsupported=True``, which drops such rows and logs how many (as it does for an id in
``UNSUPPORTED``, empty now). An unknown id is always an error.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from crossgym.config.files import iter_user_jsonl
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task, VerifierSpec

log = logging.getLogger(__name__)

SOURCE = "ifeval"
RELATIONS = ("less than", "at least")

#: IFEval instruction ids crossgym cannot judge, and why (none now: kept for ids IFEval may add)
UNSUPPORTED: dict[str, str] = {}
#: IFEval's constrained_response options (its _CONSTRAINED_RESPONSE_OPTIONS)
CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
#: IFEval instruction ids whose constraint reads the language with langdetect, an optional package
NEEDS_LANGDETECT = ("language:response_language", "change_case:english_capital", "change_case:english_lowercase")


class _BadKwargs(Exception):
    """A row's kwargs for one instruction are wrong (the message says which and how)."""


def _get(kw: Mapping[str, Any], name: str, kind: str) -> Any:
    value = kw.get(name)
    if value is None:
        raise _BadKwargs(f"missing kwarg {name!r}")
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _BadKwargs(f"kwarg {name!r} must be a non-negative integer, got {value!r}")
    elif kind == "relation":
        if value not in RELATIONS:
            raise _BadKwargs(f"kwarg {name!r} must be 'less than' or 'at least', got {value!r}")
    elif kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise _BadKwargs(f"kwarg {name!r} must be a non-blank string, got {value!r}")
    elif kind == "words":
        if not isinstance(value, list) or not value or not all(isinstance(w, str) and w.strip() for w in value):
            raise _BadKwargs(f"kwarg {name!r} must be a non-empty list of non-blank strings, got {value!r}")
    return value


def _bound(kw: Mapping[str, Any], count: str, relation: str) -> dict[str, int]:
    """IFEval's (count, relation): "less than N" is at most N - 1, "at least N" at least N."""
    n, rel = _get(kw, count, "int"), _get(kw, relation, "relation")
    if rel == "at least":
        return {"min": n}
    if n == 0:
        raise _BadKwargs(f"'less than 0' ({count}) can never be met")
    return {"max": n - 1}


#: IFEval instruction id -> (its kwargs, the instructions constraint built from them)
MAPPING: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "keywords:existence": (("keywords",), lambda kw: {"type": "keywords_include",
                                                      "keywords": _get(kw, "keywords", "words")}),
    "keywords:forbidden_words": (("forbidden_words",), lambda kw: {
        "type": "keywords_exclude", "keywords": _get(kw, "forbidden_words", "words")}),
    "keywords:frequency": (("keyword", "frequency", "relation"), lambda kw: {
        "type": "keyword_frequency", "keyword": _get(kw, "keyword", "text").strip(),
        **_bound(kw, "frequency", "relation")}),
    "keywords:letter_frequency": (("letter", "let_frequency", "let_relation"), lambda kw: {
        "type": "letter_frequency", "letter": _get(kw, "letter", "text").strip().lower(),
        **_bound(kw, "let_frequency", "let_relation")}),
    "length_constraints:number_words": (("num_words", "relation"), lambda kw: {
        "type": "word_count", **_bound(kw, "num_words", "relation")}),
    "length_constraints:number_sentences": (("num_sentences", "relation"), lambda kw: {
        "type": "sentence_count", **_bound(kw, "num_sentences", "relation")}),
    "length_constraints:number_paragraphs": (("num_paragraphs",), lambda kw: {
        "type": "paragraph_count", "separator": "***", "exactly": _get(kw, "num_paragraphs", "int")}),
    "length_constraints:nth_paragraph_first_word": (("num_paragraphs", "nth_paragraph", "first_word"), lambda kw: {
        "type": "first_word_of_paragraph", "n": _get(kw, "nth_paragraph", "int"),
        "word": _get(kw, "first_word", "text").strip().lower(), "paragraphs": _get(kw, "num_paragraphs", "int")}),
    "detectable_content:number_placeholders": (("num_placeholders",), lambda kw: {
        "type": "placeholders", "min": _get(kw, "num_placeholders", "int")}),
    "detectable_content:postscript": (("postscript_marker",), lambda kw: {
        "type": "postscript", "marker": _get(kw, "postscript_marker", "text").strip()}),
    "detectable_format:number_bullet_lists": (("num_bullets",), lambda kw: {
        "type": "bullet_count", "exactly": _get(kw, "num_bullets", "int")}),
    "detectable_format:number_highlighted_sections": (("num_highlights",), lambda kw: {
        "type": "highlighted_sections", "min": _get(kw, "num_highlights", "int")}),
    "detectable_format:multiple_sections": (("section_spliter", "num_sections"), lambda kw: {
        "type": "sections", "marker": _get(kw, "section_spliter", "text").strip(),
        "min": _get(kw, "num_sections", "int")}),
    "detectable_format:json_format": ((), lambda kw: {"type": "json_format"}),
    "detectable_format:title": ((), lambda kw: {"type": "title"}),
    "combination:two_responses": ((), lambda kw: {"type": "two_responses"}),
    "combination:repeat_prompt": (("prompt_to_repeat",), lambda kw: {
        "type": "starts_with", "prefix": _get(kw, "prompt_to_repeat", "text").strip()}),
    "startend:end_checker": (("end_phrase",), lambda kw: {
        "type": "ends_with", "suffix": _get(kw, "end_phrase", "text").strip()}),
    "startend:quotation": ((), lambda kw: {"type": "quotation"}),
    "change_case:capital_word_frequency": (("capital_frequency", "capital_relation"), lambda kw: {
        "type": "capital_word_frequency", **_bound(kw, "capital_frequency", "capital_relation")}),
    "change_case:english_capital": ((), lambda kw: {"type": "uppercase", "language": "en"}),
    "change_case:english_lowercase": ((), lambda kw: {"type": "lowercase", "language": "en"}),
    "punctuation:no_comma": ((), lambda kw: {"type": "no_commas"}),
    "detectable_format:constrained_response": ((), lambda kw: {
        "type": "contains_any", "phrases": list(CONSTRAINED_RESPONSES), "case_sensitive": True, "only_one": True}),
    "language:response_language": (("language",), lambda kw: {
        "type": "language", "code": _get(kw, "language", "text").strip()}),
}


def unjudgeable_here() -> dict[str, tuple[str, str]]:
    """The ids this install cannot judge: id -> (why, fix); ``UNSUPPORTED``, and the ids whose constraint needs a
    package that is not installed (langdetect, for the ids in ``NEEDS_LANGDETECT``)."""
    out = {iid: (why, "pass skip_unsupported=True to drop such rows (how many is logged), or remove the row")
           for iid, why in UNSUPPORTED.items()}
    from crossgym.verifiers.constraints import LANGDETECT_INSTALL, langdetect_missing

    if langdetect_missing():
        for iid in NEEDS_LANGDETECT:
            out[iid] = ("its constraint needs langdetect (it reads the response's language), which is not installed",
                        f"{LANGDETECT_INSTALL}, or pass skip_unsupported=True to drop such rows")
    return out


def constraint_for(instruction_id: str, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``instructions`` constraint for one IFEval instruction (kwargs with null values, as a Hugging Face export
    writes the unused ones, are left out). ValueError for an unsupported or unknown id or bad kwargs."""
    if instruction_id in UNSUPPORTED:
        raise ValueError(f"crossgym cannot judge {instruction_id!r}: {UNSUPPORTED[instruction_id]}")
    if instruction_id not in MAPPING:
        raise ValueError(f"unknown IFEval instruction id {instruction_id!r}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise ValueError(f"{instruction_id}: kwargs must be an object, got {type(kwargs).__name__}")
    takes, build = MAPPING[instruction_id]
    kw = {k: v for k, v in (kwargs or {}).items() if v is not None}
    extra = sorted(set(kw) - set(takes))
    if extra:
        raise ValueError(f"{instruction_id}: unknown kwarg {extra[0]!r} (it takes {', '.join(takes) or 'none'})")
    try:
        return build(kw)
    except _BadKwargs as exc:
        raise ValueError(f"{instruction_id}: {exc}") from None


def _row_task(row: Any, where: str, reward: str | None, system_prompt: str | None) -> Task:
    """One IFEval row as a Task; ConfigError naming ``where`` and the field for a bad row."""
    from crossgym.verifiers.base import BadTask
    from crossgym.verifiers.instructions import Instructions

    if not isinstance(row, Mapping):
        raise ConfigError(f"an IFEval row must be a JSON object, got {type(row).__name__}", where=where,
                          fix="one object per line with key, prompt, instruction_id_list and kwargs")
    missing = [f for f in ("key", "prompt", "instruction_id_list", "kwargs") if row.get(f) is None]
    if missing:
        raise ConfigError(f"the row has no {missing[0]!r} field (an IFEval row has key, prompt, instruction_id_list "
                          "and kwargs)", where=where, fix=f"add {missing[0]!r} to the row")
    key, prompt, ids, kwargs = row["key"], row["prompt"], row["instruction_id_list"], row["kwargs"]
    if isinstance(key, bool) or not isinstance(key, (int, str)) or not str(key).strip():
        raise ConfigError(f"field 'key' must be an integer or a non-blank string, got {key!r}", where=where,
                          fix="give each row its own key")
    where = f"{where} (key {key})"
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"field 'prompt' must be a non-blank string, got {type(prompt).__name__}", where=where,
                          fix="write the prompt's text")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise ConfigError(f"field 'instruction_id_list' must be a non-empty list of strings, got {ids!r}"[:300],
                          where=where, fix='list the instruction ids, e.g. ["punctuation:no_comma"]')
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        got = f"{len(kwargs)} items" if isinstance(kwargs, list) else type(kwargs).__name__
        raise ConfigError(f"field 'kwargs' must be a list of one object per instruction ({len(ids)}), got {got}",
                          where=where, fix="give one kwargs object per instruction id ({} where it takes none)")
    constraints = []
    for i, (iid, kw) in enumerate(zip(ids, kwargs, strict=True)):
        if iid not in MAPPING and iid not in UNSUPPORTED:
            raise ConfigError(f"instruction {i + 1} of instruction_id_list: unknown IFEval instruction id {iid!r}",
                              where=where, fix=f"use one of IFEval's ids: {', '.join(sorted(MAPPING))}")
        try:
            constraint = constraint_for(iid, kw)
            Instructions.constraints([constraint])
        except (ValueError, BadTask) as exc:
            # (constraint_for's message starts with the id, the verifier's with "constraint 1 (type)")
            detail = str(exc).removeprefix(f"{iid}: ") if isinstance(exc, ValueError) else str(exc).split(": ", 1)[-1]
            raise ConfigError(f"instruction {i + 1} of instruction_id_list ({iid}): {detail}", where=where,
                              fix=f"correct kwargs[{i}] (IFEval's instructions_registry lists each id's kwargs)") \
                from None
        constraints.append(constraint)
    messages = [Message(role="user", content=prompt)]
    if system_prompt:
        messages.insert(0, Message(role="system", content=system_prompt))
    clean = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in kwargs]
    return Task(id=str(key), prompt=tuple(messages), answer=constraints,
                verifier=VerifierSpec("instructions", {"reward": reward} if reward else {}),
                metadata={"source": SOURCE, "key": key, "instruction_id_list": list(ids), "kwargs": clean})


def ifeval(path: str, *, limit: int | None = None, skip_unsupported: bool = False, reward: str | None = None,
           system_prompt: str | None = None, n: int | None = None) -> Iterator[Task]:
    """Tasks from an IFEval-format JSONL file (google/IFEval's rows), scored by ``instructions``.

    ``limit`` (``n`` is an alias): at most this many tasks; ``skip_unsupported``: drop rows with an instruction
    crossgym cannot judge here (``UNSUPPORTED``, empty now, or the ``NEEDS_LANGDETECT`` ids where langdetect is not
    installed) instead of stopping at the first (the count is logged); ``reward``: the
    verifier's reward ("fraction", IFEval's instruction-level accuracy, or "all", its prompt-level one);
    ``system_prompt``: an optional system message."""
    from crossgym.environments.sources.common import check_count

    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"task source {SOURCE!r}: {p} is not a file", fix="pass path= an IFEval JSONL file")
    if limit is None and n is not None:
        limit = check_count(n, SOURCE, "n")
    elif limit is not None:
        check_count(limit, SOURCE, "limit")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ConfigError(f"task source {SOURCE!r}: system_prompt must be a string, got {type(system_prompt).__name__}",
                          fix="pass system_prompt='...' or leave it out")
    if not isinstance(skip_unsupported, bool):
        raise ConfigError(f"task source {SOURCE!r}: skip_unsupported must be true or false, got {skip_unsupported!r}",
                          fix="pass skip_unsupported=True or False")
    if reward not in (None, "fraction", "all"):
        raise ConfigError(f"task source {SOURCE!r}: reward must be 'fraction' or 'all', got {reward!r}",
                          fix="pass reward='fraction' (instruction level) or 'all' (prompt level)")

    def rows() -> Iterator[Task]:
        unjudgeable = unjudgeable_here()
        skipped: collections.Counter[str] = collections.Counter()
        made = 0
        for where, row in iter_user_jsonl(p):
            if limit is not None and made >= limit:
                break
            ids = row.get("instruction_id_list") if isinstance(row, Mapping) else None
            bad = [i for i in ids if isinstance(i, str) and i in unjudgeable] if isinstance(ids, list) else []
            if bad:
                if not any(i in UNSUPPORTED for i in bad):
                    _row_task(row, where, reward, system_prompt)  # (a bad row is reported as one first)
                if skip_unsupported:
                    skipped[bad[0]] += 1
                    continue
                why, fix = unjudgeable[bad[0]]
                raise ConfigError(f"row key {row.get('key')!r} has instruction {bad[0]!r}, which crossgym cannot "
                                  f"judge here: {why}", where=where, fix=fix)
            yield _row_task(row, where, reward, system_prompt)
            made += 1
        if skipped:
            detail = ", ".join(f"{n} with {iid}" for iid, n in skipped.most_common())
            log.warning("task source 'ifeval': dropped %d rows of %s with instructions crossgym cannot judge here (%s; "
                        "%s)", sum(skipped.values()), p.name, detail,
                        "; ".join(f"{iid}: {unjudgeable[iid][0]}" for iid in skipped))

    return rows()
