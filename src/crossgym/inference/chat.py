"""Chat prompts to token ids and token ids to text, the way TRL does it, for every engine that tokenizes itself.

Rendering: ``tokenizer.apply_chat_template(conversation, tools=tools or None, add_generation_prompt=True,
tokenize=True, return_dict=True)``, TRL's GRPO call (``or None``: some templates render tool boilerplate for []).
Decoding drops special tokens (skip_special_tokens=True) except tool-call markers, which must survive to be parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.inference.base import render_messages, stop_token_ids
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, messages_from

#: Added tokens kept in decoded text even when marked special.
KEEP_TOKENS = frozenset({"<tool_call>", "</tool_call>"})


def load_tokenizer(source: str | Path, *, where: str = "tokenizer") -> Any:
    """AutoTokenizer.from_pretrained(source), with a one-line ConfigError when it cannot be loaded."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(source))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load a tokenizer: {str(exc).splitlines()[0]}", where=f"{where} {source}",
                          fix="pass a local model directory holding the tokenizer files") from None


def generation_eos(tokenizer: Any) -> Any:
    """The eos_token_id(s) of the generation_config.json beside a tokenizer loaded from a local model directory
    (what vLLM and transformers stop on, with the tokenizer's EOS); None when there is none. For backends that hold
    a tokenizer but not the model (veRL's agent loop, OpenRLHF's agent): the stop rule is the same everywhere."""
    source = getattr(tokenizer, "name_or_path", None)
    if not source or not (Path(str(source)) / "generation_config.json").is_file():
        return None
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(str(source)).eos_token_id
    except (OSError, ValueError):
        return None


class ChatFormat:
    """A tokenizer's chat template and decoding rules, shared by the engines that send token ids."""

    def __init__(self, tokenizer: Any, *, chat_template_kwargs: dict[str, Any] | None = None,
                 extra_eos: Sequence[int] = (), where: str = "model") -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError("the tokenizer has no chat template", where=where,
                              fix="use an instruct/chat model, or set tokenizer.chat_template")
        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        eos = stop_token_ids(tokenizer.eos_token_id, list(extra_eos))
        if not eos:
            raise ConfigError("the tokenizer has no EOS token", where=where, fix="set tokenizer.eos_token")
        self.eos_ids: list[int] = eos
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        self._skip = frozenset({int(i) for i, t in added.items() if getattr(t, "special", False)
                                and str(t) not in KEEP_TOKENS} | set(tokenizer.all_special_ids))

    def render(self, messages: Sequence[Message] | Any, tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Prompt token ids for a conversation (generation prompt added), rendered as TRL renders them."""
        enc = self.tokenizer.apply_chat_template(
            conversation=render_messages(messages_from(messages)), tools=tools or None,
            add_generation_prompt=True, tokenize=True, return_dict=True, **self.chat_template_kwargs)
        ids = enc["input_ids"]
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return [int(i) for i in ids]

    def render_text(self, messages: Sequence[Message] | Any, tools: list[dict[str, Any]] | None = None) -> str:
        """The rendered prompt as text (for logs and docs)."""
        return str(self.tokenizer.apply_chat_template(
            conversation=render_messages(messages_from(messages)), tools=tools or None,
            add_generation_prompt=True, tokenize=False, **self.chat_template_kwargs))

    def decode(self, token_ids: Sequence[int]) -> str:
        """Completion text: special tokens dropped except tool-call markers."""
        return str(self.tokenizer.decode([int(i) for i in token_ids if i not in self._skip],
                                         skip_special_tokens=False))

    def cut_at_eos(self, token_ids: Sequence[int]) -> tuple[list[int], bool]:
        """Tokens up to and including the first EOS; whether one was found."""
        ids = list(token_ids)
        eos = set(self.eos_ids)
        for i, t in enumerate(ids):
            if t in eos:
                return ids[:i + 1], True
        return ids, False
