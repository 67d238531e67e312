"""OpenRLHFBackend: plan writes nothing, train writes the files and stops before the launch where it cannot run,
the generated files work, and the default tier never imports OpenRLHF."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crossgym.adapters.openrlhf.backend import OpenRLHFBackend
from crossgym.adapters.openrlhf.convert import task_from_label
from crossgym.api import get_backend, load_tasks
from crossgym.config import RunConfig
from crossgym.protocol.errors import BackendUnavailable


def make_run(tmp_path: Path, **kw) -> RunConfig:
    data = {"model": str(tmp_path / "model"), "tasks": {"source": "arithmetic", "params": {"n": 5, "seed": 1}},
            "backend": "openrlhf", "output_dir": str(tmp_path / "out"),
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 3},
            "backend_args": {"actor.num_gpus_per_node": 1}}
    data.update(kw)
    return RunConfig.model_validate(data)


def test_registry_points_at_the_real_backend():
    b = get_backend("openrlhf")
    assert isinstance(b, OpenRLHFBackend)
    assert b.capabilities.multi_turn and b.capabilities.variants == ("grpo", "dapo", "dr_grpo", "gspo", "rloo",
                                                                      "reinforce_pp_baseline")


def test_check_names_what_is_missing():
    b = OpenRLHFBackend()
    missing = b.missing()
    if importlib.util.find_spec("openrlhf") is None:
        with pytest.raises(BackendUnavailable) as e:
            b.check()
        text = str(e.value)
        assert "\n" not in text and "openrlhf" in text
        for m in missing:
            assert m in text
    else:
        b.check()  # plan and train (which writes the files) work wherever OpenRLHF is installed
    if importlib.util.find_spec("vllm") is None:
        assert any(m.startswith("vllm") for m in missing)


def test_plan_single_turn_writes_nothing(tmp_path):
    run = make_run(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    plan = OpenRLHFBackend().plan(run)
    assert sorted(tmp_path.rglob("*")) == before  # no side effects
    assert plan.argv[:3] == ("python", "-m", "openrlhf.cli.train_ppo_ray")
    argv = list(plan.argv)
    assert argv[argv.index("--algo.advantage.estimator") + 1] == "group_norm"
    assert argv[argv.index("--reward.remote_url") + 1] == str(tmp_path / "out" / "openrlhf" / "reward.py")
    work = tmp_path / "out" / "openrlhf"
    assert set(plan.files) == {str(work / "prompts.jsonl"), str(work / "reward.py"), str(work / "launch.sh")}
    assert plan.files[str(work / "prompts.jsonl")].startswith("# 6 rows; the first 2:\n")  # described, not inlined
    _, full = OpenRLHFBackend().prepare(run)
    assert {k: v for k, v in full.items() if not k.endswith(".jsonl")} == \
        {k: v for k, v in plan.files.items() if not k.endswith(".jsonl")}
    rows = [json.loads(line) for line in full[str(work / "prompts.jsonl")].splitlines()]
    # 3 steps x 2 prompts (8 completions / 4 samples): 6 rows cycled from the 5 tasks
    assert len(rows) == 6 == plan.native_config["layout"]["rows"]
    tasks = {t.id: t for t in load_tasks("arithmetic", n=5, seed=1)}
    for row in rows:
        task = task_from_label(row["label"])
        assert task == tasks[task.id]  # the label is the whole Task, verifier spec and answer included
        assert row["prompt"] == [{"role": m.role, "content": m.content} for m in task.prompt]
    assert {task_from_label(r["label"]).id for r in rows[:5]} == set(tasks)  # a full pass before repeats


def test_plan_multi_turn_uses_the_agent_file(tmp_path):
    run = make_run(tmp_path, tasks={"source": "tool_choice", "params": {"n": 3, "mode": "env"}},
                   environment={"max_turns": 3})
    plan = OpenRLHFBackend().plan(run)
    argv = list(plan.argv)
    assert "--reward.remote_url" not in argv
    assert argv[argv.index("--train.agent_func_path") + 1].endswith("openrlhf/agent.py")
    assert "AgentExecutor = agent_executor_class(CONFIG)" in plan.files[str(tmp_path / "out/openrlhf/agent.py")]
    assert plan.native_config["reward_config"]["max_turns"] == 3


def test_train_writes_the_files_then_stops_in_one_line_without_gpus(tmp_path):
    b = OpenRLHFBackend()
    if not b.missing():
        pytest.skip("this machine could launch OpenRLHF for real")
    run = make_run(tmp_path)
    with pytest.raises(BackendUnavailable) as e:
        b.train(run)
    text = str(e.value)
    work = tmp_path / "out" / "openrlhf"
    assert "\n" not in text and str(work) in text and "launch.sh" in text
    assert (work / "reward.py").is_file() and (work / "prompts.jsonl").is_file()
    assert os.access(work / "launch.sh", os.X_OK)
    assert "openrlhf.cli.train_ppo_ray" in (work / "launch.sh").read_text()


def test_generated_reward_file_scores_like_crossgym(tmp_path, tokenizer_dir):
    pytest.importorskip("torch")
    from crossgym.api import verify

    run = make_run(tmp_path, model=str(tokenizer_dir), on_error=-1.0)
    plan = OpenRLHFBackend().plan(run)
    path = tmp_path / "reward.py"
    path.write_text(plan.files[str(tmp_path / "out/openrlhf/reward.py")])
    spec = importlib.util.spec_from_file_location("reward_func", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.CONFIG["strip_tokens"] and mod.CONFIG["rule"]["on_error"] == -1.0
    task = load_tasks("arithmetic", n=1, seed=1)[0]
    prompt = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
    for text in (str(task.answer), "no idea", ""):
        out = mod.reward_func([prompt + text + "<|im_end|>"], [prompt], [task.to_json()])
        assert out["rewards"].tolist() == [verify(task, text).reward]


def test_reward_function_applies_one_verifier_to_every_row():
    pytest.importorskip("torch")
    from crossgym.protocol import ConfigError, Task, VerifierSpec

    task = Task(id="t", prompt=[{"role": "user", "content": "q"}], answer=None, verifier=VerifierSpec("no_such"))
    rf = OpenRLHFBackend().reward_function(VerifierSpec("length", {"max": 3}), on_error=-1.0)
    out = rf(["p" + "one two three four", "pshort"], ["p", "p"], [task.to_json()] * 2)
    assert out["rewards"].tolist() == [0.0, 1.0]  # the task's own (unbuildable) verifier is not consulted
    with pytest.raises(ConfigError):
        OpenRLHFBackend().reward_function(VerifierSpec("length", {"max": 3}), on_error="none")


#: stands in for `python -m openrlhf.cli.train_ppo_ray <flags>`: a step line every 50 ms, as OpenRLHF logs them
FAKE_OPENRLHF = ("import sys, time\n"
                 "for step in range(1, 2400):\n"
                 "    print(f\"Global step {step} {{'rollout/reward_mean': 0.5}}\", flush=True)\n"
                 "    time.sleep(0.05)\n")


def test_train_honours_stop_by_ending_the_launched_process(tmp_path, monkeypatch):
    """The CLI's first Ctrl-C sets stop: OpenRLHF's launched process group is told to end (SIGINT), and train
    returns an interrupted result instead of running on. The command is a stand-in; the launch code is the kit's."""
    import threading
    import time

    from crossgym.adapters.openrlhf import config_map

    monkeypatch.setattr(OpenRLHFBackend, "missing", lambda self: [])  # this machine "has" GPUs and OpenRLHF
    monkeypatch.setattr(config_map, "ENTRY", ("python", "-c", FAKE_OPENRLHF))
    stop = threading.Event()
    seen = []

    def progress(step, max_steps, logs):
        seen.append((step, logs.get("reward")))
        if step >= 2:
            stop.set()

    t0 = time.monotonic()
    result = OpenRLHFBackend().train(make_run(tmp_path), progress=progress, stop=stop)
    assert time.monotonic() - t0 < 60
    assert result.metrics["interrupted"] is True and result.metrics["stop_signals"][0] == "SIGINT"
    assert result.steps >= 2 and seen[:2] == [(1, 0.5), (2, 0.5)]
    log = (tmp_path / "out" / "openrlhf" / "train.log").read_text()
    assert "Global step 2 " in log and "Global step 2000" not in log


def test_the_default_tier_never_imports_openrlhf_or_torch():
    code = ("import sys, io, contextlib\n"
            "from crossgym.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['list', '--json'])\n    except SystemExit:\n        pass\n"
            "from crossgym.api import get_backend\n"
            "b = get_backend('openrlhf')\n"
            "print(sorted(m for m in ('openrlhf', 'torch', 'vllm', 'ray', 'deepspeed', 'transformers') "
            "if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
