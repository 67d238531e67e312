"""The one episode driver: every backend plays crossgym episodes through this module, so an episode means the same
in `crossgym eval`, TRL/Unsloth, veRL and OpenRLHF by construction. Backends supply generation and tokenization
only (eval's engines, TRL's ``rollout_func``, veRL's agent loop, OpenRLHF's agent executor are thin shims).

What lives here, once:

- **seeds**: :func:`episode_seed` -- one environment seed per (run seed, task): every sample of a task (a GRPO
  group, eval's n samples) starts from the same state, stable across runs, processes and backends.
- **turn limit**: :func:`episode_max_turns` / :func:`episode_env_params` -- ``environment.max_turns`` when the run
  sets it (the environment enforces it too), else the environment decides, under the safety cap :data:`MAX_TURNS`.
- **stop rule**: a turn ends on the tokenizer's EOS or the model's generation_config EOS ids
  (:func:`stop_token_ids`); :func:`split_turn` drops the closing stop token(s) from the action's text and says
  whether the turn ended or was cut by the length limit. An episode ends when the environment says done, a turn
  was cut off, the turn limit is reached, the environment replies with nothing, or the token budget
  (:meth:`Episode.fits`) has no room for the reply and another turn.
- **environment errors**: an environment that raises in reset or step ends the episode; its Verdict is an
  ``exception`` Verdict (``"exception: environment 'name' step N failed: ..."``), scored ``on_error`` by the
  scoring rule (``RewardRule.score_error``), the same on every path. Across processes the error travels with the
  episode's JSON (:meth:`Episode.to_json` / :func:`episode_from_json`).
- **completion assembly**: :meth:`Episode.completion` is every message after the prompt (each action and each
  reply, the reply to the last action included: it is scored, never trained on) with the policy's token ids;
  :attr:`Episode.trace_ids` / :attr:`Episode.trace_mask` hold what a trainer trains on (1: policy, 0: environment).
- **rendering**: :func:`render_messages` (the dicts handed to ``tokenizer.apply_chat_template``: tool-call
  arguments as objects), :func:`render_text` and :func:`reply_suffix` (the template's text for an environment reply,
  between the assistant's end-of-turn token and the next generation prompt).

Nothing here imports a framework: tokenizers come in as objects.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crossgym.inference.base import render_messages, stop_token_ids, tool_dicts
from crossgym.protocol.messages import Message, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict, safe_text

if TYPE_CHECKING:
    from crossgym.scoring.rule import RewardRule, Scored

log = logging.getLogger(__name__)

__all__ = ["EPISODE_ERROR_KEY", "MAX_TURNS", "Episode", "episode_env_params", "episode_from_json", "episode_json",
           "episode_max_turns", "episode_seed", "render_messages", "render_text", "render_tools", "reply_suffix", "run_max_turns", "split_turn",
           "stop_token_ids"]

#: the safety cap on assistant turns when the run does not set environment.max_turns (the environment decides done)
MAX_TURNS = 64
#: the key of an episode's JSON (:meth:`Episode.to_json`) that carries its environment error, if any
EPISODE_ERROR_KEY = "episode_error"


# ---------------------------------------------------------------------------------------------------------- policies
def episode_seed(base_seed: int | None, task_id: str) -> int | None:
    """The environment seed of every sample of ``task_id`` (one seed per GRPO group): a hash of the run's seed and
    the task id, stable across runs, processes and backends. None when there is no base seed (a random start)."""
    if base_seed is None:
        return None
    digest = hashlib.sha256(f"{int(base_seed)}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def episode_max_turns(explicit: int | None = None) -> int:
    """The driver's cap on assistant turns: the run's environment.max_turns when set, else :data:`MAX_TURNS`."""
    if explicit is None:
        return MAX_TURNS
    if int(explicit) < 1:
        raise ValueError(f"max_turns must be >= 1, got {explicit}")
    return int(explicit)


def run_max_turns(run: Any) -> int | None:
    """A RunConfig's environment.max_turns when the run sets it explicitly, else None (the environment decides)."""
    env = run.environment
    return int(env.max_turns) if "max_turns" in env.model_fields_set else None


