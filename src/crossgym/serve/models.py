"""Request and response bodies of `crossgym serve` (pydantic), and their conversion to the protocol's objects.

The wire forms are the protocol's JSON forms (``Task.to_dict``, ``Completion.to_dict``, ``Verdict.to_dict``), so
a task written by `crossgym tasks` can be posted as it is. Unknown fields are refused with a structured 422.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring.failure import fault

Role = Literal["system", "developer", "user", "assistant", "tool"]


class _In(BaseModel):
    # strict: no coercion (a JSON false is not a seed, "3" is not a token id), so the schema says what is accepted
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class _Out(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)


# ---------------------------------------------------------------------------------------------- protocol objects
class ToolCallIn(_In):
    """One function call made by the assistant."""

    id: str = ""
    """Call id (tool results answer it through tool_call_id)."""
    name: str
    """The tool's name. May be empty, as ``ToolCall.from_dict`` takes it: an OpenAI endpoint's call with an empty
    name is recorded as one by eval, and a rollout record must post as it is (a verifier judges such a call; a
    422 here left serve unable to score what verify-batch and reverify score)."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """Arguments as a JSON object, or as OpenAI writes them: the object's JSON text (text that is not one JSON object
    makes the call unreadable: judged malformed)."""
    error: str | None = None
    """Why the call's arguments could not be read, as rollout records carry it (the call is judged malformed)."""
    raw_arguments: str | None = None
    """An unreadable call's arguments as the model wrote them, as rollout records carry them."""


class MessageIn(_In):
    """One chat message, in crossgym's (OpenAI chat) form."""

    role: Role
    """system, developer, user, assistant or tool."""
    content: str | None = ""
    """The text (null counts as empty)."""
    tool_calls: list[ToolCallIn] = Field(default_factory=list)
    """Calls the assistant made in this message."""
    tool_call_id: str | None = None
    """For tool messages: the call this answers."""
    name: str | None = None
    """For tool messages: the tool's name."""


class ToolSpecIn(_In):
    """A tool the policy may call, in OpenAI function format."""

    name: str = Field(min_length=1)
    """The tool's name."""
    description: str = ""
    """What the tool does."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments."""


class VerifierSpecIn(_In):
    """A verifier by registered name and parameters (see GET /verifiers)."""

    name: str = Field(min_length=1)
    """Registered verifier name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The verifier's parameters."""


class TaskIn(_In):
    """A task (``Task.to_dict()``): prompt, reference answer and the verifier that scores it."""

    id: str
    """Task id."""
    prompt: str | list[MessageIn]
    """The prompt: a user text, or chat messages."""
    answer: Any = None
    """Reference answer, in the form the verifier expects."""
    verifier: VerifierSpecIn | str
    """The verifier: a name, or {"name", "params"}."""
    env: str = "single_turn"
    """The environment the task runs in."""
    tools: list[ToolSpecIn] = Field(default_factory=list)
    """Tools offered to the policy."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else the task's environment or verifier reads."""


class CompletionIn(_In):
    """What the policy produced (``Completion.to_dict()``)."""

    messages: list[MessageIn]
    """Messages after the prompt: assistant turns and tool results."""
    token_ids: list[int] | None = None
    """Token ids, where the engine gave them."""
    logprobs: list[float] | None = None
    """Log-probabilities, where the engine gave them."""


class VerdictOut(_Out):
    """A verifier's judgement (``Verdict.to_dict()``)."""

    reward: float | None
    """The reward (null only for a non-finite value)."""
    passed: bool
    """Whether the completion passed."""
    components: dict[str, float]
    """Named parts of the reward."""
    reason: str
    """Why, in a line."""
    error: str | None
    """null, "timeout", "exception: ..." or "malformed: ..."."""
    fault: Literal["infra", "model", "none"]
    """Whose failure: "infra" (the verifier, its sandbox or the environment failed: the reward measures nothing,
    mask the sample), "model" (a wrong or malformed answer: a real reward), "none" (passed)."""


class MessageOut(_Out):
    """One chat message."""

    role: str
    content: str
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ObservationOut(_Out):
    """The start of an episode: messages to continue and tools the policy may call."""

    messages: list[MessageOut]
    tools: list[dict[str, Any]]


# ---------------------------------------------------------------------------------------------- verification
class VerifyRequest(_In):
    """Score one completion for one task."""

    task: TaskIn
    """The task (its verifier scores unless ``verifier`` is given)."""
    completion: str | CompletionIn
    """The completion: the assistant's text, or a whole Completion."""
    verifier: VerifierSpecIn | str | None = None
    """Score with this verifier instead of the task's own."""


class VerifierRef(_Out):
    """Which verifier judged."""

    name: str
    version: str | None


class VerifyResponse(_Out):
    """The Verdict, and the verifier that gave it."""

    verdict: VerdictOut
    verifier: VerifierRef


class BatchItem(_In):
    """One pair of a batch: its task inline, or the index of a task in the batch's ``tasks``."""

    task: TaskIn | int
    """The task, or its index in ``tasks`` (a GRPO group shares one task: send it once)."""
    completion: str | CompletionIn
    """The completion: the assistant's text, or a whole Completion."""
    verifier: VerifierSpecIn | str | None = None
    """Score with this verifier instead of the task's own."""


class BatchRequest(_In):
    """Score many (task, completion) pairs in one request; the reply keeps their order."""

    items: list[BatchItem] = Field(min_length=1, max_length=4096)
    """The pairs (at most the server's --max-batch)."""
    tasks: list[TaskIn] = Field(default_factory=list, max_length=4096)
    """Tasks that items name by index (optional)."""


