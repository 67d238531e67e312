"""Ask the engine and read its replies: task drafts (one JSON object each) and reference solutions."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.interfaces import InferenceEngine
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)

#: the most characters of a draft's prompt and wrong answer kept (longer is junk or a runaway generation)
MAX_FIELD_CHARS = 8_000


@dataclass(frozen=True)
class Draft:
    """A model's reply to the task prompt: the fields read from it, or why none could be."""

    text: str
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """``unparseable: ...`` (no JSON object) or ``bad_fields: ...`` (an object without the fields synth needs)."""


def _objects(text: str) -> list[Any]:
    """Every JSON object in ``text`` that starts at a ``{`` (prose and <think> blocks around them are skipped)."""
    dec = json.JSONDecoder()
    out, i = [], text.find("{")
    while i != -1:
        try:
            obj, end = dec.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = text.find("{", end)
    return out


def parse_draft(text: str) -> Draft:
    """The last JSON object in ``text`` with ``prompt``, ``answer`` and ``wrong_answer``."""
    objs = _objects(text)
    if not objs:
        return Draft(text, error="unparseable: no JSON object in the reply")
    fitting = [o for o in objs if {"prompt", "answer", "wrong_answer"} <= o.keys()]
    if not fitting:
        return Draft(text, error=f"bad_fields: the reply's JSON lacks prompt/answer/wrong_answer "
                                 f"(has {sorted(objs[-1])[:6]})")
    obj = fitting[-1]
    prompt, answer, wrong = obj["prompt"], obj["answer"], obj["wrong_answer"]
    if isinstance(wrong, (int, float)) and not isinstance(wrong, bool):
        wrong = str(wrong)
    if not isinstance(prompt, str) or not prompt.strip():
        return Draft(text, error="bad_fields: prompt is not a non-empty string")
    if answer is None or answer == "" or answer == [] or answer == {}:
        return Draft(text, error="bad_fields: answer is empty")
    if not isinstance(wrong, str) or not wrong.strip():
        return Draft(text, error="bad_fields: wrong_answer is not a non-empty string")
    if len(prompt) > MAX_FIELD_CHARS or len(wrong) > MAX_FIELD_CHARS:
        return Draft(text, error=f"bad_fields: prompt or wrong_answer over {MAX_FIELD_CHARS} characters")
    return Draft(text, fields={"prompt": prompt.strip(), "answer": answer, "wrong_answer": wrong.strip()})


def ask(engine: InferenceEngine, chats: Sequence[list[Message]], params: SamplingParams) -> list[Completion]:
    """One completion per chat, in order."""
    if not chats:
        return []
    rows = engine.generate([list(c) for c in chats], 1, params)
    if len(rows) != len(chats) or any(len(r) < 1 for r in rows):
        raise RuntimeError(f"engine {getattr(engine, 'name', '?')!r} returned {len(rows)} rows for {len(chats)} "
                           "prompts (an InferenceEngine returns n completions per prompt, in order)")
    return [r[0] for r in rows]
