"""PrimeIntellect verifiers (PyPI ``verifiers`` 0.4.0, its ``verifiers.v1`` API) as crossgym tasks and a verifier.

A verifiers environment is a taskset package (``vf.Taskset`` yielding ``vf.Task`` objects whose ``@vf.reward``
methods score a ``vf.Trace``). ``prime_verifiers`` (a task source) turns its tasks into crossgym Tasks scored by
``prime_rubric``, which rebuilds the verifiers task and scores the completion with verifiers' own ``Task.score``:
the same code, weights and keyed rewards a verifiers rollout uses. The other direction is ``prime_export``.
verifiers is imported inside functions (it takes seconds), so listing or loading the verifier class stays cheap;
``zygote_warm`` imports it once in the verifier worker pool.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed

log = logging.getLogger(__name__)

#: where a crossgym Task keeps the verifiers task it came from
META_KEY = "prime_verifiers"


# ------------------------------------------------------------------------------------------- messages
def zygote_warm() -> None:
    """Called once in the worker pool's zygote: import verifiers there, so forked workers start with it."""
    import verifiers.v1  # noqa: F401


def to_vf_message(m: Message) -> Any:
    """A crossgym Message as a verifiers v1 message (tool-call arguments travel as the raw JSON string)."""
    import verifiers.v1 as vf

    if m.role == "system":
        return vf.SystemMessage(content=m.content)
    if m.role == "user":
        return vf.UserMessage(content=m.content)
    if m.role == "tool":
        return vf.ToolMessage(tool_call_id=m.tool_call_id or "", content=m.content, name=m.name)
    calls = [vf.ToolCall(id=c.id, name=c.name, arguments=c.arguments_text()) for c in m.tool_calls]
    return vf.AssistantMessage(content=m.content, tool_calls=calls or None)


def from_vf_message(m: Any) -> Message:
    """A verifiers v1 message (or its dict form) as a crossgym Message."""
    d = m.model_dump(mode="json") if hasattr(m, "model_dump") else dict(m)
    calls = tuple(ToolCall.from_dict({"id": c.get("id", ""), "function": {"name": c["name"],
                                                                          "arguments": c.get("arguments") or "{}"}})
                  for c in d.get("tool_calls") or ())
    content = d.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return Message(role=d["role"], content=content or "", tool_calls=calls, tool_call_id=d.get("tool_call_id"),
                   name=d.get("name"))


def prompt_messages(data: Any) -> tuple[Message, ...]:
    """The opening messages of a verifiers task: its system prompt, then its prompt (text or messages)."""
    out: list[Message] = []
    if data.system_prompt:
        out.append(Message(role="system", content=data.system_prompt))
    if isinstance(data.prompt, str):
        out.append(Message(role="user", content=data.prompt))
    elif data.prompt:
        out.extend(from_vf_message(m) for m in data.prompt)
    return tuple(out)


def build_trace(vf_task: Any, prompt: Sequence[Message], completion: Completion) -> Any:
    """A verifiers Trace of one conversation: prompt messages as context, completion messages as the rollout
    (assistant turns marked sampled, as a live rollout marks them)."""
    import verifiers.v1 as vf
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask

    nodes = []
    for i, m in enumerate([*prompt, *completion.messages]):
        nodes.append(MessageNode(message=to_vf_message(m), parent=i - 1 if i else None,
                                 sampled=i >= len(prompt) and m.role == "assistant"))
    return Trace(task=TraceTask(type=type(vf_task).__name__, data=vf_task.data, key=vf_task.key, hash=vf_task.hash),
                 agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes)


def run_coroutine(coro: Any) -> Any:
    """Run ``coro`` to completion from sync code, also when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(asyncio.run(coro))
        except BaseException as exc:  # handed back to the caller below
            box.append(exc)

    t = threading.Thread(target=target, name="crossgym-vf-score")
    t.start()
    t.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def score_with_verifiers(vf_task: Any, prompt: Sequence[Message], completion: Completion) -> Any:
    """Score a conversation with verifiers' own ``Task.score`` (rewards, metrics, judges); returns the Trace."""
    trace = build_trace(vf_task, prompt, completion)
    run_coroutine(vf_task.score(trace))
    return trace


# ------------------------------------------------------------------------------------------- tasksets
@functools.lru_cache(maxsize=64)
def _taskset(taskset: str, config_json: str) -> Any:
    from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

    try:
        cfg = taskset_config_type(taskset).model_validate({**json.loads(config_json), "id": taskset})
        return load_taskset(cfg)
    except (ModuleNotFoundError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"verifiers taskset {taskset!r} did not load: {type(exc).__name__}: {exc}",
                          fix="install the environment package and check its config keys") from None


