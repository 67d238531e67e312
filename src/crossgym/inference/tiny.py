"""A tiny causal LM built locally in about a second: for tests, the compat suite and smoke runs.

A ~3M-parameter Llama model with a character-level tokenizer and Qwen2.5's chat template (tool calls included), so
every backend parses its tool calls like a real Qwen2.5 checkpoint's. No hub access.
"""

from __future__ import annotations

import json
import string
from importlib import resources
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>", "<think>", "</think>"]


def qwen_chat_template() -> str:
    """Qwen2.5's chat template text (the one TRL and vLLM recognise for tool-call parsing)."""
    return resources.files("crossgym.inference").joinpath("templates/qwen2_5.jinja").read_text(encoding="utf-8")


def build_tiny_tokenizer() -> Any:
    """A character-level PreTrainedTokenizerFast with Qwen2.5 special tokens and chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + chars)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    # one token per character, newlines included ("." alone would merge "\n\n" into one unknown token)
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIAL_TOKENS)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                     unk_token="<unk>", padding_side="left")
    hf_tok.chat_template = qwen_chat_template()
    return hf_tok


def build_tiny_model(out_dir: str | Path, *, hidden_size: int = 256, layers: int = 4, seed: int = 0) -> Path:
    """Write a tiny Llama model and its tokenizer to ``out_dir`` (about 3M parameters) and return the path."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    tok = build_tiny_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=hidden_size * 11 // 4,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=8192, tie_word_embeddings=True,
                      bos_token_id=None, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    # AutoTokenizer would otherwise pick the model type's tokenizer class and replace our char-level splitter
    cfg_path = out / "tokenizer_config.json"
    tok_cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    tok_cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(tok_cfg, indent=2), encoding="utf-8")
    return out
