"""The `openai` engine: any OpenAI-compatible chat completions URL (vLLM, SGLang, TGI, llama.cpp, OpenAI...).

Requests go out concurrently (at most ``max_concurrency`` at a time) and are retried with backoff. Tool calls come
back in ``Message.tool_calls``: from the server's ``tool_calls`` when it parsed them, else from ``<tool_call>``
blocks in the text (servers started without a tool parser). Logprobs come from ``choices[].logprobs``; token ids
from ``choices[].token_ids`` where the server returns them (vLLM with ``return_token_ids``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from typing import Any

from crossgym.inference.base import per_prompt_tools
from crossgym.inference.http import EngineError, JSONClient, check_httpx
from crossgym.inference.toolcalls import parse_assistant_text
from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.interfaces import EngineCapabilities
from crossgym.protocol.messages import Message, ToolCall, messages_from
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)


def normalise_base_url(url: str) -> str:
    """``http://host:port`` -> ``http://host:port/v1``; a URL with a path is kept as given."""
    from urllib.parse import urlsplit

    url = url.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"not an http(s) URL: {url!r}", where="endpoint", fix="e.g. http://127.0.0.1:8000/v1")
    return url if parts.path not in ("", "/") else f"{url}/v1"


class OpenAIEngine:
    """Chat completions from an OpenAI-compatible server.

    ``base_url`` like ``http://127.0.0.1:8000/v1``; ``model`` defaults to the server's first listed model; the API
    key comes from ``api_key`` or the ``api_key_env`` environment variable. ``return_token_ids`` asks vLLM servers
    for token ids; ``use_n=False`` sends n requests of one sample for servers that ignore ``n``.
    """

    name = "openai"
    capabilities = EngineCapabilities(multi_turn=True, token_ids=False, logprobs=True)

    def __init__(self, base_url: str | None = None, model: str | None = None, *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", max_concurrency: int = 8, max_retries: int = 4,
                 timeout: float = 120.0, backoff: float = 0.5, logprobs: bool = True,
                 return_token_ids: bool = False, use_n: bool = True, extra_body: dict[str, Any] | None = None) -> None:
        self.base_url = normalise_base_url(base_url) if base_url else None
        self._model = model
        self._api_key = api_key if api_key is not None else (os.environ.get(api_key_env) if api_key_env else None)
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.logprobs = logprobs
        self.return_token_ids = return_token_ids
        self.use_n = use_n
        self.extra_body = dict(extra_body or {})
        self._client: JSONClient | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIEngine(base_url={self.base_url!r}, model={self._model!r})"

    def check(self) -> None:
        check_httpx(self.name)

    @property
    def client(self) -> JSONClient:
        with self._lock:
            if self._client is None:
                if not self.base_url:
                    raise ConfigError(f"the {self.name} engine needs a server URL", where=f"{self.name} engine",
                                      fix="pass base_url=http://HOST:PORT/v1 (or --endpoint on the command line)")
                self._client = JSONClient(self.base_url, engine=self.name, api_key=self._api_key,
                                          timeout=self.timeout, max_concurrency=self.max_concurrency,
                                          max_retries=self.max_retries, backoff=self.backoff)
            return self._client

    @property
    def model_name(self) -> str:
        """The served model's name (asked from GET /models when not given)."""
        if self._model is None:
            doc = self.client.get("/models")
            data = doc.get("data") if isinstance(doc, dict) else None
            if not data:
                raise EngineError(f"{self.name}: {self.base_url}/models lists no model; pass model=...")
            self._model = str(data[0]["id"])
        return self._model

    def request_body(self, messages: list[Message], n: int, params: SamplingParams,
                     tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The chat completions request for one prompt."""
        body: dict[str, Any] = {"model": self.model_name, "messages": [m.to_openai() for m in messages], "n": n,
                                "temperature": params.temperature, "top_p": params.top_p,
                                "max_tokens": params.max_tokens}
        if params.top_k > 0:
            body["top_k"] = params.top_k
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if tools:
            body["tools"] = tools
        if self.logprobs:
            body["logprobs"] = True
        if self.return_token_ids:
            body["return_token_ids"] = True
        body.update(self.extra_body)
        return body

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        """n completions per prompt, requests sent concurrently."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        tool_lists = per_prompt_tools(tools, len(prompts))
        jobs: list[tuple[int, dict[str, Any]]] = []
        for pi, (prompt, tl) in enumerate(zip(prompts, tool_lists, strict=False)):
            msgs = list(messages_from(prompt))
            # greedy with n > 1: vLLM refuses it in one request, so ask n times
            if self.use_n and not (params.temperature == 0 and n > 1):
                jobs.append((pi, self.request_body(msgs, n, params, tl)))
            else:
                for j in range(n):  # distinct seeds, or every sample would be the same
                    p = params if params.seed is None else dataclasses.replace(params, seed=params.seed + j)
                    jobs.append((pi, self.request_body(msgs, 1, p, tl)))
        answers = self.client.map(lambda job: self.client.post("/chat/completions", job[1]), jobs)
        out: list[list[Completion]] = [[] for _ in prompts]
        for (pi, _), doc in zip(jobs, answers, strict=False):
            out[pi].extend(parse_choices(doc, parse_tools=tool_lists[pi] is not None, engine=self.name))
        for pi, row in enumerate(out):
            if len(row) != n:
                raise EngineError(f"{self.name}: asked for {n} samples of prompt {pi}, got {len(row)} "
                                  "(the server may ignore n: pass use_n=False)")
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def parse_choices(doc: Any, *, parse_tools: bool, engine: str = "openai") -> list[Completion]:
    """Completions out of one chat completions answer, in choice order."""
    if not isinstance(doc, dict) or not isinstance(doc.get("choices"), list):
        raise EngineError(f"{engine}: the answer has no 'choices' list: {str(doc)[:200]}")
    choices = sorted(doc["choices"], key=lambda c: c.get("index", 0))
    return [_completion(c, parse_tools) for c in choices]


def _completion(choice: dict[str, Any], parse_tools: bool) -> Completion:
    msg = choice.get("message") or {}
    content = msg.get("content") or ""
    calls = []
    for i, raw in enumerate(msg.get("tool_calls") or ()):
        try:
            call = ToolCall.from_dict(raw)
        except (ValueError, KeyError, TypeError):
            fn = raw.get("function", {}) if isinstance(raw, dict) else {}
            content += f"\n<tool_call>\n{json.dumps({'name': fn.get('name'), 'arguments': fn.get('arguments')})}" \
                       "\n</tool_call>"
            continue
        calls.append(call if call.id else dataclasses.replace(call, id=f"call_{i}"))  # keeps an unreadable call's error
    if calls:
        message = Message(role="assistant", content=content, tool_calls=tuple(calls))
    elif parse_tools:
        message = parse_assistant_text(content)
    else:
        message = Message(role="assistant", content=content)
    lp_doc = choice.get("logprobs") or {}
    entries = lp_doc.get("content") if isinstance(lp_doc, dict) else None
    logprobs = tuple(float(e["logprob"]) for e in entries) if entries else None
    ids = choice.get("token_ids")
    token_ids = tuple(int(i) for i in ids) if isinstance(ids, list) else None
    return Completion(messages=(message,), token_ids=token_ids, logprobs=logprobs)
