"""Pure ASGI middleware: bearer-token auth (every route but /health) and the request-body size limit."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from crossgym.serve.errors import error_bytes

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


def _too_large_error() -> type[Exception]:
    """An HTTPException (413) subclass: FastAPI re-raises those from body reading, so its handler answers."""
    from starlette.exceptions import HTTPException

    class TooLarge(HTTPException):
        pass

    return TooLarge


_TooLarge: type[Exception] = _too_large_error()


class BodyLimit:
    """413 when the body is larger than ``limit`` bytes: by Content-Length up front, else while it streams."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _error(self) -> bytes:
        return error_bytes(413, "body_too_large", f"the request body is over {self.limit:,} bytes", where="body",
                           fix="split the batch, or start the server with a larger --max-body-mb")

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

        async def limited_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(413, f"the request body is over {self.limit:,} bytes")
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
