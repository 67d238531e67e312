"""adapters/trl/episodes.py: multi-turn tool_use episodes inside TRL's rollout_func, on the tiny model.

The tiny model never writes a tool call by itself, so generation is biased (transformers' ``sequence_bias``, passed
through backend_args -> GRPOConfig.generation_kwargs) towards ``<tool_call>`` and end-of-turn: the real tool_use
environment then answers each unreadable call with an error tool message and the episode goes on, turn after turn.
"""

from __future__ import annotations

import json

import pytest

from crossgym.adapters.trl.rows import COMPLETION_COLUMN, task_rows
from crossgym.api import load_verifier
from crossgym.config import parse_run_config
from crossgym.protocol import Completion, Message, Task, VerifierSpec
from crossgym.scoring import extra_task, reward_from_verdict, safe_verify

pytest.importorskip("trl")


def add_tasks(n: int = 4) -> list[Task]:
    from crossgym.environments import toolsets
    from crossgym.environments.tools import tool_spec

    spec = tool_spec(toolsets.add)
    return [Task(id=f"add-{i}", prompt=[Message("user", f"What is {i}+3? Call add, then reply with the number.")],
                 answer=i + 3, verifier=VerifierSpec("numeric"), env="tool_use", tools=(spec,),
                 metadata={"tool_refs": ["crossgym.environments.toolsets:add"]}) for i in range(n)]


def _run(model, out, **over):
    from crossgym.inference.tiny import SPECIAL_TOKENS

    tool_call, eos = SPECIAL_TOKENS.index("<tool_call>"), SPECIAL_TOKENS.index("<|im_end|>")
    data = {"model": str(model), "tasks": {"source": "json_addition"}, "output_dir": str(out), "seed": 0,
            "environment": {"max_turns": 3},
            "grpo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 200,
                     "max_steps": 2, "learning_rate": 1e-3},
            "backend_args": {"generation_kwargs": {"sequence_bias": [[[tool_call], 5.0], [[tool_call, eos], 30.0]]}}}
    return parse_run_config(data | over)


