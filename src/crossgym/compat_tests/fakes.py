"""A scripted multi-turn environment for the token-consistency check: it records exactly what it saw.

Each episode's first observation carries a nonce (``[episode N]``) so the check can match the token ids a backend
returns to the episode that produced them. Replies are deliberately awkward for chat templates and tokenizers:
leading/trailing whitespace, blank lines, non-ASCII text, special-token look-alikes, an empty reply.
Registered as ``compat_scripted`` only while a check runs (``registered()``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar
from crossgym.protocol.episode import Observation
from crossgym.protocol.messages import Message, user
from crossgym.protocol.task import Task

ENV_NAME = "compat_scripted"
REPLIES = (
    "  Not yet. Try again:\n\n",
    "Fast. Über-naïve 答え? — «ok»\t",
    "<|im_end|> is just text here <tool_call>",
    "",
    "line one\r\nline two\n",
)


@dataclass
class Record:
    """What one episode's environment saw: its first observation, every action, every reply."""

    observation: tuple[Message, ...]
    tools: tuple[Any, ...]
    actions: list[Message] = field(default_factory=list)
    replies: list[tuple[Message, ...]] = field(default_factory=list)


_lock = threading.Lock()
_counter = itertools.count(1)
LOG: dict[int, Record] = {}


def nonce_text(n: int) -> str:
    return f"[episode {n}]"


class ScriptedEnvironment(BaseEnvironment):
    """Replies to every assistant turn with the next awkward message until max_turns."""

    name = ENV_NAME
    default_max_turns = 3

    def start(self, task: Task) -> Observation:
        with _lock:
            self.nonce = next(_counter)
        *head, last = task.prompt
        first = Message(role=last.role, content=f"{nonce_text(self.nonce)} {last.content}")
        obs = Observation(messages=(*head, first), tools=task.tools)
        with _lock:
            LOG[self.nonce] = Record(observation=obs.messages, tools=obs.tools)
        return obs

    def respond(self, action: Message) -> Reply:
        reply = (user(REPLIES[(self.turns - 1) % len(REPLIES)]),)
        with _lock:
            rec = LOG[self.nonce]
            rec.actions.append(action)
            rec.replies.append(reply)
        return Reply(messages=reply)


@hookimpl
def crossgym_register_environments(registry: Registrar) -> None:
    registry.add(ENV_NAME, "crossgym.compat_tests.fakes:ScriptedEnvironment",
                 description="compat suite: scripted replies, records what it saw (token-consistency check)")


@contextmanager
def registered() -> Iterator[dict[int, Record]]:
    """Register ``compat_scripted`` in this process for the duration; yields the episode log (cleared first)."""
    import sys

    from crossgym.plugins import register_plugin, unregister_plugin

    module = sys.modules[__name__]
    with _lock:
        LOG.clear()
    register_plugin(module)
    try:
        yield LOG
    finally:
        unregister_plugin(module)
