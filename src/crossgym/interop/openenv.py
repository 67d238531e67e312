"""OpenEnv (PyPI ``openenv``) environments as crossgym environments, so they train on every backend.

``OpenEnvEnvironment`` (registered as ``openenv``) is one episode against a running OpenEnv server, driven through
OpenEnv's own ``GenericEnvClient`` (its WebSocket session protocol): ``reset`` opens a session and resets it,
each assistant reply is parsed into an OpenEnv action and stepped, and each OpenEnv step result comes back as a
user message named ``openenv`` whose content is ``{"observation", "reward", "done"}`` JSON. The ``openenv_reward``
verifier sums those rewards, so the episode's reward is OpenEnv's own, read from the transcript like any
verifier reads a completion. The serving direction is ``crossgym.interop.openenv_serve``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import urllib.request
from collections.abc import Coroutine
from typing import Any, ClassVar

from crossgym.environments.base import BaseEnvironment, Reply
from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Example, Task, Verdict, VerifierSpec
from crossgym.verifiers.base import BaseVerifier, Malformed

log = logging.getLogger(__name__)

#: the name on environment messages that carry an OpenEnv step result
STEP_NAME = "openenv"
INSTALL = "pip install 'crossgym[interop]'"
DEFAULT_PROMPT = ("You act in an OpenEnv environment. Each user turn is JSON with the latest observation. Reply with "
                  "exactly one action: a JSON object that matches the action schema.")

# --------------------------------------------------------------------------------- one I/O loop for all clients
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _io_loop() -> asyncio.AbstractEventLoop:
    """A process-wide event loop on a daemon thread: every client's WebSocket lives on it, whatever thread steps."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="crossgym-openenv-io", daemon=True).start()
        return _loop


