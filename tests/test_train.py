"""`crossgym plan` and `crossgym train`: side-by-side plans, one-line errors, the gate, outputs, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from crossgym.cli import main
from crossgym.protocol import Message, Task, VerifierSpec


def _cli(argv, capsys):
    """Run the CLI in process: (exit code, stdout, stderr)."""
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def short_tasks(n: int = 8) -> list[Task]:
    """Answer-free tasks scored by the library's `length` verifier: rewards spread even on a random model."""
    spec = VerifierSpec("length", {"max": 6, "unit": "chars", "mode": "linear", "slack": 1.0})
    return [Task(id=f"short-{i}", prompt=[Message("user", f"Say hi to {i}.")], answer=None, verifier=spec)
            for i in range(n)]


def write_config(tmp_path: Path, model: str, **over) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in short_tasks()), encoding="utf-8")
    data = {"model": model, "tasks": {"files": [str(tasks)]}, "output_dir": str(tmp_path / "out"), "seed": 0,
            "grpo": {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 8,
                     "max_steps": 2, "learning_rate": 1e-3}}
    data.update(over)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_plan_json_has_every_backend_side_by_side(tmp_path, capsys):
    cfg = write_config(tmp_path, "some/model")
    code, out, _ = _cli(["plan", str(cfg), "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    by_name = {p["backend"]: p for p in doc["plans"]}
    assert set(by_name) >= {"trl", "unsloth", "verl", "openrlhf"}
    trl = by_name["trl"]
    assert trl["available"] and trl["native_config"]["GRPOConfig"]["num_generations"] == 2
    assert trl["native_config"]["GRPOTrainer"]["reward_funcs"] == ["length"]
    for p in by_name.values():
        assert p["available"] or p["reason"]  # each unavailable backend says why, honestly
    compile(trl["files"]["train_trl.py"], "train_trl.py", "exec")


def test_plan_human_output(tmp_path, capsys):
    cfg = write_config(tmp_path, "some/model", grpo={"variant": "gspo", "num_generations": 2,
                                                      "per_device_train_batch_size": 4})
    code, out, _ = _cli(["plan", str(cfg), "--backend", "trl"], capsys)
    assert code == 0
    assert "GRPOConfig" in out and "importance_sampling_level: sequence" in out and "train_trl.py" in out
    assert "from trl import GRPOConfig, GRPOTrainer" in out


def test_plain_script_is_the_same_training(tmp_path, capsys):
    """The generated script's GRPOConfig is exactly what the backend builds."""
    from crossgym.adapters.trl import config_map
    from crossgym.config import load_run_config

    cfg = write_config(tmp_path, "some/model", on_error="none")
    code, out, _ = _cli(["plan", str(cfg), "--backend", "trl", "--json"], capsys)
    plan = json.loads(out)["plans"][0]
    expected = config_map.grpo_kwargs(load_run_config(cfg)) | {"reward_weights": [1.0]}
    assert plan["native_config"]["GRPOConfig"] == json.loads(json.dumps(expected))
    script = plan["files"]["train_trl.py"]
    # the script's reward functions are the scoring core's, under the run's own rule (nothing re-written)
    import ast

    from crossgym.scoring import RewardRule

    rule = next(node.value.args[0] for node in ast.walk(ast.parse(script)) if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", None) == "RULE")
    assert ast.literal_eval(rule) == RewardRule.from_run(load_run_config(cfg)).to_dict()
    assert "reward_funcs, reward_weights = reward_functions(RULE, tasks)" in script


@pytest.mark.parametrize(("argv_tail", "expect"), [
    (["--backend", "trll"], "did you mean 'trl'"),
    (["--backend", "unsloth"], "unsloth"),
])
def test_train_unusable_backend_is_one_line(tmp_path, capsys, argv_tail, expect):
    cfg = write_config(tmp_path, "some/model")
    code, out, err = _cli(["train", str(cfg), *argv_tail], capsys)
    if "unsloth" in argv_tail and code == 0:  # an Unsloth build present in this venv would train: not our case
        pytest.skip("unsloth is installed here")
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model: m\ntasks: {source: json_addition}\ngrpo: {learning_rat: 0.1}\n", encoding="utf-8")
    for cmd in ("train", "plan"):
        code, out, err = _cli([cmd, str(cfg)], capsys)
        assert code == 2, cmd
        assert "grpo.learning_rat" in err and "did you mean 'learning_rate'" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_backend_args_is_one_line(tmp_path, capsys):
    cfg = write_config(tmp_path, "some/model", backend_args={"num_generation": 4})
    code, _, err = _cli(["train", str(cfg), "--dry-run"], capsys)
    assert code == 2 and "backend_args.num_generation" in err and "num_generations" in err


def test_dry_run_trains_nothing(tmp_path, capsys):
    cfg = write_config(tmp_path, "some/model")
    code, out, _ = _cli(["train", str(cfg), "--dry-run"], capsys)
    assert code == 0 and "dry run: 8 tasks" in out and "nothing was trained" in out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("over", "flags", "words"), [
    ({"environment": {"name": "singl_turn"}}, [], ["environment.name", "did you mean 'single_turn'"]),
    ({}, ["--resume"], ["nothing to resume"]),
    ({"difficulty": {"rollouts": "nope.jsonl"}}, [], ["difficulty.rollouts", "nope.jsonl does not exist"]),
])
def test_a_dry_run_refuses_what_the_run_would(tmp_path, capsys, over, flags, words):
    """train --dry-run said success for a misspelt environment, --resume with no checkpoint and a missing
    difficulty.rollouts file, each of which the real start then refused."""
    cfg = write_config(tmp_path, "some/model", **over)
    code, out, err = _cli(["train", str(cfg), "--dry-run", *flags], capsys)
    assert code == 2 and err.count("\n") == 1 and all(w in err for w in words), err


def test_gate_refuses_rewards_without_spread(tiny_model_dir, tmp_path, capsys):
    # json_answer on a random tiny model: every reward is 0, so GRPO would have nothing to learn
    cfg = write_config(tmp_path, str(tiny_model_dir), tasks={"source": "json_addition", "params": {"n": 4}})
    code, _, err = _cli(["train", str(cfg)], capsys)
    assert code == 2 and "every sampled reward is 0" in err and "--skip-gate" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "final").exists()


def test_train_end_to_end(tiny_model_dir, tmp_path, capsys):
    cfg = write_config(tmp_path, str(tiny_model_dir))
    code, out, err = _cli(["train", str(cfg), "--backend", "trl"], capsys)
    assert code == 0, err
    assert "gate passed" in err and "trained 2 steps" in out
    assert re.search(r"mean reward -?\d\.\d{3} \(step 1\) -> -?\d\.\d{3} \(step 2\)", out) and "10 steps" not in out
    final = tmp_path / "out" / "final"
    assert (final / "model.safetensors").is_file() and (final / "tokenizer_config.json").is_file()
    assert (tmp_path / "out" / "reward_curve.png").is_file()
    rows = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1, 2] and "rewards/length/mean" in rows[0]
    assert f"checkpoint:   {final}" in out


