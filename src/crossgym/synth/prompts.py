"""What synth asks the model: a new task of a family, from a few seed tasks shown as JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task

SYSTEM = ("You write new tasks for a training set of verifiable problems. Reply with exactly one JSON object and "
          "nothing else.")

#: how the model must answer: the three fields synth reads
DRAFT_FORMAT = ('{"prompt": "<the new task, as the user would ask it>", "answer": <its correct answer, in the same '
                'form as the examples\' answers>, "wrong_answer": "<a reply to the new task that looks right but '
                'is wrong, written the way a correct reply would be written>"}')


def task_text(task: Task) -> str:
    """The task's own question: its last user message."""
    users = [m.content for m in task.prompt if m.role == "user"]
    return users[-1] if users else ""


def context(seeds: Sequence[Task]) -> tuple[Message, ...]:
    """The messages every seed puts before its question (a shared system prompt), or none when they differ."""
    heads = {tuple(m for m in t.prompt if m.role == "system") for t in seeds}
    return next(iter(heads)) if len(heads) == 1 else ()


def seed_example(task: Task) -> dict[str, Any]:
    """One seed as the model sees it."""
    return {"prompt": task_text(task), "answer": task.answer}


def task_prompt(family: str, shots: Sequence[Task], verifier: str, description: str = "") -> list[Message]:
    """The chat that asks for one new task of ``family`` like ``shots``, scored by ``verifier``."""
    examples = "\n".join(json.dumps(seed_example(t), ensure_ascii=False) for t in shots)
    about = f" ({description})" if description else ""
    user = (f"Task family: {family}. Answers are checked by the verifier '{verifier}'{about}.\n"
            f"Example tasks, one JSON object per line:\n{examples}\n\n"
            f"Write one NEW task of the same family, different from the examples, with its correct answer and one "
            f"wrong reply. Reply with one JSON object:\n{DRAFT_FORMAT}")
    return [Message(role="system", content=SYSTEM), Message(role="user", content=user)]


def prompt_hash(messages: Sequence[Message]) -> str:
    """sha256 of the chat (its JSON form): the same question always hashes the same."""
    doc = json.dumps([m.to_dict() for m in messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()
