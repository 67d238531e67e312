"""VerlBackend: registered like any plugin, plan() has no side effects, check() names what is missing, train()
writes the run and stops before launch where no GPU is visible."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys

import pytest

from crossgym.adapters.verl import backend as vb
from crossgym.protocol.errors import BackendUnavailable, ConfigError


def test_registered_under_verl() -> None:
    from crossgym.api import get_backend

    b = get_backend("verl")
    assert isinstance(b, vb.VerlBackend) and b.name == "verl"
    assert b.capabilities.multi_turn and b.capabilities.needs_gpu
    assert set(b.capabilities.variants) == {"grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo",
                                            "sapo"}


def test_importing_the_backend_does_not_import_verl() -> None:
    import subprocess

    code = ("import sys, crossgym.adapters.verl, crossgym.adapters.verl.parity; "
            "from crossgym.api import get_backend; get_backend('verl').plan; "
            "print(sorted(m for m in ('verl', 'torch', 'ray', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_plan_writes_nothing_and_names_the_exact_command(run_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = run_factory(environment={"name": "tool_use", "max_turns": 3},
                      tasks={"source": "tool_choice", "params": {"n": 8}})
    plan = vb.VerlBackend().plan(run)
    assert not (tmp_path / "out").exists()
    root = str((tmp_path / "out" / "verl").resolve())
    assert plan.argv[:3] == ("python", "-m", "verl.trainer.main_ppo")
    assert "algorithm.adv_estimator=grpo" in plan.argv
    assert f"reward.custom_reward_function.path={root}/crossgym_reward.py" in plan.argv
    assert set(plan.files) == {f"{root}/train.parquet", f"{root}/crossgym_reward.py", f"{root}/run.sh",
                               f"{root}/agent_loops.yaml", f"{root}/tools.yaml"}
    assert plan.files[f"{root}/train.parquet"].startswith("(parquet) 8 rows")
    assert "verl.trainer.main_ppo" in plan.files[f"{root}/run.sh"]
    assert plan.native_config["hydra_overrides"]["actor_rollout_ref.rollout.multi_turn.enable"] is True
    json.dumps(plan.to_dict())  # `crossgym plan --json` prints it


def test_generated_reward_module_binds_the_run_settings(run_factory) -> None:  # type: ignore[no-untyped-def]
    run = run_factory(on_error=-1, task_weight=0.5, verifiers=[{"name": "length", "params": {"max_chars": 10},
                                                                "weight": 0.25}])
    plan = vb.VerlBackend().plan(run)
    source = next(t for p, t in plan.files.items() if p.endswith("crossgym_reward.py"))
    namespace: dict = {}
    exec(compile(source, "crossgym_reward.py", "exec"), namespace)  # noqa: S102 - our own generated module
    assert namespace["SETTINGS"] == {"rule": {"on_error": -1.0, "task_weight": 0.5, "override": None, "extras": [
        {"name": "length", "spec": {"name": "length", "params": {"max_chars": 10}}, "weight": 0.25}]}}


def test_check_names_what_is_missing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "verl" else real(name, *a))
    with pytest.raises(BackendUnavailable) as info:
        vb.VerlBackend().check()
    assert "verl" in info.value.reason and info.value.install == "pip install 'crossgym[verl]'"
    present = real("json")  # stands for an installed verl in either tier
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transfer_queue"
                        else present if name == "verl" else real(name, *a))
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.9.1")
    with pytest.raises(BackendUnavailable, match="TransferQueue"):
        vb.VerlBackend().check()


def test_train_without_gpu_writes_the_run_and_stops_before_launch(run_factory, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(vb.VerlBackend, "check", lambda self: None)  # verl itself is not needed to get this far
    monkeypatch.setattr(vb, "visible_gpus", lambda: 0)
    with pytest.raises(BackendUnavailable) as info:
        vb.VerlBackend().train(run_factory())
    line = str(info.value)
    assert "no CUDA GPU" in line and "\n" not in line and "run.sh" in line
    root = tmp_path / "out" / "verl"
    assert {p.name for p in root.iterdir()} == {"train.parquet", "crossgym_reward.py", "run.sh"}
    assert not (tmp_path / "out" / "checkpoints").exists()


def test_train_refuses_what_verl_cannot_do_before_writing(run_factory, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(vb.VerlBackend, "check", lambda self: None)
    with pytest.raises(ConfigError, match="on_error"):
        vb.VerlBackend().train(run_factory(on_error="none"))
    assert not (tmp_path / "out").exists()


def test_console_lines_and_checkpoints(tmp_path) -> None:
    line = "step:3 - actor/pg_loss:-0.012 - critic/score/mean:0.625 - response_length/mean:41.5 - timing_s/gen:1e-3"
    assert vb.parse_metrics(line) == {"actor/pg_loss": -0.012, "critic/score/mean": 0.625,
                                      "response_length/mean": 41.5, "timing_s/gen": 0.001}
    assert vb._STEP.search(line).group(1) == "3"
    assert vb.latest_checkpoint(tmp_path) is None
    for step in (2, 10):
        (tmp_path / f"global_step_{step}" / "actor").mkdir(parents=True)
    assert vb.latest_checkpoint(tmp_path) == tmp_path / "global_step_10" / "actor"


def test_console_format_is_verls_own() -> None:
    """The line format parse_metrics reads is what veRL's console logger prints."""
    agg = pytest.importorskip("verl.utils.logger.aggregate_logger")
    line = agg.concat_dict_to_str({"critic/score/mean": 0.5, "actor/lr": 1e-06, "note": "x"}, step=7)
    assert vb._STEP.search(line).group(1) == "7"
    assert vb.parse_metrics(line) == {"critic/score/mean": 0.5, "actor/lr": 1e-06}


def test_the_cluster_example_plans(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from crossgym.config import load_run_config

    example = Path(__file__).resolve().parents[3] / "examples" / "verl" / "tool_use_cluster.yaml"
    run = load_run_config(example).with_overrides(output_dir=str(tmp_path / "run"))
    plan = vb.VerlBackend().plan(run)
    o = plan.native_config["hydra_overrides"]
    assert (o["trainer.nnodes"], o["trainer.n_gpus_per_node"], o["data.train_batch_size"]) == (2, 8, 16)
    assert o["actor_rollout_ref.rollout.multi_turn.enable"] is True
    assert o["actor_rollout_ref.actor.loss_agg_mode"] == "token-mean"
    assert o["trainer.val_before_train"] is True
    assert not (tmp_path / "run").exists()
