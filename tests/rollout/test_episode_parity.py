"""One episode through every shim that runs in this venv: eval's runner, TRL's rollout_func and OpenRLHF's agent
episode play the same scripted actions through crossgym.rollout.driver and must agree on what the policy sees (the
prompt text of every turn, tool calls in the prompt included), on the Verdict of an environment that raises, on
the group seed, the turn limit and the stop tokens. (veRL's agent loop: tests/adapters/verl, in its own venv.)

Only generation is scripted; rendering, tokenization, the environment, the driver and the reward paths are real.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
sys.path.insert(0, str(Path(__file__).parents[1] / "support"))

from driver_envs import (  # noqa: E402
    RAISING,
    TOOL_SCRIPT,
    DriverEnvPlugin,
    RaisingEnv,
    ScriptEngine,
    few_shot_tool_task,
    openrlhf_play,
    raising_tasks,
    trl_scripted,
)

from crossgym.adapters.openrlhf.agent import AgentConfig  # noqa: E402
from crossgym.adapters.openrlhf.agent import Episode as OpenRLHFEpisode  # noqa: E402
from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_COLUMN, task_rows  # noqa: E402
from crossgym.config import parse_run_config  # noqa: E402
from crossgym.inference.chat import ChatFormat  # noqa: E402
from crossgym.plugins import register_plugin, unregister_plugin  # noqa: E402
from crossgym.protocol import SamplingParams  # noqa: E402
from crossgym.rollout.config import RolloutConfig  # noqa: E402
from crossgym.rollout.driver import MAX_TURNS, episode_from_json, episode_seed  # noqa: E402
from crossgym.rollout.runner import run_rollouts  # noqa: E402

RAISED = f"exception: environment {RAISING!r} step 2 failed: RuntimeError: tool server went away"


@pytest.fixture
def driver_envs():  # type: ignore[no-untyped-def]
    plugin = DriverEnvPlugin()
    register_plugin(plugin)
    RaisingEnv.seeds.clear()
    yield plugin
    unregister_plugin(plugin)


@pytest.fixture(scope="module")
def tok(tiny_model_dir):  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _trl(tiny_model_dir, out, tasks, scripts, seen, *, seed=0):  # type: ignore[no-untyped-def]
    """TRL's rollout_func (the backend's own, on a real GRPOTrainer) over ``tasks``, generation scripted."""
    from crossgym.adapters.trl.backend import TRLBackend

    run = parse_run_config({"model": str(tiny_model_dir), "tasks": {"source": "json_addition"},
                            "output_dir": str(out), "seed": seed,
                            "grpo": {"num_generations": 2, "per_device_train_batch_size": 2,
                                     "max_completion_length": 400, "max_steps": 1}})
    backend = TRLBackend()
    trainer = backend.build_trainer(run, tasks=tasks)
    rollout = backend.rollout_func
    rollout._generate = trl_scripted(rollout, scripts, seen)
    rows = task_rows(tasks, episodes=True)
    out = rollout([r["prompt"] for r in rows], trainer)
    rewards = backend.reward_funcs[0](prompts=None, completions=None,
                                      **{TASK_COLUMN: [r[TASK_COLUMN] for r in rows],
                                         COMPLETION_COLUMN: out[COMPLETION_COLUMN]})
    return backend, trainer, out, rewards


def test_an_environment_that_raises_gives_the_same_verdict_everywhere(tiny_model_dir, tmp_path, tok, driver_envs):
    """The environment raises on the second action, whose text is the answer: scoring the partial completion
    (what training did) would give 1.0; the policy is an exception Verdict, scored on_error, on every path."""
    tasks, scripts = raising_tasks()
    rollouts = run_rollouts(ScriptEngine(tok, scripts), tasks, RolloutConfig(model="script", engine="script"))
    assert [r.verdict.error for r in rollouts] == [RAISED, RAISED]
    assert [r.verdict.reward for r in rollouts] == [0.0, 0.0] and [r.turns for r in rollouts] == [2, 2]

    _, _, out, rewards = _trl(tiny_model_dir, tmp_path, tasks, scripts, [])
    assert rewards == [0.0, 0.0]
    for i, r in enumerate(rollouts):
        completion, error = episode_from_json(out[COMPLETION_COLUMN][i])
        assert f"exception: {error}" == RAISED
        assert completion.messages == r.completion.messages  # one completion assembly

    for task, r in zip(tasks, rollouts, strict=True):
        ep = OpenRLHFEpisode(AgentConfig(), tok, 4096)
        _, step = openrlhf_play(ep, task, scripts[task.prompt[0].content[:7]], tok)
        assert step.done and step.reward == 0.0 and step.score == 0.0
        assert ep.result.verdict.error == RAISED
        assert ep.completion().messages == r.completion.messages


def test_every_shim_renders_evals_prompt_text_for_a_tool_use_episode(tiny_model_dir, tmp_path, tok):
    """A tool_use episode whose prompt holds a worked tool call: each turn is generated from (and trained on) the
    text eval generates from. Tool-call arguments render as objects (a JSON string would be encoded twice)."""
    task = few_shot_tool_task()
    scripts = {"What is 2+3?": TOOL_SCRIPT}
    engine = ScriptEngine(tok, scripts)
    (rollout,) = run_rollouts(engine, [task], RolloutConfig(model="script", engine="script"))
    assert rollout.verdict.reward == 1.0 and rollout.turns == 2
    assert len(engine.seen) == 2
    assert '{"name": "add", "arguments": {"a": 1, "b": 3}}' in engine.seen[0]
    assert "<tool_response>\n5\n</tool_response>" in engine.seen[1]

    trl_seen: list[str] = []
    _, _, out, rewards = _trl(tiny_model_dir, tmp_path, [task, task], scripts, trl_seen)
    assert rewards == [1.0, 1.0]
    assert trl_seen == [engine.seen[0], engine.seen[0], engine.seen[1], engine.seen[1]]

    ep = OpenRLHFEpisode(AgentConfig(), tok, 4096)
    seen, step = openrlhf_play(ep, task, TOOL_SCRIPT, tok)
    assert seen == engine.seen
    assert step.done and step.reward == 1.0


def test_seed_turn_limit_and_stop_tokens_are_the_drivers(tiny_model_dir, tmp_path, tok, driver_envs):
    """Every sample of a task resets with the same seed on every path (eval used seed + sample index); the turn
    cap and the stop tokens are the same too (training capped at 16 turns, veRL/OpenRLHF stopped on the pad)."""
    from transformers import GenerationConfig

    tasks, scripts = raising_tasks()
    want = {t.id: episode_seed(7, t.id) for t in tasks}
    run_rollouts(ScriptEngine(tok, scripts), tasks,
                 RolloutConfig(model="script", engine="script", sampling=SamplingParams(seed=7), n=2))
    assert RaisingEnv.seeds == [(t.id, want[t.id]) for t in tasks for _ in range(2)]
    RaisingEnv.seeds.clear()
    backend, _, _, _ = _trl(tiny_model_dir, tmp_path, [*tasks, *tasks], scripts, [], seed=7)
    assert RaisingEnv.seeds == [(t.id, want[t.id]) for t in [*tasks, *tasks]]
    RaisingEnv.seeds.clear()
    ep = OpenRLHFEpisode(AgentConfig(seed=7), tok, 4096)
    openrlhf_play(ep, tasks[0], scripts["task 0:"], tok)
    assert RaisingEnv.seeds == [(tasks[0].id, want[tasks[0].id])]

    rollout = backend.rollout_func
    started, _ = rollout._start(task_rows(tasks, episodes=True)[0]["prompt"], tok, 400)
    assert RolloutConfig(model="m", engine="e").max_turns == MAX_TURNS == ep.episode.max_turns == started.max_turns
    gen_eos = GenerationConfig.from_pretrained(tiny_model_dir).eos_token_id
    eval_stops = ChatFormat(tok, extra_eos=[gen_eos]).eos_ids
    assert rollout._stops == eval_stops == ep.stops
    assert tok.pad_token_id not in eval_stops
