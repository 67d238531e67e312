"""crossgym's agent loop for veRL: plays one crossgym Environment episode per sample through veRL's LLM server.

veRL instantiates it per sample (agent_name "crossgym_agent", from the agent_loop_config_path YAML or the
``@register`` below) and awaits ``run(sampling_params, **row)``. The episode is crossgym.rollout.driver's, as on
every backend (group seed, turn limit, stop rule, an environment that raises, the Completion, the rendering); this
shim supplies veRL's generation and tokenization: the model generates one assistant turn through
``server_manager.generate`` (token ids in, token ids out); the driver steps the environment with the decoded turn;
the environment's reply messages are tokenized with veRL's Continuous Token builder and appended with
response_mask 0.
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

from crossgym.adapters.verl.dataset import AGENT_NAME
from crossgym.adapters.verl.reward import COMPLETION_KEY, TASK_KEY, compute_score, task_for
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion
from crossgym.rollout.driver import (
    Episode,
    episode_json,
    render_messages,
    render_tools,
    split_turn,
    stop_token_ids,
)

log = logging.getLogger(__name__)

#: extra_fields keys veRL expects from every agent loop (kept so batches from different loops concatenate).
_VERL_EXTRA: dict[str, list[Any]] = {"turn_scores": [], "tool_rewards": []}


@register(AGENT_NAME)
class CrossgymAgentLoop(AgentLoopBase):
    """One crossgym episode: model turns are trained on (mask 1), environment messages are not (mask 0)."""

    #: reward functions by their config (path, name, reward_kwargs): loaded once per worker, not per sample
    _reward_fns: dict[str, Any] = {}

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self.max_assistant_turns = self.rollout_config.multi_turn.max_assistant_turns
        self._stop_ids: list[int] | None = None

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

    def _stops(self) -> list[int]:
        """The driver's stop rule: the tokenizer's EOS and the model's generation_config EOS ids."""
        from crossgym.inference.chat import generation_eos

        if self._stop_ids is None:
            self._stop_ids = stop_token_ids(self.tokenizer.eos_token_id, generation_eos(self.tokenizer))
        return self._stop_ids

    # ------------------------------------------------------------ the episode
    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> AgentLoopOutput:
        extra_info = dict(kwargs.get("extra_info") or {})
        task = task_for(extra_info)
        seed = extra_info.get("env_seed")
        explicit = extra_info.get("max_turns")
        start = functools.partial(
            Episode.open, task, str(extra_info.get("env") or task.env),
            env_params=json.loads(extra_info.get("env_params") or "{}"), seed=None if seed is None else int(seed),
            max_turns=int(explicit) if explicit else None, cap=self.max_assistant_turns or None,
            budget=self.response_length)
        ep = await self.loop.run_in_executor(None, start)
        try:
            return await self._play(ep, sampling_params, priority)
        finally:
            ep.close()

    async def _play(self, ep: Episode, sampling_params: dict[str, Any], priority: int) -> AgentLoopOutput:
        messages = render_messages(ep.prompt)
        tools = render_tools(ep.tools)
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        runtime_ids = list(prompt_ids)
        mask: list[int] = []
        logprobs: list[float] = []
        metrics: dict[str, Any] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        request_id = uuid4().hex
        while not ep.done:
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
            # only the closing end-of-turn token(s) leave the text: the environment sees what is trained on
            body, ended = split_turn(list(result.token_ids), self._stops())
            action = Message(role="assistant", content=self.tokenizer.decode(body, skip_special_tokens=False))
            before = render_messages(ep.conversation())
            reply = await self.loop.run_in_executor(
                None, functools.partial(ep.take, action, token_ids=list(result.token_ids), ended=ended))
            if ep.done or not ep.fits(0, used=len(mask)):
                break  # the reply to the last action is in the Completion (scored), never in the ids
            previous = [*before, *render_messages([action])]
            try:
                merged, new_mask, new_lps = await self.ct_merge_context_msg(
                    previous, previous + render_messages(reply), runtime_ids, mask, logprobs or None, tools=tools)
            except ValueError as exc:  # veRL's builder cannot render this reply (e.g. an assistant-role message)
                log.warning("environment reply not renderable by veRL's chat-template builder: %s", exc)
                ep.end("template")
                break
            if not ep.fits(len(new_mask) - len(mask), used=len(mask)):
                break  # no room left for another turn: the environment's reply is not trained on
            runtime_ids, mask = merged.token_ids, new_mask
            if new_lps is not None and logprobs:
                logprobs = new_lps
        metrics["tool_calls"] = ep.timings["env_s"]

        response_ids = runtime_ids[len(runtime_ids) - len(mask):]
        prompt_ids = runtime_ids[: len(runtime_ids) - len(mask)]
        error = None if ep.error is None else ep.error.reason
        reward = await self._score(ep.task, ep.completion(), error)
        extra_fields = {**_VERL_EXTRA, COMPLETION_KEY: ep.to_json(), "reward_extra_info": reward}
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=float(reward["score"]),
            num_turns=1 + len(ep.messages),
            metrics=metrics,
            extra_fields=extra_fields,
        )

    async def _score(self, task: Any, episode: Completion, error: str | None = None) -> dict[str, Any]:
        """The run's reward dict for the whole episode (the function veRL's reward manager calls, same keys); the
        environment error, if any, travels in the episode JSON and the reward module scores it on_error."""
        extra_info = {TASK_KEY: task.to_json(), COMPLETION_KEY: episode_json(Completion(messages=episode.messages),
                                                                              error)}
        fn = self._reward_fn()
        call = functools.partial(fn, data_source=f"crossgym/{task.verifier.name}", solution_str=episode.text,
                                 ground_truth=None, extra_info=extra_info)
        result = await self.loop.run_in_executor(None, call)
        if inspect.isawaitable(result):  # an async custom reward function
            result = await result
        if not isinstance(result, dict):
            return {"score": float(result)}
        return {**result, "score": float(result["score"])}
