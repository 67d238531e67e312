"""The environment bridge: a TRL ``rollout_func`` that plays crossgym episodes with the policy being trained, through
the one episode driver (crossgym.rollout.driver: seeds, turn limit, stop rule, environment errors, completion
assembly, rendering). This shim supplies what is TRL's: batched generation with the trainer's model and the
tokenization of environment replies; it hands TRL the token ids, an env mask (tool results are not trained on)
and the episode JSON (the whole Completion, and the environment error if any) for the reward functions.

Only TRL's public surface is used: ``rollout_func(prompts, trainer)``, ``trainer.model_wrapped``,
``trainer.accelerator``, ``trainer.processing_class``, ``trainer.args`` and ``trl.models.unwrap_model_for_generation``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_INDEX_KEY
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task
from crossgym.rollout.driver import (
    Episode,
    episode_seed,
    render_text,
    reply_suffix,
    split_turn,
    stop_token_ids,
)
from crossgym.rollout.tasks import task_env, task_env_params, task_max_turns

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)


class EpisodeRollout:
    """``rollout_func`` for GRPOTrainer: one crossgym episode per prompt TRL hands over (prompts arrive already
    repeated num_generations times)."""

    def __init__(self, tasks: Sequence[Task], run: RunConfig) -> None:
        from crossgym.plugins import registry

        self.tasks = list(tasks)
        self.run = run
        self._stops: list[int] = []
        self._prompt_ids: dict[int, list[int]] = {}  # id(episode) -> its rendered prompt's ids, for one call
        for name in sorted({task_env(t, run) for t in self.tasks}):
            registry("environments").entry(name)  # an unknown name fails here, with a suggestion

    def _encode(self, tokenizer: Any, text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    # ------------------------------------------------------------ episodes
    def _start(self, prompt: list[dict[str, Any]], tokenizer: Any, budget: int) -> tuple[Episode, list[int]]:
        index = prompt[0].get(TASK_INDEX_KEY) if prompt else None
        if index is None:
            raise ConfigError("a prompt reached the rollout function without its task index",
                              where="train_dataset", fix="build rows with task_rows(tasks, episodes=True)")
        task = self.tasks[int(index)]
        ep = Episode.open(task, task_env(task, self.run), env_params=task_env_params(task, self.run),
                          seed=episode_seed(self.run.seed, task.id), max_turns=task_max_turns(task, self.run),
                          budget=budget)
        return ep, self._encode(tokenizer, render_text(tokenizer, ep.prompt, ep.tools))

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        budget = int(trainer.args.max_completion_length)
        self._stops = stop_token_ids(tokenizer.eos_token_id,
                                     getattr(getattr(trainer.model, "generation_config", None), "eos_token_id", None))
        started = [self._start(p, tokenizer, budget) for p in prompts]
        episodes = [ep for ep, _ in started]
        self._prompt_ids = {id(ep): ids for ep, ids in started}
        vllm = bool(getattr(trainer, "use_vllm", False))
        #: per episode, the sampling logprob of each trace token (vLLM only; NaN for environment tokens)
        logps: dict[int, list[float]] = {id(ep): [] for ep in episodes}
        try:
            while True:
                active = [e for e in episodes if not e.done]
                if not active:
                    break
                generated: list[tuple[list[int], list[float]]] = (
                    self._generate_vllm(trainer, active, budget) if vllm
                    else [(ids, []) for ids in self._generate(trainer, tokenizer, active, budget)])
                for ep, (new_ids, new_logps) in zip(active, generated, strict=True):
                    before = len(ep.trace_ids)
                    self._advance(ep, new_ids, tokenizer)
                    if vllm:
                        _align_logprobs(logps[id(ep)], before, len(ep.trace_ids), new_ids, new_logps)
        finally:
            for ep in episodes:
                ep.close()
            self._prompt_ids = {}
        for ep in episodes:
            if not ep.trace_ids:  # the environment failed before any turn: one untrained token, scored on_error
                ep.feed([self._stops[0] if self._stops else tokenizer.pad_token_id])
        return {
            "prompt_ids": [ids for _, ids in started],
            "completion_ids": [e.trace_ids for e in episodes],
            # vLLM: TRL's importance-sampling correction needs the sampling logprobs; NaN (environment tokens,
            # masked anyway) gives a ratio of exactly 1 there. transformers generation: None (no correction)
            "logprobs": [_padded(logps[id(e)], len(e.trace_ids)) for e in episodes] if vllm else None,
            "env_mask": [e.trace_mask for e in episodes],
            COMPLETION_COLUMN: [e.to_json() for e in episodes],
            "crossgym_turns": [e.turns for e in episodes],
        }

    def _advance(self, ep: Episode, new_ids: list[int], tokenizer: Any) -> None:
        # only the closing end-of-turn token leaves the text: any other token the policy sampled (a pad included)
        # is trained on, so the environment must see it too (the compat suite's token-consistency check)
        body, ended = split_turn(new_ids, self._stops)
        action = Message(role="assistant", content=tokenizer.decode(body, skip_special_tokens=False))
        reply = ep.take(action, token_ids=new_ids, ended=ended)
        if ep.done:
            return  # the reply to the last action is in the Completion (scored), never in the ids (trained)
        suffix = reply_suffix(tokenizer, ep.conversation()[:-len(reply)], reply, ep.tools)
        if suffix is None:
            log.warning("chat template is not prefix-preserving: ending the episode after turn %d", ep.turns)
            ep.end("template")
            return
        ids = self._encode(tokenizer, suffix)
        if ep.fits(len(ids)):
            ep.feed(ids)

    def context_ids(self, ep: Episode) -> list[int]:
        """What the next turn of ``ep`` is generated from (and trained on): the prompt's ids and the trace."""
        return self._prompt_ids[id(ep)] + ep.trace_ids

    def _generate_vllm(self, trainer: Any, active: list[Episode], budget: int
                       ) -> list[tuple[list[int], list[float]]]:
        """The next assistant turn of every active episode through TRL's own vLLM generation (colocate or server,
        weights synced by the trainer before rollout_func is called): token ids in, token ids and their sampling
        logprobs out, cut at a stop token and at each episode's remaining budget."""
        seqs = [self.context_ids(e) for e in active]
        _, completion_ids, logprobs, _ = trainer.vllm_generation.generate(prompts=seqs, images=None,
                                                                          num_generations=1)
        out = []
        for ep, ids, lps in zip(active, completion_ids, logprobs, strict=True):
            cap = budget - len(ep.trace_ids)
            cut = next((k + 1 for k, t in enumerate(ids) if t in self._stops), len(ids))
            keep = min(cut, cap)
            out.append((list(ids[:keep]), [float(lp[0]) if isinstance(lp, (list, tuple)) else float(lp)
                                           for lp in lps[:keep]]))
        return out

    def _generate(self, trainer: Any, tokenizer: Any, active: list[Episode], budget: int) -> list[list[int]]:
        """One batched, left-padded generate() for the next assistant turn of every active episode."""
        import torch
        from transformers import GenerationConfig
        from trl.models import unwrap_model_for_generation

        args = trainer.args
        device = trainer.accelerator.device
        seqs = [self.context_ids(e) for e in active]
        width = max(len(s) for s in seqs)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=device)
        attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=device)
        room = max(1, min(budget - len(e.trace_ids) for e in active))
        eos_ids = list(self._stops)
        sample = args.temperature > 0
        gen = GenerationConfig(max_new_tokens=room, do_sample=sample, pad_token_id=pad, eos_token_id=eos_ids,
                               **({"temperature": args.temperature, "top_p": args.top_p,
                                   "top_k": args.top_k or None, "min_p": args.min_p} if sample else {}),
                               repetition_penalty=args.repetition_penalty, **(args.generation_kwargs or {}))
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model, torch.no_grad():
            out = model.generate(input_ids=input_ids, attention_mask=attention, generation_config=gen)
        new = out[:, width:].tolist()
        result = []
        for ep, ids in zip(active, new, strict=True):
            cap = budget - len(ep.trace_ids)
            cut = next((k + 1 for k, t in enumerate(ids) if t in eos_ids), len(ids))
            ids = ids[:min(cut, cap)]
            while ids and ids[-1] == pad and pad not in eos_ids:
                ids.pop()
            result.append(ids)
        return result


def _align_logprobs(out: list[float], before: int, after: int, new_ids: list[int], new_logps: list[float]) -> None:
    """Extend ``out`` (one logprob per trace token) over what one turn added to the trace: the action's tokens
    take their sampling logprobs, the environment's reply that follows them NaN."""
    del out[before:]
    out.extend([math.nan] * (before - len(out)))
    added = after - before
    model = min(added, len(new_ids), len(new_logps))
    out.extend(new_logps[:model])
    out.extend([math.nan] * (added - model))


def _padded(values: list[float], n: int) -> list[float]:
    return values[:n] + [math.nan] * (n - len(values))
