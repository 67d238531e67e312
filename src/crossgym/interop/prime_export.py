"""crossgym tasks, environments and verifiers as a PrimeIntellect verifiers (0.4.0, v1) environment.

This module is a verifiers taskset package: ``vf.load_environment`` (and prime-rl, which loads environments by
taskset id) finds ``CrossgymTaskset`` and ``CrossgymEnv`` through ``__all__``. Taskset id:
``crossgym-vf`` (the package ``crossgym_vf`` re-exports this module); config: ``source`` + ``params`` (a crossgym task source), ``files`` (JSONL
tasks) or ``tasks`` (inline Task dicts), and ``env``/``env_params`` to override each task's environment.

Each task's one reward, ``crossgym``, is the crossgym verifier's ``Verdict.reward`` on the conversation.
``CrossgymEnv`` drives the crossgym environment turn by turn: the model's reply is the action, the environment's
reply (tool results, feedback) is the next user turn, and the crossgym transcript is what gets scored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from crossgym.interop.prime_verifiers import from_vf_message, to_vf_message
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task

log = logging.getLogger(__name__)

#: the taskset id verifiers (and prime-rl) load this package by (the top-level package crossgym_vf)
MODULE = "crossgym-vf"
#: where CrossgymEnv leaves the crossgym transcript on the trace for the reward to score
INFO_KEY = "crossgym_completion"


class CrossgymData(vf.TaskData):
    """A verifiers task carrying its crossgym Task (JSON) whole, so the verifier is rebuilt from its spec."""

    task: dict[str, Any]
    """The crossgym Task as ``Task.to_dict()``."""
    answer: Any = None
    """The task's reference answer (also inside ``task``; here for verifiers tooling that reads ``answer``)."""


class CrossgymTask(vf.Task[CrossgymData]):
    """Scored by the crossgym task's own verifier: reward ``crossgym`` = ``Verdict.reward``."""

    @vf.reward
    async def crossgym(self, task: CrossgymData, trace: vf.Trace) -> float:
        from crossgym.api import load_verifier

        cg_task = Task.from_dict(task.task)
        completion = completion_from_trace(trace)
        verdict = await asyncio.to_thread(load_verifier(cg_task.verifier).verify, cg_task, completion)
        trace.info["crossgym_verdict"] = verdict.to_dict()
        return verdict.reward


class CrossgymTasksetConfig(vf.TasksetConfig):
    """Which crossgym tasks to serve (one of source, files, tasks) and the environment that runs them."""

    source: str = ""
    """A registered crossgym task source (see `crossgym list`)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The task source's params (n, seed, ...)."""
    files: list[str] = Field(default_factory=list)
    """JSONL files of crossgym Tasks."""
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    """Inline crossgym Tasks (``Task.to_dict()``)."""
    env: str = ""
    """A registered crossgym environment for every task; empty keeps each task's own ``env``."""
    env_params: dict[str, Any] = Field(default_factory=dict)
    """Constructor params for the environment."""


def crossgym_tasks(config: CrossgymTasksetConfig) -> list[Task]:
    """The crossgym Tasks ``config`` names."""
    from crossgym.api import load_tasks

    tasks = [Task.from_dict(d) for d in config.tasks]
    if config.source:
        tasks += load_tasks(config.source, **config.params)
    for path in config.files:
        tasks += load_tasks("jsonl", path=path)
    if not tasks:
        raise ValueError("the crossgym taskset names no tasks: set source (+ params), files or tasks")
    return tasks


def vf_data(task: Task) -> CrossgymData:
    """The verifiers task data for a crossgym Task: system messages become the system prompt."""
    system = "\n\n".join(m.content for m in task.prompt if m.role == "system") or None
    rest = [to_vf_message(m) for m in task.prompt if m.role != "system"]
    return CrossgymData(id=task.id, prompt=rest, system_prompt=system, task=task.to_dict(), answer=task.answer)


class CrossgymTaskset(vf.Taskset[CrossgymTask, CrossgymTasksetConfig]):
    """crossgym tasks as a verifiers taskset."""

    def load(self) -> Iterator[CrossgymTask]:
        for task in crossgym_tasks(self.config):
            yield CrossgymTask(vf_data(task), self.config.task)


def completion_from_trace(trace: Any) -> Completion:
    """The crossgym Completion a trace stands for: CrossgymEnv's transcript when it left one, else every message
    from the first model-sampled one on (a plain single-agent rollout)."""
    saved = trace.info.get(INFO_KEY)
    if isinstance(saved, dict):
        return Completion.from_dict(saved)
    branches = trace.branches
    nodes = branches[-1].nodes if branches else []
    first = next((i for i, n in enumerate(nodes) if n.sampled), None)
    if first is None:  # a trace built without sampling marks: from the first assistant message on
        first = next((i for i, n in enumerate(nodes) if n.message.role == "assistant"), len(nodes))
    return Completion(messages=tuple(from_vf_message(n.message) for n in nodes[first:]))


Turn = Callable[[str | None], Awaitable[Any]]


async def drive(env: Any, task: Task, turn: Turn, *, seed: int | None = None) -> Completion:
    """Play one crossgym episode through a verifiers interaction: ``turn(text)`` sends a user turn (None for the
    prompted opening) and returns the model's ``vf`` Segment; each reply is one crossgym action. The environment
    runs on a worker thread, so a slow step (a sandbox, a query) does not stall verifiers' event loop."""
    await asyncio.to_thread(env.reset, task, seed=seed)
    messages: list[Message] = []
    segment = await turn(None)
    try:
        while not segment.terminated:
            replies = [m for m in segment.messages if getattr(m, "role", "") == "assistant"]
            if not replies:
                break
            action = from_vf_message(replies[-1])
            result = await asyncio.to_thread(env.step, action)
            messages.append(action)
            messages.extend(result.messages)
            if result.done:
                break
            segment = await turn(render_turn(result.messages))
    finally:
        env.close()
    return Completion(messages=tuple(messages))


def render_turn(messages: tuple[Message, ...]) -> str:
    """The environment's reply as one user turn (tool results labelled with the tool's name)."""
    parts = []
    for m in messages:
        label = f"[{m.role} {m.name}]" if m.role == "tool" and m.name else f"[{m.role}]"
        parts.append(m.content if m.role == "user" else f"{label}\n{m.content}")
    return "\n\n".join(parts) or "(no output)"


class CrossgymEnvConfig(vf.EnvConfig):
    """One ``agent`` seat playing crossgym episodes."""

    agent: vf.AgentConfig = vf.AgentConfig()


class CrossgymEnv(vf.Env[CrossgymEnvConfig]):
    """Runs each task in its crossgym environment, one model reply per environment step."""

    async def run(self, task: Any, agents: Any) -> None:
        from crossgym.api import load_environment

        cg_task = Task.from_dict(task.data.task)
        cfg = self.taskset.config
        env = load_environment(cfg.env or cg_task.env, **cfg.env_params)
        async with agents.agent.interaction(task) as interaction:
            completion = await drive(env, cg_task, interaction.turn)
            interaction.trace.info[INFO_KEY] = completion.to_dict()


def load_environment(source: str = "", params: dict[str, Any] | None = None, **config: Any) -> Any:
    """The verifiers Env for crossgym tasks (the entry point prime-rl style loaders call), e.g.
    ``load_environment("arithmetic", {"n": 64})`` or ``load_environment(tasks=[task.to_dict()], env="tool_use")``."""
    taskset = {"id": MODULE, "source": source, "params": dict(params or {}), **config}
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset}))


__all__ = ["CrossgymEnv", "CrossgymTask", "CrossgymTaskset", "load_environment"]