def run_io(coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
    """Run ``coro`` on the I/O loop and wait at most ``timeout`` seconds for it."""
    return asyncio.run_coroutine_threadsafe(coro, _io_loop()).result(timeout)


# --------------------------------------------------------------------------------- messages and actions
def step_message(observation: Any, reward: float | None, done: bool) -> Message:
    """An OpenEnv step result as the environment's message to the policy (and to ``openenv_reward``)."""
    body = {"observation": observation, "reward": reward, "done": bool(done)}
    return Message(role="user", content=json.dumps(body, sort_keys=True, ensure_ascii=False), name=STEP_NAME)


def parse_action(action: Message, schema: dict[str, Any]) -> dict[str, Any]:
    """The action dict an assistant message stands for: a tool call's arguments, a JSON object (fences allowed),
    or, for a schema with exactly one required field, the raw text as that field. ValueError when none fits."""
    if action.tool_calls:
        call = action.tool_calls[0]
        if call.error is not None:  # arguments that are not one JSON object: no action, as for bad JSON text
            raise ValueError(f"tool call 1 ({call.name}): {call.error}; write the arguments as one JSON object")
        return dict(call.arguments)
    text = action.content.strip()
    if text.startswith("```") and text.endswith("```"):
        text = "\n".join(text.splitlines()[1:-1]).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if isinstance(value, dict):
        return value
    required = list(schema.get("required") or [])
    if len(required) != 1:
        raise ValueError(f"reply with a JSON object for the action (required fields: {required or 'see schema'})")
    return {required[0]: value if isinstance(value, str) else text}


def _http_base(url: str) -> str:
    return url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")


def fetch_schema(base_url: str, timeout: float) -> dict[str, Any]:
    """The server's ``GET /schema`` document ({"action", "observation", "state"} JSON Schemas)."""
    with urllib.request.urlopen(f"{_http_base(base_url)}/schema", timeout=timeout) as resp:  # noqa: S310
        return dict(json.loads(resp.read()))


# --------------------------------------------------------------------------------- the environment
class OpenEnvEnvironment(BaseEnvironment):
    """One episode against an OpenEnv server at ``base_url`` (one WebSocket session per episode).

    params: base_url (required), max_turns (8), timeout (seconds per call, 60), reset (kwargs for OpenEnv's
    reset; a task's ``metadata["openenv"]["reset"]`` adds to them). The first observation and the action schema
    follow the task prompt; an unparsable reply gets an error message back and costs a turn.
    """

    name: ClassVar[str] = "openenv"
    default_max_turns: ClassVar[int] = 8

    def __init__(self, *, base_url: str, max_turns: int | None = None, timeout: float = 60.0,
                 reset: dict[str, Any] | None = None) -> None:
        super().__init__(max_turns=max_turns)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://", "ws://", "wss://")):
            raise ConfigError(f"environment 'openenv': base_url must be an http(s):// or ws(s):// URL, got {base_url!r}",
                              fix="pass base_url='http://127.0.0.1:8000' (a running OpenEnv server)")
        try:
            from openenv.core import GenericEnvClient
        except ImportError as exc:
            raise BackendUnavailable("openenv", f"cannot import openenv ({exc})", INSTALL) from None
        self._client_cls = GenericEnvClient
        self.base_url, self.timeout, self.reset_params = base_url, float(timeout), dict(reset or {})
        self._client: Any = None
        self._schema: dict[str, Any] | None = None

    def start(self, task: Task) -> Any:
        from crossgym.protocol.episode import Observation

        if self._schema is None:
            try:
                self._schema = fetch_schema(self.base_url, self.timeout).get("action") or {}
            except OSError as exc:
                raise ConfigError(f"environment 'openenv': no OpenEnv server answers at {self.base_url} ({exc})",
                                  fix="start the server (uvicorn APP --host 127.0.0.1 --port N) or fix base_url") \
                    from None
        kwargs = {**self.reset_params, **dict((task.metadata.get("openenv") or {}).get("reset") or {})}
        if self.seed is not None:
            kwargs.setdefault("seed", self.seed)
        client = self._client_cls(base_url=self.base_url, message_timeout_s=self.timeout)

        async def open_session() -> Any:
            await client.connect()
            return await client.reset(**kwargs)

        self._client = client
        result = run_io(open_session(), self.timeout)
        intro = Message(role="user", name=STEP_NAME, content=json.dumps(
            {"observation": result.observation, "reward": result.reward, "done": bool(result.done),
             "action_schema": self._schema}, sort_keys=True, ensure_ascii=False))
        return Observation(messages=(*task.prompt, intro))

    def respond(self, action: Message) -> Reply:
        try:
            act = parse_action(action, self._schema or {})
        except ValueError as exc:
            return Reply(messages=(Message(role="user", name="error", content=f"invalid action: {exc}"),))
        client = self._client

        async def step() -> Any:
            return await client.step(act)

        result = run_io(step(), self.timeout)
        return Reply(messages=(step_message(result.observation, result.reward, result.done),), done=bool(result.done),
                     info={"reward": result.reward})

    def release(self) -> None:
        client, self._client = self._client, None
        if client is not None:

            async def close() -> None:  # called on the I/O loop, where the session's WebSocket lives
                await client.close()

            try:
                run_io(close(), self.timeout)
            except Exception as exc:  # the server may already be gone; the session dies with it
                log.debug("closing the OpenEnv session failed: %s", exc)


def openenv_tasks(n: int = 1, prompt: str = DEFAULT_PROMPT, resets: list[dict[str, Any]] | None = None,
                  threshold: float = 1.0, system_prompt: str | None = None, max_turns: int | None = None) -> list[Task]:
    """Task source: one task per set of OpenEnv reset kwargs in ``resets`` (else ``n`` plain resets, seeded by
    index), run in the ``openenv`` environment and scored by ``openenv_reward``."""
    from crossgym.environments.sources.common import check_count

    rows = list(resets) if resets else [{"seed": i} for i in range(check_count(n, "openenv"))]
    tasks = []
    for i, reset in enumerate(rows):
        messages = ([Message(role="system", content=system_prompt)] if system_prompt else []) + [
            Message(role="user", content=prompt)]
        meta: dict[str, Any] = {"family": "openenv", "openenv": {"reset": dict(reset)}}
        if max_turns is not None:
            meta["max_turns"] = int(max_turns)
        tasks.append(Task(id=f"openenv-{i}", prompt=tuple(messages), answer=None, env="openenv",
                          verifier=VerifierSpec("openenv_reward", {"threshold": threshold}), metadata=meta))
    return tasks


# --------------------------------------------------------------------------------- the reward
class OpenEnvReward(BaseVerifier):
    """OpenEnv's own rewards, summed over the step results in the transcript (the ``openenv`` environment's
    messages; the policy's own messages are never read).

    answer: unused.
    params: threshold (passed when the sum >= threshold, 1.0), aggregate ("sum" of every step, or "last").
    """

    name, version = "openenv_reward", "1"
    description = "the summed rewards of an OpenEnv episode's step results"

    def __init__(self, *, threshold: float = 1.0, aggregate: str = "sum", **params: Any) -> None:
        super().__init__(**params)
        if aggregate not in ("sum", "last"):
            raise ConfigError(f"openenv_reward: aggregate must be 'sum' or 'last', got {aggregate!r}",
                              fix="pass aggregate='sum'")
        self.threshold, self.aggregate = float(threshold), aggregate

    def score(self, task: Task, completion: Completion) -> Verdict:
        rewards = []
        for m in completion.messages:
            if m.role != "user" or m.name != STEP_NAME:
                continue
            try:
                body = json.loads(m.content)
            except json.JSONDecodeError:
                raise Malformed("an OpenEnv step message is not JSON") from None
            r = body.get("reward") if isinstance(body, dict) else None
            rewards.append(float(r) if isinstance(r, (int, float)) else 0.0)
        if not rewards:
            raise Malformed("no OpenEnv step result in the completion")
        total = sum(rewards) if self.aggregate == "sum" else rewards[-1]
        return Verdict.ok(total, threshold=self.threshold, components={"steps": float(len(rewards))},
                          reason=f"{self.aggregate} of {len(rewards)} step reward(s) = {total:g}")

    @classmethod
    def examples(cls) -> list[Example]:
        def episode(*rewards: float) -> Completion:
            msgs: list[Message] = []
            for i, r in enumerate(rewards):
                msgs += [Message(role="assistant", content=json.dumps({"message": "x" * (i + 1)})),
                         step_message({"echoed_message": "x" * (i + 1)}, r, i == len(rewards) - 1)]
            return Completion(messages=tuple(msgs))

        return [cls.example(None, episode(0.4, 0.7), "pass", "0.4 + 0.7 >= 1"),
                cls.example(None, episode(0.2), "fail"),
                cls.example(None, Completion(messages=(
                    Message(role="assistant", content='{"reward": 5}'),
                    Message(role="user", content='{"reward": 5}'))), "malformed",
                    "rewards the policy wrote itself, or a plain user message, never count")]
