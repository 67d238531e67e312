"""Proof on OpenRLHF's own code (runs in the `openrlhf` nox venv; skipped where OpenRLHF is not installed).

- OpenRLHF's blending_datasets + PromptDataset read our prompts.jsonl; its SingleTurnAgentExecutor loads our
  generated reward file and gives exactly crossgym's rewards (verifiers' own pass/fail/malformed examples).
- Its MultiTurnAgentExecutor runs our generated agent file through tool_use episodes: rewards and action ranges.
- Our argv goes through OpenRLHF's own argument parsing and checks. ``openrlhf.cli.train_ppo_ray`` cannot be
  imported without vLLM (it imports ray and vLLM at module level), so native_cli.parse_native executes the
  statements of that module's ``if __name__ == "__main__":`` block, read from the installed file, with sys.argv
  set to our argv and train(args) captured: the same parser and the same assertions.

Only the generator is replaced: a replay engine returns scripted turns as token ids (it is not under test).
"""

from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path

import pytest

pytest.importorskip("openrlhf")
torch = pytest.importorskip("torch")

from openrlhf.datasets import PromptDataset  # noqa: E402
from openrlhf.datasets.utils import blending_datasets  # noqa: E402
from openrlhf.utils.agent import MultiTurnAgentExecutor, SingleTurnAgentExecutor  # noqa: E402

from crossgym.adapters.openrlhf.agent import episode_seed  # noqa: E402
from crossgym.adapters.openrlhf.backend import OpenRLHFBackend  # noqa: E402
from crossgym.adapters.openrlhf.convert import task_from_label  # noqa: E402
from crossgym.adapters.openrlhf.native_cli import parse_native  # noqa: E402
from crossgym.adapters.openrlhf.parity import (  # noqa: E402
    ReplayEngine,
    SamplingParams,
    byte_tokenizer,
    load_module,
    native_rewards,
)
from crossgym.api import load_environment, load_tasks, load_verifier  # noqa: E402
from crossgym.config import RunConfig  # noqa: E402
from crossgym.protocol.errors import ConfigError  # noqa: E402
from crossgym.protocol.messages import Message  # noqa: E402
from crossgym.protocol.task import Completion, Task  # noqa: E402

VERIFIERS = ["exact_match", "numeric", "json_answer", "json_schema", "multiple_choice", "format_tags", "json_match",
             "math"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The policy's tokenizer files (byte-level, lossless, Qwen2.5 chat template); weights are not needed here."""
    d = tmp_path_factory.mktemp("policy")
    byte_tokenizer().save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def tok(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


def crossgym_reward(task: Task, completion: Completion) -> float:
    return load_verifier(task.verifier).verify(task, completion).reward


def example_cases() -> list[tuple[Task, Completion, str]]:
    cases = []
    for name in VERIFIERS:
        for ex in load_verifier(name).examples():
            if not ex.task.tools and ex.task.env == "single_turn":
                cases.append((ex.task, ex.completion, ex.expect))
    return cases


def make_run(tmp_path: Path, model_dir: Path, task_file: Path, **kw) -> RunConfig:
    grpo = {"num_generations": 2, "per_device_train_batch_size": 4, "max_steps": 30, "max_prompt_length": 4096,
            **kw.pop("grpo", {})}
    data = {"model": str(model_dir), "tasks": {"files": [str(task_file)]}, "backend": "openrlhf",
            "output_dir": str(tmp_path / "out"), "grpo": grpo, "on_error": -1.0,
            "backend_args": {"actor.num_gpus_per_node": 1}}
    data.update(kw)
    return RunConfig.model_validate(data)


def written_plan(run: RunConfig):
    b = OpenRLHFBackend()
    plan, full = b.prepare(run)
    work = b.write(full)
    return plan, work


def native_dataset(plan) -> tuple[list[str], list[str], types.SimpleNamespace]:
    """prompts and labels as OpenRLHF's trainer builds them from our argv (its own parser, loader and dataset)."""
    args = parse_native(list(plan.argv[3:])).args
    strategy = types.SimpleNamespace(args=args, print=lambda *a, **k: None, is_rank_0=lambda: True)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.actor.model_name_or_path)
    data = blending_datasets(args.data.prompt_dataset, args.data.prompt_probs, strategy, args.train.seed,
                             max_count=args.data.max_samples, dataset_split=args.data.prompt_split)
    ds = PromptDataset(data, tokenizer, strategy, input_template=args.data.input_template)
    return list(ds.prompts), list(ds.labels), args


# ---------------------------------------------------------------- single turn: the reward file
def test_single_turn_executor_loads_our_reward_file_and_gives_crossgym_rewards(tmp_path, model_dir, tok):
    cases = example_cases()
    assert {e for _, _, e in cases} == {"pass", "fail", "malformed"}
    tasks = [t for t, _, _ in cases]
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(t.to_json() + "\n" for t in tasks))
    run = make_run(tmp_path, model_dir, task_file)
    plan, work = written_plan(run)
    prompts, labels, args = native_dataset(plan)
    assert len(prompts) == args.data.max_samples == 30 * 2  # max_steps x rollout batch (4 completions / 2 samples)
    by_id = {t.id: (t, c) for t, c, _ in cases}
    executor = SingleTurnAgentExecutor(args.reward.remote_url[0])  # exactly what the vLLM actor builds

    async def score_all():
        out = []
        for prompt, label in zip(prompts, labels, strict=True):
            task, completion = by_id[task_from_label(label).id]
            assert prompt == tok.apply_chat_template([m.to_openai() for m in task.prompt], tokenize=False,
                                                     add_generation_prompt=True)
            engine = ReplayEngine(tok, [completion.text])
            r = await executor.execute(prompt, label, SamplingParams(), args.data.max_len, tok, engine)
            out.append((task, completion, r))
        return out

    seen = set()
    for task, completion, r in asyncio.run(score_all()):
        expect = crossgym_reward(task, completion)
        assert r["reward"].tolist() == [expect], (task.id, completion.text)
        assert r["scores"].tolist() == [expect]
        assert r["extra_logs"]["crossgym/passed"].item() in (0.0, 1.0)
        s, e = r["action_ranges"][0]
        assert tok.decode(r["observation_tokens"][s:e]) == completion.text + tok.eos_token
        seen.add(task.id)
    assert len(seen) == len({t.id for t in tasks})  # every example went through OpenRLHF at least once


