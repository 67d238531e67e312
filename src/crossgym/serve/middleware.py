"""Pure ASGI middleware: bearer-token auth (every route but /health), the request body's size limit and deadline,
and JSON-only bodies."""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from crossgym.serve.errors import ApiError, error_bytes

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: routes that need no token
OPEN_PATHS = frozenset({"/health"})


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """401 unless ``Authorization: Bearer <token>`` matches (constant-time); /health stays open."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        got = b""
        for key, value in scope.get("headers") or ():
            if key == b"authorization":
                got = value
                break
        if not hmac.compare_digest(got, self.expected):
            what = "missing bearer token" if not got else "wrong bearer token"
            await _reply(send, 401, error_bytes(401, "unauthorized", what, where="Authorization header",
                                                fix="send 'Authorization: Bearer <the server's --token>'"),
                         [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


class HostCheck:
    """421 unless the Host header names an IP address or one of ``allowed`` (settings.allowed_hosts): a loopback
    server without a token is otherwise open to any web page the user visits through DNS rebinding (the page's name
    re-pointed at 127.0.0.1 is same-origin with the server, so it may POST JSON and read the replies)."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app, self.allowed = app, tuple(a.lower() for a in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from crossgym.serve.settings import host_allowed

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = next((v for k, v in scope.get("headers") or () if k == b"host"), b"").decode("latin-1")
        if not host_allowed(host, self.allowed):
            await _reply(send, 421, error_bytes(
                421, "wrong_host", f"this server answers requests for localhost or an IP address, not "
                f"{host[:100]!r}", where="Host header",
                fix="connect to http://127.0.0.1:PORT or http://localhost:PORT; to serve under a name, start it "
                    "with --token (and bind that address)"))
            return
        await self.app(scope, receive, send)


def _body_error(name: str) -> type[Exception]:
    """An HTTPException subclass: FastAPI re-raises those from body reading, so this middleware answers them."""
    from starlette.exceptions import HTTPException

    return type(name, (HTTPException,), {})


_TooLarge: type[Exception] = _body_error("TooLarge")
_TooSlow: type[Exception] = _body_error("TooSlow")


class BodyLimit:
    """413 when the body is larger than ``limit`` bytes: by Content-Length up front, else while it streams; 408 when
    it has not all arrived ``timeout_s`` after the app first asked for it (a Content-Length larger than what is sent,
    or a body dribbled a byte a second, held the connection and its request forever)."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float = 30.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    def _error(self) -> bytes:
        return error_bytes(413, "body_too_large", f"the request body is over {self.limit:,} bytes", where="body",
                           fix="split the batch, or start the server with a larger --max-body-mb")

    def _slow(self) -> bytes:
        return error_bytes(408, "request_timeout", f"the request body did not arrive within {self.timeout_s:g} s",
                           where="body", fix="send the whole body at once, with a Content-Length that matches it")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers") or ():
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit:
                    await _reply(send, 413, self._error(), [(b"connection", b"close")])
                    return
                break
        seen = 0
        started = False
        deadline: float | None = None  # set at the first read; None again once the body is complete
        done = False

        async def limited_receive() -> Message:
            nonlocal seen, deadline, done
            if done:  # the body is in: what is read now is a disconnect, which may come whenever
                return await receive()
            deadline = deadline or time.monotonic() + self.timeout_s
            try:
                msg = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise _TooSlow(408, f"the request body did not arrive within {self.timeout_s:g} s") from None
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(413, f"the request body is over {self.limit:,} bytes")
                done = not msg.get("more_body", False)
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _reply(send, 413, self._error(), [(b"connection", b"close")])
        except _TooSlow:
            if not started:
                await _reply(send, 408, self._slow(), [(b"connection", b"close")])


def _media_type(headers: Any) -> tuple[bytes, bytes]:
    """(Content-Type's media type, Content-Encoding), lower case, b"" where absent."""
    kind = coding = b""
    for key, value in headers or ():
        if key == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
        elif key == b"content-encoding":
            coding = value.strip().lower()
    return kind, coding


def is_json(media_type: bytes) -> bool:
    return media_type == b"application/json" or (media_type.startswith(b"application/") and
                                                 media_type.endswith(b"+json"))


def media_problem(scope: Mapping[str, Any]) -> ApiError | None:
    """415 for a POST body that is not declared JSON, or that is compressed (the routes call this after routing, so
    a wrong method is still 405). Without it, a body sent as text/plain (or with no Content-Type) got "Input should
    be a valid dictionary" on /verify though it was one, and was scored on /verify/batch: the shape a web page can
    POST to a loopback server without a CORS preflight. A gzip body was read as garbled JSON (nothing here
    decompresses, so no zip bomb either)."""
    if scope.get("method") != "POST":
        return None
    kind, coding = _media_type(scope.get("headers"))
    if coding not in (b"", b"identity"):
        return ApiError(415, "unsupported_media_type", f"Content-Encoding {coding.decode('latin-1')!r} is not "
                        "supported", where="Content-Encoding header",
                        fix="send the body uncompressed (no Content-Encoding header)")
    if not is_json(kind):
        what = f"the body is declared {kind.decode('latin-1')!r}, not JSON" if kind else "no Content-Type header"
        return ApiError(415, "unsupported_media_type", what, where="Content-Type header",
                        fix="send the JSON body with 'Content-Type: application/json'")
    return None


class Draining:
    """503 (not uvicorn's bare "Internal Server Error") for a request the server cancels because it is shutting down
    and the grace period (``shutdown_grace_s``) ran out before its reply: the client learns to retry elsewhere."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            if not started:
                body = error_bytes(503, "shutting_down", "the server shut down before this request's reply",
                                   where="server", fix="retry (on another server, or once this one is back)")
                await _reply(send, 503, body, [(b"connection", b"close"), (b"retry-after", b"1")])
            raise
