"""shell: multi-turn command-line work in a sandboxed scratch directory seeded with the task's files.

The model calls ``run(command)``; each command runs in the sandbox (crossgym.sandbox.ShellSession: a fresh shell in
the same directory, files persist, processes and the working directory do not) and the model sees the exit code and
output. A reply without a tool call ends the episode. The ``shell`` verifier replays the same commands from the
Completion in a fresh directory and compares the final files, so the reward never depends on this process.
"""

from __future__ import annotations

from typing import Any

from crossgym.environments.base import BaseEnvironment, Reply, read_tool_calls, tool_message, within_the_cap
from crossgym.environments.tools import tool_spec
from crossgym.protocol.episode import Observation
from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Task

#: most characters of a command's output shown to the model
MAX_OUTPUT_CHARS = 4000


def run(command: str) -> str:
    """Run a shell command in the task directory and show its exit code and output.

    Args:
        command: A bash command line (pipes and redirections are fine).
    """
    raise NotImplementedError("executed by the shell environment")  # only the signature and docstring are used


def format_output(exit_code: int, stdout: str, stderr: str, timed_out: bool, timeout: float) -> str:
    """What the model sees for one command."""
    out = stdout + (("\n" if stdout and not stdout.endswith("\n") else "") + stderr if stderr else "")
    if len(out) > MAX_OUTPUT_CHARS:
        out = out[:MAX_OUTPUT_CHARS] + f"\n... [{len(out) - MAX_OUTPUT_CHARS} more characters]"
    head = f"timed out after {timeout:g} s" if timed_out else f"exit code {exit_code}"
    return f"{head}\n{out}" if out else head


class ShellEnv(BaseEnvironment):
    """Run shell commands with the ``run`` tool; params: max_turns, command_timeout (s), tier (sandbox)."""

    name = "shell"
    default_max_turns = 10

    def __init__(self, *, max_turns: int | None = None, command_timeout: float = 5.0, tier: str | None = None) -> None:
        super().__init__(max_turns=max_turns)
        self.command_timeout = float(command_timeout)
        self.tier = tier
        self.session: Any = None
        self.spec = tool_spec(run)

    def start(self, task: Task) -> Observation:
        files = task.metadata.get("files") or {}
        if not isinstance(files, dict):
            raise ConfigError(f"task {task.id!r}: metadata['files'] must map paths to text",
                              fix="generate tasks with the 'shell_tasks' source")
        from crossgym import sandbox

        self.session = sandbox.shell_session(files, tier=self.tier)
        return Observation(messages=task.prompt, tools=(self.spec,))

    def respond(self, action: Message) -> Reply:
        calls, error = read_tool_calls(action, [self.spec])
        if error is not None:
            return Reply(messages=[tool_message(None, f"Error: could not read the tool call: {error}")],
                         info={"malformed_call": error})
        if not calls:
            return Reply(done=True, info={"final": True})
        calls, left_out = within_the_cap(calls)
        return Reply(messages=[*(self._run(c) for c in calls), *left_out])

    def _run(self, call: ToolCall) -> Message:
        if call.name != "run":
            return tool_message(call, f"Error: unknown tool {call.name!r}; the only tool is run(command)")
        command = call.arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            return tool_message(call, "Error: run needs a non-empty 'command' string")
        try:
            res = self.session.run(command, timeout=self.command_timeout)
        except CrossgymError as exc:
            return tool_message(call, f"Error: the sandbox could not run the command: {exc}")
        return tool_message(call, format_output(res.exit_code, res.stdout, res.stderr, res.timed_out,
                                                self.command_timeout))

    def release(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