@pytest.mark.slow
@pytest.mark.skipif("'slow' not in config.getoption('markexpr')", reason="slow: run with -m slow")
def test_ctrl_c_in_the_cli_saves_a_checkpoint(tiny_model_dir, tmp_path):
    """A real SIGINT to a `crossgym train` child process: it finishes the step, saves, and exits 130."""
    cfg = write_config(tmp_path, str(tiny_model_dir), grpo={"num_generations": 2, "per_device_train_batch_size": 4,
                                                            "max_completion_length": 8, "max_steps": 500})
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "crossgym.cli", "train", str(cfg), "--skip-gate"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    metrics = tmp_path / "out" / "metrics.jsonl"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and not (metrics.is_file() and metrics.read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "stopped at step" in out
    info = json.loads((tmp_path / "out" / "final" / "crossgym_run.json").read_text())
    assert info["interrupted"] is True and 1 <= info["steps"] < 500

    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "final")


def test_a_config_one_backend_cannot_run_is_one_line_or_one_column(tmp_path, capsys):
    cfg = write_config(tmp_path, "some/model", grpo={"loss_type": "dapoo"})
    code, _, err = _cli(["plan", str(cfg), "--backend", "trl"], capsys)
    assert code == 2 and "did you mean 'dapo'" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _cli(["plan", str(cfg), "--json"], capsys)
    trl = next(p for p in json.loads(out)["plans"] if p["backend"] == "trl")
    assert code == 0 and not trl["available"] and trl["reason"].startswith("this config does not fit TRL: ")