def episode_env_params(params: dict[str, Any] | None, explicit_max_turns: int | None = None) -> dict[str, Any]:
    """The environment's constructor params: the run's, plus ``max_turns`` when the run sets it explicitly (so the
    environment's own budget, e.g. a task's metadata, gives way to it, as the driver's cap does)."""
    out = dict(params or {})
    if explicit_max_turns is not None:
        out.setdefault("max_turns", int(explicit_max_turns))
    return out


def split_turn(token_ids: Sequence[int], stops: Sequence[int], finish_reason: str | None = None
               ) -> tuple[list[int], bool]:
    """(the action's token ids without the closing stop token(s), whether the turn ended). A turn ended when the
    engine says it stopped for a reason other than length, else when its last token is a stop token."""
    ids = [int(i) for i in token_ids]
    stop = set(stops)
    ended = finish_reason != "length" if finish_reason is not None else bool(ids) and ids[-1] in stop
    while ids and ids[-1] in stop:
        ids.pop()
    return ids, ended


# --------------------------------------------------------------------------------------------------------- rendering
def render_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """Tools as chat templates take them (OpenAI function form); None for none (some templates render boilerplate
    for an empty list)."""
    return tool_dicts(list(tools) if tools else None)


def render_text(tokenizer: Any, messages: Sequence[Message], tools: Sequence[Any] | None = None, *,
                add_generation_prompt: bool = True, **template_kwargs: Any) -> str:
    """The chat template's text for a conversation (the prompt every backend trains on and eval generates from)."""
    return str(tokenizer.apply_chat_template(render_messages(list(messages)), tools=render_tools(tools),
                                             add_generation_prompt=add_generation_prompt, tokenize=False,
                                             **template_kwargs))


def reply_suffix(tokenizer: Any, conversation: Sequence[Message], reply: Sequence[Message],
                 tools: Sequence[Any] | None = None, **template_kwargs: Any) -> str | None:
    """The text the chat template puts after the last assistant turn's end-of-turn token for ``reply``, up to the
    next generation prompt; None when the template is not prefix-preserving (the episode then ends)."""
    before = render_text(tokenizer, conversation, tools, add_generation_prompt=False, **template_kwargs)
    after = render_text(tokenizer, [*conversation, *reply], tools, add_generation_prompt=True, **template_kwargs)
    eos = getattr(tokenizer, "eos_token", None) or ""
    cut = before.rfind(eos) + len(eos) if eos and eos in before else len(before)
    if not after.startswith(before[:cut]):
        return None
    return after[cut:]


