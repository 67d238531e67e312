"""Tasks, verifier specs, completions, verdicts and examples: what a verifier consumes and produces."""

from __future__ import annotations

import json
import math
import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from crossgym.protocol.messages import Message, ToolSpec, json_kind, json_object, messages_from, true_false

JSON = Any  # a JSON-serialisable value

#: Verdict.error values start with one of these.
ERROR_KINDS = ("timeout", "exception", "malformed")


_kind = json_kind


def _prompt(value: Any) -> tuple[Message, ...]:
    """A task's prompt: text, one message object or a list of them; anything else is a ValueError naming
    'prompt' and what it got (not Python's "'int' object is not iterable")."""
    if not isinstance(value, (str, Mapping, list, tuple)):
        raise ValueError(f"'prompt' must be text or a list of messages, got {_kind(value)}")
    try:
        return messages_from(value)
    except ValueError as exc:
        raise ValueError(f"'prompt': {exc}") from None


def task_id_text(value: Any) -> str:
    """A task's id as text: text, or a number (a dataset's integer index column) written as Python writes it.
    null, true/false, NaN or infinity and containers are refused naming 'id': they were made text ("None",
    "True", "nan", "[1]"), so every task of a file with empty ids shared the id "None", one task to an eval."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not true_false(value):
        return str(int(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    got = f"{value!r}, which is no number a task can be named by" if isinstance(value, numbers.Real) and \
        not isinstance(value, bool) else _kind(value)
    raise ValueError(f"'id' must be text or a finite number, got {got}")


def _tools(value: Any) -> tuple[ToolSpec, ...]:
    """A task's tools: a list of tool specs (none when absent, null or empty, as before); anything else is a
    ValueError naming 'tools', the item and what it got."""
    if not value:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"'tools' must be a list of tool specs ({{'name': ..., 'parameters': {{...}}}}), "
                         f"got {_kind(value)}")
    out = []
    for i, t in enumerate(value):
        try:
            out.append(t if isinstance(t, ToolSpec) else ToolSpec.from_dict(t))
        except ValueError as exc:
            raise ValueError(f"'tools' item {i + 1}: {exc}") from None
    return tuple(out)


def _metadata(value: Any) -> dict[str, Any]:
    """A task's metadata: an object (empty when absent, null or empty, as before); anything else names it."""
    return json_object("'metadata'", value)


@dataclass(frozen=True)
class VerifierSpec:
    """A verifier by registered name and parameters; rebuilt through the registry in any process."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params}

    def key(self) -> str:
        """A canonical string for caching and provenance."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | str) -> VerifierSpec:
        if isinstance(d, str):
            return cls(name=d)
        if not isinstance(d, Mapping):
            raise ValueError(f"a verifier is a registered name or an object {{'name': ..., 'params': {{...}}}}, "
                             f"got {_kind(d)}")
        if "name" not in d:
            raise ValueError("VerifierSpec is missing required key 'name'")
        name, params = d["name"], d.get("params") or {}
        if not isinstance(name, str):
            raise ValueError(f"a verifier's 'name' is its registered name (text), got {_kind(name)}")
        if not isinstance(params, Mapping):
            raise ValueError(f"a verifier's 'params' is an object of its parameters, got {_kind(params)}")
        return cls(name=name, params=dict(params))


