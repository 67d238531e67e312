"""A small JSON-over-HTTP client for inference servers: a concurrency limit, and retries with backoff.

Retried: connection errors, timeouts, 408, 429 and 5xx (honouring Retry-After). Anything else fails at once with one
line naming the server's own message. httpx is imported here, inside functions of the engines that need it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from crossgym.protocol.errors import BackendUnavailable, CrossgymError

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class EngineError(CrossgymError):
    """An inference server refused or failed a request (after retries, where retrying made sense)."""


def check_httpx(engine: str) -> None:
    """BackendUnavailable when httpx is missing, found without importing it (`crossgym list` stays fast)."""
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise BackendUnavailable(engine, "the httpx package is missing", "pip install httpx")


def require_httpx(engine: str) -> Any:
    try:
        import httpx
    except ImportError:
        raise BackendUnavailable(engine, "the httpx package is missing", "pip install httpx") from None
    return httpx


class JSONClient:
    """POST/GET JSON to one base URL from many threads; at most ``max_concurrency`` requests in flight."""

    def __init__(self, base_url: str, *, engine: str, api_key: str | None = None, timeout: float = 120.0,
                 max_concurrency: int = 8, max_retries: int = 4, backoff: float = 0.5,
                 max_backoff: float = 20.0) -> None:
        httpx = require_httpx(engine)
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.base_url = base_url.rstrip("/")
        self.engine = engine
        self.max_concurrency = max_concurrency
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff
        self.max_backoff = max_backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers,
                                    limits=httpx.Limits(max_connections=max_concurrency,
                                                        max_keepalive_connections=max_concurrency))
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._httpx = httpx
        # the failures already reported: many requests in flight against a server that is down would each say
        # "retry k/N" (32 lines for one synth batch); each kind of failure is reported once until one succeeds
        self._reported: set[str] = set()
        self._report_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"JSONClient({self.base_url!r}, engine={self.engine!r})"

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One JSON request, retried on transient failures; the decoded JSON answer."""
        httpx = self._httpx
        url = f"{self.base_url}{path}"
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            with self._slots:
                try:
                    resp = self._client.request(method, path, json=body)
                except httpx.TransportError as exc:  # connection refused/reset, timeouts
                    last = f"{type(exc).__name__}: {exc}"
                    resp = None
            if resp is not None:
                if resp.status_code < 300:
                    if self._reported:
                        with self._report_lock:
                            self._reported.clear()
                    try:
                        return resp.json()
                    except ValueError:
                        raise EngineError(f"{self.engine}: {method} {url} answered {resp.status_code} with "
                                          f"non-JSON: {resp.text[:200]!r}") from None
                last = f"HTTP {resp.status_code}: {_server_message(resp)}"
                if resp.status_code not in RETRY_STATUS:
                    fix = " (fix: pass api_key=... or set the key's environment variable)" \
                        if resp.status_code in (401, 403) else ""
                    raise EngineError(f"{self.engine}: {method} {url} failed: {last}{fix}")
                retry_after = _retry_after(resp)
            if attempt < self.max_retries:
                delay = retry_after if retry_after is not None else self.backoff * 2 ** attempt * random.uniform(0.5, 1)
                delay = min(self.max_backoff, max(0.0, delay))
                with self._report_lock:
                    first = last not in self._reported
                    self._reported.add(last)
                if first:
                    log.warning("%s: %s %s failed (%s); retrying up to %d times with backoff (the same failure of "
                                "other requests is not repeated)", self.engine, method, url, last, self.max_retries)
                else:
                    log.debug("%s: %s %s failed (%s); retry %d/%d in %.2f s", self.engine, method, url, last,
                              attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        down = "" if last.startswith("HTTP ") else f" (fix: check that a server is running at {self.base_url})"
        raise EngineError(f"{self.engine}: {method} {url} failed after {self.max_retries + 1} attempts: {last}{down}")

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """fn over items on up to ``max_concurrency`` threads, results in order; the first error is raised."""
        items = list(items)
        if len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items)),
                                thread_name_prefix=f"crossgym-{self.engine}") as pool:
            return list(pool.map(fn, items))

    def close(self) -> None:
        self._client.close()


def _server_message(resp: Any) -> str:
    try:
        doc = resp.json()
    except ValueError:
        return str(resp.text[:200])
    if isinstance(doc, dict):
        err = doc.get("error", doc.get("message", doc.get("detail", doc)))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:300]
    return str(doc)[:300]


def _retry_after(resp: Any) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
