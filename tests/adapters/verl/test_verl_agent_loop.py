"""crossgym's agent loop inside veRL's agent-loop machinery (AgentLoopWorker.generate_sequences, as the trainer's
rollout workers run it), against a replay LLM server that returns fixed token ids. The LLM server is not under
test; the loop, the masks and the rewards are."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("verl")

from crossgym.adapters.verl.backend import VerlBackend  # noqa: E402
from crossgym.api import load_environment, load_tasks, verify  # noqa: E402
from crossgym.protocol.messages import Message  # noqa: E402
from crossgym.protocol.task import Completion  # noqa: E402


def _call(task: Any) -> str:
    return "<tool_call>\n" + json.dumps(task.metadata["expected_calls"][0]) + "\n</tool_call>"


class ReplayServer:
    """Stands in for veRL's LLMServerClient: per trajectory, the scripted turns for the task its prompt shows."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tok = tokenizer
        self.scripts = scripts
        self.turns: dict[str, int] = {}
        self.sent: dict[str, list[list[int]]] = {}
        self.prompts: dict[str, list[str]] = {}  # the text each turn was generated from, per script

    def ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) + [self.tok.eos_token_id]

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        prompt = self.tok.decode(prompt_ids)
        key = next(k for k in self.scripts if k in prompt)
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        ids = self.ids(self.scripts[key][turn])
        self.sent.setdefault(key, []).append(ids)
        self.prompts.setdefault(key, []).append(self.tok.decode(prompt_ids, skip_special_tokens=False))
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids), stop_reason="completed")


def _replay_verdict(task: Any, turns: list[str], seed: int) -> tuple[Any, Completion]:
    """The Verdict crossgym itself gives the same actions, played through the environment directly (every reply
    kept, the last one's too, as `crossgym eval` keeps it)."""
    env = load_environment(task.env)
    env.reset(task, seed=seed)
    messages = []
    for text in turns:
        action = Message(role="assistant", content=text)
        messages.append(action)
        step = env.step(action)
        messages.extend(step.messages)
        if step.done:
            break
    completion = Completion(messages=tuple(messages))
    return verify(task, completion), completion


def _play(tiny_model_dir: Any, out: Any, verl_compose: Any, tasks: list[Any],
          scripts: dict[str, list[str]]) -> dict[str, Any]:
    """``tasks`` played through veRL's AgentLoopWorker.generate_sequences with the replay server's scripts."""
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from crossgym.config import RunConfig

    run = RunConfig.model_validate({
        "model": str(tiny_model_dir), "tasks": {"source": "tool_choice", "params": {"n": len(tasks)}},
        "output_dir": str(out), "grpo": {"num_generations": 2, "per_device_train_batch_size": 2,
                                         "max_completion_length": 768, "max_prompt_length": 4096}})
    rf = VerlBackend().build(run, tasks=tasks, gpus=1)
    rf.write()
    cfg = verl_compose(rf.args)
    server = ReplayServer(AutoTokenizer.from_pretrained(tiny_model_dir), scripts)
    worker = AgentLoopWorker(cfg, server)
    ds = RLHFDataset(data_files=[cfg.data.train_files], tokenizer=worker.tokenizer, config=cfg.data,
                     processor=None)
    batch = DataProto.from_single_dict(collate_fn([ds[i] for i in range(len(ds))]))
    output = asyncio.new_event_loop().run_until_complete(worker.generate_sequences(batch))
    return {"tasks": tasks, "scripts": scripts, "server": server, "out": output, "tok": worker.tokenizer, "rf": rf}


@pytest.fixture(scope="module")
def rollout(tiny_model_dir, tmp_path_factory, verl_compose):  # type: ignore[no-untyped-def]
    tasks = load_tasks("tool_choice", n=3, seed=0)
    answer0 = f"<answer>{tasks[0].answer}</answer>"
    scripts = {
        # right call, then the right answer
        tasks[0].prompt[-1].content[:30]: [_call(tasks[0]), answer0],
        # an unreadable call (the environment says so, masked), then the right call, then a wrong answer
        tasks[1].prompt[-1].content[:30]: ['<tool_call>{"name": broken</tool_call>', _call(tasks[1]),
                                           "<answer>-1</answer>"],
        # answers at once without a tool
        tasks[2].prompt[-1].content[:30]: [f"<answer>{tasks[2].answer}</answer>"],
    }
    return _play(tiny_model_dir, tmp_path_factory.mktemp("verl-agent"), verl_compose, tasks, scripts)


def test_every_sample_ran_the_crossgym_loop(rollout) -> None:  # type: ignore[no-untyped-def]
    out = rollout["out"]
    assert len(out) == 3 and "rm_scores" in out.batch.keys()
    assert list(out.non_tensor_batch["agent_name"]) == ["crossgym_agent"] * 3
    assert out.meta_info["reward_extra_keys"][:2] == ["score", "acc"]


