"""A small HTTP server on 127.0.0.1 that answers like vLLM/SGLang, with completions from the real hf engine.

The server is a test fixture, not the thing under test: the engines' HTTP clients are. It speaks OpenAI chat
completions (/v1/chat/completions, /v1/models) and SGLang's native API (/generate, /get_model_info), can fail the
next requests on purpose, checks a bearer key, and records how many requests were in flight at once.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from crossgym.inference.base import tool_dicts
from crossgym.inference.hf import HFEngine
from crossgym.inference.toolcalls import parse_assistant_text
from crossgym.protocol import Message, SamplingParams


class EngineServer:
    """Serve ``engine`` on 127.0.0.1 (a free port) from a daemon thread."""

    def __init__(self, engine: HFEngine, *, model_name: str = "tiny", api_key: str | None = None,
                 delay: float = 0.0, parse_tools: bool = True) -> None:
        self.engine = engine
        self.model_name = model_name
        self.api_key = api_key
        self.delay = delay
        self.parse_tools = parse_tools
        self.reply_text: str | None = None  # when set, every reply is this text instead of the model's
        self.requests: list[tuple[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._fail: list[tuple[int, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> EngineServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def fail_next(self, count: int, status: int = 503, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``count`` requests with ``status``."""
        with self._lock:
            self._fail.extend([(status, dict(headers or {}))] * count)

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    # ------------------------------------------------------------------ answers
    def _sampling(self, d: dict[str, Any], max_key: str, seed_key: str) -> SamplingParams:
        stop = d.get("stop") or ()
        return SamplingParams(temperature=float(d.get("temperature", 1.0)), top_p=float(d.get("top_p", 1.0)),
                              top_k=int(d.get("top_k", -1)), max_tokens=int(d.get(max_key, 16)),
                              seed=d.get(seed_key), stop=(stop,) if isinstance(stop, str) else tuple(stop))

    def _generate(self, prompt_ids: list[list[int]], params: SamplingParams) -> list[Any]:
        gens = [row[0] for row in self.engine.generate_ids(prompt_ids, 1, params)]
        if self.reply_text is not None:
            from crossgym.inference.base import Generation

            ids = self.engine.tokenizer.encode(self.reply_text, add_special_tokens=False)
            gens = [Generation(text=self.reply_text, token_ids=tuple(ids), logprobs=tuple(-1.0 for _ in ids),
                               finish_reason="stop") for _ in gens]
        return gens

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        msgs = [Message.from_dict(m) for m in body["messages"]]
        tools = tool_dicts(body.get("tools"))
        params = self._sampling(body, "max_tokens", "seed")
        ids = self.engine.chat.render(msgs, tools)
        n = int(body.get("n", 1))
        gens = [g for j in range(n) for g in self._generate(
            [ids], params if params.seed is None else dataclasses.replace(params, seed=params.seed + j))]
        choices = []
        for i, g in enumerate(gens):
            msg = parse_assistant_text(g.text) if (tools and self.parse_tools) else Message("assistant", g.text)
            m: dict[str, Any] = {"role": "assistant", "content": msg.content or None}
            if msg.tool_calls:
                m["tool_calls"] = [c.to_openai() for c in msg.tool_calls]
            choice: dict[str, Any] = {"index": i, "message": m, "finish_reason": g.finish_reason}
            if body.get("logprobs"):
                toks = self.engine.tokenizer.convert_ids_to_tokens(list(g.token_ids))
                choice["logprobs"] = {"content": [{"token": t, "logprob": lp} for t, lp in zip(toks, g.logprobs, strict=False)]}
            if body.get("return_token_ids"):
                choice["token_ids"] = list(g.token_ids)
            choices.append(choice)
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": self.model_name, "choices": choices}

    def native_generate(self, body: dict[str, Any]) -> Any:
        ids = body["input_ids"]
        single = bool(ids) and isinstance(ids[0], int)
        batch = [ids] if single else ids
        sps = body.get("sampling_params") or {}
        sps = sps if isinstance(sps, list) else [sps] * len(batch)
        out = []
        for prompt, sp in zip(batch, sps, strict=False):
            g = self._generate([prompt], self._sampling(sp, "max_new_tokens", "sampling_seed"))[0]
            meta: dict[str, Any] = {"finish_reason": {"type": g.finish_reason}, "prompt_tokens": len(prompt),
                                    "completion_tokens": len(g.token_ids)}
            if body.get("return_logprob"):
                meta["output_token_logprobs"] = [[lp, t, None] for lp, t in zip(g.logprobs, g.token_ids, strict=False)]
            out.append({"text": g.text, "output_ids": list(g.token_ids), "meta_info": meta})
        return out[0] if single else out


def _handler(server: EngineServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null") if length else None
            with server._lock:
                server.requests.append((self.path, body))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
                fail = server._fail.pop(0) if server._fail else None
            try:
                if server.delay:
                    time.sleep(server.delay)
                if fail is not None:
                    self._send(fail[0], {"error": {"message": f"injected failure {fail[0]}"}}, fail[1])
                    return
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return
                routes = {("GET", "/v1/models"): lambda: {"data": [{"id": server.model_name}]},
                          ("GET", "/get_model_info"): lambda: {"model_path": server.engine.model_name},
                          ("POST", "/v1/chat/completions"): lambda: server.chat_completions(body),
                          ("POST", "/generate"): lambda: server.native_generate(body)}
                route = routes.get((method, self.path))
                if route is None:
                    self._send(404, {"error": {"message": f"no route {method} {self.path}"}})
                    return
                self._send(200, route())
            except Exception as exc:  # a bug in the fixture shows up as a 500 with its message
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
            finally:
                with server._lock:
                    server.in_flight -= 1

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

    return Handler
