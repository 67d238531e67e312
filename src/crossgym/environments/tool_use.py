"""tool_use: the model calls Python tools until it answers in plain text (or runs out of turns).

Tools come from the task itself (``metadata["toolset"]`` / ``metadata["tool_refs"]``, see ``tools.py``), so the
environment rebuilds identically in any process. Tool errors, unknown tools, bad arguments and unreadable calls go
back to the model as tool messages; nothing the model writes can crash the episode.
"""

from __future__ import annotations

from typing import Any

from crossgym.environments.base import (
    BaseEnvironment,
    Reply,
    read_tool_calls,
    tool_message,
    within_the_cap,
)
from crossgym.environments.tools import Tool, load_toolset, tools_for_task
from crossgym.protocol.episode import Observation
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task


class ToolUseEnv(BaseEnvironment):
    """Multi-turn tool calling. ``toolset`` overrides the task's; ``python_calls`` also reads ``f(a=1)`` text."""

    name = "tool_use"
    default_max_turns = 8

    def __init__(self, *, max_turns: int | None = None, toolset: str | None = None,
                 python_calls: bool = False) -> None:
        super().__init__(max_turns=max_turns)
        self.toolset = toolset
        self.python_calls = bool(python_calls)
        self.tools: dict[str, Tool] = {}

    def start(self, task: Task) -> Observation:
        tools = load_toolset(self.toolset, task, self.seed) if self.toolset else tools_for_task(task, self.seed)
        self.tools = {t.name: t for t in tools}
        return Observation(messages=task.prompt, tools=tuple(t.spec for t in tools))

    def respond(self, action: Message) -> Reply:
        specs = [t.spec for t in self.tools.values()]
        calls, error = read_tool_calls(action, specs, python_calls=self.python_calls)
        if error is not None:
            return Reply(messages=[tool_message(None, f"Error: could not read the tool call: {error}")],
                         info={"malformed_call": error})
        if not calls:
            return Reply(done=True, info={"final": True})
        calls, left_out = within_the_cap(calls)
        info: dict[str, Any] = {"calls": [c.name for c in calls]}
        out = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None:
                known = ", ".join(sorted(self.tools)) or "none"
                out.append(tool_message(call, f"Error: unknown tool {call.name!r}; available tools: {known}"))
                continue
            out.append(tool_message(call, tool.call(call.arguments)))
        return Reply(messages=[*out, *left_out], info=info)