@dataclass(frozen=True)
class Task:
    """One input to the agent: prompt, reference answer, and the verifier that scores it."""

    id: str
    prompt: tuple[Message, ...]
    answer: JSON
    verifier: VerifierSpec
    env: str = "single_turn"
    tools: tuple[ToolSpec, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, tuple) or not all(isinstance(m, Message) for m in self.prompt):
            object.__setattr__(self, "prompt", messages_from(self.prompt))
        if not isinstance(self.tools, tuple) or not all(isinstance(t, ToolSpec) for t in self.tools):
            tools = (self.tools,) if isinstance(self.tools, Mapping) else tuple(self.tools)
            object.__setattr__(self, "tools", tuple(t if isinstance(t, ToolSpec) else ToolSpec.from_dict(t)
                                                    for t in tools))  # dicts in OpenAI function form, as prompt

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": [m.to_dict() for m in self.prompt],
            "answer": self.answer,
            "verifier": self.verifier.to_dict(),
            "env": self.env,
            "tools": [t.to_dict() for t in self.tools],
            "metadata": self.metadata,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Task:
        """A Task from its JSON form. A field of the wrong type is a ValueError naming the field and what it got
        ("'prompt' must be text or a list of messages, got a number (5)"): callers that read a user's file catch
        ValueError and add the file:line."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a Task is a JSON object with 'id', 'prompt' and 'verifier', got {_kind(d)}")
        for key in ("id", "prompt", "verifier"):
            if key not in d:
                raise ValueError(f"Task is missing required key {key!r}")
        task_id, prompt = task_id_text(d["id"]), _prompt(d["prompt"])
        for i, m in enumerate(prompt):  # a task's own data: an unreadable call in it is an error, not a judgement
            for j, c in enumerate(m.tool_calls):
                if c.error is not None:
                    raise ValueError(f"Task {task_id!r}: prompt message {i + 1}, tool call {j + 1} ({c.name}): "
                                     f"{c.error}; write its arguments as one JSON object")
        return cls(
            id=task_id,
            prompt=prompt,
            answer=d.get("answer"),
            verifier=VerifierSpec.from_dict(d["verifier"]),
            env=str(d.get("env", "single_turn")),
            tools=_tools(d.get("tools")),
            metadata=_metadata(d.get("metadata")),
        )

    @classmethod
    def from_json(cls, text: str) -> Task:
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True)
class Completion:
    """What the policy produced: the messages after the prompt (assistant turns, tool results)."""

    messages: tuple[Message, ...]
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple) or not all(isinstance(m, Message) for m in self.messages):
            object.__setattr__(self, "messages", messages_from(self.messages))
        if self.token_ids is not None and not isinstance(self.token_ids, tuple):
            object.__setattr__(self, "token_ids", tuple(self.token_ids))
        if self.logprobs is not None and not isinstance(self.logprobs, tuple):
            object.__setattr__(self, "logprobs", tuple(self.logprobs))

    @classmethod
    def from_text(cls, text: str) -> Completion:
        return cls(messages=(Message(role="assistant", content=text),))

    @property
    def text(self) -> str:
        """The final assistant message's text ("" when there is none)."""
        for m in reversed(self.messages):
            if m.role == "assistant":
                return m.content
        return ""

    @property
    def assistant_messages(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.role == "assistant")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages]}
        if self.token_ids is not None:
            d["token_ids"] = list(self.token_ids)
        if self.logprobs is not None:
            d["logprobs"] = list(self.logprobs)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Completion:
        ids = d.get("token_ids")
        lps = d.get("logprobs")
        return cls(
            messages=messages_from(d.get("messages") or ()),
            token_ids=None if ids is None else _numbers("token_ids", ids, integers=True),
            logprobs=None if lps is None else _numbers("logprobs", lps, integers=False),
        )


def _numbers(field: str, value: Any, *, integers: bool) -> tuple[Any, ...]:
    """A completion's ``token_ids`` (integers) or ``logprobs`` (numbers) as a tuple: a list of them, or an array a
    Parquet reader gave. Anything else is a ValueError naming the field and the first bad item: text was read
    character by character (Python's "invalid literal for int()"), and 1.5 or "12" became token 1 or 12."""
    want = "integers" if integers else "numbers"
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise ValueError(f"'{field}' must be a list of {want}, got {_kind(value)}")
    items = tuple(value)
    if integers and all(type(i) is int for i in items):
        return items  # (the common case: a JSON list of ints, one pass)
    out: list[Any] = []
    for n, item in enumerate(items):
        if true_false(item) or not isinstance(item, numbers.Real) or (
                integers and not isinstance(item, numbers.Integral)):
            raise ValueError(f"'{field}' must be a list of {want}, got {_kind(item)} at item {n + 1}")
        out.append(operator.index(item) if isinstance(item, numbers.Integral) and integers else float(item))
    return tuple(out)


@dataclass(frozen=True)
class Verdict:
    """A verifier's judgement. ``error`` is None, "timeout", "exception: ..." or "malformed: ..."."""

    reward: float
    passed: bool
    components: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    error: str | None = None

    def __post_init__(self) -> None:
        # reasons quote what untrusted code printed or raised: a lone surrogate ('\ud800') in them would make
        # every JSON writer that encodes UTF-8 fail (serve, the rollout store, --json), so it becomes '\\ud800'
        # (ASCII text, nearly all of it, is UTF-8 safe without encoding it: one C-level scan per string)
        reason, error = self.reason, self.error
        if type(reason) is str and not reason.isascii() and not _utf8_safe(reason):
            object.__setattr__(self, "reason", safe_text(reason))
        if type(error) is str and not error.isascii() and not _utf8_safe(error):
            object.__setattr__(self, "error", safe_text(error))
        comps = self.components
        if (type(comps) is not dict or comps) and not all(type(k) is str and (k.isascii() or _utf8_safe(k))
                                                          for k in comps):
            object.__setattr__(self, "components", {safe_text(str(k)): v for k, v in self.components.items()})

    @classmethod
    def ok(cls, reward: float, *, passed: bool | None = None, reason: str = "",
           components: dict[str, float] | None = None, threshold: float = 1.0) -> Verdict:
        """A normal judgement; ``passed`` defaults to reward >= threshold."""
        reward = float(reward)
        passed = reward >= threshold if passed is None else passed
        components = dict(components) if components else {}
        if cls is Verdict and type(reason) is str and reason.isascii() and not components:
            # the hot path of every verifier: the fields the dataclass __init__ would set, and nothing for
            # __post_init__ to scrub (ASCII reason, no components, no error); frozen still holds afterwards
            v = object.__new__(Verdict)
            v.__dict__.update(reward=reward, passed=passed, components=components, reason=reason, error=None)
            return v
        return cls(reward, passed, components, reason)

    @classmethod
    def malformed(cls, detail: str) -> Verdict:
        return cls(reward=0.0, passed=False, reason=detail, error=f"malformed: {detail}")

    @classmethod
    def exception(cls, detail: str) -> Verdict:
        return cls(reward=0.0, passed=False, reason=detail, error=f"exception: {detail}")

    @classmethod
    def timeout(cls, seconds: float) -> Verdict:
        return cls(reward=0.0, passed=False, reason=f"verification exceeded {seconds:g} s", error="timeout")

    @property
    def error_kind(self) -> str | None:
        """"timeout", "exception", "malformed" or None."""
        if self.error is None:
            return None
        return self.error.split(":", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "passed": self.passed, "components": self.components,
                "reason": self.reason, "error": self.error}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """A stored verdict (a rollout record's, a Parquet row's, a server's reply). Its ``reward`` and ``passed``
        must be a number and true/false: a value of another type (``"passed": "false"``, a text column) is a
        ValueError naming the field, never converted (``bool("false")`` counted every such rollout as passed)."""
        return cls(
            reward=_stored_reward(d["reward"]),
            passed=_stored_passed(d.get("passed", False)),
            components=_stored_components(d.get("components")),
            reason=str(d.get("reason", "")),
            error=d.get("error"),
        )


