"""Connection limits uvicorn does not have: a deadline for a request's headers, a cap on their size, a cap on open
connections; and the uvicorn Config both `crossgym serve` and LiveServer run with.

uvicorn closes a connection only when it sat idle after a response (keep-alive timeout): one that connects and
sends nothing, or dribbles its headers a byte a second, is held forever, and so are all the headers it sends
(100 MiB of one header cost the server 150 MiB). Each such connection holds a file descriptor; at the process's
open-file limit the server accepts nothing, so a few thousand idle sockets denied every honest client. Here:

- a request's headers must arrive within ``read_timeout_s`` of its first byte (or of connecting): then 408, closed;
- headers still incomplete past ``max_header_bytes`` get 431, closed (headers that arrive whole in one read are
  bounded by that read, 256 KiB);
- past ``max_connections`` open connections, the one that has waited longest without a request running (idle, or
  still sending its headers or body) is closed for the newcomer; when every connection has a request running, the
  newcomer gets 503. A request being scored is never dropped for a new connection.

The body's own deadline is BodyLimit's (crossgym.serve.middleware): the app reads the body, not the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from crossgym.serve.errors import error_bytes
from crossgym.serve.settings import ServeSettings

log = logging.getLogger(__name__)

#: file descriptors kept free below the open-file limit for what the server itself opens (sandbox pipes, logs...)
FD_RESERVE = 256


def _response(status: int, reason: str, body: bytes) -> bytes:
    """A whole HTTP/1.1 reply that closes the connection (sent where no request cycle exists to answer)."""
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n")
    return head.encode() + body


def connection_cap(settings: ServeSettings) -> int:
    """``max_connections``, lowered to stay ``FD_RESERVE`` below this process's open-file limit: at the limit the
    event loop can accept nothing (not even a connection it would close at once)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return settings.max_connections
    return max(16, min(settings.max_connections, soft - FD_RESERVE))


def guarded_protocol(settings: ServeSettings) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools, else h11) with the limits above, for ``uvicorn.Config(http=...)``."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol
    cap = connection_cap(settings)
    evictions = [-1e9]  # when the last eviction was logged

    class Guarded(base):  # type: ignore[misc]
        """One connection: tracks whether a request is running, since when it has waited, its header bytes."""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._waiting_since = time.monotonic()
            self._header_bytes = 0
            self._seen: Any = None
            self._timer: asyncio.TimerHandle | None = None
            self._arm()
            if len(self.connections) > cap:
                self._make_room()

        def data_received(self, data: bytes) -> None:
            if self._awaiting_headers():
                self._header_bytes += len(data)
                if self._timer is None:  # the first byte of a request after an idle keep-alive
                    self._arm()
            super().data_received(data)
            if self.cycle is not self._seen:  # a request's headers arrived: it runs now
                self._seen = self.cycle
                self._header_bytes = 0
                self._disarm()
            elif self._awaiting_headers() and self._header_bytes > settings.max_header_bytes:
                self._refuse(431, "Request Header Fields Too Large",
                             f"the request line and headers are over {settings.max_header_bytes:,} bytes",
                             "send shorter headers (the task and completion go in the JSON body)")

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._awaiting_headers():  # idle until the next request (uvicorn's keep-alive timeout runs now)
                self._waiting_since = time.monotonic()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _awaiting_headers(self) -> bool:
            """No request running: none yet, or the last one answered."""
            return self.cycle is None or bool(self.cycle.response_complete)

        def _evictable(self) -> bool:
            """Idle, sending headers, or still sending its body: nothing is being scored for it yet."""
            return self._awaiting_headers() or bool(getattr(self.cycle, "more_body", False))

        def _arm(self) -> None:
            self._disarm()
            self._timer = self.loop.call_later(settings.read_timeout_s, self._headers_late)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _headers_late(self) -> None:
            self._timer = None
            if not self._awaiting_headers() or self.transport.is_closing():
                return
            if self._header_bytes == 0:  # connected (or kept alive) and sent nothing: just close
                self.transport.close()
                return
            self._refuse(408, "Request Timeout", f"the request's headers did not arrive within "
                         f"{settings.read_timeout_s:g} s", "send the whole request at once (a slow or stalled "
                                                           "client is disconnected)")

        def _refuse(self, status: int, reason: str, what: str, fix: str) -> None:
            """Answer ``status`` with the structured error body and close (no request cycle to answer with)."""
            self._disarm()
            if not self.transport.is_closing():
                code = {408: "request_timeout", 431: "headers_too_large", 503: "too_many_connections"}[status]
                self.transport.write(_response(status, reason, error_bytes(status, code, what, where="connection",
                                                                            fix=fix)))
                self.transport.close()

        def _make_room(self) -> None:
            """Close the connection that has waited longest with no request being scored, else refuse this one."""
            waiting = [c for c in self.connections if c is not self and isinstance(c, Guarded) and c._evictable()
                       and not c.transport.is_closing()]
            if waiting:
                victim = min(waiting, key=lambda c: c._waiting_since)
                now = time.monotonic()
                if now - evictions[0] > 10:  # once per 10 s: a flood of connections must not flood the log too
                    log.warning("%d connections open (the cap): closing those that waited longest without a "
                                "request (this one %.0f s)", len(self.connections), now - victim._waiting_since)
                evictions[0] = now
                victim.transport.close()
                return
            self._refuse(503, "Service Unavailable", f"{cap} connections are open, each with a request running",
                         "retry after a moment, or reuse one keep-alive connection for many requests")

    return Guarded


def uvicorn_config(app: Any, settings: ServeSettings) -> Any:
    """The uvicorn Config of a crossgym server: the guarded protocol, the keep-alive and shutdown deadlines."""
    import uvicorn

    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning", access_log=False,
                          backlog=2048, timeout_keep_alive=30, http=guarded_protocol(settings),
                          timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_s)))
