"""SkyRLBackend without SkyRL: the overrides map, plan writes nothing, the dataset rows, the environment's step
contract scores through the scoring core and the episode driver, train stops in one line where it cannot launch and
honours stop where it can; `crossgym list` shows it. SkyRL's own code is exercised in test_skyrl_native.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crossgym.adapters.skyrl import config_map, files
from crossgym.adapters.skyrl.backend import SkyRLBackend
from crossgym.adapters.skyrl.env import EnvConfig, Session
from crossgym.api import get_backend, load_tasks, verify
from crossgym.config import RunConfig
from crossgym.protocol import Completion, ConfigError, Message, Task, VerifierSpec
from crossgym.protocol.errors import BackendUnavailable
from crossgym.scoring import RewardRule

ROOT = Path(__file__).resolve().parents[3]


def make_run(tmp_path: Path, **kw) -> RunConfig:
    data = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "tasks": {"source": "arithmetic", "params": {"n": 5, "seed": 1}},
            "backend": "skyrl", "output_dir": str(tmp_path / "out"),
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 3},
            "backend_args": {"trainer.placement.policy_num_gpus_per_node": 1}}
    data.update(kw)
    return RunConfig.model_validate(data)


def test_registry_points_at_the_real_backend():
    b = get_backend("skyrl")
    assert isinstance(b, SkyRLBackend) and b.capabilities.multi_turn and b.capabilities.stop == "process"
    assert b.capabilities.variants == tuple(config_map.VARIANTS)
    assert b.compat_driver == "crossgym.adapters.skyrl.parity"


def test_the_docs_page_shows_the_current_mapping_table():
    page = (ROOT / "docs" / "backends" / "skyrl.md").read_text(encoding="utf-8")
    assert config_map.markdown_table() in page


def test_plan_writes_nothing_and_maps_the_run(tmp_path):
    run = make_run(tmp_path, seed=7)
    plan = SkyRLBackend().plan(run)
    assert not (tmp_path / "out").exists()
    o = plan.native_config["overrides"]
    work = tmp_path / "out" / "skyrl"
    assert plan.argv[:2] == ("python", str(work / "main_crossgym.py"))
    assert o["data.train_data"] == [str(work / "prompts.jsonl")] and o["environment.env_class"] == "crossgym"
    assert o["trainer.train_batch_size"] == 2 and o["generator.n_samples_per_prompt"] == 4  # 8 completions / 4
    assert o["trainer.max_training_steps"] == 3 and o["trainer.seed"] == 7 and o["generator.max_turns"] == 1
    assert o["trainer.algorithm.use_kl_loss"] is False and o["trainer.logger"] == "console"
    rows = [json.loads(line) for line in
            SkyRLBackend().prepare(run)[1][str(work / "prompts.jsonl")].splitlines()]
    assert len(rows) == 6 and {r["env_class"] for r in rows} == {"crossgym"}  # 3 steps x 2 prompts
    tasks = {t.id: t for t in load_tasks("arithmetic", n=5, seed=1)}
    assert {Task.from_json(r["task"]).id for r in rows[:5]} == set(tasks)  # a full pass before repeats
    first = tasks[Task.from_json(rows[0]["task"]).id]
    assert rows[0]["prompt"] == [{"role": m.role, "content": m.content} for m in first.prompt]
    assert "CONFIG = json.loads(" in plan.files[str(work / "main_crossgym.py")]
    assert "run_main(CONFIG, sys.argv[1:])" in plan.files[str(work / "main_crossgym.py")]


@pytest.mark.parametrize(("variant", "want"), [
    ("grpo", {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.loss_reduction": "sequence_mean"}),
    ("dapo", {"trainer.algorithm.loss_reduction": "token_mean", "trainer.algorithm.eps_clip_high": 0.28}),
    ("dr_grpo", {"trainer.algorithm.grpo_norm_by_std": False, "trainer.algorithm.max_seq_len": 256,
                 "trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm"}),
    ("gspo", {"trainer.algorithm.policy_loss_type": "gspo", "trainer.algorithm.eps_clip_low": 3e-4,
              "trainer.algorithm.eps_clip_high": 4e-4}),
    ("rloo", {"trainer.algorithm.advantage_estimator": "rloo"}),
    ("cispo", {"trainer.algorithm.policy_loss_type": "cispo"}),
    ("sapo", {"trainer.algorithm.policy_loss_type": "sapo"}),
])
def test_variants_map_to_skyrl_knobs(tmp_path, variant, want):
    o = SkyRLBackend().plan(make_run(tmp_path, grpo={"variant": variant})).native_config["overrides"]
    assert {k: o[k] for k in want} == want


@pytest.mark.parametrize(("change", "where"), [
    ({"on_error": "none"}, "on_error"),
    ({"engine": "sglang"}, "engine"),
    ({"grpo": {"variant": "reinforce_pp_baseline"}}, "grpo.variant"),
    ({"grpo": {"loss_type": "seq-mean-token-mean"}}, "grpo.loss_type"),
    ({"backend_args": {"--trainer.seed": 3}}, "backend_args.--trainer.seed"),
])
def test_what_skyrl_cannot_run_is_one_config_error(tmp_path, change, where):
    with pytest.raises(ConfigError) as e:
        SkyRLBackend().plan(make_run(tmp_path, **change))
    assert e.value.where == where and "\n" not in str(e.value)


def test_backend_args_replace_or_drop_crossgym_values(tmp_path):
    run = make_run(tmp_path, backend_args={"trainer.seed": 99, "trainer.hf_save_interval": None,
                                           "trainer.policy.fsdp_config.cpu_offload": True})
    o = SkyRLBackend().plan(run).native_config["overrides"]
    assert o["trainer.seed"] == 99 and "trainer.hf_save_interval" not in o
    assert "trainer.policy.fsdp_config.cpu_offload=true" in SkyRLBackend().plan(run).argv


def test_multi_turn_plan_gives_the_generator_turns_and_budget(tmp_path):
    run = make_run(tmp_path, environment={"name": "tool_use", "max_turns": 3},
                   grpo={"max_prompt_length": 100, "max_completion_length": 50})
    plan = SkyRLBackend().plan(run)
    o = plan.native_config["overrides"]
    assert plan.native_config["multi_turn"] and o["generator.max_turns"] == 3
    assert o["generator.max_input_length"] == 150 and o["trainer.max_prompt_length"] == 100
    assert plan.native_config["env_config"]["env"] == "tool_use" and plan.native_config["env_config"]["max_turns"] == 3


def test_single_turn_session_is_the_scoring_core():
    rule = RewardRule(on_error=-1.0)
    for task in load_tasks("arithmetic", n=3, seed=2):
        for text in (str(task.answer), "no idea", ""):
            s = Session(EnvConfig(rule=rule), {"task": task.to_json()})
            prompt = [{"role": "user", "content": "q"}]
            assert s.init(prompt) == (prompt, {})
            out = s.step(text)
            assert out["done"] and out["observations"] == []
            assert out["reward"] == rule.score(task, Completion.from_text(text)).reward == verify(task, text).reward


def test_a_bad_row_scores_on_error_and_the_run_goes_on():
    s = Session(EnvConfig(rule=RewardRule(on_error=-2.0)), {"task": "{not json"})
    assert s.init([{"role": "user", "content": "q"}])[0] == [{"role": "user", "content": "q"}]
    out = s.step("anything")
    assert out == {"observations": [], "reward": -2.0, "done": True, "metadata": {"crossgym": s.metrics()}}
    assert s.result is not None and s.result.verdict.error


def test_multi_turn_session_plays_the_episode_driver():
    """A scripted episode (the compat suite's environment): init returns the environment's first observation, each
    step its reply as chat messages, the last step the rule's score of the whole episode (Episode.score, the call
    every backend's episode path makes); earlier steps give 0.0."""
    from crossgym.compat_tests.fakes import registered
    from crossgym.compat_tests.tokens import scripted_tasks

    task = scripted_tasks(1)[0]
    rule = RewardRule()
    with registered():
        s = Session(EnvConfig(rule=rule, max_turns=3), {"task": task.to_json()})
        history, _ = s.init([{"role": "user", "content": "ignored"}])
        assert "[episode " in history[-1]["content"]  # the environment's observation, not the row's prompt
        outs = [s.step(text) for text in ("one", "two", "x")]
    assert [o["done"] for o in outs] == [False, False, True] and [o["reward"] for o in outs[:2]] == [0.0, 0.0]
    assert outs[0]["observations"] and outs[0]["observations"][0]["role"] == "user"
    ep = s.episode
    assert ep is not None and ep.stop in ("done", "max_turns") and ep.turns == 3
    assert outs[2]["reward"] == rule.score(task, ep.completion()).reward == 1.0  # exact_match on the last turn "x"


def test_reward_function_applies_one_verifier_to_every_row():
    task = Task(id="t", prompt=[Message("user", "q")], answer=None, verifier=VerifierSpec("no_such"))
    make = SkyRLBackend().reward_function(VerifierSpec("length", {"max": 3}), on_error=-1.0)
    assert [make({"task": task.to_json()}).step(t)["reward"] for t in ("one two three four", "short")] == [0.0, 1.0]
    with pytest.raises(ConfigError):
        SkyRLBackend().reward_function(VerifierSpec("length", {"max": 3}), on_error="none")


def test_train_writes_the_files_then_stops_in_one_line_without_gpus(tmp_path):
    b = SkyRLBackend()
    if not b.missing():
        pytest.skip("this machine could launch SkyRL for real")
    with pytest.raises(BackendUnavailable) as e:
        b.train(make_run(tmp_path))
    text = str(e.value)
    work = tmp_path / "out" / "skyrl"
    assert "\n" not in text and str(work) in text and "launch.sh" in text
    assert (work / "main_crossgym.py").is_file() and (work / "prompts.jsonl").is_file()
    assert os.access(work / "launch.sh", os.X_OK) and "main_crossgym.py" in (work / "launch.sh").read_text()


#: stands in for the generated entry (SkyRL's main): its console logger's step lines every 50 ms
FAKE_SKYRL = ("import sys, time\n"
              "for step in range(1, 2400):\n"
              "    print(f'2026-12-01 | INFO | trainer - reward/avg_pass_at_4: 1.0, reward/avg_raw_reward: 0.5', "
              "flush=True)\n"
              "    print(f'2026-12-01 | INFO | tracking:log - Step {step}: ', flush=True)\n"
              "    time.sleep(0.05)\n")


def test_train_honours_stop_by_ending_the_launched_process(tmp_path, monkeypatch):
    """The CLI's first Ctrl-C sets stop: the launched process group is told to end (SIGINT) and train returns an
    interrupted result. The entry file is a stand-in; the launch code is the kit's."""
    import threading
    import time

    monkeypatch.setattr(SkyRLBackend, "missing", lambda self: [])  # this machine "has" GPUs and SkyRL
    monkeypatch.setattr(files, "entry_file", lambda config: FAKE_SKYRL)
    stop = threading.Event()
    seen = []

    def progress(step, max_steps, logs):
        seen.append((step, logs.get("reward")))
        if step >= 2:
            stop.set()

    t0 = time.monotonic()
    result = SkyRLBackend().train(make_run(tmp_path), progress=progress, stop=stop)
    assert time.monotonic() - t0 < 60
    assert result.metrics["interrupted"] is True and result.metrics["stop_signals"][0] == "SIGINT"
    assert result.steps >= 2 and seen[:2] == [(1, 0.5), (2, 0.5)]
    log = (tmp_path / "out" / "skyrl" / "train.log").read_text()
    assert "Step 2: " in log and "Step 2000: " not in log


def test_crossgym_list_shows_skyrl_with_its_install_command():
    from typer.testing import CliRunner

    from crossgym.cli import app

    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    entry = next(r for r in json.loads(result.output)["backends"] if r["name"] == "skyrl")
    assert entry["install"].startswith("pip install 'skyrl[fsdp]==0.3.0' skyrl-gym==0.4.0")
    assert entry["capabilities"]["variants"] == list(config_map.VARIANTS)


def test_one_shared_tool_list_is_rendered_by_the_chat_template(tmp_path):
    """SkyRL renders one tool list per run (generator.chat_template_kwargs): set from the tasks' tools when they all
    share one, and a note (not a silent drop) when they differ."""
    def plan(n):
        run = make_run(tmp_path, tasks={"source": "tool_choice", "params": {"n": n, "seed": 5, "mode": "env"}},
                       environment={"name": "tool_use", "max_turns": 4})
        return SkyRLBackend().plan(run)

    one = plan(1)
    tools = one.native_config["overrides"]["generator.chat_template_kwargs"]["tools"]
    assert tools and all(t["type"] == "function" for t in tools)
    assert any("chat_template_kwargs.tools" in n for n in one.notes)
    many = plan(4)
    assert "generator.chat_template_kwargs" not in many.native_config["overrides"]
    assert any("different tool lists" in n for n in many.notes)
