"""crossgym.synth.generate: reading task drafts out of model replies."""

from __future__ import annotations

import pytest

from crossgym.protocol import Message, Task, VerifierSpec
from crossgym.synth.generate import MAX_FIELD_CHARS, parse_draft
from crossgym.synth.prompts import context, prompt_hash, task_prompt

GOOD = '{"prompt": "Compute 3 + 4.", "answer": 7, "wrong_answer": "<answer>8</answer>"}'


def test_a_draft_inside_prose_and_think_blocks() -> None:
    d = parse_draft(f"<think>an example: {{\"x\": 1}}</think>\nHere it is:\n```json\n{GOOD}\n```\nDone.")
    assert d.error is None
    assert d.fields == {"prompt": "Compute 3 + 4.", "answer": 7, "wrong_answer": "<answer>8</answer>"}


def test_the_last_fitting_object_wins_and_numbers_become_text() -> None:
    d = parse_draft('{"prompt": "a", "answer": 1, "wrong_answer": "2"} then {"prompt": "b", "answer": 3, '
                    '"wrong_answer": 4}')
    assert d.fields == {"prompt": "b", "answer": 3, "wrong_answer": "4"}


@pytest.mark.parametrize(("text", "reason"), [
    ("", "unparseable"), ("no json at all", "unparseable"), ("{not json", "unparseable"),
    ('["prompt", "answer"]', "unparseable"),
    ('{"question": "x", "answer": 1}', "bad_fields"),
    ('{"prompt": "", "answer": 1, "wrong_answer": "2"}', "bad_fields"),
    ('{"prompt": "x", "answer": null, "wrong_answer": "2"}', "bad_fields"),
    ('{"prompt": "x", "answer": 1, "wrong_answer": ""}', "bad_fields"),
    ('{"prompt": "x", "answer": 1, "wrong_answer": ["2"]}', "bad_fields"),
    ('{"prompt": "' + "x" * (MAX_FIELD_CHARS + 1) + '", "answer": 1, "wrong_answer": "2"}', "bad_fields"),
])
def test_unusable_replies_say_why(text: str, reason: str) -> None:
    d = parse_draft(text)
    assert d.fields == {} and d.error is not None and d.error.split(":")[0] == reason


def test_the_prompt_shows_seeds_and_hashes_stably() -> None:
    seeds = [Task(id=f"s{i}", prompt=(Message("system", "Be exact."), Message("user", f"Compute {i} + 1.")),
                  answer=i + 1, verifier=VerifierSpec("numeric")) for i in range(3)]
    chat = task_prompt("arithmetic", seeds, "numeric", "one number")
    assert '{"prompt": "Compute 2 + 1.", "answer": 3}' in chat[1].content and "'numeric' (one number)" in chat[1].content
    assert prompt_hash(chat) == prompt_hash(task_prompt("arithmetic", seeds, "numeric", "one number"))
    assert prompt_hash(chat) != prompt_hash(task_prompt("arithmetic", seeds[:2], "numeric", "one number"))
    assert context(seeds) == (Message("system", "Be exact."),)
    other = Task(id="o", prompt=(Message("user", "Compute 9 + 9."),), answer=18, verifier=VerifierSpec("numeric"))
    assert context([*seeds, other]) == ()  # no shared system prompt