class BatchResponse(_Out):
    """One Verdict per item, in order; a verifier that cannot be built gives an "exception" Verdict there."""

    verdicts: list[VerdictOut]


# ---------------------------------------------------------------------------------------------- environments
class EnvCreateRequest(_In):
    """Start an episode of ``task`` in an environment."""

    task: TaskIn
    """The task to run."""
    env: str | None = None
    """Registered environment name (default: the task's own ``env``)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters of the environment (max_turns, ...)."""
    seed: int | None = None
    """Seed for the episode's dynamics."""


class EnvCreated(_Out):
    """A new session: its id, the first observation and how long it may idle."""

    id: str
    env: str
    observation: ObservationOut
    idle_timeout_s: float


class StepRequest(_In):
    """One assistant action."""

    action: MessageIn | str
    """An assistant message, or its text."""


class StepResponse(_Out):
    """The environment's answer; when the episode is done, the task verifier's Verdict on it."""

    messages: list[MessageOut]
    done: bool
    info: dict[str, Any]
    turn: int
    verdict: VerdictOut | None = None


class EnvState(_Out):
    """A session's episode so far."""

    id: str
    env: str
    task_id: str
    turns: int
    done: bool
    messages: list[MessageOut]
    verdict: VerdictOut | None = None


# ---------------------------------------------------------------------------------------------- service
class VerifierInfo(_Out):
    """A registered verifier."""

    name: str
    version: str | None
    description: str
    isolation: str | None = None
    error: str | None = None


class VerifierList(_Out):
    verifiers: list[VerifierInfo]


class Health(_Out):
    status: str
    version: str
    sessions: int
    in_flight: int
    queued: int


class Problem(_Out):
    what: str
    where: str | None = None


class ErrorDetail(_Out):
    """What went wrong, where, and how to fix it."""

    status: int
    code: str
    what: str
    where: str | None = None
    fix: str | None = None
    problems: list[Problem] = Field(default_factory=list)


class ErrorResponse(_Out):
    error: ErrorDetail


# ---------------------------------------------------------------------------------------------- conversion
def to_message(m: MessageIn) -> Message:
    return Message(role=m.role, content=m.content or "",
                   tool_calls=tuple(ToolCall.from_dict(c.model_dump(exclude_none=True)) for c in m.tool_calls),
                   tool_call_id=m.tool_call_id, name=m.name)


_BARE_SPECS: dict[str, VerifierSpec] = {}


def to_spec(v: VerifierSpecIn | str) -> VerifierSpec:
    """The spec; one shared object per name when there are no params, so verify_many's per-spec cache hits."""
    name, params = (v, None) if isinstance(v, str) else (v.name, v.params)
    if params:
        return VerifierSpec(name=name, params=dict(params))
    spec = _BARE_SPECS.get(name)
    if spec is None:
        if len(_BARE_SPECS) > 4096:
            _BARE_SPECS.clear()
        spec = _BARE_SPECS[name] = VerifierSpec(name=name)
    return spec


def to_task(t: TaskIn) -> Task:
    prompt = (Message(role="user", content=t.prompt),) if isinstance(t.prompt, str) \
        else tuple(to_message(m) for m in t.prompt)
    return Task(id=t.id, prompt=prompt, answer=t.answer, verifier=to_spec(t.verifier), env=t.env,
                tools=tuple(ToolSpec(name=s.name, description=s.description, parameters=dict(s.parameters))
                            for s in t.tools),
                metadata=dict(t.metadata))


def to_completion(c: str | CompletionIn) -> Completion:
    if isinstance(c, str):
        return Completion.from_text(c)
    return Completion(messages=tuple(to_message(m) for m in c.messages),
                      token_ids=None if c.token_ids is None else tuple(c.token_ids),
                      logprobs=None if c.logprobs is None else tuple(c.logprobs))


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """``Verdict.to_dict()`` with non-finite numbers as null (JSON has no NaN), plus its ``fault``
    (crossgym.scoring.failure)."""
    comps = v.components
    if comps and not all(math.isfinite(x) for x in comps.values()):
        comps = {k: x for k, x in comps.items() if math.isfinite(x)}
    return {"reward": v.reward if math.isfinite(v.reward) else None, "passed": v.passed, "components": comps,
            "reason": v.reason, "error": v.error, "fault": fault(v)}


class TaskCache:
    """Tasks already converted, keyed by the JSON they came as: a task posted again (the rest of a GRPO group, the
    next epoch) is the same Task object, so its verifier's per-task caches hit too. Thread-safe, bounded."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._tasks: OrderedDict[bytes, Task] = OrderedDict()
        self._lock = threading.Lock()

    def task(self, raw: Any, model: TaskIn) -> Task:
        """The Task for ``model``, validated from the JSON value ``raw``."""
        return self._get(raw, model)

    def from_json(self, raw: Any) -> Task:
        """The Task for the JSON value ``raw``, validated by TaskIn unless the same JSON was seen before (raises
        pydantic's ValidationError)."""
        return self._get(raw, None)

    def _get(self, raw: Any, model: TaskIn | None) -> Task:
        from crossgym.serve import jsonio

        key = jsonio.key(raw)
        with self._lock:
            hit = self._tasks.get(key)
            if hit is not None:
                self._tasks.move_to_end(key)
                return hit
        task = to_task(model if model is not None else TaskIn.model_validate(raw))
        with self._lock:
            self._tasks[key] = task
            if len(self._tasks) > self.size:
                self._tasks.popitem(last=False)
        return task