def test_episode_tokens_are_the_rendered_conversation(tiny_model_dir, tmp_path):
    from crossgym.adapters.trl.backend import TRLBackend

    tasks = add_tasks(4)
    backend = TRLBackend()
    trainer = backend.build_trainer(_run(tiny_model_dir, tmp_path), tasks=tasks)
    tok = trainer.processing_class
    prompts = [row["prompt"] for row in task_rows(tasks, episodes=True)]
    out = backend.rollout_func(prompts, trainer)

    assert out["logprobs"] is None and len(out["prompt_ids"]) == 4
    assert max(out["crossgym_turns"]) >= 2  # real multi-turn episodes
    for i, task in enumerate(tasks):
        completion = Completion.from_dict(json.loads(out[COMPLETION_COLUMN][i]))
        ids, mask = out["completion_ids"][i], out["env_mask"][i]
        assert len(ids) == len(mask) <= 200
        assert len(completion.assistant_messages) == out["crossgym_turns"][i]
        conversation = [m.to_openai() for m in (*task.prompt, *completion.messages)]
        rendered = tok.apply_chat_template(conversation, tools=[t.to_openai() for t in task.tools],
                                           add_generation_prompt=False, tokenize=False)
        # the tokens TRL trains on are exactly the chat template's rendering of the episode
        assert rendered.startswith(tok.decode(out["prompt_ids"][i] + ids, skip_special_tokens=False))
        model_text = tok.decode([t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False)
        env_text = tok.decode([t for t, m in zip(ids, mask, strict=True) if not m], skip_special_tokens=False)
        assert "<tool_response>" not in model_text  # tool results are masked out of the loss
        last_action = max(j for j, m in enumerate(completion.messages) if m.role == "assistant")
        tool_msgs = [m for m in completion.messages[:last_action] if m.role == "tool"]
        # every reply before the last action is in the ids; the reply to the last action is scored, never trained
        assert env_text.count("<tool_response>") == len(tool_msgs)
        assert all(m.content.startswith("Error: could not read the tool call") for m in tool_msgs)


def test_multi_turn_grpo_steps_rewards_equal_verdicts(tiny_model_dir, tmp_path, test_plugin):
    from crossgym.adapters.trl.backend import TRLBackend

    backend = TRLBackend()
    seen = []
    tasks = add_tasks(4)
    # an extra term with spread (numeric on garbage is always 0); both judge the whole episode
    run = _run(tiny_model_dir, tmp_path / "out", verifiers=[{"name": "test_short", "weight": 0.5,
                                                              "params": {"limit": 64}}])
    trainer = backend.build_trainer(run, tasks=tasks)
    for fn in backend.reward_funcs:
        fn.observers.append(lambda t, c, v, r, fn=fn: seen.append((fn, t, c, r)))
    trainer.train()

    assert trainer.state.global_step == 2 and len(seen) == 4
    turns = []
    for fn, batch_tasks, comps, rewards in seen:
        for task, comp, reward in zip(batch_tasks, comps, rewards, strict=True):
            judged = task if fn.spec is None else extra_task(task, fn.spec)
            verdict = safe_verify(load_verifier(judged.verifier), judged, comp)
            assert reward == reward_from_verdict(verdict, run.on_error)
            turns.append(len(comp.assistant_messages))
    assert max(turns) >= 2


def test_episode_reward_counts_the_reply_to_the_last_action_as_eval_does(tiny_model_dir, tmp_path,
                                                                         final_reply_plugin):
    """The reward comes only in the environment's reply to the last action: the Verdict TRL trains on equals
    `crossgym eval`'s for the same scripted actions, while that reply gets no tokens (nothing after the last turn
    is trained on). Only the generator is scripted; the episode loop and the reward function are TRL's path."""
    from final_reply_env import eval_rewards, final_reply_tasks

    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.adapters.trl.rows import TASK_COLUMN

    tasks, scripts = final_reply_tasks()
    run = parse_run_config({"model": str(tiny_model_dir), "tasks": {"source": "json_addition"},
                            "output_dir": str(tmp_path), "seed": 0,
                            "grpo": {"num_generations": 2, "per_device_train_batch_size": 2,
                                     "max_completion_length": 200, "max_steps": 1}})
    backend = TRLBackend()
    trainer = backend.build_trainer(run, tasks=tasks)
    tok = trainer.processing_class
    rollout = backend.rollout_func

    def scripted(trainer, tokenizer, active, budget):
        turns = [scripts[next(k for k in scripts if e.task.prompt[0].content.startswith(k))][e.turns] for e in active]
        return [list(tokenizer(t, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id] for t in turns]

    rollout._generate = scripted
    rows = task_rows(tasks, episodes=True)
    out = rollout([r["prompt"] for r in rows], trainer)
    rewards = backend.reward_funcs[0](prompts=None, completions=None, **{TASK_COLUMN: [r[TASK_COLUMN] for r in rows],
                                                                        COMPLETION_COLUMN: out[COMPLETION_COLUMN]})
    assert rewards == eval_rewards(tasks, scripts) == [1.0, 0.0]
    for i in range(len(tasks)):
        ids, mask = out["completion_ids"][i], out["env_mask"][i]
        text = tok.decode(ids, skip_special_tokens=False)
        assert '"turn": 1' in text and '"turn": 2' not in text  # the ids hold the first reply only
        assert mask[-1] == 1 and out["crossgym_turns"][i] == 2  # the ids end with the last model turn
        last = Completion.from_dict(json.loads(out[COMPLETION_COLUMN][i])).messages[-1]
        assert json.loads(last.content)["observation"] == {"turn": 2}  # ...but the Verdict saw that reply


class TransformersAsVLLM:
    """A stand-in for TRL's VLLMGeneration (vLLM needs a GPU): the same ``generate`` signature, answered by the
    trainer's own model with greedy transformers generation, returning vLLM's shapes (top-1 logprob lists)."""

    def __init__(self, trainer, budget):
        self.trainer, self.budget, self.calls = trainer, budget, []

    def generate(self, prompts, images, num_generations, profiler=None):
        import inspect

        import torch
        from trl.generation.vllm_generation import VLLMGeneration

        # the call crossgym makes binds to TRL 1.16's real signature
        inspect.signature(VLLMGeneration.generate).bind(None, prompts=prompts, images=images,
                                                         num_generations=num_generations)
        self.calls.append([list(p) for p in prompts])
        model = self.trainer.model
        ids, logps = [], []
        for p in prompts:
            out = model.generate(input_ids=torch.tensor([p]), max_new_tokens=self.budget, do_sample=False,
                                 output_scores=True, return_dict_in_generate=True,
                                 eos_token_id=self.trainer.processing_class.eos_token_id,
                                 **(self.trainer.args.generation_kwargs or {}))  # the tool-call bias
            new = out.sequences[0, len(p):].tolist()
            lp = [torch.log_softmax(s[0], -1)[t].item() for s, t in zip(out.scores, new, strict=False)]
            ids.append(new)
            logps.append([[x] for x in lp])
        return [list(p) for p in prompts], ids, logps, [[[t] for t in s] for s in ids]


def test_multi_turn_episodes_generate_through_trls_vllm_route(tiny_model_dir, tmp_path):
    """engine: vllm for multi-turn: crossgym's rollout_func calls TRL's vllm_generation per turn and returns its
    sampling logprobs for the policy's tokens and NaN for the environment's (up to the GPU boundary)."""
    import math

    from crossgym.adapters.trl.backend import TRLBackend

    tasks = add_tasks(2)
    backend = TRLBackend()
    trainer = backend.build_trainer(_run(tiny_model_dir, tmp_path, grpo={
        "num_generations": 2, "per_device_train_batch_size": 2, "max_completion_length": 200, "max_steps": 1}),
        tasks=tasks)
    trainer.use_vllm = True
    trainer.vllm_generation = TransformersAsVLLM(trainer, 20)
    prompts = [row["prompt"] for row in task_rows(tasks, episodes=True)]
    out = backend.rollout_func(prompts, trainer)
    assert trainer.vllm_generation.calls  # every turn went through TRL's vLLM generation
    for ids, mask, lps in zip(out["completion_ids"], out["env_mask"], out["logprobs"], strict=True):
        assert len(ids) == len(mask) == len(lps) <= 200
        assert all(math.isnan(lp) for lp, m in zip(lps, mask, strict=True) if not m)
        assert all(not math.isnan(lp) and lp <= 0.0 for lp, m in zip(lps, mask, strict=True) if m)
    # each turn's context is the prompt plus the trace so far: the second turn starts where the first left off
    first, *later = trainer.vllm_generation.calls
    assert later and later[0][0][:len(first[0])] == first[0]