def test_truncated_and_odd_completions_match_crossgym(tmp_path, model_dir, tok):
    """Cut off by the length limit (no EOS), empty, whitespace, special tokens mid-text, a malformed answer."""
    task = next(ex.task for ex in load_verifier("exact_match").examples() if ex.expect == "pass")
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(task.to_json() + "\n")
    plan, _ = written_plan(make_run(tmp_path, model_dir, task_file))
    prompts, labels, args = native_dataset(plan)
    executor = SingleTurnAgentExecutor(args.reward.remote_url[0])
    answer = str(task.answer)
    texts = [answer, f"<think>{answer}?</think>{answer}", "", "   \n", "<answer></answer><answer>",
             f"{answer}<|endoftext|> trailing", f"The answer is {answer} and more words after it"]
    for text in texts:
        for limit in (None, 5):
            engine = ReplayEngine(tok, [text])
            r = asyncio.run(executor.execute(prompts[0], labels[0], SamplingParams(limit), args.data.max_len, tok,
                                             engine))
            s, e = r["action_ranges"][0]
            ids = r["observation_tokens"][s:e]
            seen_text = tok.decode([i for i in ids if i != tok.eos_token_id])
            n_ids = len(tok(text, add_special_tokens=False)["input_ids"]) + 1  # + EOS
            assert r["truncated"] == (limit is not None and n_ids > limit)
            assert e - s == (n_ids if limit is None else min(n_ids, limit))
            assert r["reward"].tolist() == [crossgym_reward(task, Completion.from_text(seen_text))], (text, limit)


def test_parity_native_rewards_over_every_example():
    cases = example_cases()
    tool_cases = [(ex.task, ex.completion, ex.expect) for ex in load_verifier("tool_call").examples()]
    cases += tool_cases  # tasks with tools go through the agent file (single_turn env, tools rendered)
    got = native_rewards([t for t, _, _ in cases], [c for _, c, _ in cases])
    assert got == [crossgym_reward(t, c) for t, c, _ in cases]


# ---------------------------------------------------------------- multi-turn: the agent file
def call_text(call: dict) -> str:
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"


