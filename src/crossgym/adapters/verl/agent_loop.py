"""crossgym's agent loop for veRL: plays one crossgym Environment episode per sample through veRL's LLM server.

veRL instantiates it per sample (agent_name "crossgym_agent", from the agent_loop_config_path YAML or the
``@register`` below) and awaits ``run(sampling_params, **row)``. The loop rebuilds the Task from the row, resets the
environment (same seed for a whole GRPO group, as on TRL), then alternates: the model generates one assistant turn
through ``server_manager.generate`` (token ids in, token ids out); the decoded turn goes to ``env.step``; the
environment's reply messages are tokenized with veRL's Continuous Token builder and appended with response_mask 0.
The episode's reward is the task verifier's Verdict on the whole Completion, scored by the run's reward function
(the same one veRL's reward manager calls), and returned as ``reward_score``.

This module imports veRL at import time: only veRL's workers import it.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.trainer.ppo.reward import get_custom_reward_fn

from crossgym.adapters.verl.dataset import AGENT_NAME, DEFAULT_MAX_TURNS
from crossgym.adapters.verl.reward import COMPLETION_KEY, TASK_KEY, compute_score, task_for
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion

log = logging.getLogger(__name__)

#: extra_fields keys veRL expects from every agent loop (kept so batches from different loops concatenate).
_VERL_EXTRA = {"turn_scores": [], "tool_rewards": []}


@register(AGENT_NAME)
class CrossgymAgentLoop(AgentLoopBase):
    """One crossgym episode: model turns are trained on (mask 1), environment messages are not (mask 0)."""

    #: reward functions by their config (path, name, reward_kwargs): loaded once per worker, not per sample
    _reward_fns: dict[str, Any] = {}

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self.max_assistant_turns = self.rollout_config.multi_turn.max_assistant_turns

    # ------------------------------------------------------------ helpers
    def _reward_fn(self) -> Any:
        """The run's configured reward function (veRL's loader, reward_kwargs bound); crossgym's own when unset."""
        from omegaconf import OmegaConf

        section = self.config.reward.get("custom_reward_function") or {}
        key = json.dumps(OmegaConf.to_container(section, resolve=True) if OmegaConf.is_config(section)
                         else dict(section), sort_keys=True, default=str)
        if key not in self._reward_fns:
            self._reward_fns[key] = get_custom_reward_fn(self.config) or compute_score
        return self._reward_fns[key]

    def _eos_ids(self) -> set[int]:
        tok = self.tokenizer
        ids = {tok.eos_token_id, tok.pad_token_id}
        return {i for i in ids if i is not None}

    def _decode_turn(self, ids: list[int]) -> tuple[str, bool]:
        """(assistant text, ended) for one generated turn: the closing end-of-turn token(s) dropped, every other
        token kept, special ones included (tool-call markers are special in some tokenizers), so the environment
        sees exactly the text of the ids trained on."""
        eos = self._eos_ids()
        ended = bool(ids) and ids[-1] in eos
        end = len(ids)
        while end and ids[end - 1] in eos:
            end -= 1
        return self.tokenizer.decode(ids[:end], skip_special_tokens=False), ended

    # ------------------------------------------------------------ the episode
    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> AgentLoopOutput:
        from crossgym.api import load_environment

        extra_info = dict(kwargs.get("extra_info") or {})
        task = task_for(extra_info)
        env_name = str(extra_info.get("env") or task.env)
        env_params = json.loads(extra_info.get("env_params") or "{}")
        seed = extra_info.get("env_seed")
        max_turns = int(extra_info.get("max_turns") or DEFAULT_MAX_TURNS)
        if self.max_assistant_turns:
            max_turns = min(max_turns, int(self.max_assistant_turns))

        env = load_environment(env_name, **env_params)
        try:
            obs = await self.loop.run_in_executor(None, lambda: env.reset(task, seed=None if seed is None
                                                                            else int(seed)))
            out = await self._play(task, env, obs, sampling_params, max_turns, priority)
        finally:
            try:
                env.close()
            except Exception as exc:  # closing must not lose the sample
                log.warning("environment %s close failed: %s", env_name, exc)
        return out

    async def _play(self, task: Any, env: Any, obs: Any, sampling_params: dict[str, Any], max_turns: int,
                    priority: int) -> AgentLoopOutput:
        messages: list[dict[str, Any]] = [m.to_openai() for m in obs.messages]
        tools = [t.to_openai() for t in obs.tools] or None
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        runtime_ids = list(prompt_ids)
        mask: list[int] = []
        logprobs: list[float] = []
        completion: list[Message] = []
        metrics: dict[str, Any] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        request_id = uuid4().hex
        turns = 0
        last_reply: tuple[Message, ...] = ()  # the reply to the last action: scored, as eval does, never trained on
        while True:
            started = time.perf_counter()
            result = await self.server_manager.generate(request_id=request_id, prompt_ids=runtime_ids,
                                                        sampling_params=sampling_params, priority=int(priority))
            metrics["generate_sequences"] += time.perf_counter() - started
            if metrics.get("num_preempted") is None:
                metrics["num_preempted"] = result.num_preempted if result.num_preempted is not None else -1
            merged, mask, lps = await self.ct_merge_assistant_token(
                runtime_ids, list(result.token_ids), mask, logprobs if result.log_probs else None,
                assistant_logprobs=list(result.log_probs) if result.log_probs else None)
            runtime_ids = merged.token_ids
            if lps is not None:
                logprobs = lps
            turns += 1
            text, ended = self._decode_turn(list(result.token_ids))
            action = Message(role="assistant", content=text)
            completion.append(action)
            started = time.perf_counter()
            try:
                step = await self.loop.run_in_executor(None, env.step, action)
            except Exception as exc:  # environments must not raise on model output; end the episode if one does
                log.warning("environment %s raised on step: %s", type(env).__name__, exc)
                break
            finally:
                metrics["tool_calls"] += time.perf_counter() - started
            last_reply = tuple(step.messages)
            if step.done or not ended or turns >= max_turns or len(mask) >= self.response_length:
                break
            new = [m.to_openai() for m in step.messages]
            if not new:
                break  # nothing to answer to: another turn would continue the model's own ended turn
            previous = list(messages) + [action.to_openai()]
            try:
                merged, new_mask, new_lps = await self.ct_merge_context_msg(
                    previous, previous + new, runtime_ids, mask, logprobs or None, tools=tools)
            except ValueError as exc:  # veRL's builder cannot render this reply (e.g. an assistant-role message)
                log.warning("environment reply not renderable by veRL's chat-template builder: %s", exc)
                break
            if len(new_mask) >= self.response_length:
                break  # no room left for another turn: the environment's reply is not trained on
            messages = previous + new
            completion.extend(step.messages)
            last_reply = ()
            runtime_ids, mask = merged.token_ids, new_mask
            if new_lps is not None and logprobs:
                logprobs = new_lps

        response_ids = runtime_ids[len(runtime_ids) - len(mask):]
        prompt_ids = runtime_ids[: len(runtime_ids) - len(mask)]
        episode = Completion(messages=(*completion, *last_reply))
        reward = await self._score(task, episode)
        extra_fields = {**_VERL_EXTRA, COMPLETION_KEY: json.dumps(episode.to_dict(), ensure_ascii=False),
                        "reward_extra_info": reward}
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=float(reward["score"]),
            num_turns=1 + len(completion),
            metrics=metrics,
            extra_fields=extra_fields,
        )

    async def _score(self, task: Any, episode: Completion) -> dict[str, Any]:
        """The run's reward dict for the whole episode (the function veRL's reward manager calls, same keys)."""
        extra_info = {TASK_KEY: task.to_json(), COMPLETION_KEY: json.dumps(episode.to_dict(), ensure_ascii=False)}
        fn = self._reward_fn()
        call = functools.partial(fn, data_source=f"crossgym/{task.verifier.name}", solution_str=episode.text,
                                 ground_truth=None, extra_info=extra_info)
        result = await self.loop.run_in_executor(None, call)
        if inspect.isawaitable(result):  # an async custom reward function
            result = await result
        if not isinstance(result, dict):
            return {"score": float(result)}
        return {**result, "score": float(result["score"])}
