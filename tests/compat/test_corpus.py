"""The frozen corpus: the garbage file is what the generator makes, every entry expands, sizes sit on the cap,
odd Unicode survives the file, and every registered verifier that can run here has a frozen corpus."""

from __future__ import annotations

import json

import pytest

from crossgym.compat_tests.corpus import default_corpus_dir, garbage_entries, read_jsonl, verifier_corpus
from crossgym.compat_tests.garbage import CAP, expand, garbage_specs, is_raw
from crossgym.protocol import Completion

CORPUS = default_corpus_dir()


def test_the_checkout_corpus_is_found() -> None:
    assert CORPUS is not None and (CORPUS / "garbage.jsonl").is_file()


def test_frozen_garbage_equals_the_generator() -> None:
    assert CORPUS is not None
    frozen = read_jsonl(CORPUS / "garbage.jsonl")
    assert frozen == json.loads(json.dumps(garbage_specs())), \
        "garbage.jsonl differs from crossgym.compat_tests.garbage: bump GARBAGE_VERSION and run make_corpus.py --force"


def test_every_garbage_entry_expands() -> None:
    entries = dict((spec["id"], comp) for spec, comp in garbage_entries(CORPUS))
    assert len(entries) == len(garbage_specs()) >= 50
    assert sum(is_raw(s) for s in garbage_specs()) == 4
    assert entries["raw-none"] is None and isinstance(entries["raw-string"], str)
    assert len(entries["1mb-mixed"].text) == CAP and len(entries["over-cap"].text) == CAP + 1
    assert len(entries["many-messages"].messages) == 10_001
    assert len(entries["tool-call-many"].messages[0].tool_calls) == 1_000
    assert "\ud800" in entries["lone-high-surrogate"].text  # lone surrogates survive the JSON file
    assert entries["control-chars"].text.startswith("\x00\x01")


def test_expand_rejects_an_unknown_raw_kind() -> None:
    with pytest.raises(ValueError, match="unknown raw kind"):
        expand({"id": "x", "raw": "nope"})


def test_every_runnable_verifier_has_a_frozen_corpus() -> None:
    from crossgym.compat_tests.verifier_checks import unavailable_reason
    from crossgym.plugins import registry

    missing = [n for n in registry("verifiers").names()
               if not verifier_corpus(n, CORPUS) and unavailable_reason(n) is None]
    assert not missing, f"no frozen corpus for {missing}: run python tests/compat/make_corpus.py and commit it"


def test_corpus_records_are_tasks_and_completions_with_references() -> None:
    assert CORPUS is not None
    samples = verifier_corpus("exact_match", CORPUS)
    assert len(samples) > 30
    assert all(isinstance(s.completion, Completion) and s.reference.get("version") for s in samples)
    assert any(len(s.completion.messages) > 1 for s in samples)  # multi-turn wrappings for multi-turn parity
