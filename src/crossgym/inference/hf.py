"""The `hf` engine: transformers generate() in process, batched with left padding; token ids and logprobs.

Prompts are rendered exactly as TRL renders them (see crossgym.inference.chat). Logprobs are those of the sampled
token under ``log_softmax(logits / temperature)`` (TRL's convention; raw logits for greedy), before top-k/top-p.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from crossgym.inference.base import BASE_CAPABILITIES, Generation, per_prompt_tools, to_completion, truncate_at_stop
from crossgym.inference.chat import ChatFormat, load_tokenizer
from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[trl]'"


class HFEngine:
    """Generates with a transformers causal LM (the embedded CPU default).

    ``model`` is a model directory, or a loaded model object (then pass ``tokenizer`` too). ``batch_size`` counts
    sequences per generate() call: prompts x n are flattened, then cut into batches.
    """

    name = "hf"
    capabilities = BASE_CAPABILITIES

    def __init__(self, model: str | Path | Any | None = None, *, tokenizer: str | Path | Any | None = None,
                 batch_size: int = 32, device: str = "cpu", dtype: str | None = None,
                 chat_template_kwargs: dict[str, Any] | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}", where="hf engine", fix="e.g. batch_size=8")
        self._model_arg = model
        self._tok_arg = tokenizer
        self.batch_size = batch_size
        self.device = device
        self.dtype = dtype
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._model: Any = None
        self._chat: ChatFormat | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The model's directory or name, for provenance."""
        if isinstance(self._model_arg, (str, Path)):
            return str(self._model_arg)
        cfg = getattr(self._model_arg, "config", None)
        return str(getattr(cfg, "_name_or_path", "") or type(self._model_arg).__name__)

    def check(self) -> None:
        """Raise BackendUnavailable when torch or transformers is missing."""
        missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable("hf", f"missing Python package(s): {', '.join(missing)}", INSTALL)

    # ------------------------------------------------------------------ loading
    def load(self) -> HFEngine:
        """Load the tokenizer and model now (otherwise the first generate() does)."""
        with self._lock:
            self._load_locked()
        return self

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        self.check()
        if self._model_arg is None:
            raise ConfigError("the hf engine needs a model", where="hf engine",
                              fix="pass model=<model directory> (or --model on the command line)")
        model: Any
        if isinstance(self._model_arg, (str, Path)):
            src = str(self._model_arg)
            tok = self._tok_arg if self._tok_arg is not None and not isinstance(self._tok_arg, (str, Path)) \
                else load_tokenizer(self._tok_arg or src, where="model")
            from transformers import AutoModelForCausalLM

            try:
                model = AutoModelForCausalLM.from_pretrained(src, **({"dtype": self.dtype} if self.dtype else {}))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot load the model: {str(exc).splitlines()[0]}", where=src,
                                  fix="pass a local model directory holding config.json and the weights") from None
        else:
            if self._tok_arg is None:
                raise ConfigError("a model object needs its tokenizer", where="hf engine", fix="pass tokenizer=...")
            model = self._model_arg
            tok = load_tokenizer(self._tok_arg) if isinstance(self._tok_arg, (str, Path)) else self._tok_arg
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        extra = list(gen_eos) if isinstance(gen_eos, (list, tuple)) else [gen_eos] if gen_eos is not None else []
        chat = ChatFormat(tok, chat_template_kwargs=self.chat_template_kwargs, extra_eos=extra,
                          where=self.model_name)
        if str(getattr(model, "device", "cpu")) != self.device:
            model = model.to(self.device)
        model.eval()
        self._chat, self._model = chat, model

    @property
    def chat(self) -> ChatFormat:
        """The chat template and decoding rules in use."""
        if self._chat is None:
            self.load()
        assert self._chat is not None
        return self._chat

    @property
    def tokenizer(self) -> Any:
        return self.chat.tokenizer

    @property
    def model(self) -> Any:
        if self._model is None:
            self.load()
        return self._model

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        """n completions per chat prompt; tool calls are parsed where the prompt offered tools."""
        tool_lists = per_prompt_tools(tools, len(prompts))
        ids = [self.chat.render(p, t) for p, t in zip(prompts, tool_lists, strict=False)]
        gens = self.generate_ids(ids, n, params)
        return [[to_completion(g, parse_tools=t is not None) for g in row] for row, t in zip(gens, tool_lists, strict=False)]

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]], n: int, params: SamplingParams) -> list[list[Generation]]:
        """n generations per already rendered prompt, in batches of ``batch_size`` sequences."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        import torch

        self.load()
        flat = [(pi, list(ids)) for pi, ids in enumerate(prompt_ids) for _ in range(n)]
        out: list[list[Generation]] = [[] for _ in prompt_ids]
        with self._lock, torch.inference_mode(), _seeded(params.seed, cpu_only=self.device == "cpu"):
            for start in range(0, len(flat), self.batch_size):
                chunk = flat[start:start + self.batch_size]
                for (pi, _), gen in zip(chunk, self._generate_batch([ids for _, ids in chunk], params), strict=False):
                    out[pi].append(gen)
        return out

    def _generate_batch(self, batch: list[list[int]], params: SamplingParams) -> list[Generation]:
        import torch
        from transformers import GenerationConfig

        chat, model = self.chat, self._model
        width = max(len(ids) for ids in batch)
        input_ids = torch.full((len(batch), width), chat.pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, ids in enumerate(batch):  # left padding: every prompt ends where generation starts
            if ids:
                input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
                attention[row, width - len(ids):] = 1
        sample = params.temperature > 0
        # a fresh config, as TRL builds one: the checkpoint's own sampling defaults do not leak in
        cfg = GenerationConfig(
            max_new_tokens=params.max_tokens, do_sample=sample, pad_token_id=chat.pad_id, eos_token_id=chat.eos_ids,
            temperature=params.temperature if sample else None, top_p=params.top_p if sample else None,
            top_k=(params.top_k if params.top_k > 0 else 0) if sample else None,
            stop_strings=list(params.stop) or None, return_dict_in_generate=True, output_logits=True)
        extra: dict[str, Any] = {"tokenizer": chat.tokenizer} if params.stop else {}
        res = model.generate(input_ids=input_ids.to(model.device), attention_mask=attention.to(model.device),
                             generation_config=cfg, **extra)
        new = res.sequences[:, width:].cpu()
        lps = torch.empty(new.shape, dtype=torch.float32)
        for s, logits in enumerate(res.logits):  # one [B, V] step at a time: a full [B, T, V] may not fit
            scaled = logits.float() / params.temperature if sample else logits.float()
            picked = torch.log_softmax(scaled, dim=-1).gather(-1, new[:, s:s + 1].to(logits.device))
            lps[:, s] = picked.squeeze(-1).cpu()
        gens = []
        for row in range(len(batch)):
            ids, hit_eos = chat.cut_at_eos(new[row].tolist())
            reason = "stop" if hit_eos else "length"
            text = chat.decode(ids)
            if params.stop:
                text, hit = truncate_at_stop(text, params.stop)
                if hit:
                    ids = ids[:self._stop_end(ids, params.stop)]
                    reason = "stop"
            gens.append(Generation(text=text, token_ids=tuple(ids),
                                   logprobs=tuple(float(x) for x in lps[row, :len(ids)].tolist()),
                                   finish_reason=reason))
        return gens

    def _stop_end(self, ids: list[int], stop: Sequence[str]) -> int:
        """The fewest leading tokens whose text holds a stop string (generation halted there)."""
        lo, hi = 1, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            if truncate_at_stop(self.chat.decode(ids[:mid]), stop)[1]:
                hi = mid
            else:
                lo = mid + 1
        return hi

    def close(self) -> None:
        """Drop the model (frees memory); the next generate() loads it again."""
        with self._lock:
            self._model = None
            self._chat = None


@contextlib.contextmanager
def _seeded(seed: int | None, *, cpu_only: bool = True) -> Iterator[None]:
    """Seed torch for one call without disturbing the caller's global RNG state."""
    if seed is None:
        yield
        return
    import torch

    with torch.random.fork_rng(devices=[] if cpu_only else None):
        torch.manual_seed(int(seed))
        yield
