"""What compat drivers replay fixed completions with: a lossless byte-level tokenizer (any Unicode text decodes back
exactly, so a replayed completion reaches the framework unchanged) with the special tokens and chat template a
backend's native path expects. No model, no download; tokenizers and transformers are imported when called."""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=8)
def byte_tokenizer(special_tokens: tuple[str, ...], *, eos: str, pad: str, chat_template: str) -> Any:
    """A PreTrainedTokenizerFast: ``special_tokens`` first (ids 0..), then the 256 byte symbols; no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(special_tokens)}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(special_tokens))
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token=pad)  # type: ignore[no-untyped-call]
    hf.chat_template = chat_template
    return hf
