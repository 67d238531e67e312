"""Environment sessions: one episode object per id, closed when deleted, idle too long, or the server stops.

Ids are random (``secrets.token_urlsafe``), so one client cannot guess another's session. Each session has a lock:
an episode is not thread-safe, so a second step while one runs gets 409 instead of corrupting it.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.task import Verdict
from crossgym.serve.errors import ApiError

log = logging.getLogger(__name__)


@dataclass
class Session:
    """One live episode."""

    id: str
    env_name: str
    env: Any
    task_id: str
    last_used: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    #: the exception Verdict of an environment that raised in step: the episode is over, as the episode driver rules
    failed: Verdict | None = None
    #: actions stepped so far (the step number an environment failure names)
    steps: int = 0

    def close(self, wait_s: float = 30.0) -> None:
        """Close the episode, after the step running now (if any) ends or ``wait_s`` passes."""
        if self.closed:
            return
        self.closed = True
        locked = self.lock.acquire(timeout=wait_s)
        try:
            self.env.close()
        except Exception:  # closing must not take the server down
            log.warning("session %s: environment %s failed to close", self.id, self.env_name, exc_info=True)
        finally:
            if locked:
                self.lock.release()


class SessionStore:
    """Live sessions with a cap and idle expiry. Thread-safe."""

    def __init__(self, max_sessions: int, idle_s: float) -> None:
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self._sessions: dict[str, Session] = {}
        self._reserved = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def reserve(self) -> None:
        """Take a place for a session about to be created (429 when the cap is reached); ``add`` or ``unreserve``."""
        self.expire()
        with self._lock:
            if len(self._sessions) + self._reserved >= self.max_sessions:
                raise ApiError(429, "too_many_sessions", f"{self.max_sessions} environment sessions are open",
                               where="POST /envs", fix="DELETE /envs/{id} when an episode ends, or start the "
                                                       "server with a larger --max-sessions",
                               headers={"Retry-After": "1"})
            self._reserved += 1

    def unreserve(self) -> None:
        with self._lock:
            self._reserved -= 1

    def add(self, env_name: str, env: Any, task_id: str) -> Session:
        s = Session(id=secrets.token_urlsafe(16), env_name=env_name, env=env, task_id=task_id)
        with self._lock:
            self._reserved -= 1
            self._sessions[s.id] = s
        return s

    def get(self, sid: str) -> Session:
        """The live session ``sid`` (404 when unknown, deleted or expired); touches it."""
        now = time.monotonic()
        with self._lock:
            s = self._sessions.get(sid)
            if s is not None and now - s.last_used > self.idle_s and not s.lock.locked():
                del self._sessions[sid]
                expired: Session | None = s
                s = None
            else:
                expired = None
            if s is not None:
                s.last_used = now
        if expired is not None:
            expired.close()
        if s is None:
            raise ApiError(404, "unknown_session", f"no open session {sid!r}", where="path id",
                           fix=f"create one with POST /envs; sessions close after {self.idle_s:g} s idle or DELETE")
        return s

    def pop(self, sid: str) -> Session | None:
        with self._lock:
            return self._sessions.pop(sid, None)

    def expire(self) -> int:
        """Close sessions idle longer than ``idle_s`` (not those mid-step); how many closed."""
        now = time.monotonic()
        with self._lock:
            old = [s for s in self._sessions.values() if now - s.last_used > self.idle_s and not s.lock.locked()]
            for s in old:
                del self._sessions[s.id]
        for s in old:
            s.close()
        if old:
            log.info("closed %d idle environment session(s)", len(old))
        return len(old)

    def close_all(self) -> None:
        with self._lock:
            live = list(self._sessions.values())
            self._sessions.clear()
        for s in live:
            s.close()
