"""single_turn: the prompt, one assistant reply, done. The reply is scored by the task's verifier."""

from __future__ import annotations

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.protocol.messages import Message


class SingleTurnEnv(BaseEnvironment):
    """One reply per episode; tools the task declares are shown but not executed (a tool_call verifier scores
    the call itself)."""

    name = "single_turn"
    default_max_turns = 1

    def __init__(self, *, max_turns: int | None = None) -> None:
        super().__init__(max_turns=1 if max_turns is None else max_turns)
        self.max_turns_param = self.max_turns  # one reply, whatever the task's metadata says

    def respond(self, action: Message) -> Reply:
        return Reply(done=True)