def _stored_reward(value: Any) -> float:
    """A stored verdict's reward: a number, or null for "no reward" (NaN, which records write as null). Text
    ("1.0", "nan") and true/false are refused: they are a writer's column of another type, and converting them
    would score what the writer never meant."""
    if value is None:
        return math.nan
    if true_false(value) or not isinstance(value, numbers.Real):
        raise ValueError(f"a verdict's 'reward' must be a number, got {json_kind(value)}")
    reward = float(value)
    if math.isinf(reward):  # (JSON 1e400): no verifier gives one, and a mean over it is no mean
        raise ValueError(f"a verdict's 'reward' must be finite, got {value!r}")
    return reward


def _stored_components(value: Any) -> dict[str, float]:
    """A stored verdict's components: an object of numbers (none when null or absent); anything else names the
    field and the component (it was Python's "could not convert string to float"); null is NaN, as for reward."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"a verdict's 'components' must be an object of numbers, got {json_kind(value)}")
    out = {}
    for k, v in value.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise ValueError(f"a verdict's component {str(k)!r} must be a number, got {json_kind(v)}")
        out[str(k)] = math.nan if v is None else float(v)  # (null: NaN, as records write it)
    return out


def _stored_passed(value: Any) -> bool:
    """A stored verdict's ``passed``: true/false (null, and 0 or 1 as some writers store a flag, read as such).
    Anything else is refused, above all text: ``bool("false")`` is True, which counted failures as passes."""
    if value is None:
        return False
    if true_false(value):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError(f"a verdict's 'passed' must be true or false, got {json_kind(value)}")




def _utf8_safe(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate written as its escape (``'\\ud800'``): it encodes as UTF-8."""
    return text if _utf8_safe(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


Expect = Literal["pass", "fail", "malformed"]


@dataclass(frozen=True)
class Example:
    """A worked case a verifier ships: this completion on this task should pass, fail, or be malformed."""

    task: Task
    completion: Completion
    expect: Expect
    note: str = ""

    def matches(self, verdict: Verdict) -> bool:
        """Whether ``verdict`` is what this example declares."""
        if self.expect == "pass":
            return verdict.passed and verdict.error is None
        if self.expect == "fail":
            return not verdict.passed and verdict.error is None
        return not verdict.passed and verdict.error_kind == "malformed"

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task.to_dict(), "completion": self.completion.to_dict(),
                "expect": self.expect, "note": self.note}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Example:
        return cls(task=Task.from_dict(d["task"]), completion=Completion.from_dict(d["completion"]),
                   expect=d["expect"], note=str(d.get("note", "")))


def carried(value: Any) -> Any:
    """``value`` as every JSON carrier of a task gives it back (serve, rollout records, the trainers' task
    columns): NaN and infinities null, tuples lists, dict keys text (None/bool/numbers as JSON writes them). The same
    object when nothing changes (so caches by identity still hit). Anything else is left as it is."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        changed = not isinstance(value, dict)
        for k, v in value.items():
            k2 = k if type(k) is str else _carried_key(k)
            v2 = carried(v)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [carried(v) for v in value]
        if t is list and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


def _carried_key(k: Any) -> Any:
    if isinstance(k, str):
        return str(k)
    if k is None or isinstance(k, (bool, int)) or (isinstance(k, float) and math.isfinite(k)):
        return json.dumps(k)
    return k  # a key no carrier writes the same way (a tuple, NaN): left to each


def carried_task(task: Task) -> Task:
    """``task`` with its answer and metadata as JSON carries them (``carried``): the task a verifier judges in
    process is the one it judges after serve, a rollout record or a trainer's task column brought it. The same
    Task when nothing changes."""
    answer, metadata = carried(task.answer), carried(task.metadata)
    if answer is task.answer and metadata is task.metadata:
        return task
    from dataclasses import replace

    return replace(task, answer=answer, metadata=metadata if isinstance(metadata, dict) else dict(metadata))