# ----------------------------------------------------------------------------------------------------------- episode
@dataclass
class Episode:
    """Sample ``index`` of ``task`` being played in ``env`` (None: eval's built-in single turn, no environment).

    A step machine, driven the same way by every backend: :meth:`start`, then :meth:`take` for each generated turn
    (it steps the environment and applies the stop rules), :meth:`feed` for the reply tokens a trainer appends before
    the next turn, until :attr:`done`; then :meth:`completion` / :meth:`verdict` / :meth:`score` and :meth:`close`.
    """

    task: Task
    env: Any
    env_name: str
    index: int = 0
    max_turns: int = MAX_TURNS
    budget: int | None = None
    """Token budget of the trace (policy and environment tokens after the prompt); None: no budget."""
    prompt: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    messages: list[Message] = field(default_factory=list)
    token_ids: list[int] | None = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    trace_ids: list[int] = field(default_factory=list)
    trace_mask: list[int] = field(default_factory=list)
    turns: int = 0
    done: bool = False
    stop: str | None = None
    """Why the episode ended: done, max_turns, cut, budget, empty_reply, template or error."""
    error: Verdict | None = None
    info: dict[str, Any] = field(default_factory=dict)
    last_reply: tuple[Message, ...] = ()
    timings: dict[str, float] = field(default_factory=lambda: {"generate_s": 0.0, "env_s": 0.0})

    @classmethod
    def open(cls, task: Task, env_name: str, *, env_params: dict[str, Any] | None = None, index: int = 0,
             seed: int | None = None, max_turns: int | None = None, cap: int | None = None,
             budget: int | None = None) -> Episode:
        """Build the registered environment ``env_name`` and start the episode (a build failure is an episode
        error, like a failing reset). ``max_turns``: the run's explicit environment.max_turns (None: the
        environment decides, under MAX_TURNS); ``cap``: a backend's own turn limit on top (veRL's
        max_assistant_turns)."""
        from crossgym.api import load_environment

        limit = episode_max_turns(max_turns)
        ep = cls(task=task, env=None, env_name=env_name, index=index,
                 max_turns=min(limit, int(cap)) if cap else limit, budget=budget)
        try:
            ep.env = load_environment(env_name, **episode_env_params(env_params, max_turns))
        except Exception as exc:
            ep.fail(f"environment {env_name!r} could not be built: {type(exc).__name__}: {exc}")
            return ep
        ep.start(seed)
        return ep

    # ------------------------------------------------------------------ the episode
    def start(self, seed: int | None) -> None:
        """Reset the environment (or take the task's own prompt and tools when there is none)."""
        if self.env is None:
            self.prompt, self.tools = self.task.prompt, self.task.tools
            return
        t = time.perf_counter()
        try:
            obs = self.env.reset(self.task, seed=seed)
            self.prompt, self.tools = tuple(obs.messages), tuple(obs.tools)
        except Exception as exc:  # a broken environment fails this episode, visibly, not the run
            self.prompt, self.tools = self.task.prompt, self.task.tools
            self.fail(f"environment {self.env_name!r} reset failed: {type(exc).__name__}: {exc}")
        self.timings["env_s"] += time.perf_counter() - t

    def take(self, action: Message, *, token_ids: Sequence[int] | None = None,
             logprobs: Sequence[float] | None = None, ended: bool = True, seconds: float = 0.0) -> tuple[Message, ...]:
        """Apply one generated assistant turn (``token_ids``: the policy's ids for it, closing stop token included;
        ``ended``: False when the length limit cut it): step the environment and apply the stop rules. Returns the
        environment's reply (kept in the completion either way)."""
        if self.done:
            raise RuntimeError(f"episode {self.task.id}#{self.index} is over ({self.stop}): no more turns")
        self.turns += 1
        self.timings["generate_s"] += seconds
        self.token_ids = None if token_ids is None or self.token_ids is None else [*self.token_ids, *token_ids]
        self.logprobs = None if logprobs is None or self.logprobs is None else [*self.logprobs, *logprobs]
        if token_ids is not None:
            self.trace_ids.extend(int(i) for i in token_ids)
            self.trace_mask.extend([1] * len(token_ids))
        self.messages.append(action)
        self.last_reply = ()
        if self.env is None:
            return self._end("done")
        t = time.perf_counter()
        try:
            result = self.env.step(action)
        except Exception as exc:
            self.fail(f"environment {self.env_name!r} step {self.turns} failed: {type(exc).__name__}: {exc}")
            return ()
        finally:
            self.timings["env_s"] += time.perf_counter() - t
        reply = tuple(_encodable(m) for m in result.messages)
        self.messages.extend(reply)
        self.last_reply = reply
        self.info = dict(result.info)
        failure = self.info.get("error")
        if isinstance(failure, str) and failure.startswith("exception:"):
            # BaseEnvironment's report of a bug it caught in respond(): the same failure as a raise
            self.fail(f"environment {self.env_name!r} step {self.turns} failed: "
                      f"{failure.removeprefix('exception:').strip()}")
            return reply
        if result.done:
            self._end("done")
        elif not ended:
            self._end("cut")
        elif self.turns >= self.max_turns:
            self.info["truncated"] = True
            self._end("max_turns")
        elif not reply:
            self._end("empty_reply")  # nothing to answer to: another turn would continue the model's own turn
        elif self.budget is not None and len(self.trace_ids) >= self.budget:
            self._end("budget")
        return reply

    def fits(self, reply_tokens: int, *, used: int | None = None) -> bool:
        """Whether ``reply_tokens`` more (the environment's reply) leave room for another turn under the budget;
        when not, the episode ends (the reply is scored, never trained on). ``used``: the backend's own count of
        tokens spent so far (default: the trace's length)."""
        spent = len(self.trace_ids) if used is None else used
        if self.budget is None or spent + reply_tokens < self.budget:
            return True
        self._end("budget")
        return False

    def feed(self, reply_ids: Sequence[int]) -> None:
        """Append the reply's tokens to the trace (mask 0: not trained on) before the next turn."""
        self.trace_ids.extend(int(i) for i in reply_ids)
        self.trace_mask.extend([0] * len(reply_ids))

    def end(self, stop: str) -> None:
        """End the episode for a backend's reason (``template``: its chat template cannot render the reply)."""
        self._end(stop)

    def _end(self, stop: str) -> tuple[Message, ...]:
        if not self.done:
            self.done, self.stop = True, stop
        return self.last_reply

    def fail(self, why: str) -> None:
        """The environment-error policy: the episode ends and its Verdict is an exception Verdict."""
        log.warning("task %s sample %d: %s", self.task.id, self.index, why)
        self.error = Verdict.exception(why)
        self.info["error"] = self.error.error
        self.done, self.stop = True, "error"

    # ------------------------------------------------------------------ results
    def conversation(self) -> list[Message]:
        """The prompt and every message since: what the next turn is generated from."""
        return [*self.prompt, *self.messages]

    def prompt_key(self) -> str:
        """Equal keys mean equal prompts, which one engine call can sample n times."""
        return json.dumps([[m.to_dict() for m in self.conversation()], [t.to_dict() for t in self.tools]],
                          sort_keys=True)

    def completion(self) -> Completion:
        """What the verifier scores: every message after the prompt, with the policy's own tokens."""
        return Completion(messages=tuple(self.messages),
                          token_ids=tuple(self.token_ids) if self.token_ids else None,
                          logprobs=tuple(self.logprobs) if self.logprobs else None)

    def verdict(self, verifier: Any) -> Verdict:
        """The task verifier's Verdict on the episode (the environment error's, when it failed)."""
        if self.error is not None:
            return self.error
        from crossgym.scoring.rule import safe_verify

        return safe_verify(verifier, self.task, self.completion())

    def score(self, rule: RewardRule) -> Scored:
        """The episode scored by the run's rule; a failed environment scores every term on_error."""
        if self.error is not None:
            return rule.score_error(self.error.reason, task=self.task)
        return rule.score(self.task, self.completion())

    def to_json(self) -> str:
        """The episode's messages as Completion JSON, plus its environment error when it failed (for reward
        functions that run elsewhere: TRL's, veRL's reward manager; the token ids stay with the trainer);
        :func:`episode_from_json` reads it back."""
        return episode_json(Completion(messages=tuple(self.messages)),
                            None if self.error is None else self.error.reason)

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            except Exception as exc:  # closing must not lose the episode
                log.warning("environment %s close failed: %s", self.env_name, exc)