def test_masks_train_on_model_tokens_only(rollout) -> None:  # type: ignore[no-untyped-def]
    out, tok, server = rollout["out"], rollout["tok"], rollout["server"]
    p_len = out.batch["prompts"].shape[1]
    for i, key in enumerate(rollout["scripts"]):
        mask = out.batch["response_mask"][i].tolist()
        resp = out.batch["responses"][i].tolist()
        valid = int(out.batch["attention_mask"][i][p_len:].sum())
        sent = server.sent[key]
        # the masked-in tokens are exactly the replayed turns, in order; everything else is the environment
        model_tokens = [t for t, m in zip(resp, mask, strict=True) if m == 1]
        assert model_tokens == [t for ids in sent for t in ids]
        assert sum(mask) == sum(len(ids) for ids in sent)
        env_text = tok.decode([t for t, m in zip(resp[:valid], mask[:valid], strict=True) if m == 0])
        if len(sent) > 1:
            assert "<tool_response>" in env_text
        else:
            assert env_text == ""
        assert resp[:len(sent[0])] == sent[0]  # the response starts with the first model turn
        assert all(m == 0 for m in mask[valid:])  # padding
    # the unreadable call got the environment's error back, masked out
    resp1 = out.batch["responses"][1].tolist()
    mask1 = out.batch["response_mask"][1].tolist()
    assert "could not read the tool call" in tok.decode([t for t, m in zip(resp1, mask1, strict=True) if m == 0])


def test_rewards_are_crossgyms_verdicts_at_the_last_token(rollout) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.verl.dataset import episode_seed

    out, tasks = rollout["out"], rollout["tasks"]
    p_len = out.batch["prompts"].shape[1]
    rewards = []
    for i, task in enumerate(tasks):
        turns = list(rollout["scripts"].values())[i]
        verdict, completion = _replay_verdict(task, turns, episode_seed(0, task.id))
        valid = int(out.batch["attention_mask"][i][p_len:].sum())
        row = out.batch["rm_scores"][i].tolist()
        assert row[valid - 1] == verdict.reward
        assert sum(abs(v) for j, v in enumerate(row) if j != valid - 1) == 0
        got = Completion.from_dict(json.loads(out.non_tensor_batch["crossgym_completion"][i]))
        assert got == completion  # the whole episode, as crossgym's environment saw it
        assert out.non_tensor_batch["score"][i] == verdict.reward
        rewards.append(verdict.reward)
    assert rewards == [1.0, 0.0, 1.0]


def test_logprobs_line_up_with_the_mask(rollout) -> None:  # type: ignore[no-untyped-def]
    out = rollout["out"]
    lps = out.batch["rollout_log_probs"]
    mask = out.batch["response_mask"]
    assert bool(((lps == -0.25) == mask.bool()).all())


def test_compat_token_consistency_with_a_generating_model() -> None:
    """The compat suite's token check on episodes veRL's AgentLoopWorker plays with a real (tiny, Qwen2-type)
    model generating: the ids veRL would train on decode to exactly what the environment saw, and only the
    model's actions are masked in."""
    from crossgym.adapters.verl import parity
    from crossgym.compat_tests.drivers import Driver
    from crossgym.compat_tests.tokens import check_token_consistency

    res = check_token_consistency(Driver.from_module(parity, "convention"))
    assert res.status == "pass", (res.detail, res.to_dict())
    assert res.extra["multi_turn_episodes"] >= 1


def test_task_tools_as_verl_basetools(rollout) -> None:  # type: ignore[no-untyped-def]
    """tools.yaml loads through veRL's own tool registry; each CrossgymTool answers a call with the text the
    tool_use environment gives for the same call."""
    from verl.tools.tool_registry import load_all_tools

    from crossgym.adapters.verl.dataset import episode_seed, task_rows
    from crossgym.config import RunConfig

    tools_path = rollout["rf"].root / "tools.yaml"
    tools = {t.name: t for t in load_all_tools(str(tools_path), None)}
    task = rollout["tasks"][0]
    call = task.metadata["expected_calls"][0]
    row = task_rows([task], RunConfig.model_validate({"model": "m", "tasks": {"files": ["-"]}}))[0]

    async def use() -> tuple[str, str]:
        tool = tools[call["name"]]
        iid, _ = await tool.create(create_kwargs=row["extra_info"]["tools_kwargs"][call["name"]]["create_kwargs"])
        resp, reward, _ = await tool.execute(iid, call["arguments"])
        await tool.release(iid)
        other = tools["get_weather"] if call["name"] != "get_weather" else tools["convert_units"]
        iid2, _ = await other.create(create_kwargs={})
        missing, _, _ = await other.execute(iid2, {})
        return resp.text, missing.text

    text, missing = asyncio.new_event_loop().run_until_complete(use())
    env = load_environment("tool_use")
    env.reset(task, seed=episode_seed(0, task.id))
    step = env.step(Message(role="assistant", content=_call(task)))
    assert text == step.messages[0].content
    assert "has no tool" in missing


