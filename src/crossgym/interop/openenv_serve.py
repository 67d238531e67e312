"""crossgym environments served through OpenEnv's own server (``create_app``: HTTP /reset /step /state /schema and
the /ws session protocol), so OpenEnv clients and the trainers built on them run crossgym tasks.

``CrossgymOpenEnv`` is an OpenEnv ``Environment`` that plays one crossgym task per session: ``reset`` picks the task
(``task_id``, ``index`` or the seed) and returns its opening messages; ``step`` takes an assistant turn (text and tool
calls) and returns the environment's reply. Reward is 0 until ``done``; then it is the task verifier's
``Verdict.reward`` on the whole episode, with the Verdict in ``verdict``, so an episode's summed OpenEnv reward equals
crossgym's. ``CrossgymEnvClient`` is the typed client, written the way OpenEnv's client template writes one.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task


class CrossgymAction(Action):
    """One assistant turn."""

    content: str = Field(default="", description="The assistant's text")
    tool_calls: list[dict[str, Any]] = Field(default_factory=list,
                                             description="Tool calls ({id, name, arguments} or OpenAI's form)")


class CrossgymObservation(Observation):
    """What the environment said: its new messages (the whole prompt after reset) and, when done, the Verdict."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="New crossgym Message dicts")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Tools the policy may call (after reset)")
    task_id: str = Field(default="", description="The crossgym task being played")
    verdict: dict[str, Any] | None = Field(default=None, description="The task verifier's Verdict once done")


class CrossgymOpenEnv(Environment[CrossgymAction, CrossgymObservation, State]):
    """crossgym tasks in their crossgym environment, behind OpenEnv's server (one instance per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, tasks: Sequence[Task | dict[str, Any]], env: str = "",
                 env_params: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.tasks = [t if isinstance(t, Task) else Task.from_dict(t) for t in tasks]
        if not self.tasks:
            raise ConfigError("CrossgymOpenEnv needs at least one task", fix="pass tasks=crossgym.load_tasks(...)")
        self.env_name, self.env_params = env, dict(env_params or {})
        self._env: Any = None
        self._task: Task | None = None
        self._messages: list[Message] = []
        self._state = State(episode_id=None, step_count=0)

    def _pick(self, seed: int | None, task_id: str | None, index: int | None) -> Task:
        if task_id is not None:
            for t in self.tasks:
                if t.id == task_id:
                    return t
            raise ValueError(f"no task with id {task_id!r}")
        if index is not None:
            return self.tasks[int(index)]
        return self.tasks[(seed or 0) % len(self.tasks)]

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              index: int | None = None, **kwargs: Any) -> CrossgymObservation:
        from crossgym.api import load_environment

        task = self._pick(seed, task_id, index)
        self.close()
        self._env = load_environment(self.env_name or task.env, **self.env_params)
        obs = self._env.reset(task, seed=seed)
        self._task, self._messages = task, []
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        return CrossgymObservation(messages=[m.to_dict() for m in obs.messages], tools=[t.to_dict() for t in obs.tools],
                                   task_id=task.id, done=False, reward=0.0)

    def step(self, action: CrossgymAction, timeout_s: float | None = None, **kwargs: Any) -> CrossgymObservation:
        from crossgym.api import load_verifier

        if self._env is None or self._task is None:
            raise RuntimeError("step() before reset()")
        msg = Message(role="assistant", content=action.content,
                      tool_calls=tuple(ToolCall.from_dict(c) for c in action.tool_calls))
        result = self._env.step(msg)
        self._messages += [msg, *result.messages]
        self._state.step_count += 1
        reward, verdict = 0.0, None
        if result.done:
            v = load_verifier(self._task.verifier).verify(self._task, Completion(messages=tuple(self._messages)))
            reward, verdict = v.reward, v.to_dict()
        return CrossgymObservation(messages=[m.to_dict() for m in result.messages], task_id=self._task.id,
                                   done=result.done, reward=reward, verdict=verdict, metadata=dict(result.info))

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            env.close()


def create_crossgym_app(tasks: Sequence[Task | dict[str, Any]], env: str = "", env_params: dict[str, Any] | None = None,
                        max_concurrent_envs: int = 64) -> Any:
    """OpenEnv's FastAPI app (``openenv.core.env_server.http_server.create_app``) serving ``tasks``; run it with
    uvicorn (``uvicorn.run(app, host="127.0.0.1", port=8000)``)."""
    factory = functools.partial(CrossgymOpenEnv, list(tasks), env, dict(env_params or {}))
    return create_app(factory, CrossgymAction, CrossgymObservation, env_name="crossgym",
                      max_concurrent_envs=max_concurrent_envs)


class CrossgymEnvClient(EnvClient[CrossgymAction, CrossgymObservation, State]):
    """OpenEnv client for a served crossgym environment (async; ``.sync()`` gives OpenEnv's sync wrapper)."""

    def _step_payload(self, action: CrossgymAction) -> dict[str, Any]:
        return {"content": action.content, "tool_calls": list(action.tool_calls)}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CrossgymObservation]:
        obs = dict(payload.get("observation") or {})
        obs.update(done=payload.get("done", False), reward=payload.get("reward"))
        return StepResult(observation=CrossgymObservation.model_validate(obs), reward=payload.get("reward"),
                          done=payload.get("done", False), metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0))


def action_of(message: Message) -> CrossgymAction:
    """A crossgym assistant Message as the action a client sends."""
    return CrossgymAction(content=message.content, tool_calls=[c.to_dict() for c in message.tool_calls])