def episode_json(completion: Completion, error: str | None = None) -> str:
    """An episode's JSON: the Completion's, plus the environment error detail when it failed."""
    doc = completion.to_dict()
    if error is not None:
        doc[EPISODE_ERROR_KEY] = error
    return json.dumps(doc, ensure_ascii=False)


def episode_from_json(raw: str | dict[str, Any]) -> tuple[Completion, str | None]:
    """(the Completion, the environment error detail or None) of an episode written by :meth:`Episode.to_json`."""
    doc = json.loads(raw) if isinstance(raw, str) else dict(raw)
    err = doc.get(EPISODE_ERROR_KEY)
    return Completion.from_dict(doc), None if err is None else str(err)


def _encodable(message: Message) -> Message:
    """An environment's reply message with its text made UTF-8 safe (``safe_text``: a lone surrogate written as
    its escape). A tool echoing the model's ``"\\ud800"`` (JSON for a lone surrogate) put one in the conversation:
    the fast tokenizer raised (a TRL step or a whole eval lost), and the honest answer after it was malformed."""
    def safe(v: str | None) -> str | None:
        return v if v is None or v.isascii() else safe_text(v)

    content, name, call_id = safe(message.content), safe(message.name), safe(message.tool_call_id)
    if content == message.content and name == message.name and call_id == message.tool_call_id:
        return message
    return Message(role=message.role, content=content or "", tool_calls=message.tool_calls, tool_call_id=call_id,
                   name=name)
