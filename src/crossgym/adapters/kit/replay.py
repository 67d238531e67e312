"""What compat drivers replay fixed completions with: a lossless byte-level tokenizer (any Unicode text decodes back
exactly, so a replayed completion reaches the framework unchanged) with the special tokens and chat template a
backend's native path expects. No model, no download; tokenizers and transformers are imported when called."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

#: a model directory the compat drivers use instead of building the tiny model (any local causal LM with a template)
MODEL_ENV = "CROSSGYM_COMPAT_MODEL"


@functools.lru_cache(maxsize=1)
def compat_model_dir() -> str:
    """$CROSSGYM_COMPAT_MODEL, or the tiny model built once per process in a temporary folder."""
    if os.environ.get(MODEL_ENV):
        return os.environ[MODEL_ENV]
    from crossgym.inference.tiny import build_tiny_model

    tmp = tempfile.mkdtemp(prefix="crossgym-compat-model-")
    atexit.register(shutil.rmtree, tmp, True)
    return str(build_tiny_model(Path(tmp) / "tiny"))


@functools.lru_cache(maxsize=8)
def byte_tokenizer(special_tokens: tuple[str, ...], *, eos: str, pad: str, chat_template: str,
                   use_regex: bool = False) -> Any:
    """A PreTrainedTokenizerFast: ``special_tokens`` first (ids 0..), then the 256 byte symbols; no merges.
    ``use_regex``: GPT-2's pre-split, as a saved Qwen2 tokenizer expects."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(special_tokens)}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_regex)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(special_tokens))
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token=pad)  # type: ignore[no-untyped-call]
    hf.chat_template = chat_template
    return hf


def action_text(message: Any) -> str:
    """An assistant turn as a policy writes it, for replaying a Completion through a framework's generator: its text,
    then a Hermes ``<tool_call>`` block per tool call (what crossgym's environments parse back)."""
    import json

    parts = [message.content] if message.content else []
    for call in message.tool_calls:
        parts.append("<tool_call>\n" + json.dumps({"name": call.name, "arguments": call.structured_arguments()})
                     + "\n</tool_call>")  # an unreadable call stays unreadable
    return "\n".join(parts)


#: the special tokens of Qwen2.5's tokenizer that its chat template and tool calls use
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
                       "</tool_response>", "<think>", "</think>")


def qwen_byte_tokenizer() -> Any:
    """The lossless byte-level tokenizer with Qwen2.5's special tokens and chat template (eos ``<|im_end|>``, pad
    ``<|endoftext|>``): the policy tokenizer a compat driver replays completions through."""
    from crossgym.inference.tiny import qwen_chat_template

    return byte_tokenizer(QWEN_SPECIAL_TOKENS, eos="<|im_end|>", pad="<|endoftext|>", chat_template=qwen_chat_template())
