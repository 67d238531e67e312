"""Score completions through veRL's own reward machinery, as its trainer does, for the compat suite's parity checks.

``native_rewards(tasks, completions)`` writes the generated reward module to a temporary folder, composes veRL's
``ppo_trainer`` config with the overrides crossgym would pass, loads the reward manager exactly as main_ppo does
(``load_reward_manager``), tokenizes every prompt and completion into a DataProto (left-padded prompts,
right-padded responses, as veRL's rollout hands them over) and returns each sample's ``reward_score`` from the
manager's ``run_single``. Needs veRL (the verl nox venv); imports it inside functions.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any, Sequence

from crossgym.adapters.verl.dataset import task_rows
from crossgym.adapters.verl.reward import COMPLETION_KEY, reward_module_source
from crossgym.protocol.task import Completion, Task

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@functools.lru_cache(maxsize=1)
def byte_tokenizer() -> Any:
    """A lossless byte-level tokenizer (any Unicode text decodes back exactly) with a ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<|im_end|>": 1, "<|im_start|>": 2}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>",
                                 additional_special_tokens=["<|im_start|>"])
    hf.chat_template = CHATML
    return hf


def _as_completion(value: Completion | str) -> Completion:
    return value if isinstance(value, Completion) else Completion.from_text(str(value))


def _is_episode(c: Completion) -> bool:
    return len(c.messages) != 1 or c.messages[0].role != "assistant" or bool(c.messages[0].tool_calls)


def build_batch(tokenizer: Any, tasks: Sequence[Task], completions: Sequence[Completion | str], *,
                run: Any = None) -> Any:
    """A veRL DataProto as the rollout hands it to the reward manager: prompts left-padded, responses (completion
    text + end-of-turn token) right-padded, the dataset row's non-tensor fields, and for multi-message completions
    the whole episode in tool_extra_fields, as crossgym's agent loop leaves it."""
    import torch
    from verl import DataProto

    from crossgym.protocol.config import RunConfig

    if len(tasks) != len(completions):
        raise ValueError(f"{len(tasks)} tasks but {len(completions)} completions")
    run = run or RunConfig(model="parity", tasks={"files": ["-"]})
    rows = task_rows(tasks, run)
    comps = [_as_completion(c) for c in completions]
    pad = tokenizer.pad_token_id
    prompts = [list(tokenizer.apply_chat_template([{"role": m.role, "content": m.content} for m in t.prompt],
                                                  add_generation_prompt=True, tokenize=True, return_dict=False))
               for t in tasks]
    responses = [list(tokenizer(c.text, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id]
                 for c in comps]
    width_p = max(len(p) for p in prompts)
    width_r = max(len(r) for r in responses)
    p_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    r_ids = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    attn = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
                         for p, r in zip(prompts, responses, strict=True)])
    positions = torch.clamp(torch.cumsum(attn, dim=1) - 1, min=0)
    extra = [{COMPLETION_KEY: json.dumps(c.to_dict(), ensure_ascii=False)} if _is_episode(c) else {} for c in comps]
    non_tensors = {
        "data_source": _objects([r["data_source"] for r in rows]),
        "reward_model": _objects([r["reward_model"] for r in rows]),
        "extra_info": _objects([dict(r["extra_info"]) for r in rows]),
        "raw_prompt": _objects([r["prompt"] for r in rows]),
        "tool_extra_fields": _objects(extra),
    }
    return DataProto.from_dict(
        tensors={"prompts": p_ids, "responses": r_ids, "input_ids": torch.cat([p_ids, r_ids], dim=1),
                 "attention_mask": attn, "position_ids": positions, "response_mask": attn[:, width_p:]},
        non_tensors=non_tensors)


def _objects(values: Sequence[Any]) -> Any:
    """A 1-D numpy object array of ``values`` (numpy would turn lists of lists into a 2-D array)."""
    import numpy as np

    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def compose_config(overrides: Sequence[str]) -> Any:
    """veRL's ppo_trainer config composed with ``overrides`` through Hydra, as main_ppo composes it."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def reward_overrides(module_path: str | Path, *, manager: str = "naive") -> list[str]:
    """The reward part of crossgym's overrides (plus a rollout name, which the config requires)."""
    return [f"reward.custom_reward_function.path={module_path}", "reward.custom_reward_function.name=compute_score",
            f"reward.reward_manager.name={manager}", "actor_rollout_ref.rollout.name=vllm"]


def native_rewards(tasks: Sequence[Task], completions: Sequence[Completion | str], *, on_error: float = 0.0,
                   manager: str = "naive", tokenizer: Any = None) -> list[float | None]:
    """The reward veRL's reward manager gives each (task, completion), as a Python float (its trainer then holds
    it as a float32 rm_scores entry at the response's last token; that placement is checked here too)."""
    from verl.trainer.ppo.reward import load_reward_manager

    tokenizer = tokenizer or byte_tokenizer()
    with tempfile.TemporaryDirectory(prefix="crossgym-verl-") as tmp:
        module = Path(tmp) / "crossgym_reward.py"
        module.write_text(reward_module_source({"on_error": float(on_error), "task_weight": 1.0, "extra": []}),
                          encoding="utf-8")
        config = compose_config(reward_overrides(module, manager=manager))
        mgr = load_reward_manager(config, tokenizer)
        data = build_batch(tokenizer, tasks, completions)

        async def score_all() -> list[dict[str, Any]]:
            return [await mgr.run_single(data[i:i + 1]) for i in range(len(data))]

        results = mgr.loop.run_until_complete(score_all())
    scores = [None if r["reward_score"] is None else float(r["reward_score"]) for r in results]
    # the trainer receives them as float32 rm_scores at each response's last token; check that placement too
    rm_scores = type(mgr).assemble_rm_scores(data, [0.0 if s is None else s for s in scores])
    for row, want in zip(rm_scores.sum(dim=-1).tolist(), scores, strict=True):
        if want is not None and abs(row - want) > 1e-6 * max(1.0, abs(want)):
            raise AssertionError(f"veRL placed reward {row} where the reward manager gave {want}")
    return scores