def load_vf_taskset(taskset: str, config: dict[str, Any] | None = None) -> Any:
    """The verifiers Taskset ``taskset`` (an installed package id, e.g. ``crossgym-vf``) with ``config``."""
    return _taskset(taskset, json.dumps(config or {}, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _task_class(taskset: str) -> Any:
    from verifiers.v1.utils.loaders import task_type

    try:
        return task_type(taskset)
    except (ModuleNotFoundError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"verifiers taskset {taskset!r} did not load: {type(exc).__name__}: {exc}",
                          fix="install the environment package") from None


def vf_task_for(taskset: str, task_config: dict[str, Any] | None, data: dict[str, Any]) -> Any:
    """Rebuild one verifiers Task of ``taskset`` from its wire data (``TaskData.model_dump``) and its task config
    (the taskset config's ``task`` part): no rows are loaded."""
    cls = _task_class(taskset)
    return cls(cls.data_type().model_validate(data), cls.config_type().model_validate(task_config or {}))


def prime_verifiers(taskset: str, config: dict[str, Any] | None = None, n: int | None = None,
                    threshold: float = 1.0, timeout: float | None = None) -> list[Task]:
    """Task source: the tasks of verifiers taskset ``taskset`` (built with ``config``), first ``n`` of them,
    each scored by ``prime_rubric`` (passed when the weighted reward >= ``threshold``)."""
    from crossgym.environments.sources.common import check_count

    if n is not None:
        check_count(n, "prime_verifiers")
    ts = load_vf_taskset(taskset, config)
    if n is not None:
        ts = ts.take(n)
    elif not ts.bounded:
        raise ConfigError(f"verifiers taskset {taskset!r} is infinite", fix="pass n=<how many tasks>")
    params: dict[str, Any] = {"taskset": taskset, "threshold": threshold}
    task_config = ts.config.task.model_dump(mode="json", exclude_defaults=True)
    if task_config:
        params["task_config"] = task_config
    if timeout is not None:
        params["timeout"] = timeout
    tasks = []
    for vt in ts:
        data = vt.data.model_dump(mode="json")
        answer = data.get("answer")
        tasks.append(Task(id=str(vt.data.id or f"{taskset}-{vt.data.idx}"), prompt=prompt_messages(vt.data),
                          answer=answer, verifier=VerifierSpec("prime_rubric", dict(params)),
                          metadata={META_KEY: {"taskset": taskset, "type": type(vt).__name__, "key": vt.key,
                                               "data": data}}))
    return tasks


# ------------------------------------------------------------------------------------------- the verifier
class PrimeRubric(BaseVerifier):
    """The rewards of a verifiers taskset, computed by verifiers' own ``Task.score`` on the conversation.

    answer: unused (the verifiers task data rides in ``metadata["prime_verifiers"]``; see the task source).
    params: taskset (package id), task_config (the taskset config's ``task`` part, e.g. plugged rewards or judges),
    threshold (weighted reward that passes, 1.0).
    reward = the trace's weighted reward sum; components = each reward's weighted value. Runs in the worker-process
    pool: verifiers' math scoring (math-verify) only times out on a main thread.
    """

    name, version = "prime_rubric", "1"
    description = "a PrimeIntellect verifiers taskset's own rewards (verifiers 0.4 Task.score)"
    isolation = "process"
    default_timeout = 30.0

    def __init__(self, *, taskset: str, task_config: dict[str, Any] | None = None, threshold: float = 1.0,
                 **params: Any) -> None:
        super().__init__(**params)
        if not isinstance(taskset, str) or not taskset:
            raise ConfigError("prime_rubric: taskset must be a verifiers taskset id",
                              fix="pass params={'taskset': 'my_env'}")
        self.taskset, self.task_config, self.threshold = taskset, dict(task_config or {}), float(threshold)

    def score(self, task: Task, completion: Completion) -> Verdict:
        meta = task.metadata.get(META_KEY)
        if not isinstance(meta, dict) or not isinstance(meta.get("data"), dict):
            raise BadTask(f"metadata[{META_KEY!r}] lacks the verifiers task data (load tasks with the "
                          "prime_verifiers task source)")
        if not completion.assistant_messages:
            raise Malformed("no assistant message")
        vf_task = vf_task_for(self.taskset, self.task_config, meta["data"])
        trace = score_with_verifiers(vf_task, task.prompt, completion)
        unscored = sorted(k for k, r in trace.rewards.items() if r is None)
        if unscored:
            raise BadTask(f"rewards not scored: {', '.join(unscored)}")
        comps = {k: r.value for k, r in trace.rewards.items() if r is not None}
        return Verdict.ok(trace.reward, threshold=self.threshold, components=comps,
                          reason=", ".join(f"{k}={v:g}" for k, v in comps.items()))

    @classmethod
    def examples(cls) -> list[Example]:
        """Round trip: a crossgym exact_match task exported as a verifiers taskset, then scored back through it."""
        from crossgym.interop.prime_export import MODULE

        src = Task(id="capital", prompt=(Message("user", "Capital of France? One word."),), answer="Paris",
                   verifier=VerifierSpec("exact_match"))
        (task,) = prime_verifiers(MODULE, {"tasks": [src.to_dict()]})
        return [Example(task, Completion.from_text("Paris"), "pass"),
                Example(task, Completion.from_text("Rome"), "fail"),
                Example(task, Completion(messages=(Message(role="user", content="Paris"),)), "malformed",
                        note="no assistant message")]
