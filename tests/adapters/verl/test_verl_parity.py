"""parity.native_rewards (what the compat suite calls inside the verl venv) gives crossgym's rewards for every
cheap verifier's own examples, Unicode and whole episodes included."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

from crossgym.adapters.common import reward_from_verdict  # noqa: E402
from crossgym.adapters.verl.parity import byte_tokenizer, native_rewards  # noqa: E402
from crossgym.api import load_verifier, verify  # noqa: E402
from crossgym.protocol.task import Completion, Task, VerifierSpec  # noqa: E402

#: Verifiers whose examples run without services or a sandbox (those have their own suites).
CHEAP = ("exact_match", "numeric", "math", "multiple_choice", "regex", "format_tags", "json_valid", "json_schema",
         "json_match", "string_similarity", "tool_call", "instructions", "length", "xml_valid", "yaml_valid",
         "json_answer")


def test_native_rewards_equal_crossgyms_for_every_example() -> None:
    tasks, comps = [], []
    for name in CHEAP:
        for ex in load_verifier(name).examples():
            tasks.append(ex.task)
            comps.append(ex.completion)
    unicode_task = Task(id="u", prompt=[{"role": "user", "content": "Name it"}], answer="café 🙂",
                        verifier=VerifierSpec("exact_match"))
    tasks += [unicode_task, unicode_task]
    comps += [Completion.from_text("café 🙂"), Completion.from_text("cafe")]
    got = native_rewards(tasks, comps)
    want = [reward_from_verdict(verify(t, c), 0.0) for t, c in zip(tasks, comps, strict=True)]
    assert got == want
    assert got[-2:] == [1.0, 0.0]
    assert len(got) >= 3 * len(CHEAP)


def test_byte_tokenizer_is_lossless() -> None:
    tok = byte_tokenizer()
    for text in ("plain", "café 🙂 ∑ 日本", "tabs\tand\nnewlines", " leading space", "<answer>42</answer>"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, skip_special_tokens=True) == text


def test_on_error_reaches_the_native_side() -> None:
    task = Task(id="x", prompt=[{"role": "user", "content": "?"}], answer=1,
                verifier=VerifierSpec("numeric", {"bogus": True}))
    assert native_rewards([task], ["1"], on_error=-2.0) == [-2.0]
