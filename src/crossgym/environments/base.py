"""BaseEnvironment: the episode bookkeeping every built-in environment shares.

Subclasses write ``start(task)`` (the first observation) and ``respond(action)`` (what the environment says back);
the base class enforces the protocol: ``reset`` before ``step``, no ``step`` after ``done``, only assistant actions,
``max_turns``, and the episode's reward as the task verifier's Verdict on the whole Completion (``verdict()``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from crossgym.protocol.episode import Observation, StepResult
from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict

log = logging.getLogger(__name__)


class EpisodeError(CrossgymError, RuntimeError):
    """The environment was driven out of order: step before reset, step after done, a non-assistant action."""


@dataclass
class Reply:
    """What ``respond`` returns: messages for the model, whether the episode ended, and info for the caller."""

    messages: Sequence[Message] = ()
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class BaseEnvironment:
    """One episode of one task. Not thread-safe (one instance per episode; make many for a GRPO group)."""

    #: the registered name
    name: ClassVar[str] = ""
    #: turn budget (assistant actions) unless ``max_turns=`` or the task's ``metadata["max_turns"]`` sets one
    default_max_turns: ClassVar[int] = 1

    def __init__(self, *, max_turns: int | None = None) -> None:
        if max_turns is not None:
            _check_turns(max_turns, f"environment {self.name!r}")
        self.max_turns_param = max_turns
        self.max_turns = self.default_max_turns if max_turns is None else max_turns
        self.task: Task | None = None
        self.seed: int | None = None
        self.rng = random.Random(0)
        self.turns = 0
        self.done = False
        self.closed = False
        self._messages: list[Message] = []
        self._verdict: Verdict | None = None

    # ------------------------------------------------------------------ what subclasses write
    def start(self, task: Task) -> Observation:
        """The first observation for ``task`` (called by ``reset`` after the bookkeeping is fresh)."""
        return Observation(messages=task.prompt, tools=task.tools)

    def respond(self, action: Message) -> Reply:
        """The environment's answer to one assistant action."""
        raise NotImplementedError

    def release(self) -> None:
        """Free what the episode holds (sandbox sessions, connections); called by ``close`` and ``reset``."""

    # ------------------------------------------------------------------ the protocol
    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        """Start a new episode of ``task``; the same task and seed give the same observation and dynamics."""
        if not isinstance(task, Task):
            raise ConfigError(f"environment {self.name!r}: reset() needs a crossgym Task, got {type(task).__name__}",
                              fix="build tasks with crossgym.load_tasks or Task.from_dict")
        self.release()
        self.task, self.seed = task, seed
        if self.max_turns_param is None:  # a task may carry its own turn budget
            turns = task.metadata.get("max_turns", self.default_max_turns)
            self.max_turns = _check_turns(turns, f"task {task.id!r} metadata['max_turns']")
        # (the id's bytes seed as the id itself does; surrogatepass: an id with a lone surrogate, read from a JSON
        # escape such as "\ud800", failed every episode of its task with UnicodeEncodeError)
        self.rng = random.Random(seed if seed is not None else task.id.encode("utf-8", "surrogatepass"))
        self.turns, self.done, self.closed = 0, False, False
        self._messages, self._verdict = [], None
        self.prompt_observation = self.start(task)
        return self.prompt_observation

    def step(self, action: Message) -> StepResult:
        """Apply one assistant action; returns the new messages and whether the episode is over."""
        if self.task is None:
            raise EpisodeError(f"environment {self.name!r}: step() before reset()")
        if self.done:
            raise EpisodeError(f"environment {self.name!r}: step() after the episode ended (done=True); call reset()")
        if not isinstance(action, Message):
            if isinstance(action, dict):
                action = Message.from_dict(action)
            elif isinstance(action, str):
                action = Message(role="assistant", content=action)
            else:
                raise EpisodeError(f"environment {self.name!r}: an action is an assistant Message, "
                                   f"got {type(action).__name__}")
        if action.role != "assistant":
            raise EpisodeError(f"environment {self.name!r}: an action must have role 'assistant', got {action.role!r}")
        self.turns += 1
        self._messages.append(action)
        try:
            reply = self.respond(action)
        except CrossgymError:
            raise
        except Exception as exc:  # an environment bug must not kill a training run: end the episode visibly
            log.warning("environment %s failed on turn %d: %s", self.name, self.turns, exc, exc_info=True)
            reply = Reply(messages=(), done=True, info={"error": f"exception: {type(exc).__name__}: {exc}"})
        new = list(reply.messages)
        self._messages.extend(new)
        info = dict(reply.info)
        done = reply.done
        if not done and self.turns >= self.max_turns:
            done = True
            info["truncated"] = True
        info.setdefault("turn", self.turns)
        self.done = done
        return StepResult(messages=tuple(new), done=done, info=info)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.release()

    def __enter__(self) -> BaseEnvironment:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ the episode so far
    @property
    def messages(self) -> tuple[Message, ...]:
        """Every message after the prompt: actions and the environment's replies, in order."""
        return tuple(self._messages)

    def completion(self) -> Completion:
        """The Completion of the episode so far (what the task's verifier scores)."""
        return Completion(messages=tuple(self._messages))

    def verdict(self) -> Verdict:
        """The task verifier's Verdict on the whole episode (cached once the episode is done)."""
        if self.task is None:
            raise EpisodeError(f"environment {self.name!r}: verdict() before reset()")
        if self._verdict is not None:
            return self._verdict
        from crossgym.api import load_verifier

        v = load_verifier(self.task.verifier).verify(self.task, self.completion())
        if self.done:
            self._verdict = v
        return v

    def reward(self) -> float:
        return self.verdict().reward