def test_reward_counts_the_reply_to_the_last_action_as_eval_does(  # type: ignore[no-untyped-def]
        tiny_model_dir, tmp_path, verl_compose, final_reply_plugin) -> None:
    """The reward comes only in the environment's reply to the last action: veRL's reward equals `crossgym eval`'s
    for the same scripted actions, and that reply gets no tokens (the response ends with the last model turn)."""
    from final_reply_env import eval_rewards, final_reply_tasks

    tasks, scripts = final_reply_tasks()
    played = _play(tiny_model_dir, tmp_path, verl_compose, tasks, scripts)
    out, tok = played["out"], played["tok"]
    p_len = out.batch["prompts"].shape[1]
    rewards = []
    for i in range(len(tasks)):
        valid = int(out.batch["attention_mask"][i][p_len:].sum())
        rewards.append(out.batch["rm_scores"][i].tolist()[valid - 1])
        resp, mask = out.batch["responses"][i].tolist()[:valid], out.batch["response_mask"][i].tolist()[:valid]
        text = tok.decode(resp, skip_special_tokens=False)
        assert '"turn": 1' in text and '"turn": 2' not in text and mask[-1] == 1  # the ids hold the first reply only
        got = Completion.from_dict(json.loads(out.non_tensor_batch["crossgym_completion"][i]))
        assert json.loads(got.messages[-1].content)["observation"] == {"turn": 2}  # ...the Verdict saw that reply
    assert rewards == eval_rewards(tasks, scripts) == [1.0, 0.0]


@pytest.fixture
def driver_envs():  # type: ignore[no-untyped-def]
    """tests/support/driver_envs (an environment that raises on the second step) registered for one test."""
    import sys
    from pathlib import Path

    from crossgym.plugins import register_plugin, unregister_plugin

    sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
    import driver_envs as module

    plugin = module.DriverEnvPlugin()
    register_plugin(plugin)
    yield module
    unregister_plugin(plugin)


def test_the_agent_loop_plays_evals_episode(tmp_path, verl_compose, driver_envs) -> None:  # type: ignore[no-untyped-def]
    """The episode driver behind veRL's agent loop: a tool_use episode whose prompt holds a worked tool call is
    generated from eval's prompt text at every turn (arguments rendered as objects), and an environment that
    raises gives eval's exception Verdict, scored on_error (it was the partial completion's reward, 1.0 here).
    The model is Qwen2-type, so veRL picks the token builder it ships for Qwen2.5's template, as for a real Qwen
    (its generic builder drops the newline after <|im_end|> before a tool response)."""
    from transformers import AutoTokenizer

    from crossgym.adapters.verl.episodes import tiny_qwen_model
    from crossgym.rollout.config import RolloutConfig
    from crossgym.rollout.driver import episode_from_json
    from crossgym.rollout.runner import run_rollouts

    tiny_model_dir = tiny_qwen_model()
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    task = driver_envs.few_shot_tool_task()
    scripts = {"What is 2+3?": driver_envs.TOOL_SCRIPT}
    engine = driver_envs.ScriptEngine(tok, scripts)
    (evaluated,) = run_rollouts(engine, [task], RolloutConfig(model="script", engine="script"))
    played = _play(tiny_model_dir, tmp_path / "tools", verl_compose, [task], scripts)
    assert played["server"].prompts["What is 2+3?"] == engine.seen
    assert '"arguments": {"a": 1, "b": 3}' in engine.seen[0]
    assert float(played["out"].non_tensor_batch["score"][0]) == evaluated.verdict.reward == 1.0

    tasks, scripts = driver_envs.raising_tasks()
    evaluated = run_rollouts(driver_envs.ScriptEngine(tok, scripts), tasks,
                             RolloutConfig(model="script", engine="script"))
    played = _play(tiny_model_dir, tmp_path / "raising", verl_compose, tasks, scripts)
    out = played["out"]
    for i, r in enumerate(evaluated):
        completion, error = episode_from_json(out.non_tensor_batch["crossgym_completion"][i])
        assert r.verdict.error == f"exception: {error}" == out.non_tensor_batch["error"][i]
        assert completion.messages == r.completion.messages
        assert float(out.non_tensor_batch["score"][i]) == r.verdict.reward == 0.0
