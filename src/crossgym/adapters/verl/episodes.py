"""Play crossgym episodes through veRL's own rollout worker on CPU: ``AgentLoopWorker.generate_sequences`` runs
crossgym's agent loop, and a small in-process server generates with a local Hugging Face model (standing in for
veRL's vLLM/SGLang server, which needs GPUs). The compat suite's token-consistency check reads the ids veRL would
train on from here (``parity.episode_tokens``).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import os
import shutil
import tempfile
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossgym.adapters.kit.replay import MODEL_ENV
from crossgym.protocol.task import Task

#: makes an untrained tiny model end its turns after a few tokens, so episodes reach several turns
EARLY_EOS = {"exponential_decay_length_penalty": (4, 1.6)}


def byte_level_qwen_tokenizer() -> Any:
    """The kit's byte-level tokenizer (any text round-trips) with Qwen2.5's special tokens, chat template and
    GPT-2's pre-split: what transformers' Qwen2Tokenizer can load and veRL's Qwen builder needs."""
    from crossgym.adapters.kit.replay import byte_tokenizer
    from crossgym.inference.tiny import SPECIAL_TOKENS, qwen_chat_template

    return byte_tokenizer(tuple(SPECIAL_TOKENS), eos="<|im_end|>", pad="<|endoftext|>",
                          chat_template=qwen_chat_template(), use_regex=True)


@functools.lru_cache(maxsize=1)
def tiny_qwen_model() -> str:
    """A ~1M-parameter Qwen2 model with a byte-level tokenizer and Qwen2.5's chat template, built once per process.
    Its model_type (qwen2) makes veRL pick the token builder it ships for that template, as for a real Qwen."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(tempfile.mkdtemp(prefix="crossgym-verl-model-"))
    atexit.register(shutil.rmtree, out, True)
    tok = byte_level_qwen_tokenizer()
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=128, intermediate_size=352, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                      tie_word_embeddings=True, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


class LocalServer:
    """Stands in for veRL's LLMServerClient: token ids in, sampled token ids (and logprobs) out, from a local
    transformers model. Generation stops at the end-of-turn token, as vLLM does."""

    def __init__(self, model_dir: str, *, max_new_tokens: int = 24, seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(model_dir)
        self.model.eval()
        self.max_new_tokens = max_new_tokens
        self.generator = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        self.seed = seed
        # veRL's worker sends requests concurrently (an executor thread each): one at a time, each seeded from its
        # prompt and how often that prompt came before, so what is sampled does not depend on thread timing
        self._lock = threading.Lock()
        self._seen: dict[int, int] = {}

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, self._generate, list(prompt_ids))

    def _generate(self, prompt_ids: list[int]) -> Any:
        import torch
        from verl.workers.rollout.replica import TokenOutput

        key = zlib.crc32(json.dumps(prompt_ids).encode())
        with self._lock, torch.no_grad():
            k = self._seen.get(key, 0)
            self._seen[key] = k + 1
            torch.manual_seed((self.seed * 1_000_003 + key + 7919 * k) % 2**31)
            out = self.model.generate(torch.tensor([prompt_ids]), attention_mask=torch.ones(1, len(prompt_ids),
                                      dtype=torch.long), do_sample=True, max_new_tokens=self.max_new_tokens,
                                      output_scores=True, return_dict_in_generate=True, **EARLY_EOS)
        ids = out.sequences[0, len(prompt_ids):].tolist()
        logprobs = [float(torch.log_softmax(s[0], -1)[t]) for s, t in zip(out.scores, ids, strict=False)]
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")


def play_episodes(tasks: Sequence[Task], *, env: str, max_turns: int = 3, n: int = 2,
                  max_completion_length: int = 96) -> dict[str, Any]:
    """One GRPO group (n samples) per task through AgentLoopWorker; returns the tokenizer and, per sample, the
    prompt ids, the response ids and the response mask veRL would train on (padding removed)."""
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from crossgym.adapters.verl.backend import VerlBackend
    from crossgym.adapters.verl.parity import compose_config
    from crossgym.config import RunConfig

    model = os.environ.get(MODEL_ENV) or tiny_qwen_model()
    with tempfile.TemporaryDirectory(prefix="crossgym-verl-episodes-") as out:
        run = RunConfig.model_validate({
            "model": model, "tasks": {"files": ["(given in-process)"]}, "output_dir": out,
            "environment": {"name": env, "max_turns": max_turns},
            "grpo": {"num_generations": n, "per_device_train_batch_size": n, "max_steps": 1,
                     "max_completion_length": max_completion_length, "max_prompt_length": 4096}})
        rf = VerlBackend().build(run, tasks=list(tasks), gpus=1)
        rf.write()
        cfg = compose_config(rf.args)
        worker = AgentLoopWorker(cfg, LocalServer(model))
        ds = RLHFDataset(data_files=[cfg.data.train_files], tokenizer=worker.tokenizer, config=cfg.data,
                         processor=None)
        batch = DataProto.from_single_dict(collate_fn([ds[i] for i in range(len(ds))]))
        batch = batch.repeat(repeat_times=n, interleave=True)  # as the trainer repeats prompts rollout.n times
        loop = asyncio.new_event_loop()
        try:
            output = loop.run_until_complete(worker.generate_sequences(batch))
        finally:
            loop.close()
    p_len = output.batch["prompts"].shape[1]
    episodes = []
    for i in range(len(output)):
        attn = output.batch["attention_mask"][i]
        prompt = output.batch["prompts"][i][attn[:p_len].bool()].tolist()
        valid = int(attn[p_len:].sum())
        episodes.append({"prompt_ids": prompt, "completion_ids": output.batch["responses"][i][:valid].tolist(),
                         "mask": output.batch["response_mask"][i][:valid].tolist()})
    return {"tokenizer": worker.tokenizer, "episodes": episodes}
