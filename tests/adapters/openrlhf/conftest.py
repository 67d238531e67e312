"""Fixtures for the OpenRLHF backend tests: a policy tokenizer on disk, without building model weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model's char-level tokenizer (Qwen2.5 special tokens and chat template), saved like a model dir."""
    pytest.importorskip("transformers")
    from crossgym.inference.tiny import build_tiny_tokenizer

    out = tmp_path_factory.mktemp("tiny-tokenizer")
    build_tiny_tokenizer().save_pretrained(str(out))
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"  # as build_tiny_model does: keep the char-level splitter
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, "pad_token_id": 0}))
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return out
