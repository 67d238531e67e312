"""The environment bridge: a TRL ``rollout_func`` that plays crossgym Environment episodes (reset, step) with the
policy being trained, and hands TRL the token ids, an env mask (tool results are not trained on) and the whole
Completion for the reward functions.

Only TRL's public surface is used: ``rollout_func(prompts, trainer)``, ``trainer.model_wrapped``,
``trainer.accelerator``, ``trainer.processing_class``, ``trainer.args`` and ``trl.models.unwrap_model_for_generation``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_INDEX_KEY
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task
from crossgym.rollout.tasks import task_env

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

#: Safety cap on assistant turns when the config does not set environment.max_turns (the env decides done).
DEFAULT_MAX_TURNS = 16


def episode_max_turns(run: RunConfig, env_name: str) -> int:
    """environment.max_turns when set explicitly; else 1 for single_turn and DEFAULT_MAX_TURNS otherwise."""
    if "max_turns" in run.environment.model_fields_set:
        return run.environment.max_turns
    return 1 if env_name == "single_turn" else DEFAULT_MAX_TURNS


def _seed(base: int, task_id: str) -> int:
    """The same environment seed for every member of a GRPO group (same start state), stable across runs."""
    digest = hashlib.sha256(f"{base}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass
class _Episode:
    task: Task
    env: Any
    messages: list[dict[str, Any]]  # the whole conversation so far, OpenAI form (prompt included)
    tools: list[dict[str, Any]] | None
    prompt_ids: list[int]
    max_turns: int
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    out: list[Message] = field(default_factory=list)  # the Completion's messages
    turns: int = 0
    done: bool = False


class EpisodeRollout:
    """``rollout_func`` for GRPOTrainer: one crossgym episode per prompt TRL hands over (prompts arrive already
    repeated num_generations times)."""

    def __init__(self, tasks: Sequence[Task], run: RunConfig) -> None:
        from crossgym.plugins import registry

        self.tasks = list(tasks)
        self.run = run
        self.env_params = dict(run.environment.params)
        if "max_turns" in run.environment.model_fields_set:  # as `crossgym eval` does: the environment enforces it
            self.env_params.setdefault("max_turns", run.environment.max_turns)
        self._eos: set[int] = set()
        for name in sorted({task_env(t, run) for t in self.tasks}):
            registry("environments").entry(name)  # an unknown name fails here, with a suggestion

    # ------------------------------------------------------------ rendering
    @staticmethod
    def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                add_generation_prompt: bool) -> str:
        return str(tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                                 tokenize=False))

    def _encode(self, tokenizer: Any, text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def _env_suffix(self, tokenizer: Any, ep: _Episode, new: list[dict[str, Any]]) -> list[int] | None:
        """Token ids the chat template puts after the assistant's end-of-turn token, up to the next generation
        prompt; None when the template is not prefix-preserving (the episode then ends)."""
        before = self._render(tokenizer, ep.messages, ep.tools, False)
        after = self._render(tokenizer, ep.messages + new, ep.tools, True)
        eos = tokenizer.eos_token or ""
        cut = before.rfind(eos) + len(eos) if eos and eos in before else len(before)
        if not after.startswith(before[:cut]):
            log.warning("chat template is not prefix-preserving: ending the episode after turn %d", ep.turns)
            return None
        return self._encode(tokenizer, after[cut:])

    # ------------------------------------------------------------ episodes
    def _start(self, prompt: list[dict[str, Any]], tokenizer: Any) -> _Episode:
        from crossgym.api import load_environment

        index = prompt[0].get(TASK_INDEX_KEY) if prompt else None
        if index is None:
            raise ConfigError("a prompt reached the rollout function without its task index",
                              where="train_dataset", fix="build rows with task_rows(tasks, episodes=True)")
        task = self.tasks[int(index)]
        name = task_env(task, self.run)
        env = load_environment(name, **self.env_params)
        obs = env.reset(task, seed=_seed(self.run.seed, task.id))
        messages = [m.to_openai() for m in obs.messages]
        tools = [t.to_openai() for t in obs.tools] or None
        text = self._render(tokenizer, messages, tools, True)
        return _Episode(task=task, env=env, messages=messages, tools=tools, prompt_ids=self._encode(tokenizer, text),
                        max_turns=episode_max_turns(self.run, name))

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        budget = int(trainer.args.max_completion_length)
        self._eos = self._eos_ids(tokenizer, trainer.model)
        episodes = [self._start(p, tokenizer) for p in prompts]
        try:
            while True:
                active = [e for e in episodes if not e.done]
                if not active:
                    break
                texts_ids = self._generate(trainer, tokenizer, active, budget)
                for ep, new_ids in zip(active, texts_ids, strict=True):
                    self._advance(ep, new_ids, tokenizer, budget)
        finally:
            for ep in episodes:
                try:
                    ep.env.close()
                except Exception as exc:  # closing must not lose the batch
                    log.warning("environment close failed: %s", exc)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": None,
            "env_mask": [e.env_mask for e in episodes],
            COMPLETION_COLUMN: [json.dumps(Completion(messages=tuple(e.out)).to_dict()) for e in episodes],
            "crossgym_turns": [e.turns for e in episodes],
        }

    def _advance(self, ep: _Episode, new_ids: list[int], tokenizer: Any, budget: int) -> None:
        eos_ids = self._eos
        ended = bool(new_ids) and new_ids[-1] in eos_ids
        ep.completion_ids += new_ids
        ep.env_mask += [1] * len(new_ids)
        ep.turns += 1
        # only the closing end-of-turn token leaves the text: any other token the policy sampled (a pad included)
        # is trained on, so the environment must see it too (the compat suite's token-consistency check)
        text = tokenizer.decode([i for i in new_ids if i not in eos_ids], skip_special_tokens=False)
        action = Message(role="assistant", content=text)
        ep.out.append(action)
        ep.messages.append(action.to_openai())
        try:
            result = ep.env.step(action)
        except Exception as exc:  # environments must not raise on model output; end the episode if one does
            log.warning("environment %s raised on step: %s", type(ep.env).__name__, exc)
            ep.done = True
            return
        last = result.done or not ended or ep.turns >= ep.max_turns or len(ep.completion_ids) >= budget
        new = [m.to_openai() for m in result.messages]
        suffix = None if last else self._env_suffix(tokenizer, ep, new)
        ep.out.extend(result.messages)  # the Verdict sees every reply, the last one's too, as `crossgym eval` does
        if suffix is None or len(ep.completion_ids) + len(suffix) >= budget:
            ep.done = True  # the reply to the last action gets no tokens: nothing after the last turn is trained
            return
        ep.messages.extend(new)
        ep.completion_ids += suffix
        ep.env_mask += [0] * len(suffix)

    @staticmethod
    def _eos_ids(tokenizer: Any, model: Any) -> set[int]:
        """End-of-turn ids: the tokenizer's EOS and the model's generation_config eos_token_id(s)."""
        ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        extra = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ids.update(extra if isinstance(extra, (list, tuple)) else ([extra] if extra is not None else []))
        return ids

    def _generate(self, trainer: Any, tokenizer: Any, active: list[_Episode], budget: int) -> list[list[int]]:
        """One batched, left-padded generate() for the next assistant turn of every active episode."""
        import torch
        from transformers import GenerationConfig
        from trl.models import unwrap_model_for_generation

        args = trainer.args
        device = trainer.accelerator.device
        seqs = [e.prompt_ids + e.completion_ids for e in active]
        width = max(len(s) for s in seqs)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=device)
        attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=device)
        room = max(1, min(budget - len(e.completion_ids) for e in active))
        eos_ids = sorted(self._eos)
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
            cap = budget - len(ep.completion_ids)
            cut = next((k + 1 for k, t in enumerate(ids) if t in eos_ids), len(ids))
            ids = ids[:min(cut, cap)]
            while ids and ids[-1] == pad and pad not in eos_ids:
                ids.pop()
            result.append(ids)
        return result