@pytest.fixture
def third_party():
    """tests/support/third_party_backend.py registered for one test (a backend written against the protocol only)."""
    sys.path.insert(0, str(Path(__file__).parent / "support"))
    import third_party_backend

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = third_party_backend.Plugin()
    third_party_backend.EVENTS.clear()
    register_plugin(plugin)
    yield third_party_backend
    unregister_plugin(plugin)


def test_a_backend_written_only_against_the_protocol_trains(third_party, tmp_path, capsys):
    from crossgym.protocol import TrainingBackend

    assert isinstance(third_party.StepBackend(), TrainingBackend)
    cfg = write_config(tmp_path, "some/model")
    code, out, err = _cli(["train", str(cfg), "--backend", "third_party_step", "--skip-gate"], capsys)
    assert code == 0, err
    events = [e for e, _ in third_party.EVENTS]
    assert events == ["check", "preload", "train"]  # preload is part of the contract, called before training
    assert dict(third_party.EVENTS)["train"] == {"tasks": 8, "stop_is_set": False}
    assert "trained 2 steps" in out


@pytest.mark.parametrize(("backend", "promise", "kept"), [
    ("third_party_step", "stopping after this step and saving the model", "the model so far is saved"),
    ("third_party_process", "stopping the training process (SIGINT, then SIGTERM", "the last checkpoint it saved"),
])
def test_the_first_ctrl_c_promises_what_the_backend_does(third_party, tmp_path, capsys, backend, promise, kept):
    """A real SIGINT mid-run: the backend sees stop set; the promise printed matches its capabilities.stop."""
    cfg = write_config(tmp_path, "some/model", backend_args={"ctrl_c_at": 2},
                       grpo={"num_generations": 2, "per_device_train_batch_size": 4, "max_steps": 5})
    code, out, err = _cli(["train", str(cfg), "--backend", backend, "--skip-gate"], capsys)
    assert code == 130
    assert ("stop_seen", True) in third_party.EVENTS
    assert promise in err and f"stopped at step 1 (Ctrl-C); {kept}" in out


def test_train_orchestration_finds_nothing_by_getattr_or_signatures():
    """train.py calls the declared contract: no getattr/hasattr probing, no inspect.signature."""
    import ast

    import crossgym.train as train_module

    tree = ast.parse(Path(train_module.__file__).read_text(encoding="utf-8"))
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {"getattr", "hasattr"} & calls
    assert "inspect" not in imported and "signature" not in imported


def test_plan_says_how_launched_backends_stop(tmp_path, capsys):
    from crossgym.adapters.kit.launch import STOP_NOTE

    cfg = write_config(tmp_path, "some/model")
    code, out, _ = _cli(["plan", str(cfg), "--json"], capsys)
    by_name = {p["backend"]: p for p in json.loads(out)["plans"]}
    for name in ("verl", "openrlhf"):  # planned here too: their plans need no framework
        assert STOP_NOTE in by_name[name]["notes"], name
    assert "SIGINT" in STOP_NOTE and "SIGTERM" in STOP_NOTE


def test_the_plain_trl_script_runs_and_trains_on_the_scoring_cores_rewards(tmp_path, capsys, tiny_model_dir):
    """`crossgym plan --backend trl` writes a script a user can run as it is: TRL's GRPOTrainer with crossgym's
    reward functions (with an extra term), one real step on the tiny model."""
    cfg = write_config(tmp_path, str(tiny_model_dir), verifiers=[{"name": "length", "params": {"max": 4, "unit":
                       "chars"}, "weight": 0.5}], grpo={"num_generations": 2, "per_device_train_batch_size": 2,
                                                      "max_completion_length": 6, "max_steps": 1})
    code, out, _ = _cli(["plan", str(cfg), "--backend", "trl", "--json"], capsys)
    assert code == 0
    script = tmp_path / "train_trl.py"
    script.write_text(json.loads(out)["plans"][0]["files"]["train_trl.py"], encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rewards/extra/length/mean" in proc.stdout + proc.stderr
    assert (tmp_path / "out" / "final" / "config.json").is_file()