def reference(task: Task, actions: list[str], max_turns: int) -> tuple[float, int]:
    """crossgym's own episode: the environment driven directly (every reply kept, the last one's too, as `crossgym
    eval` keeps it), the verifier on the resulting Completion."""
    env = load_environment(task.env)
    env.reset(task, seed=episode_seed(0, task.id))
    out: list[Message] = []
    for i, text in enumerate(actions):
        a = Message(role="assistant", content=text)
        out.append(a)
        r = env.step(a)
        out.extend(r.messages)
        if r.done or i + 1 >= max_turns:
            break
    return crossgym_reward(task, Completion(messages=tuple(out))), sum(m.role == "assistant" for m in out)


def test_multi_turn_executor_runs_our_agent_file(tmp_path, model_dir, tok):
    tasks = load_tasks("tool_choice", n=4, seed=3, mode="env")
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(t.to_json() + "\n" for t in tasks))
    run = make_run(tmp_path, model_dir, task_file, environment={"max_turns": 3})
    plan, work = written_plan(run)
    prompts, labels, args = native_dataset(plan)
    assert args.train.agent_func_path == str(work / "agent.py") and args.reward.remote_url == ["agent"]
    agent_cls = load_module(Path(args.train.agent_func_path), "agent_module").AgentExecutor  # as vllm_engine does
    assert issubclass(agent_cls, MultiTurnAgentExecutor)
    t0 = tasks[0]
    call = t0.metadata["expected_calls"][0]
    scripts = {
        "right": [call_text(call), f"<answer>{t0.answer}</answer>"],
        "wrong": [call_text(call), "<answer>-1</answer>"],
        "malformed call, then right": ["<tool_call>{not json</tool_call>", call_text(call),
                                       f"<answer>{t0.answer}</answer>"],
        "never answers (max_turns 3)": [call_text(call)] * 5,
        "answers at once": [f"<answer>{t0.answer}</answer>"],
    }
    label = next(lab for lab in labels if task_from_label(lab).id == t0.id)
    prompt = prompts[labels.index(label)]
    rewards = {}
    for name, actions in scripts.items():
        engine = ReplayEngine(tok, actions)
        r = asyncio.run(agent_cls().execute(prompt, label, SamplingParams(), args.data.max_len, tok, engine))
        expect, turns = reference(t0, actions, 3)
        rewards[name] = r["reward"]
        assert r["reward"] == expect, name
        assert r["scores"].item() == expect and r["extra_logs"]["crossgym/passed"].item() == float(expect == 1.0)
        ranges = r["action_ranges"]
        assert len(ranges) == turns == len(engine.calls), name
        obs = r["observation_tokens"]
        first = tok.decode(obs[:ranges[0][0]])
        assert "# Tools" in first and all(f'"name": "{t.name}"' in first for t in t0.tools)  # tools rendered
        assert first.endswith("<|im_start|>assistant\n")
        for k, (s, e) in enumerate(ranges):
            assert tok.decode(obs[s:e]) == actions[k] + tok.eos_token  # exactly the generated tokens
            assert obs[:s] == engine.calls[k]  # each turn is generated from everything before it
            if k + 1 < len(ranges):
                between = tok.decode(obs[e:ranges[k + 1][0]])
                assert between.startswith("\n<|im_start|>user\n<tool_response>\n")
                assert between.endswith("<|im_end|>\n<|im_start|>assistant\n")
        assert ranges[-1][1] == len(obs)  # no feedback after the last action
    assert rewards["right"] == 1.0 and rewards["wrong"] == 0.0 and rewards["never answers (max_turns 3)"] == 0.0
    assert rewards["malformed call, then right"] == 1.0


def test_agent_scores_when_the_token_budget_runs_out(tmp_path, model_dir, tok):
    task = load_tasks("tool_choice", n=1, seed=5, mode="env")[0]
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(task.to_json() + "\n")
    plan, work = written_plan(make_run(tmp_path, model_dir, task_file, environment={"max_turns": 4}))
    prompts, labels, args = native_dataset(plan)
    agent_cls = load_module(work / "agent.py", "agent_module").AgentExecutor
    action = call_text(task.metadata["expected_calls"][0])
    engine = ReplayEngine(tok, [action, f"<answer>{task.answer}</answer>"])
    r0 = asyncio.run(agent_cls().execute(prompts[0], labels[0], SamplingParams(), 100000, tok, engine))
    s, e = r0["action_ranges"][0]
    budget = e + 5  # room for the first action, not for the tool response that would follow
    engine = ReplayEngine(tok, [action, f"<answer>{task.answer}</answer>"])
    r = asyncio.run(agent_cls().execute(prompts[0], labels[0], SamplingParams(), budget, tok, engine))
    assert len(r["action_ranges"]) == 1 and len(engine.calls) == 1
    assert r["extra_logs"], "the agent must score the episode itself before OpenRLHF's loop runs out of budget"
    assert r["reward"] == reference(task, [action], 1)[0]


