"""Cutting a policy's response out of a decoded prompt + response text (what OpenRLHF hands a reward function, and
what `crossgym serve`'s /openrlhf/reward route receives): one implementation for the reward file and the route.

The response is the text after the prompt: exactly, else after a tokenizer round trip (a lossy decode), else after
the prompt's first tokens were cut (the trainer left-truncated a long prompt); then trailing end-of-sequence and
padding tokens are cut, nothing else. Transformers is imported only when a tokenizer is needed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import CrossgymError


class PromptNotFound(CrossgymError):
    """The query does not start with its prompt (not even after a tokenizer round trip or left truncation)."""


def special_tail_tokens(model: str | os.PathLike[str] | None) -> tuple[str, ...] | None:
    """End-of-sequence and padding token texts from a local model directory's tokenizer and generation files
    (JSON only, no transformers); None when ``model`` is not a local directory."""
    if model is None or not Path(model).is_dir():
        return None
    d = Path(model)

    def read(name: str) -> dict[str, Any]:
        try:
            data = json.loads((d / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    tok_cfg, special_map, gen = read("tokenizer_config.json"), read("special_tokens_map.json"), read(
        "generation_config.json")
    by_id: dict[int, str] = {}
    for t in read("tokenizer.json").get("added_tokens") or ():
        by_id[int(t["id"])] = str(t["content"])
    for i, t in (tok_cfg.get("added_tokens_decoder") or {}).items():
        by_id[int(i)] = str(t.get("content") if isinstance(t, dict) else t)
    found: set[str] = set()
    for src in (tok_cfg, special_map):
        for key in ("eos_token", "pad_token"):
            v = src.get(key)
            v = v.get("content") if isinstance(v, dict) else v
            if isinstance(v, str) and v:
                found.add(v)
    for key in ("eos_token_id", "pad_token_id"):
        ids = gen.get(key)
        for i in ids if isinstance(ids, list) else [ids]:
            if isinstance(i, int) and i in by_id:
                found.add(by_id[i])
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


class ResponseCutter:
    """Finds the response in a query. Thread-safe; the tokenizer loads once, when first needed."""

    def __init__(self, strip_tokens: tuple[str, ...] | None = None, model: str | None = None) -> None:
        self.model = model
        self._tok: Any = None
        self._tail: tuple[str, ...] | None = strip_tokens
        self._lock = threading.Lock()

    def tokenizer(self) -> Any:
        """The policy's tokenizer (loaded once, lazily); None when there is no model to load it from."""
        if self._tok is None and self.model:
            with self._lock:
                if self._tok is None:
                    from transformers import AutoTokenizer

                    self._tok = AutoTokenizer.from_pretrained(self.model)
        return self._tok

    def tail_tokens(self) -> tuple[str, ...]:
        if self._tail is None:
            tok = self.tokenizer()
            found = {t for t in (getattr(tok, "eos_token", None), getattr(tok, "pad_token", None)) if t}
            self._tail = tuple(sorted(found, key=lambda s: (-len(s), s)))
        return self._tail

    def strip_tail(self, text: str) -> str:
        """``text`` without its trailing end-of-sequence/padding tokens (any number, any order); nothing else."""
        tail = self.tail_tokens()
        changed = True
        while changed and text:
            changed = False
            for t in tail:
                if text.endswith(t):
                    text = text[:-len(t)]
                    changed = True
                    break
        return text

    def response(self, query: str, prompt: str) -> str:
        """The response inside ``query``: the prompt prefix and trailing special tokens removed."""
        if query.startswith(prompt):
            return self.strip_tail(query[len(prompt):])
        tok = self.tokenizer()
        if tok is not None:
            ids = tok(prompt, add_special_tokens=False)["input_ids"]
            for k in range(len(ids)):  # k = 0: a lossy round trip; k > 0: OpenRLHF left-truncated the prompt
                seen = tok.decode(ids[k:], skip_special_tokens=False)
                if seen and query.startswith(seen):
                    return self.strip_tail(query[len(seen):])
        raise PromptNotFound("the query does not start with its prompt (checked exactly, after a tokenizer round "
                             "trip, and left-truncated)")
