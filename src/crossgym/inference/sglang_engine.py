"""The `sglang` engine: an SGLang server, through its native /generate (token ids and logprobs) or its OpenAI API.

Native mode renders the chat template client-side, exactly as TRL does (crossgym.inference.chat), sends token ids,
and reads ``meta_info.output_token_logprobs`` ([logprob, token_id, ...] per generated token). It needs the model's
tokenizer locally: ``tokenizer=`` or ``model=`` (a directory), else the server's /get_model_info model_path.
Launch command: see docs/engines.md.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import Any

from crossgym.inference.base import Generation, per_prompt_tools, to_completion, truncate_at_stop
from crossgym.inference.chat import ChatFormat, load_tokenizer
from crossgym.inference.http import EngineError, JSONClient, check_httpx
from crossgym.inference.openai_engine import OpenAIEngine
from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.interfaces import EngineCapabilities
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)


class SGLangEngine:
    """Completions from an SGLang server. ``api="native"`` (default) or ``"openai"``.

    ``base_url`` is the server root (``http://127.0.0.1:30000``); ``batch_size`` prompts go in one /generate call.
    """

    name = "sglang"
    capabilities = EngineCapabilities(multi_turn=True, token_ids=True, logprobs=True)

    def __init__(self, base_url: str | None = None, model: str | None = None, *, api: str = "native",
                 tokenizer: str | Any | None = None, api_key: str | None = None, api_key_env: str = "SGLANG_API_KEY",
                 max_concurrency: int = 8, max_retries: int = 4, timeout: float = 300.0, backoff: float = 0.5,
                 batch_size: int = 32, chat_template_kwargs: dict[str, Any] | None = None) -> None:
        if api not in ("native", "openai"):
            raise ConfigError(f"unknown api {api!r}", where="sglang engine", fix="use api='native' or api='openai'")
        self.base_url = base_url.rstrip("/") if base_url else None
        if self.base_url and self.base_url.endswith("/v1"):
            self.base_url = self.base_url[:-3]
        self.api = api
        self._model = model
        self._tok_arg = tokenizer
        self._api_key = api_key if api_key is not None else (os.environ.get(api_key_env) if api_key_env else None)
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.batch_size = max(1, batch_size)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._client: JSONClient | None = None
        self._chat: ChatFormat | None = None
        self._openai: OpenAIEngine | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SGLangEngine(base_url={self.base_url!r}, api={self.api!r})"

    def check(self) -> None:
        check_httpx(self.name)

    def _need_url(self) -> str:
        if not self.base_url:
            raise ConfigError("the sglang engine needs the server URL", where="sglang engine",
                              fix="pass base_url=http://HOST:PORT (or --endpoint); launch: see docs/engines.md")
        return self.base_url

    @property
    def client(self) -> JSONClient:
        with self._lock:
            if self._client is None:
                self._client = JSONClient(self._need_url(), engine=self.name, api_key=self._api_key,
                                          timeout=self.timeout, max_concurrency=self.max_concurrency,
                                          max_retries=self.max_retries, backoff=self.backoff)
            return self._client

    @property
    def openai(self) -> OpenAIEngine:
        """The OpenAI-API client of the same server."""
        with self._lock:
            if self._openai is None:
                self._openai = OpenAIEngine(f"{self._need_url()}/v1", self._model, api_key=self._api_key or "",
                                            api_key_env="", max_concurrency=self.max_concurrency,
                                            max_retries=self.max_retries, timeout=self.timeout, backoff=self.backoff)
            return self._openai

    @property
    def model_name(self) -> str:
        if self._model is None:
            if self.api == "openai":
                self._model = self.openai.model_name
            else:
                info = self.client.get("/get_model_info")
                self._model = str(info.get("model_path", "")) if isinstance(info, dict) else ""
        return self._model or "sglang"

    @property
    def chat(self) -> ChatFormat:
        """The tokenizer's chat template, loaded on first use."""
        if self._chat is None:
            tok = self._tok_arg
            if tok is None or isinstance(tok, (str, os.PathLike)):
                src = tok or self._model or self.model_name
                tok = load_tokenizer(str(src), where="sglang tokenizer")
            self._chat = ChatFormat(tok, chat_template_kwargs=self.chat_template_kwargs, where="sglang tokenizer")
        return self._chat

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        """n completions per prompt, through the native API or the OpenAI one."""
        if self.api == "openai":
            return self.openai.generate(prompts, n, params, tools)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        tool_lists = per_prompt_tools(tools, len(prompts))
        ids = [self.chat.render(p, t) for p, t in zip(prompts, tool_lists, strict=False)]
        gens = self.generate_ids(ids, n, params)
        return [[to_completion(g, parse_tools=t is not None) for g in row] for row, t in zip(gens, tool_lists, strict=False)]

    def generate_ids(self, prompt_ids: list[list[int]], n: int, params: SamplingParams) -> list[list[Generation]]:
        """n generations per rendered prompt via POST /generate, ``batch_size`` sequences per request."""
        flat = [(pi, j, list(ids)) for pi, ids in enumerate(prompt_ids) for j in range(n)]
        chunks = [flat[i:i + self.batch_size] for i in range(0, len(flat), self.batch_size)]
        answers = self.client.map(lambda chunk: self._post_chunk(chunk, params), chunks)
        out: list[list[Generation]] = [[] for _ in prompt_ids]
        for chunk, docs in zip(chunks, answers, strict=False):
            for (pi, _, _), doc in zip(chunk, docs, strict=False):
                out[pi].append(self._generation(doc, params))
        return out

    def _post_chunk(self, chunk: list[tuple[int, int, list[int]]], params: SamplingParams) -> list[dict[str, Any]]:
        sps = [native_sampling_params(params if params.seed is None else dataclasses.replace(params, seed=params.seed + j))
               for _, j, _ in chunk]
        body = {"input_ids": [ids for _, _, ids in chunk], "return_logprob": True,
                "sampling_params": sps if params.seed is not None else sps[0]}
        docs = self.client.post("/generate", body)
        if isinstance(docs, dict):
            docs = [docs]
        if not isinstance(docs, list) or len(docs) != len(chunk):
            raise EngineError(f"sglang: /generate returned {type(docs).__name__} for a batch of {len(chunk)}")
        return docs

    def _generation(self, doc: dict[str, Any], params: SamplingParams) -> Generation:
        meta = doc.get("meta_info") or {}
        lps = meta.get("output_token_logprobs")
        ids = doc.get("output_ids")
        if ids is None and lps:
            ids = [int(e[1]) for e in lps]
        if ids is None:
            raise EngineError("sglang: /generate answered without output_ids or output_token_logprobs")
        logprobs = tuple(float(e[0]) for e in lps) if lps else None
        text = self.chat.decode(ids)
        if params.stop:
            text = truncate_at_stop(text, params.stop)[0]
        reason = meta.get("finish_reason")
        reason = reason.get("type") if isinstance(reason, dict) else reason
        return Generation(text=text, token_ids=tuple(int(i) for i in ids), logprobs=logprobs,
                          finish_reason=str(reason) if reason is not None else None)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._openai is not None:
            self._openai.close()


def native_sampling_params(params: SamplingParams) -> dict[str, Any]:
    """SamplingParams in SGLang's /generate form."""
    sp: dict[str, Any] = {"temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k,
                          "max_new_tokens": params.max_tokens}
    if params.stop:
        sp["stop"] = list(params.stop)
    if params.seed is not None:
        sp["sampling_seed"] = params.seed
    return sp