def test_agent_reward_counts_the_reply_to_the_last_action_as_eval_does(tmp_path, model_dir, tok,
                                                                       final_reply_plugin):
    """The reward comes only in the environment's reply to the last action: OpenRLHF's reward equals `crossgym
    eval`'s for the same scripted actions, and that reply is never fed back (the tokens end with the last action)."""
    from final_reply_env import eval_rewards, final_reply_tasks

    tasks, scripts = final_reply_tasks()
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(t.to_json() + "\n" for t in tasks))
    plan, work = written_plan(make_run(tmp_path, model_dir, task_file))
    prompts, labels, args = native_dataset(plan)
    agent_cls = load_module(work / "agent.py", "agent_module").AgentExecutor
    rewards = []
    for task in tasks:
        label = next(lab for lab in labels if task_from_label(lab).id == task.id)
        actions = next(v for k, v in scripts.items() if task.prompt[0].content.startswith(k))
        engine = ReplayEngine(tok, actions)
        r = asyncio.run(agent_cls().execute(prompts[labels.index(label)], label, SamplingParams(), args.data.max_len,
                                            tok, engine))
        rewards.append(float(r["reward"]))
        obs = r["observation_tokens"]
        assert len(r["action_ranges"]) == 2 and r["action_ranges"][-1][1] == len(obs)  # nothing after the last
        text = tok.decode(obs)
        assert '"turn": 1' in text and '"turn": 2' not in text
    assert rewards == eval_rewards(tasks, scripts) == [1.0, 0.0]


# ---------------------------------------------------------------- argv: OpenRLHF's own parser
@pytest.mark.parametrize("variant", ["grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline"])
@pytest.mark.parametrize("extra", [{}, {"grpo": {"beta": 0.02, "lora": {"r": 8}, "scale_rewards": False}},
                                   {"environment": {"max_turns": 3}}])
def test_openrlhf_parses_our_argv(tmp_path, model_dir, variant, extra):
    task = load_tasks("arithmetic", n=2)[0]
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(task.to_json() + "\n")
    grpo = {"variant": variant, **extra.get("grpo", {})}
    run = make_run(tmp_path, model_dir, task_file, grpo=grpo, environment=extra.get("environment", {}))
    plan = OpenRLHFBackend().plan(run)
    assert "flags accepted by OpenRLHF's own train_ppo_ray parser and checks" in plan.notes
    a = parse_native(list(plan.argv[3:])).args
    f = plan.native_config["flags"]
    assert a.algo.advantage.estimator == f["algo.advantage.estimator"]
    assert a.actor.policy_loss_type == f["actor.policy_loss_type"]
    assert a.actor.loss_agg_mode == f["actor.loss_agg_mode"]
    assert list(a.actor.eps_clip_low_high) == f["actor.eps_clip_low_high"]
    assert a.rollout.n_samples_per_prompt == 2 and a.train.batch_size == 4 and a.rollout.batch_size == 2
    assert a.actor.model_name_or_path == str(model_dir) and a.critic.model_name_or_path is None
    assert a.data.label_key == "label" and a.data.apply_chat_template
    if "environment" in extra:
        assert a.train.agent_func_path.endswith("agent.py") and a.reward.remote_url == ["agent"]
    else:
        assert a.reward.remote_url[0].endswith("reward.py")
    if extra.get("grpo", {}).get("beta"):
        assert a.algo.kl.use_loss and a.algo.kl.estimator == "k3" and a.algo.kl.init_coef == 0.02
        assert a.ds.lora.rank == 8


def test_openrlhf_refusals_are_one_line_config_errors(tmp_path, model_dir):
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(load_tasks("arithmetic", n=1)[0].to_json() + "\n")
    with pytest.raises(ConfigError, match="unrecognized arguments: --vllm.engine_count 2"):
        OpenRLHFBackend().plan(make_run(tmp_path, model_dir, task_file, backend_args={"vllm.engine_count": 2}))
    with pytest.raises(ConfigError, match="OpenRLHF's argument checks failed"):
        OpenRLHFBackend().plan(make_run(tmp_path, model_dir, task_file,
                                        backend_args={"rollout.n_samples_per_prompt": 1}))