def _check_turns(turns: Any, where: str) -> int:
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ConfigError(f"{where}: max_turns must be a positive integer, got {turns!r}",
                          fix="pass max_turns=N with N >= 1")
    return turns


#: most tool calls run from one assistant message, in every built-in environment: a turn of 20 `sleep 60` calls held
#: the shell 103 s, 25 recursive queries the sql one 51 s (each call's own timeout, one after another)
MAX_CALLS_PER_TURN = 16


def within_the_cap(calls: list[ToolCall]) -> tuple[list[ToolCall], list[Message]]:
    """(the calls to run, the replies to those left out): the first ``MAX_CALLS_PER_TURN``, and one message saying
    how many more were not run (one message, not one per call: 20,000 calls were 20,000 replies)."""
    if len(calls) <= MAX_CALLS_PER_TURN:
        return calls, []
    left = len(calls) - MAX_CALLS_PER_TURN
    return calls[:MAX_CALLS_PER_TURN], [tool_message(None, f"Error: at most {MAX_CALLS_PER_TURN} tool calls per turn; "
                                                           f"the {left} after them were not run")]


def tool_message(call: ToolCall | None, content: str) -> Message:
    """A tool-role message answering ``call`` (or reporting a call that could not be read)."""
    if call is None:
        return Message(role="tool", content=content, name="error")
    return Message(role="tool", content=content, tool_call_id=call.id or None, name=call.name)


def read_tool_calls(action: Message, tools: Sequence[ToolSpec] = (), *,
                    python_calls: bool = False) -> tuple[list[ToolCall], str | None]:
    """(calls, error): OpenAI ``tool_calls`` or Hermes ``<tool_call>`` text (and Python call syntax when asked).

    ``error`` is a one-line reason when a call is present but unreadable; then ``calls`` is empty.
    """
    from crossgym.text import MalformedToolCall, parse_tool_calls

    if action.tool_calls:
        for i, c in enumerate(action.tool_calls):  # arguments that are not one JSON object: refused as in Hermes text
            if c.error is not None:
                return [], f"tool call {i + 1} ({c.name}): {c.error}"
        return list(action.tool_calls), None
    text = action.content or ""
    if not python_calls and "<tool_call>" not in text and "</tool_call>" not in text:
        return [], None
    try:
        calls = parse_tool_calls(action, tools)
    except MalformedToolCall as exc:
        return [], str(exc)
    # give parsed calls ids unique within the episode turn
    return [c if c.id else replace(c, id=f"call_{i}") for i, c in enumerate(calls)], None
